"""Convexity lemma of docs/theory.md §4: A(w) = e^{gamma w} / (e^{gamma w} + L - 1).

A''(w) = gamma^2 (L-1) e^{gamma w} (L - 1 - e^{gamma w}) / (e^{gamma w} + L - 1)^3, so A is strictly
convex at w exactly when gamma w < log(L-1); on [0, 1] this holds for L >= 4, gamma <= 1
(gamma w <= 1 < log 3). Counterexamples outside: L = 2 (concave on (0, 1]), gamma = 3 with L = 4.

Run: `python proofs/convexity.py` (exit 1 if a check fails). Derivation: proofs/README.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sympy as sp

from proofs._check import check, check_positive, check_zero, run

w, gamma, L = sp.symbols("w gamma L", positive=True)
n = sp.Symbol("n", positive=True)  # n = L - 1 > 0 (L >= 2)


def attention_A(w, gamma, L):
    """A(w) = e^{gamma w} / (e^{gamma w} + L - 1), the attention on the query's block (sympy)."""
    return sp.exp(gamma * w) / (sp.exp(gamma * w) + L - 1)


def attention_A1(w, gamma, L):
    """A'(w) = gamma (L-1) e^{gamma w} / (e^{gamma w} + L - 1)^2 (sympy)."""
    e = sp.exp(gamma * w)
    return gamma * (L - 1) * e / (e + L - 1) ** 2


def attention_A2(w, gamma, L):
    """A''(w) = gamma^2 (L-1) e^{gamma w} (L - 1 - e^{gamma w}) / (e^{gamma w} + L - 1)^3
    (sympy)."""
    e = sp.exp(gamma * w)
    return gamma**2 * (L - 1) * e * (L - 1 - e) / (e + L - 1) ** 3


def main() -> None:
    print("convexity lemma: A(w) = e^{gamma w}/(e^{gamma w} + L - 1)")
    A = attention_A(w, gamma, L)
    check_zero(
        A - 1 / (1 + sp.exp(-(gamma * w - sp.log(L - 1)))),
        "A(w) = sigmoid(gamma w - log(L-1))",
    )
    check_zero(sp.diff(A, w) - attention_A1(w, gamma, L), "A'(w) closed form")
    check_zero(sp.diff(A, w, 2) - attention_A2(w, gamma, L), "A''(w) closed form")
    check_zero(attention_A1(w, gamma, L) - gamma * A * (1 - A), "A' = gamma A (1 - A)")
    check_zero(
        attention_A2(w, gamma, L) - gamma**2 * A * (1 - A) * (1 - 2 * A),
        "A'' = gamma^2 A (1-A)(1-2A)",
    )

    # Sign: with n = L - 1 > 0 and u = e^{gamma w} > 0, A'' = [gamma^2 n u / (u + n)^3] * (n - u).
    u = sp.Symbol("u", positive=True)
    A2 = attention_A2(w, gamma, n + 1).subs(sp.exp(gamma * w), u)
    prefactor = gamma**2 * n * u / (u + n) ** 3
    check_zero(
        A2 - prefactor * (n - u),
        "A'' = gamma^2 n u/(u+n)^3 * (n - u), n = L-1, u = e^{gamma w}",
    )
    check_positive(
        prefactor,
        "prefactor gamma^2 n u/(u+n)^3 > 0, so sign A'' = sign(L - 1 - e^{gamma w})",
    )
    A1 = attention_A1(w, gamma, n + 1).subs(sp.exp(gamma * w), u)
    check_positive(A1, "A' > 0: A strictly increasing, so A(1) > A(0) for gamma > 0")

    # n - e^{gamma w} is strictly decreasing in t = gamma w and vanishes exactly at t = log n,
    # hence A'' > 0  <=>  gamma w < log(L - 1).
    t = sp.Symbol("t", real=True)
    factor = n - sp.exp(t)
    check_zero(factor.subs(t, sp.log(n)), "sign factor vanishes at gamma w = log(L-1)")
    check_positive(-sp.diff(factor, t), "sign factor strictly decreasing in gamma w")

    # Theorem setting: gamma in (0, 1], w in [0, 1] gives gamma w <= 1 < log 3 <= log(L-1)
    # for L >= 4.
    check(sp.E < 3, "e < 3, i.e. 1 < log 3")
    check(sp.log(3) > 1, "log 3 > 1")
    # The bound is attained nowhere: the sign factor at the worst point gamma w = 1, L = 4
    # is 3 - e > 0.
    check_positive(
        3 - sp.E, "worst case L = 4, gamma w = 1: L - 1 - e^{gamma w} = 3 - e > 0"
    )
    # A dense grid of the theorem region, exact sign of the factor (a sanity check on the algebra).
    bad = [
        (Lv, gv, wv)
        for Lv in range(4, 12)
        for gv in (sp.Rational(1, 10), sp.Rational(1, 2), sp.Integer(1))
        for wv in (0, sp.Rational(1, 3), sp.Rational(1, 2), 1)
        if attention_A2(w, gamma, L).subs({L: Lv, gamma: gv, w: wv}).is_positive
        is not True
    ]
    check(
        bad == [],
        "A'' > 0 on a grid of L in 4..11, gamma in {0.1, 0.5, 1}, w in {0, 1/3, 1/2, 1}",
    )

    # Counterexamples outside the assumptions, evaluated exactly.
    c1 = attention_A2(w, gamma, L).subs({L: 2, gamma: 1, w: sp.Rational(1, 2)})
    check(c1.is_negative, f"L = 2, gamma = 1: A''(1/2) = {sp.N(c1, 6)} < 0 (A concave)")
    c2 = attention_A2(w, gamma, L).subs({L: 4, gamma: 3, w: 1})
    check(
        c2.is_negative,
        f"L = 4, gamma = 3: A''(1) = {sp.N(c2, 6)} < 0 (gamma w > log 3)",
    )
    c3 = attention_A2(w, gamma, L).subs({L: 4, gamma: 3, w: sp.Rational(1, 10)})
    check(
        c3.is_positive,
        f"L = 4, gamma = 3: A''(1/10) = {sp.N(c3, 6)} > 0 (gamma w < log 3): exact threshold",
    )


if __name__ == "__main__":
    run(main)
