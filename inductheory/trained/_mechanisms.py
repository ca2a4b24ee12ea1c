"""The paper's mechanism measures on its transformers (`trained/_modules.py`; docs/theory.md §9):
effective offsets of every gate (its Figure 5a and 5b), head knockout by mean ablation (its
Figure 4) and gate rotation along the window offsets (its appendix H).

The idealized model's versions act on a `CompressedModel` (`trained/_measures.py`,
`trained/_interventions.py`); these use the same formulas (`effective_offsets`,
`rotate_offsets`) through the transformer's own forward pass (`Transformer.forward`).

May import: `inductheory.model`, `._architecture`, `._modules`.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ..model._gates import rotate_offsets
from ..model._logits import cross_entropy, top1_correct
from ..model._loss import phase_means
from ..model._measures import effective_offsets
from ..model._objective import overlap
from ._modules import CompressedAttention, Transformer


class GateOffsets(eqx.Module):
    """The gates of every compressed layer pooled over held-out windows (`gate_offsets`);
    each field (layers, branches, kv, channels), branches keys first (tied: values = keys),
    channels 1 for scalar gates and d_h for vector gates.

    - `peak`: the offset of the mean gate's largest mass; `mass`: that mass.
    - `static`, `avg`: effective numbers of offsets, $\\exp H(\\mathbb{E}_j \\alpha_j)$ and
      $\\mathbb{E}_j \\exp H(\\alpha_j)$ over the windows j (`effective_offsets`).
    """

    peak: Int[Array, "layers branches kv channels"]
    mass: Float[Array, "layers branches kv channels"]
    static: Float[Array, "layers branches kv channels"]
    avg: Float[Array, "layers branches kv channels"]


def compressed_blocks(model: Transformer) -> list[int]:
    """Indices of the blocks that read a compressed cache (from the model's structure alone,
    so traced models answer too: a uniform-averaging compressor counts, its gates are 1/W;
    `Architecture.learned_gates` says whether they are learned)."""
    return [
        i
        for i, block in enumerate(model.blocks)
        if isinstance(block.attention, CompressedAttention)
    ]


def gate_offsets(
    model: Transformer, contexts: Int[Array, "contexts positions"]
) -> GateOffsets:
    """Peak offset, its mass and the effective numbers of offsets of every gate of `model`
    (no seed axis) over the windows of `contexts` (M contexts give M T / S windows each).

    **Arguments:**
    - `model`: a `Transformer` with at least one compressed layer.
    - `contexts`: token ids (M, T).

    **Returns:** a `GateOffsets`.

    ```python
    g = gate_offsets(model, sample_retrieval_contexts(jax.random.key(1), task, 32))
    g.static[:, 0]  # the key gates
    ```
    """
    layers = compressed_blocks(model)
    if not layers:
        raise ValueError("model has no compressed layer: no gates to measure")

    def one(tokens):
        gates = model.gate_probabilities(tokens)
        return jnp.stack([gates[i] for i in layers])  # (n, B, K, L, W, g)

    alpha = jax.vmap(one)(contexts)  # (M, n, B, K, L, W, g)
    M, n, B, K, L, W, g = alpha.shape
    windows = jnp.moveaxis(alpha, (0, 4, 5), (4, 5, 6)).reshape(n, B, K, g, M * L, W)
    mean = jnp.mean(windows, axis=-2)
    static, avg = effective_offsets(windows)
    return GateOffsets(
        peak=jnp.argmax(mean, axis=-1),
        mass=jnp.max(mean, axis=-1),
        static=static,
        avg=avg,
    )


def pooled_key_gates(
    model: Transformer, gates: list
) -> Float[Array, "entries gates offsets"]:
    """The key gates of every compressed layer and KV head of one context as one axis of
    gates (layer-major), channels averaged (a vector gate's mean over its channels is a
    distribution over the offsets too); `gates` as `Transformer.gate_probabilities`."""
    key = [gates[i][0].mean(axis=-1) for i in compressed_blocks(model)]  # (kv, L, W)
    return jnp.moveaxis(jnp.concatenate(key, axis=0), 0, 1)


def key_gate_overlap(model: Transformer, gates: list) -> Float[Array, ""]:
    """The idealized flow's overlap penalty (`model.overlap`) on the trained key gates of one
    context: $\\frac{1}{L} \\sum_j \\sum_{g \\ne g'} \\langle \\alpha^K_{g,j},
    \\alpha^K_{g',j} \\rangle$ over the gates g of every compressed layer and KV head
    (`pooled_key_gates`) and the L windows j. 0 exactly for disjoint supports; $G(G-1)$ for G
    gates on one offset; $G(G-1)/W$ for uniform gates.

    **Arguments:**
    - `model`: a `Transformer` (no seed axis) with a compressed layer.
    - `gates`: its `gate_probabilities` on one context.

    **Returns:** a scalar.

    ```python
    key_gate_overlap(model, model.gate_probabilities(tokens))
    ```
    """
    return overlap(pooled_key_gates(model, gates))


def mean_gate_overlap(
    model: Transformer, contexts: Int[Array, "contexts positions"]
) -> Float[Array, ""]:
    """`key_gate_overlap` averaged over `contexts` (M, T)."""
    return jnp.mean(
        jax.vmap(lambda t: key_gate_overlap(model, model.gate_probabilities(t)))(
            contexts
        )
    )


class PhaseCurves(eqx.Module):
    """Per-phase accuracy and loss (phase = position mod `period`), ablated or not."""

    accuracy: Float[Array, "*batch period"]
    loss: Float[Array, "*batch period"]


# Contexts evaluated at once by `query_outcomes` (vmapped; the batches in a loop).
CONTEXT_BATCH = 32


def query_outcomes(model: Transformer, contexts, ablations=None):
    """`(correct, losses)`, each (M, T): top-1 correctness (ties wrong) and cross-entropy of
    every query of every context, from one forward pass each; `ablations` as
    `Transformer.forward`. The contexts are taken `CONTEXT_BATCH` at a time: full attention's
    T x T scores of 256 contexts and 8 seeds at once took 1.5 GB. The numbers are those of one
    vmap over every context, to the last bit in full batches and to float32 rounding in a
    remainder batch (another shape, which XLA may emit with other roundings)."""

    def one(tokens):
        logits = model.logits(tokens, ablations)
        return top1_correct(*logits), cross_entropy(*logits)

    return jax.lax.map(one, contexts, batch_size=CONTEXT_BATCH)


def phase_curves(
    model: Transformer, contexts, period: int, ablations=None
) -> PhaseCurves:
    """Per-phase accuracy (top-1, ties wrong) and loss of `model` on `contexts` (M, T), every
    position a query, phase = position mod `period`; `ablations` as `Transformer.forward`."""

    correct, losses = query_outcomes(model, contexts, ablations)
    return PhaseCurves(phase_mean(correct, period), phase_mean(losses, period))


def phase_mean(values: Array, period: int) -> Float[Array, " period"]:
    """The mean of per-query `values` (M, T) over the contexts and the T / `period` queries of
    each phase (position mod `period`), as float32."""
    return phase_means(values, period, values.shape[1] // period, jnp.float32)


def mean_head_reads(
    model: Transformer, contexts: Int[Array, "contexts positions"]
) -> list[Float[Array, "2 q_heads head_dim"]]:
    """Per block, every head's read before the output map averaged over the prompts and their
    positions: the query stream's mean and the context stream's (zeros for the last block,
    whose context stream is read no further), (2, Q, d_h)."""

    def one(tokens):
        traces = model.forward(tokens)[1]
        return [
            jnp.stack(
                [
                    jnp.mean(t.query_heads, axis=1),
                    jnp.zeros_like(t.query_heads[:, 0])
                    if t.context_heads is None
                    else jnp.mean(t.context_heads, axis=1),
                ]
            )
            for t in traces
        ]

    return [jnp.mean(m, axis=0) for m in jax.vmap(one)(contexts)]


class HeadKnockout(eqx.Module):
    """Per-phase accuracy and loss with one query head mean-ablated at a time
    (`knockout_heads`): `ablated` (layers, q_heads, period), `base` (period,)."""

    ablated: PhaseCurves
    base: PhaseCurves

    @property
    def accuracy_change(self) -> Float[Array, "layers q_heads period"]:
        """Ablated minus unablated accuracy (negative: the head helped that phase)."""
        return self.ablated.accuracy - self.base.accuracy[..., None, None, :]


@eqx.filter_jit
def knockout_heads(
    model: Transformer,
    contexts: Int[Array, "contexts positions"],
    mean_contexts: Int[Array, "prompts positions"],
    period: int,
) -> HeadKnockout:
    """The paper's Figure 4 protocol on every query head of every layer: its output (in both
    streams) replaced by its mean over `mean_contexts` (`mean_head_reads`), one head at a
    time, and the per-phase accuracy and loss measured on `contexts`.

    **Arguments:**
    - `model`: a `Transformer` (no seed axis).
    - `contexts`: held-out token ids (M, T); `mean_contexts`: the prompts of the means.
    - `period`: phases are positions mod `period` (static).

    **Returns:** a `HeadKnockout`.
    """
    means = mean_head_reads(model, mean_contexts)
    Q = means[0].shape[1]
    none = [None] * len(model.blocks)

    def layer(i):
        def head(q):
            ablations = list(none)
            ablations[i] = (jnp.arange(Q) == q, means[i])
            return phase_curves(model, contexts, period, ablations)

        return jax.lax.map(head, jnp.arange(Q))

    per_layer = [layer(i) for i in range(len(model.blocks))]
    return HeadKnockout(
        ablated=jax.tree.map(lambda *a: jnp.stack(a), *per_layer),
        base=phase_curves(model, contexts, period),
    )


def rotate_transformer_gates(
    model: Transformer, delta: int, *, payloads: bool = False
) -> Transformer:
    """Rotate every offset-specific gate parameter by `delta` window offsets (appendix H):
    $\\tilde Z_o = Z_{(o - \\delta) \\bmod W}$ and the same for the biases b, in both branches
    of every gated layer (`rotate_offsets`); with `payloads`, the per-offset payload maps $C_o$
    too (the whole offset-specific compressor moves). Everything else stays. A leading seed
    axis is fine (offsets are axis -3 of Z and C, -2 of b).

    ```python
    rotate_transformer_gates(rotate_transformer_gates(model, 2), -2)  # == model
    ```
    """
    if isinstance(delta, bool) or not isinstance(delta, int):
        raise ValueError(f"delta must be an integer, got {delta!r}")
    for i in compressed_blocks(model):

        def compressor(m, i=i):
            return m.blocks[i].attention.compressor

        c = compressor(model)
        moved = [
            (lambda m: compressor(m).gate_map, c.gate_map, -3),
            (lambda m: compressor(m).gate_bias, c.gate_bias, -2),
        ]
        if payloads and c.payload.shape[-3] == c.window:  # per-offset maps only
            moved.append((lambda m: compressor(m).payload, c.payload, -3))
        for where, value, axis in moved:
            model = eqx.tree_at(where, model, rotate_offsets(value, delta, axis=axis))
    return model


# The gate file's branch names, by whether the model's K/V are tied.
BRANCH_NAMES = {False: ("key", "value"), True: ("tied",)}


def paper_gate_tensors(
    model: Transformer, contexts: Int[Array, "contexts positions"]
) -> dict[str, np.ndarray]:
    """The paper's gate parameterization of every gated layer of `model` (no seed axis) with
    the inputs it acts on, as named float32 arrays (what `inductheory gates --paper` reads):

    - `layer{i}.{branch}.gate_map` (kv, W, channels, d): $Z^B_o$; `layer{i}.{branch}.gate_bias`
      (kv, W, channels): $b^B_o$ where the model has position biases; branch `key` and
      `value`, or `tied`.
    - `layer{i}.windows` (windows, W, d): the normed context stream $h_{j,o}$ at the slots of
      every window of `contexts` (M contexts, T / S windows each).

    The gates are $\\alpha_{j} = \\mathrm{softmax}_o (Z_o h_{j,o} + b_o)$.
    """
    out = {}
    layers = compressed_blocks(model)
    if not all(
        bool(model.blocks[i].attention.compressor.switches.learned_gates)
        for i in layers
    ):
        raise ValueError("model averages uniformly: it has no learned gates to write")
    traces = jax.vmap(lambda t: model.forward(t)[1])(contexts)
    for i in layers:
        c = model.blocks[i].attention.compressor
        h = traces[i].normed  # (M, T, d)
        windows = c.windows(h.shape[1])  # (L, W)
        out[f"layer{i}.windows"] = np.asarray(h[:, windows]).reshape(
            -1, c.window, h.shape[-1]
        )
        for b, branch in enumerate(BRANCH_NAMES[bool(c.switches.tied)]):
            out[f"layer{i}.{branch}.gate_map"] = np.asarray(c.gate_map[b])
            if c.switches.position_bias:
                out[f"layer{i}.{branch}.gate_bias"] = np.asarray(c.gate_bias[b])
    return out


__all__ = [
    "BRANCH_NAMES",
    "GateOffsets",
    "HeadKnockout",
    "PhaseCurves",
    "gate_offsets",
    "compressed_blocks",
    "key_gate_overlap",
    "knockout_heads",
    "mean_gate_overlap",
    "mean_head_reads",
    "paper_gate_tensors",
    "phase_curves",
    "phase_mean",
    "pooled_key_gates",
    "query_outcomes",
    "rotate_transformer_gates",
]
