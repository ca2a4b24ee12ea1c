"""What a trained compressed model does, measured on held-out contexts (docs/theory.md §9, §11)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from ..model._logits import cross_entropy, top1_correct
from ..model._loss import per_phase_mean, phase_gap
from ..model._measures import effective_offsets
from ._model import CompressedModel


class ModelMeasures(eqx.Module):
    """The measures of one model on held-out contexts (`measure`).

    Gates are pooled over the M*L held-out windows (context, entry); phases are the task's
    query phases, 0..S-2 (`queries="within"`) or 0..S-1 (`"all"`: the boundary phase is the last,
    index S-1).

    - `key_offsets`, `value_offsets` (H,): argmax over the W offsets of each head's mean key and
      value gate.
    - `argmax_mass` (H, 2): the mean gate mass on that offset (key, value).
    - `value_follows_key` (H,): value offset = key offset + 1.
    - `static_offsets`, `avg_offsets` (H, 2): effective numbers of offsets, static
      $\\exp H(\\mathbb{E}_j p_j)$ and average $\\mathbb{E}_j \\exp H(p_j)$ over the windows
      (`effective_offsets`).
    - `phase_accuracy` (phases,): top-1 accuracy per query phase (a tie is wrong); `phase_gap`:
      its max minus min; `mean_accuracy`: over every query.
    - `phase_losses` (phases,): cross-entropy per phase; `loss`: over every query.
    """

    key_offsets: Int[Array, " heads"]
    value_offsets: Int[Array, " heads"]
    argmax_mass: Float[Array, "heads 2"]
    value_follows_key: Bool[Array, " heads"]
    static_offsets: Float[Array, "heads 2"]
    avg_offsets: Float[Array, "heads 2"]
    phase_accuracy: Float[Array, " phases"]
    phase_gap: Float[Array, ""]
    mean_accuracy: Float[Array, ""]
    phase_losses: Float[Array, " phases"]
    loss: Float[Array, ""]


@eqx.filter_jit
def measure(
    model: CompressedModel, contexts: Int[Array, "contexts blocks stride"]
) -> ModelMeasures:
    """Gate and accuracy measures of one model on held-out contexts (jit- and vmap-friendly).

    **Arguments:**
    - `model`: a `CompressedModel` (no seed axis: vmap or loop over seeds).
    - `contexts`: held-out token ids (M, L, S), e.g. `sample_contexts` with a fresh key.

    **Returns:** a `ModelMeasures`.

    ```python
    m = measure(model, sample_contexts(jax.random.key(1), task, 256))
    m.key_offsets, m.phase_accuracy
    ```
    """
    task = model.task

    def one(tokens):
        logits = model.logits(tokens)
        return (
            model.gate_probabilities(tokens),
            cross_entropy(*logits),
            top1_correct(*logits),
        )

    gates, losses, correct = jax.vmap(one)(contexts)  # (M, H, 2, L, W), (M, Q), (M, Q)
    M, H, _, L, W = gates.shape
    windows = jnp.moveaxis(gates, 0, 3).reshape(H, 2, M * L, W)  # windows on axis -2
    mean = jnp.mean(windows, axis=-2)  # (H, 2, W)
    offsets = jnp.argmax(mean, axis=-1)  # (H, 2)
    static, avg = effective_offsets(windows)
    accuracy = per_phase_mean(task, correct)
    return ModelMeasures(
        key_offsets=offsets[:, 0],
        value_offsets=offsets[:, 1],
        argmax_mass=jnp.take_along_axis(mean, offsets[..., None], axis=-1)[..., 0],
        # per head and traced (the library's `value_follows_key` is numpy, all heads at once)
        value_follows_key=offsets[:, 1] == offsets[:, 0] + 1,
        static_offsets=static,
        avg_offsets=avg,
        phase_accuracy=accuracy,
        phase_gap=phase_gap(accuracy),
        mean_accuracy=jnp.mean(correct.astype(jnp.float64)),
        phase_losses=per_phase_mean(task, losses),
        loss=jnp.mean(losses),
    )


__all__ = ["ModelMeasures", "measure"]
