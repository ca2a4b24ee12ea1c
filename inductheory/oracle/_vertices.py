"""Hard selections of the oracle class (docs/theory.md §5, §7): vertex gates and their enumeration.

A vertex configuration gives every head h and block l of one context an offset $r_{h,l}$ in
0..S-2 and sets $p^K_{h,l} = e_{r_{h,l}}$, $p^V_{h,l} = e_{r_{h,l}+1}$. Its loss is evaluated by
the one per-context loss (`inductheory.model.context_loss`); nothing here re-derives a formula.

Which configurations must be enumerated:
- Any geometry: all $(S-1)^{HL}$ configurations (`all_vertex_configs`); with windows (docs/theory.md
  §10) all $(W-1)^{HL}$, and $W^{HL}$ for tied gates ($p^K = p^V = e_r$).
- Exact geometry: the per-context loss is invariant under permuting the blocks (every block
  plays the same role in §4: $a_{h,l} = (1 - A)/(L-1)$ off the query's block, whatever l is).
  So the loss depends only on the multiset of the L block types, a block type being the ordered
  H-tuple $(r_{0,l}, \\dots, r_{H-1,l})$ (one of $C = (S-1)^H$): $\\binom{C + L - 1}{L}$
  representatives (`block_multiset_configs`), e.g. 12870 instead of $3^{16} \\approx 4.3
  \\cdot 10^7$
  at H=2, L=8, S=4. (Permuting the heads inside one block is a further symmetry for H = 2 but not
  in general for H >= 3, where a block with two coinciding heads weighs the others' attention
  unevenly; it is not used.)
"""

from __future__ import annotations

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ..internal._counts import vertex_count
from ..model._gates import OracleGates, selectable_offsets, selection_one_hots
from ..model._geometry import AbstractGeometry
from ..model._loss import context_loss
from ..model._task import Task

# Most vertex configurations `best_vertex` evaluates.
MAX_VERTICES = 1 << 20


def vertex_gates(
    W: int, offsets: Int[Array, "*batch heads blocks"], tied: bool = False
) -> OracleGates:
    """Oracle gates of a vertex configuration: $p^K_{h,l} = e_{r_{h,l}}$, $p^V_{h,l} =
    e_{r_{h,l}+1}$.

    **Arguments:**
    - `W`: offsets per gate (the window; S without windows).
    - `offsets`: int array (..., H, L) with entries in 0..W-2 (not checked inside jit).
    - `tied`: one gate for both branches, $p^K_{h,l} = p^V_{h,l} = e_{r_{h,l}}$, r in 0..W-1.

    **Returns:** `OracleGates` of shape (..., H, L, W).
    """
    key, value = selection_one_hots(W, jnp.asarray(offsets), tied)
    return OracleGates(key=key, value=value)


def all_vertex_configs(
    H: int, L: int, W: int, tied: bool = False
) -> Int[np.ndarray, "configs heads blocks"]:
    """Every vertex configuration, $c^{HL}$ of them with c = `selectable_offsets(W, tied)`, as
    (n, H, L)."""
    c = selectable_offsets(W, tied)
    n = vertex_count(H, L, W, tied=tied, multisets=False)
    if n > MAX_VERTICES:
        raise ValueError(
            f"{c}^(H*L) = {n} vertex configurations exceed the limit {MAX_VERTICES}"
        )
    digits = np.unravel_index(np.arange(n), (c,) * (H * L))
    return np.stack(digits, axis=-1).reshape(n, H, L).astype(np.int32)


def n_block_multisets(H: int, L: int, W: int, tied: bool = False) -> int:
    """$\\binom{c^H + L - 1}{L}$, c = `selectable_offsets(W, tied)`: configurations up to a
    permutation of
    the blocks."""
    return vertex_count(H, L, W, tied=tied, multisets=True)


def block_multiset_configs(
    H: int, L: int, W: int, tied: bool = False
) -> Int[np.ndarray, "configs heads blocks"]:
    """One vertex configuration per multiset of L block types (blocks in sorted type order).

    A block type is an ordered tuple $(r_{0,l}, \\dots, r_{H-1,l})$; under exact geometry with W = S
    and `within` queries these representatives cover every configuration's loss (module docstring).
    """
    n = n_block_multisets(H, L, W, tied)
    if n > MAX_VERTICES:
        raise ValueError(f"{n} block multisets exceed the limit {MAX_VERTICES}")
    c = selectable_offsets(W, tied)
    C = c**H
    types = np.stack(np.unravel_index(np.arange(C), (c,) * H), axis=-1)  # (C, H)
    combos = np.fromiter(
        itertools.chain.from_iterable(
            itertools.combinations_with_replacement(range(C), L)
        ),
        dtype=np.int64,
    ).reshape(n, L)
    return np.transpose(types[combos], (0, 2, 1)).astype(np.int32)  # (n, H, L)


