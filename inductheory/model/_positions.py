"""Positions on the cycle of docs/theory.md §10: what each entry summarizes, where queries sit.

A context holds T = L*S distinct tokens at positions 0..T-1 on a cycle (position T is position 0).
Entry l summarizes positions l*S + o (mod T), o = 0..W-1; a query at position t has target t + 1
(mod T) and phase t mod S. Everything here is a static (numpy) index computed from the shape
fields L, S, W and the query set, so it costs nothing under jit.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from jaxtyping import Array, Int

from ._task import n_query_phases


def query_phases(S: int, queries: str = "within") -> np.ndarray:
    """The query phases: 0..S-2 for `within`, 0..S-1 for `all` (`n_query_phases` of them)."""
    return np.arange(n_query_phases(S, queries))


def entry_positions(L: int, S: int, W: int) -> np.ndarray:
    """Position summarized by entry l at offset o: $(lS + o) \\bmod LS$, shape (L, W).

    ```python
    entry_positions(3, 2, 3)  # [[0, 1, 2], [2, 3, 4], [4, 5, 0]]
    ```
    """
    return (S * np.arange(L)[:, None] + np.arange(W)[None, :]) % (L * S)


def previous_positions(positions: np.ndarray, w: int, T: int) -> np.ndarray:
    """The w positions just before each of `positions` on the cycle of T, nearest first:
    $(t - 1 - i) \\bmod T$, i = 0..w-1, shape (len(positions), w). The exact local slots of
    the trained compressed model and of the paper's transformers.

    ```python
    previous_positions(np.arange(3), 2, 3)  # [[2, 1], [0, 2], [1, 0]]
    ```
    """
    return (np.asarray(positions)[:, None] - 1 - np.arange(w)[None, :]) % T


def query_positions(L: int, S: int, queries: str = "within") -> np.ndarray:
    """Every query position of a context, block-major: $lS + \\phi$ for each entry l and phase phi.

    For W = S and `within` these are the slots (l*, r*) of `query_slots`, in the same order.
    """
    phases = query_phases(S, queries)
    return (S * np.arange(L)[:, None] + phases[None, :]).ravel()


def target_positions(L: int, S: int, queries: str = "within") -> np.ndarray:
    """The target of each query position, $t + 1 \\bmod LS$ (order of `query_positions`)."""
    return (query_positions(L, S, queries) + 1) % (L * S)


def query_offsets(L: int, S: int, W: int, positions: np.ndarray) -> np.ndarray:
    """Offset of each position inside each entry, $(t - lS) \\bmod LS$, shape (L, len(positions)).

    The entry holds position t exactly when this offset is < W (at most once, since W <= LS).
    """
    return (np.asarray(positions)[None, :] - S * np.arange(L)[:, None]) % (L * S)


def window_tokens(
    tokens: Int[Array, "*batch blocks stride"], W: int
) -> Int[Array, "*batch blocks window"]:
    """The tokens entry l summarizes, $x_{(lS + o) \\bmod T}$, from a context's (L, S) token array.

    **Arguments:**
    - `tokens`: token ids (..., L, S): position l*S + r holds `tokens[..., l, r]`.
    - `W`: the window, S <= W <= L*S.

    **Returns:** ids (..., L, W); for W = S the tokens themselves.
    """
    L, S = tokens.shape[-2:]
    if W == S:
        return tokens
    flat = tokens.reshape(tokens.shape[:-2] + (L * S,))
    return flat[..., entry_positions(L, S, W)]


class PhaseClasses(NamedTuple):
    """Static index tables of the collapsed windowed closed form (`phase_classes`), per
    query phase p.

    - `hold_offset` (P, n): offset at which the j-th entry holding the query position holds
      it (-1: pad).
    - `n_rest` (P,): entries that do not hold the query (they all get the same attention).
    - `special` (P, U): context positions held by a query-holding entry, and the target (-1: pad).
    - `special_offset` (P, n, U): offset at which holding entry j holds special position u, or -1.
    - `generic_count` (P, S): how many of the other positions have each phase psi.
    - `target` (P,): column of the target among the special positions.
    - `fold` (W, S): one-hot of o mod S, so that `pV @ fold` sums a gate over each phase class.
    """

    hold_offset: np.ndarray
    n_rest: np.ndarray
    special: np.ndarray
    special_offset: np.ndarray
    generic_count: np.ndarray
    target: np.ndarray
    fold: np.ndarray


@functools.lru_cache(maxsize=256)
def phase_classes(L: int, S: int, W: int, queries: str = "within") -> PhaseClasses:
    """Which positions a query at phase p (position t = p) sees apart from the rest
    (docs/theory.md §10).

    With shared gates only the entries holding t get a key weight, so every other entry has the same
    attention $a^0_h$, and a position u held by none of the query-holding entries gets the logit
    $\\beta \\sum_h a^0_h \\sum_j p^V_h(u \\bmod S + jS)$, which depends on u only through
    its phase.
    Those positions collapse into S classes with multiplicities; the others ("special": the
    windows of
    the at most ceil(W/S) holding entries, and the target) keep a column each. The table
    sizes do not
    depend on L.
    """
    T = L * S
    phases = query_phases(S, queries)
    holders, specials = [], []
    for p in phases:
        hold = [(l, int((p - l * S) % T)) for l in range(L) if (p - l * S) % T < W]
        special = sorted(
            {int((l * S + o) % T) for l, _ in hold for o in range(W)}
            | {int((p + 1) % T)}
        )
        holders.append(hold)
        specials.append(special)
    n, U, P = max(map(len, holders)), max(map(len, specials)), len(phases)
    hold_offset = np.full((P, n), -1)
    special = np.full((P, U), -1)
    special_offset = np.full((P, n, U), -1)
    generic_count = np.full((P, S), L)
    target = np.zeros(P, dtype=int)
    for i, (hold, spec) in enumerate(zip(holders, specials)):
        special[i, : len(spec)] = spec
        target[i] = spec.index(int((phases[i] + 1) % T))
        for u in spec:
            generic_count[i, u % S] -= 1
        for j, (l, o) in enumerate(hold):
            hold_offset[i, j] = o
            for k, u in enumerate(spec):
                if (u - l * S) % T < W:
                    special_offset[i, j, k] = (u - l * S) % T
    n_rest = L - np.array([len(h) for h in holders])
    fold = (np.arange(W)[:, None] % S == np.arange(S)[None, :]).astype(float)
    return PhaseClasses(
        hold_offset, n_rest, special, special_offset, generic_count, target, fold
    )


__all__ = [
    "PhaseClasses",
    "entry_positions",
    "phase_classes",
    "previous_positions",
    "query_offsets",
    "query_phases",
    "query_positions",
    "target_positions",
    "window_tokens",
]
