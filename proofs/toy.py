"""The two-head toy of docs/theory.md §8 in closed form (sympy), with its checks.

Two heads, S = 2, key weights p_1, p_2 on offset 0. Margins m_0 = beta (A(p_1) + A(p_2)),
m_1 = beta (A(1 - p_1) + A(1 - p_2)); loss = (ell(m_0) + ell(m_1))/2, ell(m) = log(1 + K e^{-m}).
Checked here: the gradient; p = (1/2, 1/2) is critical; the Hessian of the logit-parametrized loss
(p_h = sigmoid(theta_h)) there and the two escape rates of d theta/dt = -grad; where each rate is
positive (antisymmetric iff e^{gamma/2} < L - 1; symmetric iff moreover K > K*(beta), closed form,
the boundary of the toy figure's stability diagram); the corner losses and
the closed-form split advantage with its sign for every beta, gamma, K > 0, L >= 2; the large-K
expansions (sharpening O(1), splitting O(1/K)).

The functions below return sympy expressions; the library's tests lambdify them.
Run: `python proofs/toy.py` (exit 1 if a check fails). Derivation: proofs/README.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sympy as sp

from proofs._check import check, check_positive, check_zero, run
from proofs.convexity import attention_A, attention_A1, attention_A2
from proofs.logistic import logistic_loss, logistic_loss_d1, logistic_loss_d2

p1, p2, th1, th2 = sp.symbols("p1 p2 theta1 theta2", real=True)
beta, gamma, K, L = sp.symbols("beta gamma K L", positive=True)


def toy_margins(p1, p2, beta, gamma, L):
    """(m_0, m_1) = (beta (A(p_1) + A(p_2)), beta (A(1-p_1) + A(1-p_2)))."""
    A = lambda w: attention_A(w, gamma, L)
    return beta * (A(p1) + A(p2)), beta * (A(1 - p1) + A(1 - p2))


def toy_loss(p1, p2, beta, gamma, L, K):
    """(ell(m_0) + ell(m_1)) / 2."""
    m0, m1 = toy_margins(p1, p2, beta, gamma, L)
    return (logistic_loss(m0, K) + logistic_loss(m1, K)) / 2


def toy_gradient(p1, p2, beta, gamma, L, K):
    """d loss / d p_h = (beta/2) [ell'(m_0) A'(p_h) - ell'(m_1) A'(1 - p_h)], h = 1, 2."""
    m0, m1 = toy_margins(p1, p2, beta, gamma, L)
    d0, d1 = logistic_loss_d1(m0, K), logistic_loss_d1(m1, K)
    A1 = lambda w: attention_A1(w, gamma, L)
    return tuple(beta / 2 * (d0 * A1(p) - d1 * A1(1 - p)) for p in (p1, p2))


def corner_losses(beta, gamma, L, K):
    """(same corner, opposite corners) = ((ell(2 beta A1) + ell(2 beta A0))/2, ell(beta
    (A1 + A0)))."""
    A1, A0 = attention_A(1, gamma, L), attention_A(0, gamma, L)
    same = (logistic_loss(2 * beta * A1, K) + logistic_loss(2 * beta * A0, K)) / 2
    return same, logistic_loss(beta * (A1 + A0), K)


def split_advantage(beta, gamma, L, K):
    """loss(same) - loss(opposite) = (1/2) log(1 + K (e^{-beta A1} - e^{-beta A0})^2 / (1 +
    K e^{-beta (A1+A0)})^2)."""
    A1, A0 = attention_A(1, gamma, L), attention_A(0, gamma, L)
    ratio = (
        K
        * (sp.exp(-beta * A1) - sp.exp(-beta * A0)) ** 2
        / (1 + K * sp.exp(-beta * (A1 + A0))) ** 2
    )
    return sp.log(1 + ratio) / 2


def escape_rates(beta, gamma, L, K):
    """Growth rates of d theta/dt = -grad_theta loss at theta = 0 along (1, 1) and (1, -1).

    With a = A(1/2), m = 2 beta a:
    antisymmetric = -ell'(m) beta A''(1/2) / 16,
    symmetric = antisymmetric - ell''(m) beta^2 A'(1/2)^2 / 8.
    """
    m = 2 * beta * attention_A(sp.Rational(1, 2), gamma, L)
    anti = (
        -logistic_loss_d1(m, K) * beta * attention_A2(sp.Rational(1, 2), gamma, L) / 16
    )
    sym = (
        anti
        - logistic_loss_d2(m, K)
        * beta**2
        * attention_A1(sp.Rational(1, 2), gamma, L) ** 2
        / 8
    )
    return sym, anti


def symmetric_boundary(beta, gamma, L):
    """K*(beta) = e^{2 beta a} (2 beta a (1 - a) / (1 - 2a) - 1), a = A(1/2): for
    e^{gamma/2} < L - 1 the
    symmetric escape rate is > 0 exactly when K > K*(beta) (K* <= 0: for every K > 0)."""
    a = attention_A(sp.Rational(1, 2), gamma, L)
    return sp.exp(2 * beta * a) * (2 * beta * a * (1 - a) / (1 - 2 * a) - 1)


def symmetric_threshold_beta(gamma, L):
    """beta_0 = (1 - 2a) / (2 a (1 - a)), a = A(1/2): K*(beta) <= 0 exactly for beta <= beta_0."""
    a = attention_A(sp.Rational(1, 2), gamma, L)
    return (1 - 2 * a) / (2 * a * (1 - a))


def sharpening_gain(beta, gamma, L):
    """O(1) part of loss(center) - loss(any corner) as K -> oo: beta (A(1) + A(0) - 2 A(1/2))."""
    A = lambda w: attention_A(w, gamma, L)
    return beta * (A(1) + A(0) - 2 * A(sp.Rational(1, 2)))


def _exp_positive_above_zero(t) -> None:
    """e^t - 1 > 0 for t > 0: it vanishes at 0 and its derivative e^t is positive."""
    x = sp.Symbol("x", real=True)
    check_zero((sp.exp(x) - 1).subs(x, 0), "e^x - 1 vanishes at x = 0")
    check_positive(
        sp.diff(sp.exp(x) - 1, x), "d/dx (e^x - 1) = e^x > 0, so e^x - 1 > 0 for x > 0"
    )


def main() -> None:
    print("two-head toy (docs/theory.md §8)")
    loss = toy_loss(p1, p2, beta, gamma, L, K)
    g = toy_gradient(p1, p2, beta, gamma, L, K)
    for h, p in enumerate((p1, p2), start=1):
        check_zero(sp.diff(loss, p) - g[h - 1], f"d loss/d p_{h} closed form")
    half = {p1: sp.Rational(1, 2), p2: sp.Rational(1, 2)}
    check_zero(g[0].subs(half), "p = (1/2, 1/2) is a critical point (gradient 0)")

    # Logit parametrization and the Hessian at theta = 0.
    sig = lambda t: 1 / (1 + sp.exp(-t))
    loss_th = loss.subs({p1: sig(th1), p2: sig(th2)})
    zero = {th1: 0, th2: 0}
    Hth = sp.Matrix(
        2, 2, lambda i, j: sp.diff(loss_th, (th1, th2)[i], (th1, th2)[j]).subs(zero)
    )
    Hp = sp.Matrix(
        2, 2, lambda i, j: sp.diff(loss, (p1, p2)[i], (p1, p2)[j]).subs(half)
    )
    check_zero(
        Hth - Hp / 16,
        "Hessian in theta at 0 = Hessian in p at 1/2, times (dp/dtheta)^2 = 1/16",
        simplifier=lambda M: sp.simplify(M).applyfunc(sp.simplify).norm(),
    )
    check_zero(
        Hth[0, 0] - Hth[1, 1],
        "H_11 = H_22 (head exchange symmetry), so (1,1), (1,-1) are eigenvectors",
    )
    sym, anti = escape_rates(beta, gamma, L, K)
    check_zero(
        Hth[0, 0] + Hth[0, 1] + sym,
        "growth rate along (1, 1) = -(H_11 + H_12) = escape_rates[0]",
    )
    check_zero(
        Hth[0, 0] - Hth[0, 1] + anti,
        "growth rate along (1, -1) = -(H_11 - H_12) = escape_rates[1]",
    )

    # Signs of the rates, with n = L - 1 and u = e^{gamma/2}.
    n, u = sp.symbols("n u", positive=True)
    sub_u = lambda e: (
        e.subs(n + 1, L)
        .subs(L, n + 1)
        .subs(sp.exp(gamma / 2), u)
        .subs(sp.exp(gamma), u**2)
    )
    anti_u = sub_u(anti)
    sign_factor = n - u
    check_zero(
        sp.simplify(anti_u / sign_factor - sp.factor(anti_u / sign_factor)),
        "antisymmetric rate = (positive) * (L - 1 - e^{gamma/2})",
    )
    check_positive(
        sp.factor(anti_u / sign_factor),
        "antisymmetric rate > 0 iff e^{gamma/2} < L - 1 (true for L >= 4, gamma <= 1): "
        "p = 1/2 unstable",
    )
    gap = sub_u(anti - sym)
    check_positive(
        sp.factor(gap),
        "antisymmetric - symmetric = ell''(m) beta^2 A'(1/2)^2 / 8 > 0 (splitting faster)",
    )

    # Where the symmetric direction is unstable: the stability diagram of the toy figure.
    sym_u = sub_u(sym)
    m_u = 2 * beta * sub_u(attention_A(sp.Rational(1, 2), gamma, L))
    check_zero(m_u - 2 * beta * u / (n + u), "a = A(1/2) = u/(n + u), m = 2 beta a")
    bracket = (n**2 - u**2) * (1 + K * sp.exp(-m_u)) - 2 * beta * u * n
    prefactor = sp.simplify(sym_u / bracket)
    check_zero(
        prefactor
        - K
        * beta
        * gamma**2
        * n
        * u
        * sp.exp(m_u)
        / (16 * (K + sp.exp(m_u)) ** 2 * (n + u) ** 4),
        "symmetric rate = K beta gamma^2 n u e^m / (16 (K + e^m)^2 (n+u)^4) * [(n^2 - "
        "u^2)(1 + K e^{-m}) - 2 beta u n]",
    )
    check_positive(
        prefactor,
        "that prefactor is > 0: sign(symmetric rate) = sign[(n^2 - u^2)(1 + K e^{-m}) "
        "- 2 beta u n]",
    )
    w = sp.Symbol("w", nonnegative=True)  # u = n + w >= n, i.e. e^{gamma/2} >= L - 1
    check_positive(
        sp.expand(-bracket.subs(u, n + w)),
        "for e^{gamma/2} >= L - 1 the bracket is < 0: symmetric direction stable for every K",
    )
    k_star = sub_u(symmetric_boundary(beta, gamma, L))
    check_zero(
        sp.simplify(bracket - (n**2 - u**2) * sp.exp(-m_u) * (K - k_star)),
        "bracket = (n^2 - u^2) e^{-m} (K - K*(beta)), K* = e^{2 beta a}(2 beta "
        "a(1-a)/(1-2a) - 1): for u < n, "
        "symmetric rate > 0 iff K > K*(beta)",
    )
    check_zero(
        sp.simplify(k_star - sp.exp(m_u) * (2 * beta * u * n / (n**2 - u**2) - 1)),
        "K*(beta) = e^m (2 beta u n / (n^2 - u^2) - 1) in u = e^{gamma/2}, n = L - 1",
    )
    beta0 = sub_u(symmetric_threshold_beta(gamma, L))
    check_zero(
        sp.simplify(beta0 - (n**2 - u**2) / (2 * u * n)),
        "beta_0 = (1 - 2a)/(2a(1-a)) = (n^2 - u^2)/(2 u n)",
    )
    check_zero(
        sp.simplify(k_star - sp.exp(m_u) * (beta / beta0 - 1)),
        "K*(beta) = e^m (beta/beta_0 - 1): K* <= 0 (symmetric unstable for every K > "
        "0) iff beta <= beta_0",
    )
    a_u = u / (n + u)
    check_zero(
        sp.simplify(
            sp.diff(k_star, beta)
            - sp.exp(m_u) * (2 * a_u * (beta / beta0 - 1) + 1 / beta0)
        ),
        "dK*/dbeta = e^m (2a (beta/beta_0 - 1) + 1/beta_0) > 0 for beta > beta_0: one "
        "boundary curve, increasing",
    )
    for bv, Kv, stable in ((16, 100, True), (4, 1, True), (4, 100, False)):
        at = {beta: bv, gamma: 1, L: 8, K: Kv}
        rate, kv = (
            sp.N(sym.subs(at), 30),
            sp.N(symmetric_boundary(beta, gamma, L).subs(at), 30),
        )
        check(
            bool(rate < 0) == stable and bool(Kv < kv) == stable,
            f"beta={bv}, K={Kv}, L=8, gamma=1: symmetric rate {sp.N(rate, 6)}, K*={sp.N(kv, 6)}: "
            + ("stable" if stable else "unstable"),
        )

    # Corners.
    same, opp = corner_losses(beta, gamma, L, K)
    check_zero(
        loss.subs({p1: 1, p2: 1}) - same,
        "loss at (1, 1) = (ell(2 beta A1) + ell(2 beta A0))/2",
    )
    check_zero(loss.subs({p1: 0, p2: 0}) - same, "loss at (0, 0) = same-corner loss")
    check_zero(loss.subs({p1: 1, p2: 0}) - opp, "loss at (1, 0) = ell(beta (A1 + A0))")
    check_zero(loss.subs({p1: 0, p2: 1}) - opp, "loss at (0, 1) = opposite-corner loss")
    D = split_advantage(beta, gamma, L, K)
    check_zero(
        sp.expand(sp.exp(2 * (same - opp)) - sp.exp(2 * D)),
        "split advantage: same - opposite = (1/2) log(1 + K (e^{-beta A1} - e^{-beta "
        "A0})^2/(1 + K e^{-beta(A1+A0)})^2)",
    )
    # Stable form: with X = beta A1, Y = beta A0 and a = e^{X/2}, b = e^{Y/2} (positive),
    # K (e^{-X} - e^{-Y})^2 / (1 + K e^{-(X+Y)})^2 = 4 ell''(X + Y) sinh^2((X - Y)/2).
    X, Y = sp.symbols("X Y", real=True)
    ratio = K * (sp.exp(-X) - sp.exp(-Y)) ** 2 / (1 + K * sp.exp(-(X + Y))) ** 2
    stable = 4 * logistic_loss_d2(X + Y, K) * sp.sinh((X - Y) / 2) ** 2
    ea, eb = sp.symbols("a b", positive=True)
    to_ab = lambda e: sp.powsimp(sp.expand(e.rewrite(sp.exp)), combine="exp").subs(
        {X: 2 * sp.log(ea), Y: 2 * sp.log(eb)}
    )
    check_zero(
        sp.cancel(sp.expand_log(to_ab(ratio - stable), force=True)),
        "D = (1/2) log(1 + 4 ell''(beta (A1 + A0)) sinh^2(beta (A1 - A0)/2)) (the stable form)",
        simplifier=sp.simplify,
    )
    A1v, A0v = attention_A(1, gamma, L), attention_A(0, gamma, L)
    check_zero(
        sp.exp(2 * D) - 1 - ratio.subs({X: beta * A1v, Y: beta * A0v}),
        "D's log argument is 1 + ratio(beta A1, beta A0)",
        simplifier=sp.expand,
    )
    # Sign for all beta, gamma, K > 0 and L >= 2: the log's argument exceeds 1 iff A1 != A0.
    A1, A0 = attention_A(1, gamma, n + 1), attention_A(0, gamma, n + 1)
    t = sp.Symbol("t", positive=True)  # e^gamma = 1 + t, t > 0 for gamma > 0
    diffA = sp.factor((A1 - A0).subs(sp.exp(gamma), 1 + t))
    check_zero(
        diffA - n * t / ((n + 1) * (n + t + 1)),
        "A(1) - A(0) = n (e^gamma - 1) / ((n+1)(e^gamma + n)), n = L-1",
    )
    check_positive(diffA, "A(1) - A(0) > 0 for gamma > 0, L >= 2")
    _exp_positive_above_zero(beta * (A1 - A0))
    print(
        "  => e^{-beta A0} - e^{-beta A1} = e^{-beta A1}(e^{beta (A1 - A0)} - 1) > 0 for beta > 0"
    )
    e0, e1 = sp.symbols("e0 e1", positive=True)  # e0 = e^{-beta A0}, e1 = e^{-beta A1}
    check_positive(
        K / (1 + K * e0 * e1) ** 2,
        "K/(1 + K e^{-beta(A1+A0)})^2 > 0, hence the log's argument is > 1 and the "
        "split advantage > 0",
    )
    val = D.subs({beta: 4, gamma: 1, L: 8, K: 100})
    check(
        sp.N(val, 30) > 0,
        f"split advantage at beta=4, gamma=1, L=8, K=100: {sp.N(val, 10)} > 0",
    )

    # Large-K expansions, eps = 1/K.
    eps = sp.Symbol("epsilon", positive=True)
    A1s, A0s = attention_A(1, gamma, L), attention_A(0, gamma, L)
    Dser = sp.series(D.subs(K, 1 / eps), eps, 0, 2).removeO()
    check_zero(
        Dser - eps * (sp.exp(beta * A1s) - sp.exp(beta * A0s)) ** 2 / 2,
        "split advantage = (e^{beta A1} - e^{beta A0})^2 / (2K) + O(1/K^2): splitting is O(1/K)",
    )
    # The toy loss and the rates are ell, ell', ell'' at margins: expand those with the margin as a
    # plain symbol M (fast and exact), then substitute the margins.
    M, Mc, Mo = sp.symbols("M M_c M_o", real=True)
    ell_ser = sp.series(logistic_loss(M, 1 / eps) + sp.log(eps), eps, 0, 2).removeO()
    check_zero(
        ell_ser - (-M + eps * sp.exp(M)), "ell(M) = log K - M + e^M / K + O(1/K^2)"
    )
    m0, m1 = toy_margins(p1, p2, beta, gamma, L)
    phi = lambda p: attention_A(p, gamma, L) + attention_A(1 - p, gamma, L)
    check_zero(
        m0 + m1 - beta * (phi(p1) + phi(p2)),
        "m_0 + m_1 = beta (phi(p_1) + phi(p_2)), phi(p) = A(p) + A(1-p)",
    )
    print(
        "  => toy loss = log K - (beta/2)(phi(p1) + phi(p2)) + (e^{m0} + e^{m1})/(2K) + O(1/K^2): "
        "to first order each head maximizes phi"
    )
    check_zero(
        sp.diff(phi(p1), p1, 2)
        - attention_A2(p1, gamma, L)
        - attention_A2(1 - p1, gamma, L),
        "phi'' = A''(p) + A''(1-p) > 0 where A is convex: p = 1/2 a minimum of phi, hence unstable",
    )
    gain_M = sp.series(
        logistic_loss(Mc, 1 / eps) - logistic_loss(Mo, 1 / eps), eps, 0, 1
    ).removeO()
    check_zero(gain_M - (Mo - Mc), "ell(M_c) - ell(M_o) = M_o - M_c + O(1/K)")
    center = loss.subs(half)
    check_zero(
        center - logistic_loss(2 * beta * attention_A(sp.Rational(1, 2), gamma, L), K),
        "loss(1/2, 1/2) = ell(2 beta A(1/2))",
    )
    check_zero(
        beta * (attention_A(1, gamma, L) + attention_A(0, gamma, L))
        - 2 * beta * attention_A(sp.Rational(1, 2), gamma, L)
        - sharpening_gain(beta, gamma, L),
        "so loss(1/2,1/2) - loss(opposite corners) = beta (A1 + A0 - 2 A(1/2)) + "
        "O(1/K): sharpening is O(1)",
    )
    gain_u = sp.factor(sub_u(sharpening_gain(beta, gamma, L)))
    check_zero(
        gain_u - beta * n * (n - u) * (u - 1) ** 2 / ((n + 1) * (n + u) * (n + u**2)),
        "sharpening gain = beta n (n - u)(u - 1)^2 / ((n+1)(n+u)(n+u^2)), u = "
        "e^{gamma/2}: > 0 iff e^{gamma/2} < L-1",
    )
    d1_ser = sp.series(-logistic_loss_d1(M, 1 / eps), eps, 0, 2).removeO()
    check_zero(d1_ser - (1 - eps * sp.exp(M)), "-ell'(M) = 1 - e^M / K + O(1/K^2)")
    d2_ser = sp.series(logistic_loss_d2(M, 1 / eps), eps, 0, 2).removeO()
    check_zero(d2_ser - eps * sp.exp(M), "ell''(M) = e^M / K + O(1/K^2)")
    m_half = 2 * beta * attention_A(sp.Rational(1, 2), gamma, L)
    check_zero(
        anti / (-logistic_loss_d1(m_half, K))
        - beta * attention_A2(sp.Rational(1, 2), gamma, L) / 16,
        "antisymmetric rate = -ell'(2 beta A(1/2)) * beta A''(1/2) / 16",
    )
    check_zero(
        (anti - sym) / logistic_loss_d2(m_half, K)
        - beta**2 * attention_A1(sp.Rational(1, 2), gamma, L) ** 2 / 8,
        "antisymmetric - symmetric rate = ell''(2 beta A(1/2)) * beta^2 A'(1/2)^2 / 8",
    )
    print(
        "  => antisymmetric rate = beta A''(1/2)/16 + O(1/K) (sharpening rate O(1)); "
        "antisymmetric - symmetric"
        " = beta^2 A'(1/2)^2 e^{2 beta A(1/2)} / (8K) + O(1/K^2) (splitting O(1/K))"
    )


if __name__ == "__main__":
    run(main)
