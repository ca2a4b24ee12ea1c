"""The compressed multi-head model of docs/theory.md §2: a dense path and the exact-geometry
path of §4.

Both paths return, for every enumerated query slot of one context, a row of logits, the log
multiplicity of each logit (how many vocabulary tokens share it) and the index of the target, so
that cross-entropy and top-1 accuracy are computed in one place (`cross_entropy`, `top1_correct`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from ._contexts import query_slots
from ._positions import (
    entry_positions,
    query_offsets,
    query_positions,
    target_positions,
    window_tokens,
)
from ._task import Task

# annotations only: the geometries build their logits from this module
if TYPE_CHECKING:
    from ._gates import OracleGates
    from ._geometry import AbstractGeometry

# Relative margin under which the target's logit counts as tied with a competitor (tie = wrong).
TIE_TOLERANCE = 1e-9
# block_attention switches to the shifted form e^{-gamma w} above this gamma*w (any value well
# below log(max float64) ~ 709 works; 30 keeps every gamma <= 1 result bit-identical).
_SHIFT_ABOVE = 30.0


def block_attention(w, gamma: float, L: int):
    """Attention on the query's block and on each other block under exact geometry.

    With $w = p^K_{h,l^*}(r^*)$ the key weight on the query's slot, block scores are
    $\\gamma\\kappa + \\gamma w 1\\{l = l^*\\}$, so
    $a_{l^*} = A(w) = e^{\\gamma w} / (e^{\\gamma w} + L - 1)$ and $a_l = 1 / (e^{\\gamma
    w} + L - 1)$.
    Both come from the same denominator so that equal inputs give bit-equal weights (ties
    stay ties).

    Stable for any gamma > 0: for $u = \\gamma w \\le$ `_SHIFT_ABOVE` the formula above is used as
    written (so every result with gamma <= 1 is bit-identical to the plain form); above it numerator
    and denominator are divided by $e^{u}$, $a_{l^*} = 1 / (1 + (L-1) e^{-u})$,
    $a_l = e^{-u} / (1 + (L-1) e^{-u})$ — again one shared denominator — so gamma = 1e6 gives
    $a_{l^*} \\to 1$, $a_l \\to 0$ instead of inf/inf = NaN. Both branches see clipped inputs
    (the double-`where` trick), so gradients are finite too.

    **Arguments:**
    - `w`: key weight(s) on the query slot, any shape.
    - `gamma`, `L`: attention inverse temperature and number of blocks.

    **Returns:** `(a_target, a_other)`, each of the shape of `w`.
    """
    u = gamma * jnp.asarray(w)
    low = u <= _SHIFT_ABOVE
    e = jnp.exp(jnp.where(low, u, 0.0))
    denom = e + (L - 1)
    e_neg = jnp.exp(-jnp.where(low, _SHIFT_ABOVE, u))  # e^{-u} <= e^{-30}: no overflow
    denom_neg = 1.0 + (L - 1) * e_neg
    return jnp.where(low, e / denom, 1.0 / denom_neg), jnp.where(
        low, 1.0 / denom, e_neg / denom_neg
    )


def attention_to_target(w, gamma: float, L: int):
    """$A(w) = e^{\\gamma w} / (e^{\\gamma w} + L - 1) = \\sigma(\\gamma w - \\log(L-1))$
    (docs/theory.md §4)."""
    return block_attention(w, gamma, L)[0]


def log_outside_count(task: Task) -> Float[Array, ""]:
    """log(N - L*S), the log multiplicity of the out-of-context logit column (-inf when N = L*S)."""
    return jnp.log(jnp.asarray(task.n_outside, dtype=jnp.float64))


def exact_logits(task: Task, gates: OracleGates):
    """Logits of one context under exact geometry, without embeddings (docs/theory.md §4, §10).

    For query (l*, r*), the logit of context token (l, r) is, up to the common shift
    $\\beta H \\kappa$, $s_{l,r} = \\beta \\sum_h a_{h,l} p^V_{h,l}(r)$; the N - L*S tokens
    outside the
    context all have logit 0 and are one column with log multiplicity log(N - L*S). Tokens do not
    enter: every context with distinct tokens has the same logits. Windowed tasks (W > S or
    `queries="all"`) go through `windowed_logits`.

    **Arguments:**
    - `task`: the configuration (exact geometry).
    - `gates`: `OracleGates` of shape (H, L, W) for this context.

    **Returns:** `(logits, log_multiplicity, target)` with shapes (Q, L*S+1), (L*S+1,), (Q,), Q =
    `task.n_queries` in the order of `query_positions`; column t is context position t.
    """
    task.require_exact("exact_logits")
    if task.windowed:
        return windowed_logits(
            task, gates, query_positions(task.L, task.S, task.queries)
        )
    L, S = task.L, task.S
    lstar, rstar = query_slots(L, S)
    w = gates.key[:, lstar, rstar]  # (H, Q)
    a_target, a_other = block_attention(w, task.gamma, L)
    is_target = jnp.arange(L)[None, None, :] == lstar[None, :, None]
    a = jnp.where(is_target, a_target[..., None], a_other[..., None])  # (H, Q, L)
    s = task.beta * jnp.einsum("hql,hlr->qlr", a, gates.value).reshape(
        len(lstar), L * S
    )
    return _with_outside_column(task, s, jnp.asarray(lstar * S + rstar + 1))


def _with_outside_column(task: Task, s, target):
    # the N - L*S tokens outside the context: one logit-0 column of log multiplicity log(N - L*S)
    logits = jnp.concatenate([s, jnp.zeros((s.shape[0], 1), s.dtype)], axis=1)
    log_mult = jnp.concatenate([jnp.zeros(s.shape[1]), log_outside_count(task)[None]])
    return logits, log_mult, target


def windowed_logits(task: Task, gates: OracleGates, positions: Int[Array, " queries"]):
    """Exact-geometry logits of queries at the given cycle positions, windows of W >= S (§10).

    Query token $x_t$ meets entry l's key $k_{h,l} = \\sum_o p^K_{h,l}(o) x_{lS+o}$ with score
    $\\gamma(\\kappa + w_{h,l})$, $w_{h,l} = p^K_{h,l}(o)$ for the offset o at which the
    entry holds t
    (0 if it does not), so $a_{h,\\cdot} = \\mathrm{softmax}_l(\\gamma w_{h,l})$. Context position u
    gets the logit $\\beta \\sum_{h,l} a_{h,l} \\sum_o p^V_{h,l}(o) 1\\{lS + o = u\\}$ (all
    mod T), the
    tokens outside 0, up to the shift $\\beta H \\kappa$. Cost O(H L W) per query plus O(T).

    **Arguments:**
    - `task`: exact-geometry configuration.
    - `gates`: `OracleGates` (H, L, W).
    - `positions`: static query positions in 0..T-1.

    **Returns:** `(logits, log_multiplicity, target)`, shapes (Q, T+1), (T+1,), (Q,).
    """
    L, S, W = task.L, task.S, task.W
    positions = np.asarray(positions)
    off = query_offsets(L, S, W, positions)  # (L, Q)
    w = jnp.where(
        off < W, gates.key[:, np.arange(L)[:, None], np.minimum(off, W - 1)], 0.0
    )  # (H, L, Q)
    a = jax.nn.softmax(task.gamma * w, axis=1)
    reads = jnp.einsum("hlq,hlo->qlo", a, gates.value)
    s = task.beta * jnp.zeros((len(positions), L * S), reads.dtype).at[
        :, entry_positions(L, S, W)
    ].add(reads)
    return _with_outside_column(task, s, jnp.asarray((positions + 1) % (L * S)))


def head_outputs(
    task: Task,
    embeddings: Float[Array, "vocab dim"],
    tokens: Int[Array, "blocks offsets"],
    gates: OracleGates,
) -> Float[Array, "queries heads dim"]:
    """Head outputs $o_h = \\sum_l a_{h,l} v_{h,l}$ of the dense model for every query slot.

    $k_{h,l} = \\sum_o p^K_{h,l}(o) x_{lS+o}$, $v_{h,l} = \\sum_o p^V_{h,l}(o) x_{lS+o}$ (o < W,
    positions mod T), $a_{h,\\cdot} = \\mathrm{softmax}_l \\gamma \\langle q, k_{h,l}
    \\rangle$, q = x at
    the query position (order of `query_positions`).
    """
    X = embeddings[window_tokens(tokens, task.W)]  # (L, W, d)
    k = jnp.einsum("hls,lsd->hld", gates.key, X)
    v = jnp.einsum("hls,lsd->hld", gates.value, X)
    q = embeddings[
        tokens.reshape(-1)[query_positions(task.L, task.S, task.queries)]
    ]  # (Q, d)
    a = jax.nn.softmax(task.gamma * jnp.einsum("qd,hld->qhl", q, k), axis=-1)
    return jnp.einsum("qhl,hld->qhd", a, v)


def dense_logits(
    task: Task,
    embeddings: Float[Array, "vocab dim"],
    tokens: Int[Array, "blocks offsets"],
    gates: OracleGates,
):
    """Logits over the whole vocabulary, $z_x = \\beta \\langle x, \\sum_h o_h \\rangle$
    (tied unembedding).

    The general path: any embeddings, the literal model of docs/theory.md §2.

    **Returns:** `(logits, log_multiplicity, target)` with shapes (Q, N), (N,), (Q,).
    """
    return logits_from_outputs(
        task,
        embeddings,
        tokens,
        jnp.sum(head_outputs(task, embeddings, tokens, gates), axis=1),
    )


def logits_from_outputs(
    task: Task,
    embeddings: Float[Array, "vocab dim"],
    tokens: Int[Array, "blocks offsets"],
    outputs: Float[Array, "queries dim"],
):
    """Tied unembedding of the summed head outputs: $z = \\beta E o$, targets $x_{t+1 \\bmod T}$.

    **Returns:** `(logits, log_multiplicity, target)` with shapes (Q, N), (N,), (Q,).
    """
    target = tokens.reshape(-1)[target_positions(task.L, task.S, task.queries)]
    return task.beta * outputs @ embeddings.T, jnp.zeros(embeddings.shape[0]), target


def query_logits(
    task: Task,
    geometry: AbstractGeometry,
    gates: OracleGates,
    tokens: Int[Array, "blocks offsets"],
):
    """Logits of one context on the path its geometry allows (`geometry.query_logits`):
    `exact_logits` for `ExactGeometry`, `dense_logits` for `DenseGeometry`."""
    return geometry.query_logits(task, gates, tokens)


def cross_entropy(
    logits: Float[Array, "queries vocab"],
    log_multiplicity: Float[Array, " vocab"],
    target: Int[Array, " queries"],
) -> Float[Array, " queries"]:
    """$-\\log \\mathrm{softmax}(z)_y$ with columns of multiplicity
    $e^{\\text{log\\_multiplicity}}$ (log-sum-exp;
    the multiplicities may be one row for every query or one row per query)."""
    z_y = jnp.take_along_axis(logits, target[:, None], axis=1)[:, 0]
    return jax.nn.logsumexp(logits + log_multiplicity, axis=1) - z_y


def top1_correct(
    logits: Float[Array, "queries vocab"],
    log_multiplicity: Float[Array, " vocab"],
    target: Int[Array, " queries"],
) -> Bool[Array, " queries"]:
    """Top-1 over the whole vocabulary: the target logit strictly above every other (ties
    are wrong).

    A competitor within `TIE_TOLERANCE * (1 + |z_y|)` of the target counts as a tie. Columns with
    zero multiplicity (log multiplicity -inf) are not competitors.
    """
    z_y = jnp.take_along_axis(logits, target[:, None], axis=1)[:, 0]
    cols = jnp.arange(logits.shape[1])[None, :]
    absent = jnp.broadcast_to(
        jnp.isneginf(log_multiplicity), logits.shape
    )  # (vocab,) or per query
    rivals = jnp.where((cols == target[:, None]) | absent, -jnp.inf, logits)
    return z_y > jnp.max(rivals, axis=1) + TIE_TOLERANCE * (1 + jnp.abs(z_y))


__all__ = [
    "attention_to_target",
    "block_attention",
    "cross_entropy",
    "dense_logits",
    "exact_logits",
    "head_outputs",
    "log_outside_count",
    "logits_from_outputs",
    "query_logits",
    "top1_correct",
    "windowed_logits",
]
