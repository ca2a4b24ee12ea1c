"""The paper's causal interventions (docs/theory.md §9): gate rotation and head knockout."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ._gates import Gates, LinearGates, SharedGates, rotate_offsets
from ._geometry import DenseGeometry
from ._logits import cross_entropy, head_outputs, logits_from_outputs, top1_correct
from ._loss import per_phase_mean, shared_logits
from ._positions import window_tokens
from ._task import Task


def rotate_gates(
    gates: SharedGates | LinearGates, delta: int
) -> SharedGates | LinearGates:
    """Shift offset-specific gate parameters cyclically: $\\tilde p_r = p_{(r - \\delta) \\bmod W}$.

    A head that selected r selects (r + delta) mod W afterwards, so the per-phase accuracy curve
    shifts by delta (as long as no selection wraps past the last offset). W = S without windows.
    """
    if isinstance(gates, LinearGates):
        return gates.rotate(delta)
    return SharedGates(
        key=rotate_offsets(gates.key, delta), value=rotate_offsets(gates.value, delta)
    )


def _knocked_out_logits(task: Task, gates: SharedGates, heads):
    # Replacing o_h by its population mean m adds beta <x, m> = beta (kappa + 1/N) to every logit
    # (exact geometry, shared gates: every slot's token is uniform on V), so only the head's
    # token-specific term beta a_h p^V_h disappears from the relative logits.
    mask = jnp.ones(task.H).at[jnp.asarray(heads)].set(0.0)
    return shared_logits(
        task, SharedGates(key=gates.key, value=gates.value * mask[:, None])
    )


@eqx.filter_jit
def knockout_phase_losses(
    task: Task, gates: SharedGates, heads
) -> Float[Array, " phases"]:
    """Exact per-phase loss with the outputs of `heads` replaced by their mean over prompts.

    Closed form under exact geometry for shared gates: $E[o_h] = m$, the mean embedding, whose
    logit contribution is the same for every token.
    """
    return cross_entropy(*_knocked_out_logits(task, gates, heads))


@eqx.filter_jit
def knockout_phase_accuracy(
    task: Task, gates: SharedGates, heads
) -> Float[Array, " phases"]:
    """Exact per-phase top-1 accuracy with the outputs of `heads` mean-ablated (see
    `knockout_phase_losses`)."""
    return top1_correct(*_knocked_out_logits(task, gates, heads)).astype(jnp.float64)


@eqx.filter_jit
def mean_head_outputs(
    task: Task,
    geometry: DenseGeometry,
    gates: Gates,
    contexts: Int[Array, "contexts blocks offsets"],
) -> Float[Array, "heads dim"]:
    """$\\mu_h = E[o_h]$ over a sample of prompts (contexts x enumerated queries), dense path."""

    def one(tokens):
        return jnp.mean(
            head_outputs(
                task,
                geometry.embeddings,
                tokens,
                gates.for_context(geometry, window_tokens(tokens, task.W)),
            ),
            axis=0,
        )

    return jnp.mean(jax.vmap(one)(contexts), axis=0)


@eqx.filter_jit
def monte_carlo_knockout(
    task: Task,
    geometry: DenseGeometry,
    gates: Gates,
    contexts: Int[Array, "contexts blocks offsets"],
    mean_outputs: Float[Array, "heads dim"],
    heads,
):
    """Per-phase (loss, accuracy) with the outputs of `heads` replaced by `mean_outputs`
    (dense path).

    The literal intervention of docs/theory.md §9 for any gates and embeddings:
    $z = \\beta E (\\sum_{h \\notin K} o_h + \\sum_{h \\in K} \\mu_h)$.

    **Returns:** `(phase_losses, phase_accuracy)`, each of shape (S-1,).
    """
    knocked = jnp.zeros(task.H, bool).at[jnp.asarray(heads)].set(True)
    E = geometry.embeddings

    def one(tokens):
        o = head_outputs(
            task, E, tokens, gates.for_context(geometry, window_tokens(tokens, task.W))
        )
        logits = logits_from_outputs(
            task,
            E,
            tokens,
            jnp.where(knocked[None, :, None], mean_outputs[None], o).sum(axis=1),
        )
        return cross_entropy(*logits), top1_correct(*logits)

    losses, correct = jax.vmap(one)(contexts)
    return per_phase_mean(task, losses), per_phase_mean(task, correct)
