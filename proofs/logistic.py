"""Strict convexity of the logistic loss ell(m) = log(1 + K e^{-m}) and the splitting inequality.

ell'(m) = -K e^{-m} / (1 + K e^{-m}),  ell''(m) = K e^{-m} / (1 + K e^{-m})^2 > 0 for K > 0, and for
any u != v the exact two-point Jensen gap

    (ell(u) + ell(v))/2 - ell((u+v)/2) = (1/2) log(1 + K (e^{-u/2} - e^{-v/2})^2 / (1 + K
    e^{-(u+v)/2})^2) > 0.

Run: `python proofs/logistic.py` (exit 1 if a check fails). Derivation: proofs/README.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sympy as sp

from proofs._check import check, check_positive, check_zero, run

m, u, v = sp.symbols("m u v", real=True)
K = sp.Symbol("K", positive=True)


def logistic_loss(m, K):
    """ell(m) = log(1 + K e^{-m}) (sympy)."""
    return sp.log(1 + K * sp.exp(-m))


def logistic_loss_d1(m, K):
    """ell'(m) = -K e^{-m} / (1 + K e^{-m}) (sympy)."""
    return -K * sp.exp(-m) / (1 + K * sp.exp(-m))


def logistic_loss_d2(m, K):
    """ell''(m) = K e^{-m} / (1 + K e^{-m})^2 (sympy)."""
    return K * sp.exp(-m) / (1 + K * sp.exp(-m)) ** 2


def jensen_gap(u, v, K):
    """Closed form of (ell(u) + ell(v))/2 - ell((u+v)/2) (sympy)."""
    return (
        sp.log(
            1
            + K
            * (sp.exp(-u / 2) - sp.exp(-v / 2)) ** 2
            / (1 + K * sp.exp(-(u + v) / 2)) ** 2
        )
        / 2
    )


def main() -> None:
    print("logistic loss ell(m) = log(1 + K e^{-m})")
    ell = logistic_loss(m, K)
    check_zero(sp.diff(ell, m) - logistic_loss_d1(m, K), "ell'(m) closed form")
    check_zero(sp.diff(ell, m, 2) - logistic_loss_d2(m, K), "ell''(m) closed form")
    check_positive(
        logistic_loss_d2(m, K),
        "ell''(m) > 0 for K > 0, every real m: ell strictly convex",
    )
    check_zero(
        logistic_loss_d2(m, K) + logistic_loss_d1(m, K) * (1 + logistic_loss_d1(m, K)),
        "ell'' = -ell' (1 + ell') (logistic sigmoid identity)",
    )

    # Large-K expansion: ell(m) = log K - m + e^m / K + O(1/K^2).
    eps = sp.Symbol("epsilon", positive=True)  # eps = 1/K
    series = sp.series(logistic_loss(m, 1 / eps) + sp.log(eps), eps, 0, 2).removeO()
    check_zero(series - (-m + sp.exp(m) * eps), "ell(m) = log K - m + e^m/K + O(1/K^2)")

    # Two-point Jensen gap in closed form: exp(2 * gap) = (1 + K e^{-u})(1 + K e^{-v}) / (1
    # + K e^{-(u+v)/2})^2
    # and numerator - denominator = K (e^{-u/2} - e^{-v/2})^2 exactly.
    a, b = sp.symbols("a b", positive=True)  # a = e^{-u/2}, b = e^{-v/2}
    num = (1 + K * a**2) * (1 + K * b**2)
    den = (1 + K * a * b) ** 2
    check_zero(
        sp.expand(num - den - K * (a - b) ** 2),
        "(1+K a^2)(1+K b^2) - (1+K a b)^2 = K (a-b)^2",
        simplifier=sp.expand,
    )
    gap = (logistic_loss(u, K) + logistic_loss(v, K)) / 2 - logistic_loss(
        (u + v) / 2, K
    )
    check_zero(
        sp.expand(sp.exp(2 * gap) - sp.exp(2 * jensen_gap(u, v, K))),
        "Jensen gap (ell(u)+ell(v))/2 - ell((u+v)/2) closed form (equal exponentials "
        "of real numbers)",
    )
    check_positive(
        K / den,
        "K/(1 + K a b)^2 > 0, so gap = (1/2) log(1 + K (a-b)^2/(1+Kab)^2) > 0 iff a != "
        "b iff u != v",
    )
    # u != v  <=>  a != b because exp is injective; spot values of the gap, exactly:
    g = jensen_gap(u, v, K).subs({u: 1, v: 3, K: 5})
    check(g.is_positive, f"gap at u=1, v=3, K=5 is {sp.N(g, 8)} > 0")
    check_zero(jensen_gap(u, v, K).subs(v, u), "gap vanishes at u = v")


if __name__ == "__main__":
    run(main)
