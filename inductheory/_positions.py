"""Positions on the cycle of docs/theory.md §10: what each entry summarizes, where queries sit.

A context holds T = L*S distinct tokens at positions 0..T-1 on a cycle (position T is position 0).
Entry l summarizes positions l*S + o (mod T), o = 0..W-1; a query at position t has target t + 1
(mod T) and phase t mod S. Everything here is a static (numpy) index computed from the shape
fields L, S, W and the query set, so it costs nothing under jit.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Array, Int

from ._config import QUERY_SETS


def query_phases(S: int, queries: str = "within") -> np.ndarray:
    """The query phases: 0..S-2 for `within`, 0..S-1 for `all`."""
    if queries not in QUERY_SETS:
        raise ValueError(f"queries must be one of {', '.join(QUERY_SETS)}, got {queries!r}")
    return np.arange(S - 1 if queries == "within" else S)


def entry_positions(L: int, S: int, W: int) -> np.ndarray:
    """Position summarized by entry l at offset o: $(lS + o) \\bmod LS$, shape (L, W).

    ```python
    entry_positions(3, 2, 3)  # [[0, 1, 2], [2, 3, 4], [4, 5, 0]]
    ```
    """
    return (S * np.arange(L)[:, None] + np.arange(W)[None, :]) % (L * S)


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


def window_tokens(tokens: Int[Array, "*batch blocks stride"], W: int) -> Int[Array, "*batch blocks window"]:
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


__all__ = [
    "entry_positions",
    "query_offsets",
    "query_phases",
    "query_positions",
    "target_positions",
    "window_tokens",
]
