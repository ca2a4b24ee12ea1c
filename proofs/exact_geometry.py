"""Exact-geometry reduction of docs/theory.md §4, checked symbolically on the literal model.

Embeddings x_i = sqrt(kappa) e_0 + e_i in R^{N+1}; symbolic kappa, gamma, beta and symbolic gate
entries (every pK_{h,l}, pV_{h,l} a generic probability vector). For each query (l*, r*):
  1. <q, k_{h,l}> = kappa + pK_{h,l*}(r*) 1{l = l*};
  2. a_{h,l*} = A(pK_{h,l*}(r*)), a_{h,l} = (1 - A)/(L - 1) for l != l*;
  3. z_x = beta H kappa + beta sum_h a_{h,l(x)} pV_{h,l(x)}(r(x)) in the context, beta H
     kappa outside
     (for every attention vector on the simplex, so in particular for the softmax of step 2);
  4. the cross-entropy equals log((N - L S) + sum_{l,r} e^{s_{l,r}}) - s_{l*,r*+1}: kappa cancels.
Checked for (L, S, H) = (4, 3, 2) and (2, 2, 1), each with two different contexts, N = L S + 2.

Run: `python proofs/exact_geometry.py` (exit 1 if a check fails). Derivation: proofs/README.md.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sympy as sp

from proofs._check import check, check_zero, run
from proofs.convexity import attention_A

kappa, gamma, beta = sp.symbols("kappa gamma beta", positive=True)


def simplex_symbols(name: str, shape) -> list:
    """Nested lists of symbols p[...][r] with the last offset 1 - (sum of the others): a
    generic simplex point."""
    *outer, S = shape

    def build(prefix, dims):
        if not dims:
            free = [sp.Symbol(f"{name}{prefix}_{r}", real=True) for r in range(S - 1)]
            return free + [1 - sum(free)]
        return [build(f"{prefix}_{i}", dims[1:]) for i in range(dims[0])]

    return build("", outer)


def gate_symbols(L: int, S: int, H: int):
    """Symbolic block gates pK[h][l][r], pV[h][l][r], each a generic probability vector over r."""
    return simplex_symbols("pK", (H, L, S)), simplex_symbols("pV", (H, L, S))


def embeddings(N: int):
    """x_i = sqrt(kappa) e_0 + e_{i+1} in R^{N+1}, i = 0..N-1 (sympy column vectors)."""
    xs = []
    for i in range(N):
        x = sp.zeros(N + 1, 1)
        x[0] = sp.sqrt(kappa)
        x[i + 1] = 1
        xs.append(x)
    return xs


def reduced_logits(pK, pV, L: int, S: int, H: int, lstar: int, rstar: int):
    """s_{l,r} = beta sum_h a_{h,l} pV_{h,l}(r) with the §4 attention (sympy), as a list of
    L*S entries."""
    a = []
    for h in range(H):
        A = attention_A(pK[h][lstar][rstar], gamma, L)
        a.append([A if l == lstar else (1 - A) / (L - 1) for l in range(L)])
    return [
        beta * sum(a[h][l] * pV[h][l][r] for h in range(H))
        for l in range(L)
        for r in range(S)
    ]


def reduced_query_loss(pK, pV, L: int, S: int, H: int, N: int, lstar: int, rstar: int):
    """§4 cross-entropy of query (l*, r*): log((N - LS) + sum e^{s_{l,r}}) - s_{l*, r*+1}
    (sympy)."""
    s = reduced_logits(pK, pV, L, S, H, lstar, rstar)
    return sp.log((N - L * S) + sum(sp.exp(si) for si in s)) - s[lstar * S + rstar + 1]


def check_configuration(L: int, S: int, H: int, seed: int) -> None:
    N = L * S + 2
    rng = random.Random(seed)
    tokens = rng.sample(
        range(N), L * S
    )  # a context: L*S distinct tokens, 2 tokens outside
    tok = [[tokens[l * S + r] for r in range(S)] for l in range(L)]
    outside = sorted(set(range(N)) - set(tokens))
    xs = embeddings(N)
    pK, pV = gate_symbols(L, S, H)
    k = [
        [
            sum((pK[h][l][r] * xs[tok[l][r]] for r in range(S)), sp.zeros(N + 1, 1))
            for l in range(L)
        ]
        for h in range(H)
    ]
    v = [
        [
            sum((pV[h][l][r] * xs[tok[l][r]] for r in range(S)), sp.zeros(N + 1, 1))
            for l in range(L)
        ]
        for h in range(H)
    ]
    # Generic attention vectors on the simplex (step 3 holds for any of them).
    a_sym = simplex_symbols("a", (H, L))
    tag = f"(L={L}, S={S}, H={H}, N={N}, context seed {seed})"

    bad_scores, bad_attention, bad_logits, bad_ce = [], [], [], []
    for lstar in range(L):
        for rstar in range(S - 1):
            q = xs[tok[lstar][rstar]]
            for h in range(H):
                scores = [sp.expand((q.T * k[h][l])[0]) for l in range(L)]
                for l in range(L):
                    claim = kappa + (pK[h][lstar][rstar] if l == lstar else 0)
                    if sp.expand(scores[l] - claim) != 0:
                        bad_scores.append((lstar, rstar, h, l))
                # Step 2: softmax over blocks of gamma * score.
                # a_hl = e^{gamma s_l} / den; cross-multiplied with the claim's denominator,
                # both sides
                # are polynomials in exponentials once exp of sums is expanded: compare by expand.
                den = sum(sp.exp(gamma * sc) for sc in scores)
                A = attention_A(pK[h][lstar][rstar], gamma, L)
                for l in range(L):
                    claim = A if l == lstar else (1 - A) / (L - 1)
                    c_num, c_den = sp.fraction(sp.together(claim))
                    if sp.expand(sp.exp(gamma * scores[l]) * c_den - c_num * den) != 0:
                        bad_attention.append((lstar, rstar, h, l))
            # Step 3: logits with generic simplex attention a_sym[h][l].
            o = sum(
                (a_sym[h][l] * v[h][l] for h in range(H) for l in range(L)),
                sp.zeros(N + 1, 1),
            )
            for l in range(L):
                for r in range(S):
                    z = sp.expand(beta * (xs[tok[l][r]].T * o)[0])
                    claim = beta * H * kappa + beta * sum(
                        a_sym[h][l] * pV[h][l][r] for h in range(H)
                    )
                    if sp.expand(z - claim) != 0:
                        bad_logits.append((lstar, rstar, l, r))
            for i in outside:
                if sp.expand(beta * (xs[i].T * o)[0] - beta * H * kappa) != 0:
                    bad_logits.append((lstar, rstar, "outside", i))
            # Step 4: full cross-entropy over the N tokens with the shift beta H kappa, generic s.
            s = sp.symbols(f"s0:{L * S}", real=True)
            shift = beta * H * kappa
            target = lstar * S + rstar + 1
            ce_full_exp = (
                len(outside) * sp.exp(shift) + sum(sp.exp(shift + si) for si in s)
            ) * sp.exp(-(shift + s[target]))
            ce_claim_exp = (N - L * S + sum(sp.exp(si) for si in s)) * sp.exp(
                -s[target]
            )
            if sp.expand(ce_full_exp - ce_claim_exp) != 0:
                bad_ce.append((lstar, rstar))
    check(
        bad_scores == [],
        f"<q, k_h,l> = kappa + pK_h,l*(r*) 1{{l=l*}} for every query, head, block {tag}",
    )
    check(
        bad_attention == [],
        f"a_h,l* = A(pK_h,l*(r*)), a_h,l = (1-A)/(L-1) otherwise {tag}",
    )
    check(
        bad_logits == [],
        f"z_x = beta H kappa + beta sum_h a_h,l(x) pV_h,l(x)(r(x)); beta H kappa outside {tag}",
    )
    check(
        bad_ce == [],
        f"CE = log((N-LS) + sum e^s) - s_y: kappa cancels (equal exponentials) {tag}",
    )


def main() -> None:
    print("exact-geometry reduction (docs/theory.md §4)")
    for L, S, H in ((2, 2, 1), (4, 3, 2)):
        for seed in (0, 1):
            check_configuration(L, S, H, seed)
    # A(w) reproduces the softmax with L - 1 equal competitors, and the weights sum to 1.
    w = sp.Symbol("w", real=True)
    Ls = sp.Symbol("L", positive=True)
    A = attention_A(w, gamma, Ls)
    check_zero(A + (Ls - 1) * (1 - A) / (Ls - 1) - 1, "a_l* + (L-1) a_l = 1")
    check_zero(
        A
        - sp.exp(gamma * (kappa + w))
        / (sp.exp(gamma * (kappa + w)) + (Ls - 1) * sp.exp(gamma * kappa)),
        "softmax of gamma (kappa + w 1{l=l*}) over L blocks = A(w): kappa drops out of attention",
    )


if __name__ == "__main__":
    run(main)
