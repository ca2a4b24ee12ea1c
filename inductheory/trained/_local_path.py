"""The boundary through a local path (docs/trained.md, "Open questions"): measures and causal
checks of the route a W = S compressor with an exact local window may take to the boundary
phase r = S - 1, whose key sits at the last offset of one window and whose value at offset 0
of the next.

The route to test: a context-stream head attends to the position before (slot 0 of the exact
local window), so position u holds token u - 1 beside its own; one offset of the next window
then carries the whole (key, value) pair, and a KV head whose key and value gates both peak
there answers the boundary.

- `previous_token_mass`: attention mass on the position before, per layer and query head.
- `answered_phases`, `boundary_gates`: which gates answer which phase, from their peaks.
- `without_local_window`: the model with the exact local window removed (all or some heads),
  for the causal check at evaluation.

May import: `inductheory.model`, `._modules`, `._mechanisms`.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from ._mechanisms import GateOffsets
from ._modules import CompressedAttention, Transformer

# `answered_phases` where a KV head's gates answer no phase.
NO_PHASE = -1


class PreviousTokenMass(eqx.Module):
    """Context-stream attention of the layers with an exact local window
    (`previous_token_mass`), means over the contexts and positions.

    - `layers` (static): the block index of each row.
    - `previous` (layers, q_heads): the mass on the position before (local slot 0).
    - `local` (layers, q_heads): the mass on the whole local window.
    """

    layers: tuple[int, ...] = eqx.field(static=True)
    previous: Float[Array, "layers q_heads"]
    local: Float[Array, "layers q_heads"]


def local_blocks(model: Transformer) -> list[int]:
    """Indices of the blocks whose context stream attends an exact local window (the last
    block's context stream is read no further, so it is left out)."""
    return [
        i
        for i, block in enumerate(model.blocks[:-1])
        if isinstance(block.attention, CompressedAttention)
        and block.attention.local_bias is not None
    ]


def previous_token_mass(
    model: Transformer, contexts: Int[Array, "contexts positions"]
) -> PreviousTokenMass:
    """The context stream's attention mass on the position before, and on the whole exact
    local window, of every query head of every layer with a local window: with $a_{q,t}$ the
    softmax weights of head q at position t over the T / S compressed entries and the w local
    slots, $\\mathbb{E}_{t} a_{q,t}(t - 1)$ and $\\mathbb{E}_{t} \\sum_{i<w} a_{q,t}(t-1-i)$,
    averaged over the contexts too.

    **Arguments:**
    - `model`: a `Transformer` (no seed axis) with an exact local window
      (`Architecture.local_window` > 0) and at least two layers.
    - `contexts`: token ids (M, T).

    **Returns:** a `PreviousTokenMass`.

    ```python
    mass = previous_token_mass(model, contexts)
    mass.previous[0]  # (q_heads,): the first layer's heads
    ```
    """
    layers = local_blocks(model)
    if not layers:
        raise ValueError(
            "model has no exact local window read by a context stream (local_window > 0 "
            "and at least two layers)"
        )

    def one(tokens):
        traces = model.forward(tokens)[1]
        out = []
        for i in layers:
            attention = model.blocks[i].attention
            h = traces[i].normed
            a = attention.context_weights(h, attention.memory(h))  # (Q, T, M + w)
            M = attention.compressor.windows(h.shape[0]).shape[0]
            out.append(jnp.stack([a[:, :, M], jnp.sum(a[:, :, M:], axis=-1)]))
        return jnp.stack(out)  # (layers, 2, Q, T)

    mass = jnp.mean(jax.vmap(one)(contexts), axis=(0, -1))
    return PreviousTokenMass(
        layers=tuple(layers), previous=mass[:, 0], local=mass[:, 1]
    )


def answered_phases(
    key_peak: Int[Array, "*gates"], value_peak: Int[Array, "*gates"], S: int
) -> Int[Array, "*gates"]:
    """The phase (source offset mod S) a KV head answers under hard selection at its key-gate
    and value-gate peaks, W = S:

    - value = key + 1: phase key (key and value in one window; a key at S - 1 cannot have
      its value there);
    - value = key: phase (key - 1) mod S, through a previous-token path (the slot holds the
      key's successor and, written into it, the key): key = value = 0 answers the boundary
      S - 1;
    - otherwise `NO_PHASE`.

    ```python
    answered_phases(np.array([0, 0, 3]), np.array([1, 0, 5]), 8)  # [0, 7, -1]
    ```
    """
    key, value = np.asarray(key_peak), np.asarray(value_peak)
    return np.where(
        value == key + 1,
        key,
        np.where(value == key, (key - 1) % S, NO_PHASE),
    )


class BoundaryGates(eqx.Module):
    """Per (layer, KV head) of the compressed layers (`boundary_gates`): `key_peak`,
    `value_peak`, `phase` (`answered_phases`), `answers_boundary` (phase = S - 1), and
    `concentrated` (both gates' static effective offsets at most `threshold`)."""

    key_peak: Int[Array, "layers kv"]
    value_peak: Int[Array, "layers kv"]
    phase: Int[Array, "layers kv"]
    answers_boundary: Bool[Array, "layers kv"]
    concentrated: Bool[Array, "layers kv"]


def boundary_gates(gates: GateOffsets, S: int, threshold: float = 2.0) -> BoundaryGates:
    """Which gates answer the boundary phase: from `gate_offsets`' peaks of a model with K/V
    separate (branches key, value), the phase each (layer, KV head) answers
    (`answered_phases`) and whether it is S - 1.

    **Arguments:**
    - `gates`: a `GateOffsets` (no seed axis) of scalar gates with two branches.
    - `S`: the stride (W = S).
    - `threshold`: static effective offsets at most this count as concentrated.

    **Returns:** a `BoundaryGates`.
    """
    peak, static = np.asarray(gates.peak), np.asarray(gates.static)
    if peak.shape[1] != 2:
        raise ValueError(
            "boundary_gates needs keys and values gated apart (K/V separate), got "
            f"{peak.shape[1]} branch"
        )
    if peak.shape[-1] != 1:
        raise ValueError(
            f"boundary_gates: the gates have {peak.shape[-1]} channels (vector gates); one "
            "peak per gate is defined for scalar gates only"
        )
    key, value = peak[:, 0, :, 0], peak[:, 1, :, 0]
    phase = answered_phases(key, value, S)
    return BoundaryGates(
        key_peak=key,
        value_peak=value,
        phase=phase,
        answers_boundary=phase == S - 1,
        concentrated=np.all(static[:, :, :, 0] <= threshold, axis=1),
    )


def without_local_window(model: Transformer, heads=None) -> Transformer:
    """`model` with the exact local window closed at evaluation: its slots' bias set to
    $-\\infty$, so they get no attention and the rest renormalizes over the compressed
    entries, in every layer, for the query heads of the boolean mask `heads` (Q,) (None:
    all). A model without a local window is returned as it is. A leading seed axis is fine.

    ```python
    phase_curves(without_local_window(model), contexts, 24)  # the causal check
    ```
    """
    for i, block in enumerate(model.blocks):
        attention = block.attention
        if (
            not isinstance(attention, CompressedAttention)
            or attention.local_bias is None
        ):
            continue
        bias = attention.local_bias
        mask = jnp.ones(bias.shape[-2], bool) if heads is None else jnp.asarray(heads)
        closed = jnp.where(mask[:, None], -jnp.inf, bias)
        model = eqx.tree_at(
            lambda m, i=i: m.blocks[i].attention.local_bias, model, closed
        )
    return model


__all__ = [
    "NO_PHASE",
    "BoundaryGates",
    "PreviousTokenMass",
    "answered_phases",
    "boundary_gates",
    "local_blocks",
    "previous_token_mass",
    "without_local_window",
]
