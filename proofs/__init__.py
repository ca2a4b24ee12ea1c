"""Symbolic (sympy) checks of the closed forms of docs/theory.md; each module runs on its own.

`python proofs/<name>.py` exits 0 when every check holds and 1 otherwise; the modules also
expose functions returning sympy expressions, used by the tests of the library.
"""
