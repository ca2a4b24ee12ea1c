"""Coordination's threshold lambda*: edge derivatives of the overlap-penalized loss at shared hard
selections whose heads may share an offset (docs/theory.md §4, §10; coordination objective).

The selection: head h has pK_h = e_{r_h}, pV_h = e_{r_h+1} in every block (shared gates, W = S),
n_r heads with key offset r, m_o = n_{o-1} heads with value offset o (m_0 = 0). The objective is
J = (1/P) sum_p CE_p + lambda sum_{h != h'} <pK_h, pK_h'> over the P query phases (within: 0..S-2;
all: 0..S-1 on the cycle, the boundary phase's target at offset 0 of the next block). Here J is
built literally from §4 (every block and query of one context written out, symbolic beta,
u = e^gamma, K = N - LS, lambda), moved along every edge of every head's key and value simplex
(mass t from the vertex entry to entry o) and differentiated at t = 0. Claims (notation of
proofs/README.md §9 and `inductheory.experiments.selection_edges`):
  1. key edge of head h at r (n = n_r) to any o != r: k(n) + 2 lambda (n_o - n_r + 1),
     k(n) = (gamma beta / P) A1 (1 - A1) [1 - (e^{beta n A1} - e^{beta n Ab1})/Z_r];
  2. value edge of head h at r to o != r+1: (beta/P) [pi_r(o) - A1 pi_own - (L-1) Ab1 pi_oth
     + A1 + (1/L) sum_{p != r} (C_p(o) - 1{o = t_p} - C_p(r+1))];
  3. the loss side of claim 1 is > 0 (symbolic L, n, beta, K), so lambda enters only through
     2 lambda (n_o - n_r + 1): lambda* = min_{n_r >= 2} k(n_r) / (2 (n_r - 1 - min_o n_o));
  4. numerically (float64, several settings): the library's closed form equals jax autodiff of the
     library's penalized objective `Objective("mean", coordination=lambda)` of `phase_losses`, and
     the sympy derivatives of claims 1-2 at the same numbers.

Run: `python proofs/coordination_threshold.py` (exit 1 if a check fails). Derivation:
proofs/README.md §9.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sympy as sp

from proofs._check import check, check_positive, check_zero, run

beta, u, K, lam, t = sp.symbols("beta u K lambda t", positive=True)


def literal_objective(L, S, H, pK, pV, queries):
    """J of the module docstring from shared gates pK[h][o], pV[h][o] (sympy), blocks written out.

    A query at (l*, p) attends block l with e^{gamma pK_h(p) 1{l = l*}} / (e^{gamma pK_h(p)} +
    L - 1) (e^gamma = u, so e^{gamma w} = u^w); token (l, o) has logit
    beta sum_h a_{h,l} pV_h(o); the K tokens outside have logit 0. The target is (l*, p+1), or
    (l*+1 mod L, 0) at the boundary phase.
    """
    phases = range(S - 1) if queries == "within" else range(S)
    total = 0
    for ls in range(L):
        for p in phases:
            a = []
            for h in range(H):
                e = u ** pK[h][p]
                a.append([(e if l == ls else 1) / (e + L - 1) for l in range(L)])
            s = [
                [beta * sum(a[h][l] * pV[h][o] for h in range(H)) for o in range(S)]
                for l in range(L)
            ]
            Z = K + sum(sp.exp(s[l][o]) for l in range(L) for o in range(S))
            target = s[ls][p + 1] if p <= S - 2 else s[(ls + 1) % L][0]
            total += sp.log(Z) - target
    overlap = sum(
        pK[h][o] * pK[g][o]
        for h in range(H)
        for g in range(H)
        if g != h
        for o in range(S)
    )
    return total / (L * len(phases)) + lam * overlap


def closed_form_edges(L, S, offsets, queries):
    """The closed forms of claims 1 and 2 (sympy), as dicts {(h, o): expression}."""
    n = [sum(1 for r in offsets if r == o) for o in range(S)]
    m = [0] + n[:-1]
    A1 = u / (u + L - 1)
    Ab1 = 1 / (u + L - 1)
    gamma = sp.log(u)
    phases = list(range(S - 1)) if queries == "within" else list(range(S))
    P = len(phases)
    col, own, oth, target = {}, {}, {}, {}
    for p in phases:
        shared = [sp.exp(beta * sp.Rational(m[o], L)) for o in range(S)]
        if p <= S - 2:
            e_own, e_oth = sp.exp(beta * n[p] * A1), sp.exp(beta * n[p] * Ab1)
            Z = (
                K
                + sum(L * shared[o] for o in range(S) if o != p + 1)
                + e_own
                + (L - 1) * e_oth
            )
            own[p], oth[p] = e_own / Z, e_oth / Z
            col[p] = [L * shared[o] / Z for o in range(S)]
            col[p][p + 1] = own[p] + (L - 1) * oth[p]
            target[p] = p + 1
        else:
            Z = K + sum(L * shared[o] for o in range(S))
            col[p] = [L * shared[o] / Z for o in range(S)]
            target[p] = 0
    key, value = {}, {}
    for h, r in enumerate(offsets):
        k = gamma * beta / P * A1 * (1 - A1) * (1 - (own[r] - oth[r]))
        for o in range(S):
            if o != r:
                key[h, o] = k + 2 * lam * (n[o] - n[r] + 1)
            if o != r + 1:
                rest = sum(
                    col[p][o] - (1 if o == target[p] else 0) - col[p][r + 1]
                    for p in phases
                    if p != r
                )
                value[h, o] = (
                    beta
                    / P
                    * (
                        col[r][o] / L
                        - A1 * own[r]
                        - (L - 1) * Ab1 * oth[r]
                        + A1
                        + rest / L
                    )
                )
    return key, value


def vertex(S, offsets):
    eye = sp.eye(S)
    pK = [[eye[r, o] for o in range(S)] for r in offsets]
    pV = [[eye[r + 1, o] for o in range(S)] for r in offsets]
    return pK, pV


def moved(p, h, frm, to):
    q = [list(row) for row in p]
    q[h][frm] -= t
    q[h][to] += t
    return q


def _exps_to_symbols(expr, table):
    """Every exp(arg) of `expr` as a symbol, one per distinct (simplified) argument, so that
    `cancel` compares rational functions of the exponentials."""

    def name(e):
        arg = sp.factor(sp.simplify(e.args[0]))
        for known, sym in table.items():
            if sp.simplify(known - arg) == 0:
                return sym
        table[arg] = sp.Symbol(f"E{len(table)}", positive=True)
        return table[arg]

    return expr.replace(lambda e: isinstance(e, sp.exp), name)


def edge_derivatives(L, S, offsets, queries):
    """The literal first derivatives at t = 0 along every key and value edge: {(h, o): expr}."""
    H = len(offsets)
    pK, pV = vertex(S, offsets)
    key, value = {}, {}
    for h, r in enumerate(offsets):
        for o in range(S):
            if o != r:
                J = literal_objective(L, S, H, moved(pK, h, r, o), pV, queries)
                key[h, o] = sp.diff(J, t).subs(t, 0)
            if o != r + 1:
                J = literal_objective(L, S, H, pK, moved(pV, h, r + 1, o), queries)
                value[h, o] = sp.diff(J, t).subs(t, 0)
    return key, value


def check_selection(L, S, offsets, queries):
    print(f"(L, S) = ({L}, {S}), key offsets {offsets}, queries {queries}")
    literal_key, literal_value = edge_derivatives(L, S, offsets, queries)
    closed_key, closed_value = closed_form_edges(L, S, offsets, queries)
    table = {}
    for kind, lit, closed in (
        ("key", literal_key, closed_key),
        ("value", literal_value, closed_value),
    ):
        for (h, o), d in lit.items():
            diff = _exps_to_symbols(sp.expand_log(d - closed[h, o], force=True), table)
            check_zero(
                diff, f"head {h}: {kind} edge to offset {o}", simplifier=sp.cancel
            )
    return literal_key, literal_value


def check_general() -> None:
    print("symbolic L, n, beta, K: the key edge's loss side is > 0")
    Ls, n = sp.symbols("L n", positive=True)  # n >= 1 heads at r
    x = sp.Symbol("x", positive=True)  # L - 1 > 0
    A1 = u / (u + x)
    Ab1 = 1 / (u + x)
    E1, Eb1 = sp.exp(beta * n * A1), sp.exp(beta * n * Ab1)
    R = sp.Symbol(
        "R", positive=True
    )  # Z_r - K - e^{beta n A1} - (L-1) e^{beta n Ab1} >= L > 0
    Z = K + R + E1 + x * Eb1
    # 1 - (E1 - Eb1)/Z = (K + R + (L-1+1) Eb1)/Z = (K + R + L Eb1)/Z
    check_zero(
        sp.cancel(1 - (E1 - Eb1) / Z - (K + R + (x + 1) * Eb1) / Z),
        "1 - (e^{beta n A1} - e^{beta n Ab1})/Z_r = (Z_r - e^{beta n A1} + e^{beta n Ab1})/Z_r",
    )
    s = sp.Symbol("s", positive=True)  # u = 1 + s > 1 (gamma > 0)
    k = (
        sp.log(1 + s)
        * beta
        * (A1 * (1 - A1)).subs(u, 1 + s)
        * (K + R + (x + 1) * Eb1)
        / Z
    )
    check_positive(sp.factor(k.subs(u, 1 + s)), "gamma beta A1 (1 - A1) [...] > 0")
    # the penalty side 2 lambda (n_o - n_r + 1) is linear in lambda and < 0 only for n_o < n_r - 1
    no, nr = sp.symbols("n_o n_r", integer=True, nonnegative=True)
    slope = 2 * (no - nr + 1)
    check_zero(
        sp.solve(sp.Eq(k + lam * slope, 0), lam)[0] - k / (2 * (nr - 1 - no)),
        "the key edge vanishes at lambda = k / (2 (n_r - 1 - n_o))",
    )


def check_autodiff(numeric) -> None:
    """Claim 4: the library's closed form against jax autodiff and the sympy derivatives."""
    print(
        "float64: library closed form vs jax autodiff of the penalized objective, vs sympy"
    )
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    from inductheory.experiments._mitigations import selection_edges
    from inductheory.model._gates import SharedGates
    from inductheory.model._loss import phase_losses
    from inductheory.model._objective import Objective
    from inductheory.model._task import quiet_task

    settings = [
        (dict(L=12, S=4, H=3, N=4096, beta=4.0), "within", (0, 0, 1), 0.1),
        (dict(L=12, S=4, H=3, N=4096, beta=4.0), "all", (1, 1, 1), 0.05),
        (dict(L=8, S=4, H=3, N=4096, beta=4.0), "within", (2, 2, 0), 0.2),
        (dict(L=12, S=4, H=2, N=4096, beta=4.0), "within", (1, 1), 0.0),
        (dict(L=5, S=5, H=3, N=60, beta=9.0, gamma=0.7), "within", (1, 3, 1), 0.37),
        (dict(L=4, S=6, H=4, N=40, beta=2.5, gamma=0.4), "all", (0, 0, 4, 4), 1.3),
    ]
    for params, queries, offsets, lam_value in settings:
        task = quiet_task(**params, queries=queries)
        H, W = task.H, task.W
        r = np.asarray(offsets)
        eye = np.eye(W)

        def J(k, v, task=task, lam_value=lam_value):
            gates = SharedGates(key=k, value=v)
            return Objective("mean", coordination=lam_value)(
                phase_losses(task, gates), k
            )

        gk, gv = jax.grad(J, argnums=(0, 1))(
            jnp.asarray(eye[r]), jnp.asarray(eye[r + 1])
        )
        gk, gv = np.asarray(gk), np.asarray(gv)
        auto_key = gk - gk[np.arange(H), r][:, None]
        auto_value = gv - gv[np.arange(H), r + 1][:, None]
        edges = selection_edges(task, offsets, lam_value)
        own_k = np.arange(W)[None] == r[:, None]
        own_v = np.arange(W)[None] == r[:, None] + 1
        err = max(
            np.max(np.abs(np.where(own_k, 0, auto_key - np.nan_to_num(edges.key)))),
            np.max(np.abs(np.where(own_v, 0, auto_value - np.nan_to_num(edges.value)))),
        )
        scale = max(np.nanmax(np.abs(edges.key)), np.nanmax(np.abs(edges.value)))
        check(
            bool(err <= 1e-12 * max(1.0, scale)),
            f"{params} {queries} {offsets} lambda={lam_value}: closed form = autodiff "
            f"(max error {err:.1e})",
        )
    for (L, S, offsets, queries), (lit_key, lit_value) in numeric.items():
        task = quiet_task(
            L=L, S=S, H=len(offsets), N=L * S + 7, beta=3.0, gamma=0.8, queries=queries
        )
        lam_value = 0.25
        edges = selection_edges(task, offsets, lam_value)
        at = {beta: 3.0, u: np.exp(0.8), K: 7.0, lam: lam_value}
        err = 0.0
        for (h, o), d in lit_key.items():
            err = max(err, abs(float(d.subs(at)) - edges.key[h, o]))
        for (h, o), d in lit_value.items():
            err = max(err, abs(float(d.subs(at)) - edges.value[h, o]))
        check(
            bool(err <= 1e-12),
            f"(L, S) = ({L}, {S}) {offsets} {queries}: sympy edges = library at beta=3, "
            f"gamma=0.8, K=7, lambda=0.25 (max error {err:.1e})",
        )


def main() -> None:
    numeric = {}
    for L, S, offsets, queries in (
        (4, 3, (0, 0), "within"),
        (4, 4, (0, 0, 1), "within"),
        (4, 4, (1, 1, 1), "within"),
        (4, 4, (2, 2), "all"),
    ):
        numeric[L, S, offsets, queries] = check_selection(L, S, offsets, queries)
    check_general()
    check_autodiff(numeric)


if __name__ == "__main__":
    run(main)
