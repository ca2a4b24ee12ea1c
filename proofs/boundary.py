"""The boundary phase of docs/theory.md §10, checked symbolically on the literal windowed model.

Positions t = 0..T-1 on a cycle (T = L S); entry l holds positions l S + o (mod T), o = 0..W-1;
embeddings with Gram matrix <x_i, x_j> = kappa + 1{i = j}; H heads with shared gates pK_h,
pV_h (generic
simplex points: every entry a free symbol, the last one 1 - the others). For the boundary query
t = S - 1 (phase S-1), target S:
  1. W = S: the target's logit equals that of the token at offset 0 of every entry l not in {0, 1}
     (L >= 3): a tie, so top-1 fails; and it never exceeds the logit of the token at offset 0 of
     the query's own entry (the difference is beta sum_h pV_h(0) (e^{gamma pK_h(S-1)} - 1) /
     Z_h >= 0),
     so top-1 fails for L = 2 too. A rotated shared gate is a shared gate: every rotation is
     covered.
  2. W >= S + 1: with every head on key offset S-1, value offset S, the target's logit exceeds every
     other token's by a positive amount (for all gamma, beta > 0): the boundary phase is answered.
Checked for (L, S, H) in {2, 3, 4} x {2, 3, 4} x {1, 2} (claim 1) and, for (L, S, H) in
{(2, 2, 1), (3, 3, 2), (4, 3, 1)}, every W in S+1..min(2S+1, LS) (claim 2).

Run: `python proofs/boundary.py` (exit 1 if a check fails). Derivation: proofs/README.md §7.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sympy as sp

from proofs._check import ProofError, check, check_positive, check_zero, run

kappa, gamma, beta = sp.symbols("kappa gamma beta", positive=True)


def simplex(name: str, n: int) -> list:
    """A generic point of the simplex in R^n: n-1 free nonnegative symbols and 1 - their sum."""
    free = [sp.Symbol(f"{name}_{r}", nonnegative=True) for r in range(n - 1)]
    return free + [1 - sum(free)]


def logits(L: int, S: int, W: int, key: list, value: list, t: int) -> list:
    """Logits of every context position for the query at position t, from the Gram matrix alone.

    Score of entry l for head h: gamma <x_t, k_{h,l}> = gamma sum_o pK_h(o) (kappa + 1{lS + o = t});
    a_{h,.} = softmax over l; logit of position u: beta sum_h sum_l a_{h,l} <x_u, v_{h,l}>.
    """
    T = L * S
    pos = [[(l * S + o) % T for o in range(W)] for l in range(L)]
    out = [0] * T
    for pK, pV in zip(key, value):
        scores = [
            gamma
            * sum(pK[o] * (kappa + (1 if pos[l][o] == t else 0)) for o in range(W))
            for l in range(L)
        ]
        Z = sum(sp.exp(s) for s in scores)
        a = [sp.exp(s) / Z for s in scores]
        for u in range(T):
            out[u] += beta * sum(
                a[l]
                * sum(pV[o] * (kappa + (1 if pos[l][o] == u else 0)) for o in range(W))
                for l in range(L)
            )
    return out


def claim_w_equals_s(L: int, S: int, H: int) -> None:
    key = [simplex(f"k{h}", S) for h in range(H)]
    value = [simplex(f"v{h}", S) for h in range(H)]
    z = logits(L, S, S, key, value, S - 1)
    target = z[S]
    if L >= 3:
        for l in range(2, L):
            check_zero(
                target - z[l * S],
                f"L={L} S={S} H={H} W=S: boundary target ties with offset 0 of entry {l}",
            )
    # own entry's offset-0 token minus the target: a sum of nonnegative terms
    y = sp.symbols(f"y0:{H}", nonnegative=True)  # e^{gamma pK_h(S-1)} - 1 >= 0
    claimed = 0
    for h in range(H):
        e = sp.exp(gamma * key[h][S - 1])
        claimed += beta * value[h][0] * (e - 1) / (e + L - 1)
    check_zero(
        z[0] - target - claimed,
        f"L={L} S={S} H={H} W=S: own offset-0 logit - target = beta sum_h "
        "pV_h(0)(e^(gamma pK_h(S-1)) - 1)/Z_h",
    )
    as_y = claimed.subs({sp.exp(gamma * key[h][S - 1]): 1 + y[h] for h in range(H)})
    as_y = as_y.subs(
        {value[h][0]: sp.Symbol(f"v{h}_0nn", nonnegative=True) for h in range(H)}
    )
    if sp.simplify(as_y).is_nonnegative is not True:
        raise ProofError(f"cannot prove {as_y} >= 0")
    print(
        f"  ok: L={L} S={S} H={H} W=S: that difference is >= 0 (target never strictly top-1)"
    )


def claim_wider_window(L: int, S: int, W: int, H: int) -> None:
    eye = lambda r: [1 if o == r else 0 for o in range(W)]
    z = logits(L, S, W, [eye(S - 1)] * H, [eye(S)] * H, S - 1)
    y = sp.Symbol("y", positive=True)  # e^gamma - 1 > 0
    for u in range(L * S):
        if u == S:
            continue
        margin = sp.simplify(z[S] - z[u]).subs(sp.exp(gamma), 1 + y)
        margin = sp.factor(sp.simplify(margin))
        check_positive(margin, f"L={L} S={S} W={W} H={H}: target S beats position {u}")


def main() -> None:
    print(
        "1. W = S: the boundary target is tied (L >= 3) and dominated by the own entry's offset 0"
    )
    for L in (2, 3, 4):
        for S in (2, 3, 4):
            for H in (1, 2):
                claim_w_equals_s(L, S, H)
    print("2. W >= S+1: heads on key S-1, value S answer the boundary phase")
    for L, S, H in ((2, 2, 1), (3, 3, 2), (4, 3, 1)):
        for W in range(S + 1, min(2 * S + 1, L * S) + 1):
            claim_wider_window(L, S, W, H)
    check(True, "boundary claims of docs/theory.md §10 verified on every listed shape")


if __name__ == "__main__":
    run(main)
