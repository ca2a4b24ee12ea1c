"""Symmetric-subspace invariance of the linear-class flow and the reduced rate (docs/theory.md §6).

Linear gates: scores s^B_{h,l,r}(c, X) = <c^B_{h,r}, x_{X(l,r)}>, p = softmax_r(s). Under
exact geometry
the loss of a context is a function F of its scores alone (§4: tokens do not enter), the same F for
every context. Checked symbolically (x_i = sqrt(kappa) e_0 + e_i, symbolic kappa):

  1. <m, x_i> = |m|^2 = kappa + 1/N for every token i;
  2. on the subspace c^B_{h,r} = alpha_{h,B,r} m every score equals b_{h,B,r} = <c^B_{h,r},
     m>, in every
     context: the gates are static, p = softmax(b), and F is evaluated at the same point b
     in every context;
  3. hence the gradient there is grad_c sum_X sum_k g_k s_k(c, X), with g_k = dF/ds_k(b) the
     SAME symbols
     for every context (the first-order jet of an arbitrary F at b; exact, since a gradient
     at a point
     depends only on first derivatives there). With g symbolic, the population gradient (all ordered
     contexts) lies in span(m) for every (h, B, r): the subspace is invariant under dc/dt = -grad L;
  4. there db/dt = <dc/dt, m> = -(kappa + 1/N) dLbar/db with Lbar(b) = F(b, ..., b) (each b_{h,B,r}
     repeated over the blocks), i.e. the reduced flow;
  5. the same on a balanced sample (the S cyclic offset rotations of contexts) when F is
     symmetric under
     permutations of blocks (F_sym = sum over block permutations of F; true for block-shared
     gates with
     all queries enumerated), and NOT on a single unbalanced context nor for a block-asymmetric F
     (the check can fail, and does where it should).

Run: `python proofs/symmetric_flow.py` (exit 1 if a check fails). Derivation: proofs/README.md.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sympy as sp

from proofs._check import check, check_zero, run
from proofs.exact_geometry import embeddings, kappa


def _slots(H: int, L: int, S: int):
    return list(itertools.product(range(H), range(2), range(L), range(S)))


def subspace_residuals(
    H: int, L: int, S: int, N: int, contexts, *, block_symmetric: bool
):
    """Residuals of claims 3 and 4 for a sample of contexts (lists of L blocks of S token ids).

    Returns `(orth, rate)`: for each (h, B, r), the squared norm of the part of the sample gradient
    orthogonal to m, and <grad, m> - (kappa + 1/N) dLbar/db. Both must vanish identically in kappa
    and the jet symbols g.
    """
    xs = embeddings(N)
    d = N + 1
    m = sum(xs, sp.zeros(d, 1)) / N
    c = {
        (h, B, r): sp.Matrix(sp.symbols(f"c_{h}{B}{r}_0:{d}", real=True))
        for h, B, r in itertools.product(range(H), range(2), range(S))
    }
    g = {
        k: sp.Symbol(f"g_{k[0]}{k[1]}{k[2]}{k[3]}", real=True) for k in _slots(H, L, S)
    }
    perms = (
        list(itertools.permutations(range(L))) if block_symmetric else [tuple(range(L))]
    )

    def F_jet(scores):  # first-order jet of F (or of sum over block permutations of F)
        return sp.Add(
            *[
                g[(h, B, l, r)] * scores[(h, B, pi[l], r)]
                for pi in perms
                for (h, B, l, r) in scores
            ]
        )

    terms = []
    for X in contexts:
        scores = {
            (h, B, l, r): (c[(h, B, r)].T * xs[X[l][r]])[0]
            for (h, B, l, r) in _slots(H, L, S)
        }
        terms.append(F_jet(scores))
    loss = sp.Add(*terms) / len(contexts)
    b = {
        (h, B, r): sp.Symbol(f"b_{h}{B}{r}", real=True)
        for h, B, r in itertools.product(range(H), range(2), range(S))
    }
    Lbar = F_jet({(h, B, l, r): b[(h, B, r)] for (h, B, l, r) in _slots(H, L, S)})
    orth, rate = [], []
    for key in c:
        grad = sp.Matrix([sp.diff(loss, ci) for ci in c[key]])
        along = (grad.T * m)[0]
        resid = grad - along / (m.T * m)[0] * m
        orth.append(sp.cancel((resid.T * resid)[0]))
        rate.append(
            sp.cancel(along - (kappa + sp.Rational(1, N)) * sp.diff(Lbar, b[key]))
        )
    return orth, rate


def population(L: int, S: int, N: int):
    """All ordered contexts of L*S distinct tokens out of N (the exact population)."""
    return [
        [list(perm[l * S : (l + 1) * S]) for l in range(L)]
        for perm in itertools.permutations(range(N), L * S)
    ]


def rotations(contexts, S: int):
    """Each context with its S cyclic offset rotations X_j(l, r) = X(l, (r + j) mod S)."""
    return [
        [[blk[(r + j) % S] for r in range(S)] for blk in X]
        for X in contexts
        for j in range(S)
    ]


def main() -> None:
    print("symmetric-subspace invariance and reduced rate (docs/theory.md §6)")
    for N in (4, 7):
        xs = embeddings(N)
        m = sum(xs, sp.zeros(N + 1, 1)) / N
        check(
            all(sp.expand((m.T * x)[0] - kappa - sp.Rational(1, N)) == 0 for x in xs),
            f"<m, x_i> = kappa + 1/N (N={N})",
        )
        check_zero(
            (m.T * m)[0] - kappa - sp.Rational(1, N), f"|m|^2 = kappa + 1/N (N={N})"
        )
        al = sp.Symbol("alpha", real=True)
        check(
            all(sp.expand(((al * m).T * x)[0] - ((al * m).T * m)[0]) == 0 for x in xs),
            f"c = alpha m gives <c, x_i> = <c, m> = b for every token (N={N}): static "
            "gates, same F-point in every context",
        )

    for H, L, S, N in ((1, 2, 2, 5), (2, 2, 2, 5), (1, 2, 3, 6)):
        tag = f"H={H}, L={L}, S={S}, N={N}"
        pop = population(L, S, N)
        orth, rate = subspace_residuals(H, L, S, N, pop, block_symmetric=False)
        check(
            all(o == 0 for o in orth),
            f"population gradient on span(m) lies in span(m), any F ({tag}, {len(pop)} contexts)",
        )
        check(
            all(r == 0 for r in rate),
            f"reduced flow db/dt = -(kappa + 1/N) dLbar/db, any F ({tag})",
        )

    H, L, S, N = 1, 2, 2, 4
    base = [[[0, 1], [2, 3]]]
    balanced = rotations(base, S)
    orth, rate = subspace_residuals(H, L, S, N, balanced, block_symmetric=True)
    check(
        all(o == 0 for o in orth),
        "balanced sample (cyclic offset rotations), block-symmetric F: gradient in span(m)",
    )
    check(
        all(r == 0 for r in rate),
        "balanced sample, block-symmetric F: db/dt = -(kappa + 1/N) dLbar/db",
    )
    H, L, S, N = 1, 3, 3, 9
    base = [[[0, 1, 2], [3, 4, 5], [6, 7, 8]]]
    orth, rate = subspace_residuals(
        H, L, S, N, rotations(base, S), block_symmetric=True
    )
    check(
        all(o == 0 for o in orth) and all(r == 0 for r in rate),
        "balanced sample L=3, S=3, N=9 (3 rotations of a context), block-symmetric F: "
        "invariance and reduced rate",
    )
    orth, _ = subspace_residuals(1, 2, 2, 4, [[[0, 1], [2, 3]]], block_symmetric=True)
    check(
        any(o != 0 for o in orth),
        "a single unbalanced context: the gradient leaves span(m) (invariance needs balance)",
    )
    orth, _ = subspace_residuals(1, 2, 2, 4, balanced, block_symmetric=False)
    check(
        any(o != 0 for o in orth),
        "balanced sample with a block-asymmetric F: the gradient leaves span(m)",
    )


if __name__ == "__main__":
    run(main)
