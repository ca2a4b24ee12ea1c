"""Local boundary of Theorem 1's hard vertex (docs/theory.md §4, §7): edge derivatives in
closed form.

The vertex: head h selects r_h = h in every block (distinct heads, r_h <= S-2). The per-context loss
ell = mean over the L(S-1) queries of log(K + sum_{l,r} e^{s_{l,r}}) - s_{l*,r*+1} (§4, K =
N - LS) is
built literally (symbolic beta, u = e^gamma, K) for several (L, S, H), moved along every edge of one
head's key and value simplices (mass t from the vertex entry to entry i), and differentiated
at t = 0.
Claims (notation of proofs/README.md §6 and inductheory/_regime_boundary.py):
  1. value edge to the target i+1 of an uncovered phase: c [(A1 - A0) - P/Zc - Q/Zu], c =
     beta/(L(S-1));
  2. value edge to offset 0: the same + c A0; value edge to another head's target:
     c (A1 - A0)(1 - (E1 - Eb1)/Zc); every key edge: c gamma A1 (1 - A1)(1 - (E1 - Eb1)/Zc);
  3. the second derivative along edge 1: beta^2/(L(S-1)) sum_q a_q^2 [pi1 + pi2 - (pi2 - pi1)^2];
  4. (symbolic L, S, H) P = A1 (E1 - 1) + (L-1) Ab1 (Eb1 - 1) + (H-1)(E0 - 1) > 0, Q >= 0, so
     Phi = (A1 - A0) - P/Zc - Q/Zu increases in K; Phi Zc Zu is the quadratic of
     `hard_vertex_boundary`;
     the edges of claim 2 are > 0 for every K >= 0, and with U = 0 also the value edge to offset 0.

Run: `python proofs/regime_boundary.py` (exit 1 if a check fails). Derivation: proofs/README.md §6.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sympy as sp

from proofs._check import check_positive, check_zero, run

beta, gamma, u, K, t = sp.symbols("beta gamma u K t", positive=True)
E1, Eb1, E0 = sp.symbols("E1 Eb1 E0", positive=True)


def shape_constants(L, S, H):
    """A1, Ab1, A0 (u = e^gamma) and the closed-form ingredients Zc, Zu, P, Q (symbols E1,
    Eb1, E0)."""
    A1, Ab1, A0 = u / (u + L - 1), 1 / (u + L - 1), sp.Integer(1) / L
    Zc = K + L * (S - H) + E1 + (L - 1) * Eb1 + (H - 1) * L * E0
    Zu = K + L * (S - H) + H * L * E0
    P = A1 * E1 + (L - 1) * Ab1 * Eb1 + (H - 1) * E0 - H
    Q = (S - 1 - H) * (E0 - 1)
    return A1, Ab1, A0, Zc, Zu, P, Q


def literal_loss(L, S, H, pK, pV):
    """The per-context loss of docs/theory.md §4 from gates pK[h][l][r], pV[h][l][r] (sympy)."""
    total = 0
    for ls in range(L):
        for rs in range(S - 1):
            a = []
            for h in range(H):
                e = sp.exp(gamma * pK[h][ls][rs])
                a.append(
                    [e / (e + L - 1) if l == ls else 1 / (e + L - 1) for l in range(L)]
                )
            s = [
                [beta * sum(a[h][l] * pV[h][l][r] for h in range(H)) for r in range(S)]
                for l in range(L)
            ]
            Z = K + sum(sp.exp(s[l][r]) for l in range(L) for r in range(S))
            total += sp.log(Z) - s[ls][rs + 1]
    return total / (L * (S - 1))


def vertex_gates(L, S, H):
    eye = sp.eye(S)
    pK = [[[eye[h, r] for r in range(S)] for _ in range(L)] for h in range(H)]
    pV = [[[eye[h + 1, r] for r in range(S)] for _ in range(L)] for h in range(H)]
    return pK, pV


def moved(p, h, l, frm, to):
    """Gates with mass t moved from entry `frm` to entry `to` of simplex (h, l)."""
    q = [[list(row) for row in ph] for ph in p]
    q[h][l][frm] -= t
    q[h][l][to] += t
    return q


def at_vertex(expr, L):
    """expr at t = 0 with e^gamma -> u and the three exponentials of the vertex -> E1, Eb1, E0."""
    expr = expr.subs(t, 0).subs(sp.exp(gamma), u)
    targets = {E1: beta * u / (u + L - 1), Eb1: beta / (u + L - 1), E0: beta / L}

    def name(arg):
        for sym, value in targets.items():
            if sp.simplify(arg - value) == 0:
                return sym
        raise ValueError(f"unexpected exponential exp({arg})")

    return expr.replace(
        lambda e: isinstance(e, sp.exp) and e.args[0] != 0, lambda e: name(e.args[0])
    )


def check_shape(L, S, H):
    print(f"(L, S, H) = ({L}, {S}, {H}), heads select r_h = h")
    A1, Ab1, A0, Zc, Zu, P, Q = shape_constants(L, S, H)
    c = beta / (L * (S - 1))
    tail = 1 - (E1 - Eb1) / Zc
    pK, pV = vertex_gates(L, S, H)
    gamma_u = sp.log(u)  # gamma in terms of u, for the key edge's factor
    for h in range(H):
        l = 0
        for i in range(S):
            if i == h + 1:
                continue
            d = at_vertex(
                sp.diff(literal_loss(L, S, H, pK, moved(pV, h, l, h + 1, i)), t), L
            )
            if i == 0:
                closed, what = (
                    c * ((A1 - A0) - P / Zc - Q / Zu + A0),
                    "value edge to offset 0",
                )
            elif i - 1 < H:
                closed, what = (
                    c * (A1 - A0) * tail,
                    f"value edge to head {i - 1}'s target",
                )
            else:
                closed, what = (
                    c * ((A1 - A0) - P / Zc - Q / Zu),
                    f"value edge to the uncovered target {i}",
                )
            check_zero(
                sp.cancel(d - closed),
                f"head {h}, block {l}: {what}",
                simplifier=sp.cancel,
            )
            if i > H:  # claim 3, the curvature along the uncovered edge
                d2 = at_vertex(
                    sp.diff(literal_loss(L, S, H, pK, moved(pV, h, l, h + 1, i)), t, 2),
                    L,
                )

                def var(a, p1, p2):
                    return a**2 * (p1 + p2 - (p2 - p1) ** 2)

                curv = (
                    beta**2
                    / (L * (S - 1))
                    * (
                        var(A1, E1 / Zc, 1 / Zc)
                        + (L - 1) * var(Ab1, Eb1 / Zc, 1 / Zc)
                        + (H - 1) * L * var(A0, E0 / Zc, 1 / Zc)
                        + (S - 1 - H) * L * var(A0, E0 / Zu, 1 / Zu)
                    )
                )
                check_zero(
                    sp.cancel(d2 - curv),
                    f"head {h}, block {l}: curvature along that edge",
                    simplifier=sp.cancel,
                )
        for i in range(S):
            if i == h:
                continue
            d = at_vertex(
                sp.diff(literal_loss(L, S, H, moved(pK, h, l, h, i), pV), t), L
            )
            closed = c * gamma_u * A1 * (1 - A1) * tail
            check_zero(
                sp.cancel(d.subs(gamma, gamma_u) - closed),
                f"head {h}, block {l}: key edge to offset {i}",
                simplifier=sp.cancel,
            )


def check_general() -> None:
    print("symbolic L, S, H: sign structure and the quadratic")
    Ls, Ss, Hs = sp.symbols("L S H", positive=True)
    A1, Ab1, A0, Zc, Zu, P, Q = shape_constants(Ls, Ss, Hs)
    check_zero(
        P - (A1 * (E1 - 1) + (Ls - 1) * Ab1 * (Eb1 - 1) + (Hs - 1) * (E0 - 1)),
        "P = A1 (E1 - 1) + (L-1) Ab1 (Eb1 - 1) + (H-1)(E0 - 1) (weights A1 + (L-1) Ab1 = 1)",
    )
    # positivity with n = L - 1 > 0, m = H - 1 >= 0, E = 1 + x with x > 0 (beta > 0, A's > 0)
    n, x1, xb, x0 = sp.symbols("n x1 xb x0", positive=True)
    m = sp.Symbol("m", nonnegative=True)  # m = H - 1 >= 0
    P_pos = (u / (u + n)) * x1 + n / (u + n) * xb + m * x0
    check_positive(P_pos, "P > 0 (E1, Eb1, E0 > 1)")
    U, Zc0, Zu0 = sp.symbols("U z_c z_u", positive=True)
    a = sp.Symbol("a", positive=True)  # a = A1 - A0
    Pp, Qp = sp.symbols("P Q", positive=True)
    phi = a - Pp / (K + Zc0) - Qp / (K + Zu0)
    check_positive(sp.diff(phi, K), "dPhi/dK = P/Zc^2 + Q/Zu^2 > 0: Phi increases in K")
    quad = (
        a * K**2
        + (a * (Zc0 + Zu0) - Pp - Qp) * K
        + (a * Zc0 * Zu0 - Pp * Zu0 - Qp * Zc0)
    )
    check_zero(
        sp.cancel(phi * (K + Zc0) * (K + Zu0) - quad),
        "Phi Zc Zu = a K^2 + b K + c (hard_vertex_boundary)",
        simplifier=sp.cancel,
    )
    s = sp.Symbol("s", positive=True)  # s = u - 1 > 0 (gamma > 0)
    check_positive(
        sp.factor((A1 - A0).subs({u: 1 + s, Ls: n + 1})), "A1 - A0 > 0 for gamma > 0"
    )
    # Zc - (E1 - Eb1) = K + L(S-H) + L Eb1 + (H-1) L E0 > 0: the tail factor of claim 2 is positive
    tail_num = sp.expand(Zc - E1 + Eb1)
    check_zero(
        tail_num - (K + Ls * (Ss - Hs) + Ls * Eb1 + (Hs - 1) * Ls * E0),
        "Zc - (E1 - Eb1) = K + L(S-H) + L Eb1 + (H-1) L E0",
    )
    k = sp.Symbol("k", positive=True)  # S - H >= 1
    check_positive(
        (K + (n + 1) * k + (n + 1) * Eb1 + m * (n + 1) * E0),
        "Zc - (E1 - Eb1) > 0: value-to-other-head and key edges > 0",
    )
    # U = 0: value edge to offset 0 = c (A1 - P/Zc), and A1 Zc - P > 0
    resid = sp.expand((A1 * Zc - P).subs(Ss, Hs + 1) * (u + Ls - 1))
    wanted = sp.expand(
        (
            A1 * (K + Ls)
            + (Ls - 1) * Eb1 * (A1 - Ab1)
            + (Hs - 1) * E0 * (A1 * Ls - 1)
            + Hs
        )
        * (u + Ls - 1)
    )
    check_zero(
        resid - wanted,
        "U = 0: A1 Zc - P = A1 (K + L) + (L-1) Eb1 (A1 - Ab1) + (H-1) E0 (L A1 - 1) + H",
    )
    check_positive(
        sp.factor(((A1 - Ab1) * (u + Ls - 1)).subs({u: 1 + s})), "A1 - Ab1 > 0"
    )
    check_positive(
        sp.factor(((A1 * Ls - 1) * (u + Ls - 1)).subs({u: 1 + s, Ls: n + 1})),
        "L A1 - 1 > 0",
    )


def main() -> None:
    for shape in ((4, 4, 2), (4, 4, 1), (4, 4, 3), (5, 5, 2)):
        check_shape(*shape)
    check_general()


if __name__ == "__main__":
    run(main)