def vertex_losses(
    task: Task,
    geometry: AbstractGeometry,
    tokens: Int[Array, "blocks offsets"],
    configs: Int[Array, "configs heads blocks"],
    *,
    batch_size: int = 4096,
    tied: bool = False,
) -> Float[Array, " configs"]:
    """Per-context loss of each vertex configuration (`context_loss` of `vertex_gates`).

    Compiled once per shape (task, geometry and configurations are arguments, not closures), so a
    new beta or N reuses the program.
    """
    configs = jnp.asarray(configs)
    return _vertex_losses(
        task,
        geometry,
        jnp.asarray(tokens),
        configs,
        min(batch_size, configs.shape[0]),
        tied,
    )


@eqx.filter_jit
def _vertex_losses(
    task, geometry, tokens, configs, batch_size: int, tied: bool = False
):
    one = lambda r: context_loss(task, geometry, vertex_gates(task.W, r, tied), tokens)
    return jax.lax.map(one, configs, batch_size=batch_size)


def vertex_configs(
    task: Task,
    geometry: AbstractGeometry,
    exhaustive: bool | None = None,
    tied: bool = False,
) -> tuple[np.ndarray, str]:
    """The configurations `best_vertex` enumerates and the method's name.

    Where the geometry's tokens are exchangeable (`ExactGeometry`), with W = S and `within`
    queries, the block multisets suffice (block-permutation invariance); otherwise (windows
    overlap, or the boundary query reads the next entry: the order of entries matters), or with
    `exhaustive=True`, all configurations.
    """
    if exhaustive is None:
        exhaustive = not geometry.exchangeable_tokens or task.windowed
    if exhaustive:
        return all_vertex_configs(task.H, task.L, task.W, tied), "exhaustive"
    return block_multiset_configs(task.H, task.L, task.W, tied), "block-multisets"


class VertexResult(eqx.Module):
    """The best hard selections of one context.

    **Fields:**
    - `loss`: the smallest vertex loss.
    - `offsets`: its configuration (H, L).
    - `top_offsets`, `top_losses`: the `k` best configurations (k, H, L) and losses, ascending.
    - `n_evaluated`: how many configurations were evaluated.
    - `method`: "block-multisets" (exact geometry) or "exhaustive".
    """

    loss: float
    offsets: np.ndarray
    top_offsets: np.ndarray
    top_losses: np.ndarray
    n_evaluated: int = eqx.field(static=True)
    method: str = eqx.field(static=True)


def best_vertex(
    task: Task,
    geometry: AbstractGeometry,
    tokens: Int[Array, "blocks offsets"],
    *,
    k: int = 8,
    exhaustive: bool | None = None,
    tied: bool = False,
) -> VertexResult:
    """The best hard selection of one context, by enumeration.

    Under exact geometry the block multisets suffice (block-permutation invariance); otherwise all
    $(S-1)^{HL}$ configurations are evaluated. `exhaustive=True` forces the full enumeration
    (a check of the symmetry reduction).

    **Arguments:**
    - `task`, `geometry`, `tokens`: the context.
    - `k`: how many of the best configurations to return (e.g. as seeds of `minimize_oracle`).
    - `exhaustive`: `None` chooses by geometry and task.
    - `tied`: enumerate tied vertices (one gate for both branches, key = value = e_r).

    **Returns:** a `VertexResult`.

    ```python
    task = Task(L=4, S=3, H=2, N=1024, beta=2.0)
    best_vertex(task, ExactGeometry(task.N, task.kappa), sample_contexts(key, task, 1)[0]).offsets
    ```
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(
            f"k must be an integer >= 1 (configurations to return), got {k!r}"
        )
    configs, method = vertex_configs(task, geometry, exhaustive, tied)
    losses = np.asarray(vertex_losses(task, geometry, tokens, configs, tied=tied))
    return vertex_result(configs, losses, k, method)


def vertex_result(
    configs: np.ndarray, losses: np.ndarray, k: int, method: str
) -> VertexResult:
    """The `VertexResult` of evaluated configurations: the k best, ascending (stable order)."""
    order = np.argsort(losses, kind="stable")[:k]
    return VertexResult(
        loss=float(losses[order[0]]),
        offsets=configs[order[0]],
        top_offsets=configs[order],
        top_losses=losses[order],
        n_evaluated=len(configs),
        method=method,
    )
