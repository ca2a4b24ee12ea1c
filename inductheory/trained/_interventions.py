"""The paper's causal interventions on a trained compressed model (docs/theory.md §9, §11):
head knockout by mean ablation, and gate rotation along the window offsets.

The idealized model's versions are `model/_interventions.py` (`rotate_gates`,
`mean_head_reads`: other names for other arguments); these act on any `CompressedModel` through
its own forward pass (`CompressedModel.ablated_logits`), so the formula of the model stays in one
place, and rotate along the offsets with the same `rotate_offsets`.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ..model._gates import rotate_offsets
from ..model._geometry import ExactGeometry
from ..model._logits import cross_entropy, top1_correct
from ..model._loss import per_phase_mean
from ._model import CompressedModel

# Names of the layers a knockout reports, in the order of the forward pass.
FIRST, COMPRESSED = "first", "compressed"


class Knockout(eqx.Module):
    """Per-phase accuracy and loss of a model with one head mean-ablated at a time (`knockout`).

    - `layers` (static): the layer of each row, `("compressed",)` for one layer or
      `("first", "compressed")` for two (the first layer's heads where they can be ablated).
    - `phase_accuracy`, `phase_losses` (layers, H, phases): with head h of that layer replaced by
      its mean output.
    - `base_accuracy`, `base_losses` (phases,): the unablated model on the same contexts and
      the same forward pass.

    `accuracy_change` = ablated minus base (negative: the head helped that phase).
    """

    layers: tuple[str, ...] = eqx.field(static=True)
    phase_accuracy: Float[Array, "layers heads phases"]
    phase_losses: Float[Array, "layers heads phases"]
    base_accuracy: Float[Array, " phases"]
    base_losses: Float[Array, " phases"]

    @property
    def accuracy_change(self) -> Float[Array, "layers heads phases"]:
        """Ablated minus unablated per-phase accuracy (a leading seed axis is fine)."""
        return self.phase_accuracy - self.base_accuracy[..., None, None, :]

    @property
    def loss_change(self) -> Float[Array, "layers heads phases"]:
        """Ablated minus unablated per-phase loss."""
        return self.phase_losses - self.base_losses[..., None, None, :]


def _exact(model: CompressedModel) -> bool:
    return isinstance(model.geometry, ExactGeometry)


def mean_compressed_outputs(
    model: CompressedModel, contexts: Int[Array, "contexts blocks stride"]
) -> Float[Array, "heads dim"]:
    """Each compressed-layer head's output averaged over the prompts (contexts x enumerated
    queries), in the coordinates of `CompressedModel.head_outputs`.

    On the exact geometry the coordinates after e_0 are the context's own tokens, different in
    every context. Tokens are exchangeable, so the population mean there is
    $a e_0 + b \\mathbf{1}$, and $b \\mathbf{1}$ adds the same logit to every token: the
    replacement keeps the mean e_0 coordinate and zero elsewhere.

    **Arguments:**
    - `model`: a `CompressedModel` (no seed axis).
    - `contexts`: token ids (M, L, S).

    **Returns:** shape (H, D).

    ```python
    mu = mean_compressed_outputs(model, sample_contexts(jax.random.key(2), task, 256))
    ```
    """
    mu = jnp.mean(jax.vmap(model.head_outputs)(contexts), axis=(0, 2))
    if _exact(model):
        mu = mu.at[:, 1:].set(0.0)
    return mu


def _can_ablate_first(model: CompressedModel) -> bool:
    # a first-layer head is removed by zeroing its output map; the identity maps have none
    return model.config.layers == 2 and model.first_maps is not None


def _without_first_heads(model: CompressedModel, knocked) -> CompressedModel:
    """The model with the output maps O^1_h of the `knocked` first-layer heads set to zero."""
    O = (
        model.first_maps[3]
        * (1.0 - knocked.astype(model.first_maps.dtype))[:, None, None]
    )
    return eqx.tree_at(lambda m: m.first_maps, model, model.first_maps.at[3].set(O))


def _residual(model: CompressedModel, tokens):
    return model._residual(model._space(tokens))


def mean_first_outputs(
    model: CompressedModel, contexts: Int[Array, "contexts blocks stride"]
) -> Float[Array, "heads dim"]:
    """Each first-layer head's output $O^1_h \\sum_u a\\, V^1_h x_u$ averaged over the prompts
    and positions (two layers with learned maps: the head's output is the residual minus the
    residual with its output map set to zero, the same forward pass).

    **Arguments:** as `mean_compressed_outputs`.

    **Returns:** shape (H, d).
    """
    if not _can_ablate_first(model):
        raise ValueError(
            "mean_first_outputs needs layers=2 with maps='learned' (a first layer whose heads "
            "have output maps)"
        )
    H = model.task.H

    def head(h):
        alone = _without_first_heads(model, jnp.arange(H) == h)
        return jnp.mean(
            jax.vmap(lambda t: _residual(model, t) - _residual(alone, t))(contexts),
            axis=(0, 1),
        )

    return jax.lax.map(head, jnp.arange(H))


def _phase_measures(model, contexts, logits_of):
    def one(tokens):
        logits = logits_of(tokens)
        return cross_entropy(*logits), top1_correct(*logits)

    losses, correct = jax.vmap(one)(contexts)
    return per_phase_mean(model.task, correct), per_phase_mean(model.task, losses)


@eqx.filter_jit
def knockout(
    model: CompressedModel,
    contexts: Int[Array, "contexts blocks stride"],
    mean_contexts: Int[Array, "means blocks stride"] | None = None,
) -> Knockout:
    """Mean-ablate every head, one at a time, and measure per-phase accuracy and loss (the
    paper's Figure 4 protocol: a head's output replaced by its mean over many prompts).

    Compressed-layer heads: `mean_compressed_outputs`. First-layer heads (two layers with learned
    maps): the head's output map set to zero and its mean output (`mean_first_outputs`) added to
    the residual. Every measure, the unablated one included, uses the model's general forward
    pass (`CompressedModel.ablated_logits`).

    **Arguments:**
    - `model`: a `CompressedModel` (no seed axis).
    - `contexts`: held-out token ids (M, L, S) on which accuracy and loss are measured.
    - `mean_contexts`: the prompts the means are taken over (None: `contexts`).

    **Returns:** a `Knockout`.

    ```python
    k = knockout(model, held_out)
    k.accuracy_change[-1]  # (H, phases): the compressed layer
    ```
    """
    H = model.task.H
    means_from = contexts if mean_contexts is None else mean_contexts
    mu = mean_compressed_outputs(model, means_from)
    none = jnp.zeros(H, bool)
    base_acc, base_loss = _phase_measures(
        model, contexts, lambda t: model.ablated_logits(t, none, mu)
    )

    def compressed(h):
        knocked = jnp.arange(H) == h
        return _phase_measures(
            model, contexts, lambda t: model.ablated_logits(t, knocked, mu)
        )

    acc, loss = jax.lax.map(compressed, jnp.arange(H))
    layers = (COMPRESSED,)
    if _can_ablate_first(model):
        mu1 = mean_first_outputs(model, means_from)

        def first(h):
            knocked = jnp.arange(H) == h
            alone = _without_first_heads(model, knocked)
            return _phase_measures(
                model,
                contexts,
                lambda t: alone.ablated_logits(t, none, mu, residual_shift=mu1[h]),
            )

        acc1, loss1 = jax.lax.map(first, jnp.arange(H))
        acc, loss = jnp.stack([acc1, acc]), jnp.stack([loss1, loss])
        layers = (FIRST, COMPRESSED)
    else:
        acc, loss = acc[None], loss[None]
    return Knockout(
        layers=layers,
        phase_accuracy=acc,
        phase_losses=loss,
        base_accuracy=base_acc,
        base_losses=base_loss,
    )


def rotate_model_gates(model: CompressedModel, delta: int) -> CompressedModel:
    """Rotate every offset-specific gate parameter by `delta` window offsets (appendix H).

    $\\tilde c^B_{h,o} = c^B_{h,(o - \\delta) \\bmod W}$ and the same for the biases b, in both
    branches (`rotate_offsets` along the offset axis, as the idealized model's `rotate_gates`):
    a gate that peaked at offset r peaks at (r + delta) mod W, so with W = S a head that answered
    phase r answers phase r + delta. Nothing else moves (maps, embeddings, the first layer, the
    local branch); uniform gates have nothing to rotate.

    **Arguments:**
    - `model`: a `CompressedModel` (a leading seed axis is fine: offsets are axis -2 of c and
      -1 of b).
    - `delta`: an integer shift (any sign; W is the identity).

    **Returns:** the rotated model.

    ```python
    rotate_model_gates(rotate_model_gates(model, 2), -2)  # == model
    ```
    """
    if isinstance(delta, bool) or not isinstance(delta, (int, np.integer)):
        raise ValueError(f"delta must be an integer, got {delta!r}")
    delta = int(delta)
    if model.gate_vectors is not None:
        model = eqx.tree_at(
            lambda m: m.gate_vectors,
            model,
            rotate_offsets(model.gate_vectors, delta, axis=-2),
        )
    if model.gate_biases is not None:
        model = eqx.tree_at(
            lambda m: m.gate_biases, model, rotate_offsets(model.gate_biases, delta)
        )
    return model


def shifted_curve(accuracy, delta: int) -> np.ndarray:
    """The per-phase curve that a rotation by `delta` predicts: phase p gets the unrotated
    accuracy of phase (p - delta) mod S (`accuracy` has S phases, queries "all", last axis)."""
    return np.roll(np.asarray(accuracy, float), int(delta), axis=-1)


def shift_correlation(accuracy, rotated, delta: int, *, exclude=(-1,)) -> np.ndarray:
    """Squared correlation of the measured rotated curve with the predicted shift (appendix H):
    $r^2 = \\mathrm{cov}(y, \\hat y)^2 / (\\mathrm{var}\\, y\\, \\mathrm{var}\\, \\hat y)$ over the
    phases not in `exclude` (default the boundary phase S-1), y the rotated curve and
    $\\hat y$ = `shifted_curve(accuracy, delta)`.

    It asks whether the curve moved by delta, whatever its level: a rotation that keeps the
    shape at a lower accuracy scores 1, and a collapsed, flat curve scores noise (read it with
    the accuracy kept). The coefficient of determination without a fit,
    $1 - \\sum (y - \\hat y)^2 / \\sum (y - \\bar y)^2$, is no measure of this: it is hugely
    negative for a collapsed curve, whatever the noise of its few points.

    **Arguments:**
    - `accuracy`, `rotated`: per-phase curves (..., S) unrotated and rotated.
    - `delta`: the rotation.
    - `exclude`: phase indices left out.

    **Returns:** r^2 per leading index, in [0, 1]; NaN where either curve is flat on those
    phases.

    ```python
    shift_correlation([0.9, 0.1, 0.5, 0.0], [0.05, 0.5, 0.1, 0.0], 1)  # 1.0: shifted, halved
    ```
    """
    y = np.asarray(rotated, float)
    keep = np.ones(y.shape[-1], bool)
    keep[list(exclude)] = False
    y, yhat = y[..., keep], shifted_curve(accuracy, delta)[..., keep]
    # flat by its range, not by a variance that rounds off the values
    flat = (np.ptp(y, axis=-1) == 0) | (np.ptp(yhat, axis=-1) == 0)
    dy = y - y.mean(axis=-1, keepdims=True)
    dyhat = yhat - yhat.mean(axis=-1, keepdims=True)
    cov = np.sum(dy * dyhat, axis=-1)
    var = np.sum(dy * dy, axis=-1) * np.sum(dyhat * dyhat, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(flat, np.nan, cov * cov / np.where(flat, 1.0, var))


__all__ = [
    "Knockout",
    "knockout",
    "mean_first_outputs",
    "mean_compressed_outputs",
    "rotate_model_gates",
    "shift_correlation",
    "shifted_curve",
]
