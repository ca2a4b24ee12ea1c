"""Linearization of the reduced flow at the uniform point b = 0 (docs/theory.md §6), in closed form.

Lbar(b) is the §4 closed form at p = softmax(b) (per head and branch). With u = 1/S, a = A(u),
abar = (1-a)/(L-1), A1 = A'(u), A2 = A''(u), e1 = exp(beta H a u), e2 = exp(beta H abar u),
Z = N - LS + S e1 + (L-1) S e2, D = (e1-e2)/Z - u, E = u (e1 + e2/(L-1))/Z - ((e1-e2)/Z)^2,
G = (a^2 e1 + (L-1) abar^2 e2)/Z, c = u^2/(S-1). Checked symbolically in beta, gamma, L, N (symbols)
for (S, H) in {(3, 2), (4, 1)} (larger shapes: tests/test_rates.py, autodiff):

  1. b = 0 is NOT a critical point: dLbar/db at 0 is c beta A1 D on key offsets 0..S-2,
     -(S-1) c beta A1 D on key offset S-1, -c beta a on value offsets 1..S-1 and (S-1) c beta a on
     value offset 0 (the same for every head): key mass leaves offset S-1, value mass offset 0;
  2. on a symmetry-breaking mode (key logits x e on offsets 0..S-2, value logits y e' on 1..S-1, e a
     zero-sum vector, e' = e shifted by one offset; equal over heads = sym, zero-sum over
     heads = anti)
     the Hessian acts as the 2x2 matrices
        M_anti = c [[beta (A1 + A2) D, -beta A1], [-beta A1, -beta a]],
        M_sym  = M_anti + c diag(H beta^2 A1^2 E, H beta^2 (S-1) G):
     Hess z_x = M11 z_x + M21 z_y and Hess z_y = M12 z_x + M22 z_y exactly (the mode plane is
     invariant, so its eigenvalues are eigenvalues of the Hessian);
  3. the Jacobian of db/dt = -(kappa + 1/N) grad Lbar is -(kappa + 1/N) Hess, so the growth
     rates are
     -(kappa + 1/N) times the eigenvalues of M; M_anti has a negative eigenvalue (an unstable mode)
     whenever D < 0 and A1 + A2 > 0 (proved: its two diagonal entries are then negative).

`inductheory.flow._rates.escape_blocks` implements these matrices; tests/test_rates.py
compares them with
the autodiff Jacobian of `ReducedDynamics.vector_field`.
Run: `python proofs/escape_rate.py` (exit 1 if a check fails). Derivation: proofs/README.md §8.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sympy as sp

from proofs._check import check, check_positive, check_zero, run

beta, gamma, L, N = sp.symbols("beta gamma L N", positive=True)
tau = sp.Symbol("tau", real=True)
# The second-order jet of A at u = 1/S: the loss's Hessian at b = 0 only sees A(u), A'(u),
# A''(u), so
# A is replaced by its quadratic Taylor polynomial with symbolic coefficients a, A1, A2
# (exact here).
a, A1, A2 = sp.symbols("a A1 A2", positive=True)
e1, e2 = sp.symbols("e1 e2", positive=True)  # exp(beta H a u), exp(beta H abar u)


def reduced_loss(b, S: int, H: int, A):
    """Lbar(b) of docs/theory.md §4 with p = softmax(b) and attention A(w); b[h][B][r] sympy
    expressions."""
    p = [
        [
            [
                sp.exp(b[h][B][r]) / sum(sp.exp(b[h][B][s]) for s in range(S))
                for r in range(S)
            ]
            for B in range(2)
        ]
        for h in range(H)
    ]
    total = 0
    for q in range(S - 1):
        alpha = [A(p[h][0][q]) for h in range(H)]
        abar = [(1 - al) / (L - 1) for al in alpha]
        own = [beta * sum(alpha[h] * p[h][1][r] for h in range(H)) for r in range(S)]
        other = [beta * sum(abar[h] * p[h][1][r] for h in range(H)) for r in range(S)]
        Z = (
            (N - L * S)
            + sum(sp.exp(s) for s in own)
            + (L - 1) * sum(sp.exp(s) for s in other)
        )
        total += sp.log(Z) - own[q + 1]
    return total / (S - 1)


def constants(S: int, H: int, a=a, A1=A1, A2=A2, e1=e1, e2=e2):
    """(u, D, E, G, c) of the module docstring, in terms of a, e1, e2."""
    u = sp.Rational(1, S)
    abar = (1 - a) / (L - 1)
    Z = N - L * S + S * e1 + (L - 1) * S * e2
    D = (e1 - e2) / Z - u
    E = u * (e1 + e2 / (L - 1)) / Z - ((e1 - e2) / Z) ** 2
    G = (a**2 * e1 + (L - 1) * abar**2 * e2) / Z
    return u, D, E, G, u**2 / (S - 1)


def blocks(S: int, H: int, a=a, A1=A1, A2=A2, e1=e1, e2=e2):
    """(M_sym, M_anti) of the module docstring (pass a = A(u), A1 = A'(u), ... for the
    explicit form)."""
    u, D, E, G, c = constants(S, H, a, A1, A2, e1, e2)
    anti = c * sp.Matrix([[beta * (A1 + A2) * D, -beta * A1], [-beta * A1, -beta * a]])
    sym = anti + c * sp.diag(H * beta**2 * A1**2 * E, H * beta**2 * (S - 1) * G)
    return sym, anti


def _at_uniform(expr, S: int, H: int):
    """expr at b = 0 with exp(beta H a u) -> e1, exp(beta H abar u) -> e2, as a rational
    function."""
    u = sp.Rational(1, S)
    targets = {e1: beta * H * a * u, e2: beta * H * (1 - a) / (L - 1) * u}

    def name(arg):
        for sym, target in targets.items():
            if sp.cancel(arg - target) == 0:
                return sym
        raise ValueError(f"unexpected exponential exp({arg})")

    return sp.cancel(expr.replace(sp.exp, lambda arg: name(arg)))


def check_shape(S: int, H: int) -> None:
    print(f"(S, H) = ({S}, {H}):")
    u = sp.Rational(1, S)
    A = lambda w: a + A1 * (w - u) + A2 / 2 * (w - u) ** 2
    syms = [
        [[sp.Symbol(f"b_{h}{B}{r}", real=True) for r in range(S)] for B in range(2)]
        for h in range(H)
    ]
    flat = [s for h in syms for B in h for s in B]
    sigma = sp.Symbol("sigma", real=True)

    def along(*directions):
        """Lbar on the plane b = sigma d_1 + tau d_2 (a univariate or bivariate function)."""
        point = [
            sum(coef * d[i] for coef, d in zip((sigma, tau), directions))
            for i in range(len(flat))
        ]
        nested = [
            [[point[(h * 2 + B) * S + r] for r in range(S)] for B in range(2)]
            for h in range(H)
        ]
        return reduced_loss(nested, S, H, A)

    unit = [[1 if j == i else 0 for j in range(len(flat))] for i in range(len(flat))]
    _, D, E, G, c = constants(S, H)

    # 1. the gradient at the uniform point: dLbar/db_j = d/dsigma Lbar(sigma e_j) at 0
    key = [c * beta * A1 * D] * (S - 1) + [-(S - 1) * c * beta * A1 * D]
    value = [(S - 1) * c * beta * a] + [-c * beta * a] * (S - 1)
    expected = [g for _ in range(H) for g in key + value]
    for s, ej, ex in zip(flat, unit, expected):
        g = sp.diff(along(ej), sigma).subs(sigma, 0)
        check_zero(
            _at_uniform(g, S, H) - ex,
            f"dLbar/d{s} at b = 0 (the uniform point is not critical)",
            simplifier=sp.cancel,
        )

    # 2. the Hessian on the mode planes: (Hess z)_j = d^2/dsigma dtau Lbar(sigma z + tau e_j) at 0
    e = [sp.Integer(1), sp.Integer(-1)] + [sp.Integer(0)] * (
        S - 3
    )  # a zero-sum vector on S-1 phases
    head_patterns = {"sym": [1] * H}
    if H >= 2:
        head_patterns["anti"] = [1, -1] + [0] * (H - 2)
    M_sym, M_anti = blocks(S, H)
    for name, w in head_patterns.items():
        M = M_sym if name == "sym" else M_anti
        fx = [
            w[h] * e[r] if (B == 0 and r < S - 1) else 0
            for h in range(H)
            for B in range(2)
            for r in range(S)
        ]
        fy = [
            w[h] * e[r - 1] if (B == 1 and r >= 1) else 0
            for h in range(H)
            for B in range(2)
            for r in range(S)
        ]
        check(
            sum(v**2 for v in fx) == sum(v**2 for v in fy),
            f"{name} mode: |z_x| = |z_y|",
        )
        for label, z, (cx, cy) in (
            ("x", fx, (M[0, 0], M[1, 0])),
            ("y", fy, (M[0, 1], M[1, 1])),
        ):
            # |z_x| = |z_y|, so M (orthonormal basis) acts on z_x, z_y with the same entries
            for s, ej, vx, vy in zip(flat, unit, fx, fy):
                hz = sp.diff(along(z, ej), sigma, tau).subs({sigma: 0, tau: 0})
                check_zero(
                    _at_uniform(hz, S, H) - cx * vx - cy * vy,
                    f"{name} mode: (Hess z_{label})[{s}] = "
                    f"(M{'11' if label == 'x' else '12'} z_x + "
                    f"M{'21' if label == 'x' else '22'} z_y)[{s}]",
                    simplifier=sp.cancel,
                )


def main() -> None:
    for S, H in ((3, 2), (4, 1)):
        check_shape(S, H)
    # 3. sign of the antisymmetric block, for every S, L, N >= LS: D < 0 since u Z - (e1 - e2) =
    # u (N - LS) + L e2 > 0; A' + A'' = gamma a (1-a) (1 + gamma (1 - 2a)) > 0 for a < 1/2,
    # which holds
    #    when e^{gamma u} < L - 1 (e.g. gamma <= 1, L >= 4); so tr M_anti < 0 and lambda_min < 0.
    S, n_out, x = sp.symbols(
        "S n_out x", positive=True
    )  # n_out = N - LS >= 0 (taken > 0 here)
    u = 1 / S
    Z = n_out + S * e1 + (L - 1) * S * e2
    check_zero(
        sp.expand(u * Z - (e1 - e2) - (u * n_out + L * e2)),
        "u Z - (e1 - e2) = u (N - LS) + L e2",
    )
    check_positive(u * n_out + L * e2, "hence D = (e1 - e2)/Z - u < 0")
    A_of = x / (x + L - 1)  # a = A(u) with x = e^{gamma u}
    half_gap = sp.cancel(1 - 2 * A_of)
    check_zero(
        half_gap - (L - 1 - x) / (x + L - 1),
        "1 - 2a = (L - 1 - e^{gamma u}) / (e^{gamma u} + L - 1) "
        "> 0 when e^{gamma u} < L - 1",
    )
    Dn, c0 = sp.symbols("Dn c0", positive=True)  # D = -Dn, c0 = u^2/(S-1)
    anti = c0 * sp.Matrix(
        [[beta * (A1 + A2) * -Dn, -beta * A1], [-beta * A1, -beta * a]]
    )
    check_positive(-anti.trace(), "tr M_anti < 0 for D < 0 and a, A', A'' > 0")
    lam_min = anti.trace() / 2 - sp.sqrt(anti.trace() ** 2 / 4 - anti.det())
    check_zero(
        sp.expand(
            (anti.trace() / 2 - lam_min) ** 2 - (anti.trace() ** 2 / 4 - anti.det())
        ),
        "lambda_min(M) = tr/2 - sqrt(tr^2/4 - det)",
    )
    check_zero(
        sp.expand(
            anti.trace() ** 2 / 4
            - anti.det()
            - ((anti[0, 0] - anti[1, 1]) ** 2 / 4 + anti[0, 1] ** 2)
        ),
        "tr^2/4 - det = (M11 - M22)^2/4 + M12^2 >= 0 (real eigenvalues), so lambda_min "
        "<= tr/2 < 0: "
        "the antisymmetric mode is unstable, rate -(kappa + 1/N) lambda_min > 0",
    )


if __name__ == "__main__":
    run(main)
