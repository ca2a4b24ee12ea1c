"""The check helpers shared by the proof scripts: failures raise, `run` turns them into exit 1.

Never a bare `assert` (stripped by `python -O`): every claim goes through `check`.
"""

from __future__ import annotations

import sys
import time
import traceback

import sympy as sp


class ProofError(Exception):
    """A claimed identity or inequality did not verify."""


def check(condition, message: str) -> None:
    """Raise `ProofError(message)` unless `condition` is exactly `True` (sympy `True` counts)."""
    if condition is not True and condition != sp.true:
        raise ProofError(f"{message} (got {condition!r})")
    print(f"  ok: {message}")


def is_zero(expr, *, simplifier=sp.simplify) -> bool:
    """Whether `expr` simplifies to exactly 0."""
    return sp.sympify(simplifier(expr)) == 0


def check_zero(expr, message: str, *, simplifier=sp.simplify) -> None:
    """Check that `expr` simplifies to exactly 0 (a symbolic identity)."""
    value = sp.sympify(simplifier(expr))
    if value != 0:
        raise ProofError(f"{message}: residual {value}")
    print(f"  ok: {message}")


def check_positive(expr, message: str) -> None:
    """Check that sympy's assumption system proves `expr > 0` from the symbols' assumptions."""
    if sp.sympify(expr).is_positive is not True:
        raise ProofError(f"{message}: cannot prove {expr} > 0")
    print(f"  ok: {message}")


def run(main) -> None:
    """Run a proof script's `main()`: exit 0 when all checks pass, 1 on any failure or error."""
    start = time.perf_counter()
    try:
        main()
    except ProofError as err:
        print(f"FAILED: {err}", file=sys.stderr)
        sys.exit(1)
    except Exception:  # an error in a proof is a failed proof
        traceback.print_exc()
        sys.exit(1)
    print(f"all checks passed ({time.perf_counter() - start:.1f} s)")
    sys.exit(0)
