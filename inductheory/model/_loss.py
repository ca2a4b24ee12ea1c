"""Population losses and per-phase accuracy: the closed form of shared gates and Monte Carlo."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ._gates import Gates, OracleGates, SharedGates
from ._geometry import AbstractGeometry
from ._logits import (
    block_attention,
    cross_entropy,
    log_outside_count,
    query_logits,
    top1_correct,
)
from ._positions import phase_classes, window_tokens
from ._task import Task


def check_gate_shape(task: Task, gates: SharedGates) -> None:
    """Raise `ValueError` unless shared gates have one (key, value) pair of W-vectors per
    head of `task`."""
    if tuple(gates.key.shape) != (task.H, task.W):
        raise ValueError(
            f"gates must have shape (H, W) = ({task.H}, {task.W}) for this task "
            f"(W = S unless windows are set), got {tuple(gates.key.shape)}"
        )


def shared_logits(task: Task, gates: SharedGates):
    """Per-phase logits of shared gates under exact geometry, blocks collapsed (docs/theory.md §4).

    With every block using the same $p^K_h, p^V_h$, a query at phase r* sees, up to the shift
    $\\beta H \\kappa$, the logits $s^*_r = \\beta \\sum_h A(p^K_h(r^*)) p^V_h(r)$ in its own block,
    $s^o_r = \\beta \\sum_h \\frac{1 - A(p^K_h(r^*))}{L-1} p^V_h(r)$ in each of the L-1 other blocks
    (multiplicity L-1) and 0 for the N - L*S tokens outside. The loss is the same for every context
    and every block l*, so this is the population.

    **Returns:** `(logits, log_multiplicity, target)` with shapes (S-1, 2S+1), (2S+1,), (S-1,); row
    r* is the query phase, the target is column r*+1.

    Windowed tasks (docs/theory.md §10: W > S or `queries="all"`): see `windowed_shared_logits`.
    """
    task.require_exact("the closed form of shared gates")
    S, L = task.S, task.L
    check_gate_shape(task, gates)
    if task.windowed:
        return windowed_shared_logits(task, gates)
    phases = jnp.arange(S - 1)
    a_target, a_other = block_attention(
        gates.key[:, : S - 1], task.gamma, L
    )  # (H, S-1)
    s_own = task.beta * jnp.einsum("hp,hr->pr", a_target, gates.value)
    s_other = task.beta * jnp.einsum("hp,hr->pr", a_other, gates.value)
    logits = jnp.concatenate([s_own, s_other, jnp.zeros((S - 1, 1))], axis=1)
    log_mult = jnp.concatenate(
        [jnp.zeros(S), jnp.full(S, math.log(L - 1)), log_outside_count(task)[None]]
    )
    return logits, log_mult, phases + 1


def _one_hot(index: np.ndarray, n: int) -> np.ndarray:
    """Static one-hot table of an index array; -1 entries are all zero."""
    return (index[..., None] == np.arange(n)).astype(np.float64)


def windowed_shared_logits(task: Task, gates: SharedGates):
    """Per-phase logits of shared gates with windows (docs/theory.md §10), collapsed like §4.

    By the cycle's symmetry the queries at positions t = p of the first stride are the population.
    Let $n_p$ entries hold t (at offsets $o_j$) and $L - n_p$ not; with
    $Z_h = \\sum_j e^{\\gamma p^K_h(o_j)} + L - n_p$ the holding entries get $a_{h,j} = e^{\\gamma
    p^K_h(o_j)}/Z_h$ and every other entry $a^0_h = 1/Z_h$. Since every position of phase
    psi is held by
    entries at the offsets psi + kS, a position outside the holding entries' windows has the logit
    $\\beta \\sum_h a^0_h \\sum_k p^V_h(\\psi + kS)$; those positions form S columns with
    multiplicities (`phase_classes`). The others ("special") add
    $\\beta \\sum_h \\sum_j (a_{h,j} - a^0_h) p^V_h(o)$ over the holding entries holding them at o.
    Cost O(H (n_p W + S)) per phase, independent of L and N; `windowed_logits` of the same
    gates over
    all T positions is the uncollapsed check.

    **Returns:** `(logits, log_multiplicity, target)` with shapes (P, C), (P, C), (P,): P =
    `task.n_phases`, C = special columns + S classes + the outside column; padding columns have log
    multiplicity -inf.
    """
    L, S, W = task.L, task.S, task.W
    c = phase_classes(L, S, W, task.queries)
    # gathers as products with static one-hot tables: cheaper under vmap and in the backward pass
    held = c.hold_offset >= 0
    w = jnp.einsum("hw,pjw->hpj", gates.key, _one_hot(c.hold_offset, W))  # (H, P, n)
    rest = jnp.log(
        jnp.asarray(c.n_rest, jnp.float64)
    )  # -inf when every entry holds the query
    scores = jnp.concatenate(
        [
            jnp.where(held[None], task.gamma * w, -jnp.inf),
            jnp.broadcast_to(rest, w.shape[:2])[..., None],
        ],
        axis=-1,
    )
    att = jax.nn.softmax(scores, axis=-1)
    a_rest = jnp.where(
        c.n_rest > 0, att[..., -1] / np.maximum(c.n_rest, 1), 0.0
    )  # (H, P)
    folded = task.beta * jnp.einsum(
        "hp,hw,ws->hps", a_rest, gates.value, c.fold
    )  # (H, P, S)
    special_phase = _one_hot(
        np.where(c.special >= 0, c.special % S, -1), S
    )  # (P, U, S)
    s_special = jnp.einsum(
        "hps,pus->pu", folded, special_phase
    ) + task.beta * jnp.einsum(
        "hpj,hw,pjuw->pu",
        att[..., :-1] - a_rest[..., None],
        gates.value,
        _one_hot(c.special_offset, W),
    )
    logits = jnp.concatenate(
        [s_special, jnp.sum(folded, axis=0), jnp.zeros((len(c.n_rest), 1))], axis=1
    )
    log_mult = jnp.concatenate(
        [
            jnp.where(c.special >= 0, 0.0, -jnp.inf),
            jnp.log(jnp.asarray(c.generic_count, jnp.float64)),
            jnp.broadcast_to(log_outside_count(task), (len(c.n_rest), 1)),
        ],
        axis=1,
    )
    return logits, log_mult, jnp.asarray(c.target)


@eqx.filter_jit
def phase_losses(task: Task, gates: SharedGates) -> Float[Array, " phases"]:
    """Exact cross-entropy of a query at each phase (0..S-2, or 0..S-1 for `queries="all"`), shared
    gates, exact geometry."""
    return cross_entropy(*shared_logits(task, gates))


def population_loss(task: Task, gates: SharedGates) -> Float[Array, ""]:
    """Exact population loss of block-shared gates under exact geometry (closed form,
    docs/theory.md §4).

    $\\bar L(p) = \\frac{1}{S-1} \\sum_{r^*} \\big[\\log\\big(N - LS + \\sum_r e^{s^*_r} +
    (L-1) \\sum_r
    e^{s^o_r}\\big) - s^*_{r^*+1}\\big]$; kappa cancels.

    **Arguments:**
    - `task`: configuration (exact geometry).
    - `gates`: `SharedGates` of shape (H, S).

    **Returns:** the scalar loss.

    ```python
    task = Task(L=8, S=4, H=2, N=4096, beta=4.0)
    population_loss(task, hard_selection(4, [0, 2]))
    ```
    """
    return jnp.mean(phase_losses(task, gates))


@eqx.filter_jit
def phase_accuracy(task: Task, gates: SharedGates) -> Float[Array, " phases"]:
    """Exact per-phase top-1 accuracy of shared gates under exact geometry (0 or 1 per
    phase; a tie is wrong)."""
    return top1_correct(*shared_logits(task, gates)).astype(jnp.float64)


def phase_target_probability(task: Task, gates: SharedGates) -> Float[Array, " phases"]:
    """Exact probability the model gives the target at each query phase, $e^{-\\mathrm{CE}}$.

    Where top-1 accuracy only says "tie" (uniform gates tie everywhere), this still ranks gates.
    """
    return jnp.exp(-phase_losses(task, gates))


def phase_gap(accuracy: Float[Array, " phases"]) -> Float[Array, ""]:
    """Max minus min of a per-phase accuracy curve (docs/theory.md §9)."""
    return jnp.max(accuracy) - jnp.min(accuracy)


def context_loss(
    task: Task,
    geometry: AbstractGeometry,
    gates: OracleGates,
    tokens: Int[Array, "blocks offsets"],
) -> Float[Array, ""]:
    """Loss of one context: the mean cross-entropy over its L*(S-1) enumerated queries.

    $\\ell_X(p) = \\frac{1}{L(S-1)} \\sum_{(l^*, r^*)} \\mathrm{CE}(l^*, r^*)$, on the structured
    exact path for `ExactGeometry` and the dense path otherwise (`query_logits`).

    **Arguments:**
    - `task`, `geometry`: configuration and realized geometry.
    - `gates`: `OracleGates` of shape (H, L, S) for this context.
    - `tokens`: the context's token ids (L, S).

    **Returns:** the scalar loss.

    ```python
    context_loss(task, ExactGeometry(task.N, task.kappa), hard_gates, tokens)
    ```
    """
    return jnp.mean(cross_entropy(*query_logits(task, geometry, gates, tokens)))


def _per_context(
    task, geometry, gates: Gates, contexts, outcome, batch_size, bases=None
):
    # the gates score tokens in the geometry itself; the logits may come from per-context bases
    def one(g, tokens, basis):
        logits = query_logits(
            task,
            geometry if basis is None else basis,
            g.for_context(geometry, window_tokens(tokens, task.W)),
            tokens,
        )
        return outcome(*logits)

    batched = isinstance(gates, OracleGates) and gates.key.ndim == 4
    if batched and gates.key.shape[0] != contexts.shape[0]:
        raise ValueError(
            f"got oracle gates for {gates.key.shape[0]} contexts but {contexts.shape[0]} contexts"
        )
    if batch_size is None:
        return jax.vmap(one, in_axes=(0 if batched else None, 0, 0))(
            gates, contexts, bases
        )
    if batched:
        return jax.lax.map(
            lambda gtb: one(*gtb), (gates, contexts, bases), batch_size=batch_size
        )
    return jax.lax.map(
        lambda tb: one(gates, *tb), (contexts, bases), batch_size=batch_size
    )


@eqx.filter_jit
def query_losses(
    task: Task,
    geometry: AbstractGeometry,
    gates: Gates,
    contexts: Int[Array, "contexts blocks offsets"],
    *,
    batch_size=None,
    bases=None,
) -> Float[Array, "contexts queries"]:
    """Cross-entropy of every enumerated query of every context (queries as in `query_slots`).

    **Arguments:**
    - `task`, `geometry`: the configuration and its realized geometry.
    - `gates`: `SharedGates`, `LinearGates`, or `OracleGates` of shape (M, H, L, S) (one per
      context).
    - `contexts`: token ids (M, L, S).
    - `batch_size`: contexts evaluated at once (`None`: all); bounds memory for large M.
    - `bases`: `geometry.context_bases(contexts)` computed once for a fixed sample, or None.
      The logits then come from each context's basis (the same logits, at O(L S) instead of
      O(d) per vocabulary entry); the gates still come from `geometry`.
    """
    return _per_context(
        task, geometry, gates, contexts, cross_entropy, batch_size, bases
    )


@eqx.filter_jit
def monte_carlo_loss(
    task: Task,
    geometry: AbstractGeometry,
    gates: Gates,
    contexts: Int[Array, "contexts blocks offsets"],
    *,
    batch_size=None,
    bases=None,
) -> Float[Array, ""]:
    """Population loss estimated on a fixed sample of M contexts, every query enumerated.

    $\\hat L = \\frac{1}{M L (S-1)} \\sum_{m} \\sum_{(l^*, r^*)} \\mathrm{CE}_m(l^*, r^*)$;
    deterministic
    given the sample, so it can drive an ODE right-hand side (`bases`: as in `query_losses`).

    ```python
    ctx = sample_contexts(jax.random.key(0), task, 256)
    monte_carlo_loss(task, ExactGeometry(task.N, task.kappa), hard_selection(task.S, [0, 1]), ctx)
    ```
    """
    return jnp.mean(
        query_losses(
            task, geometry, gates, contexts, batch_size=batch_size, bases=bases
        )
    )


@eqx.filter_jit
def monte_carlo_phase_accuracy(
    task: Task,
    geometry: AbstractGeometry,
    gates: Gates,
    contexts: Int[Array, "contexts blocks offsets"],
    *,
    batch_size=None,
) -> Float[Array, " phases"]:
    """Per-phase top-1 accuracy over a sample of contexts (all blocks pooled), shape (n_phases,)."""
    return per_phase_mean(
        task, _per_context(task, geometry, gates, contexts, top1_correct, batch_size)
    )


@eqx.filter_jit
def monte_carlo_phase_losses(
    task: Task,
    geometry: AbstractGeometry,
    gates: Gates,
    contexts: Int[Array, "contexts blocks offsets"],
    *,
    batch_size=None,
    bases=None,
) -> Float[Array, " phases"]:
    """Per-phase cross-entropy over a sample of contexts (all blocks pooled), shape (n_phases,)
    (`bases`: as in `query_losses`)."""
    return per_phase_mean(
        task,
        query_losses(
            task, geometry, gates, contexts, batch_size=batch_size, bases=bases
        ),
    )


def per_phase_mean(
    task: Task, per_query: Float[Array, "contexts queries"]
) -> Float[Array, " phases"]:
    """Mean over contexts and blocks of a per-query quantity (queries ordered as
    `query_positions`)."""
    return phase_means(per_query, task.n_phases, task.L)


def phase_means(
    values: Array, period: int, repeats: int, dtype=jnp.float64
) -> Float[Array, " period"]:
    """The mean per phase of per-query `values` (..., repeats * period) whose query q has
    phase q mod `period` (each phase `repeats` times per context), over the contexts and
    the repeats, in `dtype`: the one formula of the theorem task's `per_phase_mean` and the
    paper family's `phase_mean` (phase = position mod period).

    ```python
    phase_means(jnp.arange(6.0).reshape(1, 6), 3, 2)  # [1.5, 2.5, 3.5]
    ```
    """
    return jnp.mean(values.reshape(-1, repeats, period).astype(dtype), axis=(0, 1))
