"""The compressed model of the task with every idealization a switch (docs/theory.md §11).

One context of T = L*S tokens at positions 0..T-1 (a cycle, as in §10). Its residual vectors z_t
are the embeddings x_t, or with `layers=2` the output of a first, uncompressed causal attention
layer with a residual stream. The compressed layer summarizes entry l (the W positions lS + o mod T)
per head h and branch B into $k_{h,l} = K_h \\sum_o p^K_{h,l}(o) z_{lS+o}$ and
$v_{h,l} = V_h \\sum_o p^V_{h,l}(o) z_{lS+o}$, with $p^B_{h,l} = \\mathrm{softmax}_o s^B_{h,l}(o)$
and scores $s^B_{h,l}(o) = \\langle c^B_{h,o}, z_{lS+o} \\rangle + b^B_{h,o}$ (the linear class,
an optional per-offset bias; `gates="bias"`: b only; `"uniform"`: p = 1/W). A query at position t
attends over the entries (and, with `local_window = w`, over the w positions t-1..t-w exactly) with
scores $\\gamma \\langle Q_h z_t, k \\rangle$; the logits are
$\\beta \\langle u_x, \\sum_h O_h \\sum a\\, v \\rangle$, u the embeddings (tied) or a learned
unembedding.

Where every vector lies in the span of the context's embeddings (exact geometry: identity maps and
the tied unembedding), the model works in that span: T + 1 coordinates (e_0 and the context's
tokens' own directions), never the N x (N+1) matrix, with logits of the context's tokens plus one
column for the N - T tokens outside it. With fixed embeddings, identity maps, the tied unembedding,
one layer and no local branch the logits are the library's own (`query_logits`), and at the
theorem's setting the loss is `monte_carlo_loss` of `LinearGates(c)`: gradient descent on it is the
explicit Euler scheme of the full flow.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from typing import final

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray, PyTree

from ..flow._init import ball_uniform, initial_biases, initial_gate_vectors
from ..model._gates import (
    LinearGates,
    OracleGates,
    SharedGates,
    shared_gates_from_logits,
    uniform_gates,
)
from ..model._geometry import (
    AbstractGeometry,
    DenseGeometry,
    ExactGeometry,
    make_geometry,
)
from ..model._logits import cross_entropy
from ..model._loss import monte_carlo_loss, population_loss
from ..model._positions import (
    entry_positions,
    previous_positions,
    query_positions,
    window_tokens,
)
from ..model._task import Task, _require_int
from ._config import Embeddings, GateClass, Maps, ModelConfig, Unembedding

# Streams of `init_model`'s key besides the gate vectors, which take the key itself (so that the
# theorem's setting starts at the full flow's c(0) for the same key).
_EMBEDDINGS, _UNEMBEDDING, _MAPS, _FIRST_MAPS, _GEOMETRY = 1, 2, 3, 4, 5
# The fields that hold learnable parameters (the rest, task and fixed geometry, never learn).
_LEARNABLE = (
    "gate_vectors",
    "gate_biases",
    "embeddings",
    "unembedding",
    "maps",
    "first_maps",
    "position_bias",
)


@final
class CompressedModel(eqx.Module):
    """The trained compressed model of docs/theory.md §11 (build it with `init_model`).

    Parameters (None where the switch does not use them; B = 1 branch with `tied=True`, whose
    gates then serve both keys and values, else 2 with the key branch first):
    - `gate_vectors`: c, shape (H, B, W, D) (`gates="linear"`); D = N + 1 for the exact
      geometry, else the embedding dimension.
    - `gate_biases`: b, shape (H, B, W) (`gates="bias"`, or `bias=True`).
    - `embeddings`: learned embeddings (N, d) (`embeddings="learned"`).
    - `unembedding`: learned unembedding (N, d) (`unembedding="learned"`).
    - `maps`: the compressed layer's per-head Q, K, V, O, shape (4, H, d, d) (`maps="learned"`).
    - `first_maps`: the same for the first layer (`layers=2` with `maps="learned"`).
    - `position_bias`: the first layer's relative-position bias $\\pi_h[t - u]$, shape (H, T)
      (`layers=2`).

    Fixed: `task`, `config` (static) and `geometry` (the exact or approximate embeddings; None
    when they are learned). The first layer (`layers=2`) has H heads and attends causally over the
    positions 0..t of the context (no wrap around the cycle): $z_t = x_t + \\sum_h O^1_h
    \\sum_{u \\le t} \\mathrm{softmax}_u(\\gamma \\langle Q^1_h x_t, K^1_h x_u \\rangle +
    \\pi_h[t-u]) V^1_h x_u$, with the task's gamma. `general` (static, a test hook) computes
    the logits on the general path even where the library's `query_logits` applies.

    ```python
    model = init_model(task, ModelConfig(), jax.random.key(0))
    model.loss(contexts)  # == monte_carlo_loss(task, geometry, LinearGates(c), contexts)
    ```
    """

    task: Task
    config: ModelConfig = eqx.field(static=True)
    geometry: AbstractGeometry | None
    gate_vectors: Float[Array, "heads branches offsets dim"] | None
    gate_biases: Float[Array, "heads branches offsets"] | None
    embeddings: Float[Array, "vocab dim"] | None
    unembedding: Float[Array, "vocab dim"] | None
    maps: Float[Array, "4 heads dim dim"] | None
    first_maps: Float[Array, "4 heads dim dim"] | None
    position_bias: Float[Array, "heads positions"] | None
    # test hook: compute the logits with the general path even where the library's applies
    general: bool = eqx.field(static=True, default=False)

    # -- what the interface promises -----------------------------------------------------------

    def logits(self, tokens: Int[Array, "blocks stride"]):
        """Logits of every query of one context, in the library's convention.

        **Arguments:**
        - `tokens`: token ids (L, S); position l*S + r holds `tokens[l, r]`.

        **Returns:** `(logits, log_multiplicity, target)`, shapes (Q, V'), (V',), (Q,), queries in
        the order of `query_positions`: V' = T + 1 (context positions, then the tokens outside)
        for the exact geometry, N otherwise; `cross_entropy` and `top1_correct` apply.
        """
        if self._library_path:
            return self.geometry.query_logits(
                self.task, self._library_gates(tokens), tokens
            )
        return self._forward(tokens)

    def gate_probabilities(
        self, tokens: Int[Array, "blocks stride"]
    ) -> Float[Array, "heads 2 blocks offsets"]:
        """$p^K_{h,l}, p^V_{h,l}$ of one context, shape (H, 2, L, W) (tied: both branches equal).

        **Arguments:**
        - `tokens`: token ids (L, S).

        **Returns:** the gate probabilities over each entry's W window offsets (at the theorem's
        setting `LinearGates(c).for_context`, the flow's own gates).
        """
        if self._theorem_gates:
            gates = self._library_gates(tokens)
            return jnp.stack([gates.key, gates.value], axis=1)
        space = self._space(tokens)
        return self._gates(space, self._residual(space))

    def loss(
        self,
        contexts: Int[Array, "contexts blocks stride"],
        *,
        batch_size: int | None = None,
    ) -> Float[Array, ""]:
        """Mean cross-entropy over the contexts and every enumerated query.

        At the theorem's setting this is `monte_carlo_loss(task, geometry, LinearGates(c),
        contexts)` itself.

        **Arguments:**
        - `contexts`: token ids (M, L, S).
        - `batch_size`: contexts evaluated at once (None: all), a memory bound.

        **Returns:** the scalar loss.
        """
        if self._theorem_gates:
            return monte_carlo_loss(
                self.task,
                self.geometry,
                LinearGates(self.flow_gate_vectors()),
                contexts,
                batch_size=batch_size,
            )

        def one(tokens):
            return cross_entropy(*self.logits(tokens))

        if batch_size is None:
            per_query = jax.vmap(one)(contexts)
        else:
            per_query = jax.lax.map(one, contexts, batch_size=batch_size)
        return jnp.mean(per_query)

    def population_loss(self) -> Float[Array, ""]:
        """The exact population loss, where the model has a closed form (docs/theory.md §4, §10).

        Static gates (`gates="bias"` or `"uniform"`) on the exact geometry with one layer and no
        local branch: every context has the same loss,
        `population_loss(task, shared_gates_from_logits(b))` (uniform: `uniform_gates`).

        **Returns:** the scalar loss; raises `ValueError` naming the switch that rules a closed
        form out.
        """
        cfg = self.config
        why = None
        if self.gate_vectors is not None:
            why = f"gates='{cfg.gates}' makes the gates depend on the tokens"
        elif not self._embedding_geometry.exchangeable_tokens:
            why = f"embeddings='{cfg.embeddings}' is not the exact geometry"
        elif cfg.layers != 1:
            why = f"layers={cfg.layers} mixes the tokens before the compressor"
        elif cfg.local_window:
            why = f"local_window={cfg.local_window} adds exact entries"
        if why is not None:
            raise ValueError(f"population_loss needs a closed form: {why}")
        return population_loss(self.task, self._static_gates())

    def _static_gates(self) -> SharedGates:
        """The block-shared gates of a model without gate vectors: softmax of its biases
        (`gates="bias"`), or the uniform gates (no gate parameters)."""
        if self.gate_biases is None:
            return uniform_gates(self.task.H, self.task.W)
        return shared_gates_from_logits(_both_branches(self.gate_biases))

    def trainable(self) -> PyTree[bool]:
        """Filter spec for `eqx.partition`: True on the learnable leaves, False on the task, the
        fixed geometry and everything else.

        ```python
        params, fixed = eqx.partition(model, model.trainable())
        ```
        """
        spec = jax.tree_util.tree_map(lambda _: False, self)
        names = [n for n in _LEARNABLE if getattr(self, n) is not None]
        return eqx.tree_at(
            lambda m: [getattr(m, n) for n in names],
            spec,
            [True] * len(names),
        )

    def flow_gate_vectors(self) -> Float[Array, "heads 2 offsets dim"]:
        """The gate vectors in the flow's layout (H, 2, W, D): tied, the value half a copy of
        the key half (`flow.tie`). Gradients of the loss w.r.t. a tied model's c are the sums of
        both halves' gradients, the key half of the tied flow's right-hand side."""
        return _both_branches(self.gate_vectors)

    # -- the paths -----------------------------------------------------------------------------

    @property
    def _library_path(self) -> bool:
        cfg = self.config
        return (
            not self.general
            and self.geometry is not None
            and cfg.maps is Maps.IDENTITY
            and cfg.unembedding is Unembedding.TIED
            and cfg.layers == 1
            and cfg.local_window == 0
        )

    @property
    def _theorem_gates(self) -> bool:
        # the library path with the linear class itself (gate vectors, no explicit bias): the
        # loss is `monte_carlo_loss`
        return (
            self._library_path
            and self.gate_vectors is not None
            and self.gate_biases is None
        )

    def _library_gates(self, tokens):
        if self._theorem_gates:
            return LinearGates(self.flow_gate_vectors()).for_context(
                self.geometry, window_tokens(tokens, self.task.W)
            )
        p = self.gate_probabilities(tokens)
        return OracleGates(key=p[:, 0], value=p[:, 1])

    def _space(self, tokens) -> _ContextSpace:
        """The coordinates one context is computed in (module docstring): the geometry's own
        (`context_coordinates`)."""
        flat = tokens.reshape(self.task.T)
        geometry = self._embedding_geometry
        X, c = geometry.context_coordinates(flat, self.gate_vectors)
        return _ContextSpace(X, c, geometry, self.unembedding, flat)

    @property
    def _embedding_geometry(self) -> AbstractGeometry:
        """The fixed geometry, or the learned embeddings as a dense one (their kappa and eps
        unmeasured: NaN; the general path uses only the matrix)."""
        if self.geometry is not None:
            return self.geometry
        return DenseGeometry(self.embeddings, kappa=np.nan, eps=np.nan)

    def _residual(self, space: _ContextSpace) -> Float[Array, "positions dim"]:
        x = space.X
        if self.config.layers == 1:
            return x
        M, xh = self.first_maps, _heads(x, self.task.H)
        a = self._first_attention(x)
        heads = _apply(M, 3, jnp.einsum("htu,hud->htd", a, _apply(M, 2, xh)))
        return x + jnp.sum(heads, axis=0)

    def first_layer_attention(
        self, tokens: Int[Array, "blocks stride"]
    ) -> Float[Array, "heads positions positions"]:
        """The first layer's causal attention of one context (`layers=2`), shape (H, T, T):
        entry [h, t, u] is head h's weight of position u at position t, zero for u > t, each
        row summing to 1 over u <= t.

        **Arguments:**
        - `tokens`: token ids (L, S).

        **Returns:** the attention weights; raises `ValueError` for a one-layer model.

        ```python
        a = model.first_layer_attention(tokens)
        previous = a[:, np.arange(1, T), np.arange(T - 1)]  # mass on the previous position
        ```
        """
        if self.config.layers != 2:
            raise ValueError(
                f"first_layer_attention needs layers=2, got layers={self.config.layers}"
            )
        return self._first_attention(self._space(tokens).X)

    def _first_attention(self, x) -> Float[Array, "heads positions positions"]:
        """softmax over u <= t of gamma <Q^1_h x_t, K^1_h x_u> + pi_h[t - u] (class docstring)."""
        T = self.task.T
        t, u = np.arange(T)[:, None], np.arange(T)[None, :]
        M, xh = self.first_maps, _heads(x, self.task.H)
        scores = self.task.gamma * jnp.einsum(
            "htd,hud->htu", _apply(M, 0, xh), _apply(M, 1, xh)
        )
        scores = jnp.where(
            u <= t, scores + self.position_bias[:, (t - u) % T], -jnp.inf
        )
        return jax.nn.softmax(scores, axis=-1)

    def _gates(self, space: _ContextSpace, z) -> Float[Array, "heads 2 blocks offsets"]:
        """softmax over the offsets of the scores of `_gate_scores`, per branch, then both
        branches (tied: the one branch twice, so that its gradient is the sum of both reads)."""
        L, S, W, H = self.task.L, self.task.S, self.task.W, self.task.H
        if self.gate_vectors is None and self.gate_biases is None:
            # uniform gates as the constant itself: XLA folds a product with it otherwise
            # than with softmax(0) (the same values): the numbers moved in their last bits
            return jnp.full((H, 2, L, W), 1.0 / W, z.dtype)
        zw = z[entry_positions(L, S, W)]  # (L, W, D)
        return _both_branches(jax.nn.softmax(self._gate_scores(space, zw), axis=-1))

    def _gate_scores(
        self, space: _ContextSpace, zw
    ) -> Float[Array, "heads b blocks offsets"]:
        """$s = \\langle c, z \\rangle + b$ of every entry (L, W), each term where the model
        has its parameter: the linear class (c), its explicit bias or the bias class (b),
        at least one of them (uniform gates have neither: `_gates`). The terms are added in
        this order, as the scores always were."""
        L, W = self.task.L, self.task.W
        terms = []
        if space.c is not None:
            terms.append(jnp.einsum("hbod,lod->hblo", space.c, zw))
        if self.gate_biases is not None:
            terms.append(self.gate_biases[:, :, None, :])
        s = functools.reduce(operator.add, terms)
        return jnp.broadcast_to(s, s.shape[:2] + (L, W))

    def _attend(self, z, p) -> Float[Array, "heads queries dim"]:
        """Each head's output $O_h \\sum a v$ at every query position (H, Q, D)."""
        L, S, W, T = self.task.L, self.task.S, self.task.W, self.task.T
        M, H = self.maps, self.task.H
        zw = z[entry_positions(L, S, W)]  # (L, W, D)
        keys = _apply(M, 1, jnp.einsum("hlo,lod->hld", p[:, 0], zw))  # (H, L, D)
        values = _apply(M, 2, jnp.einsum("hlo,lod->hld", p[:, 1], zw))
        positions = query_positions(L, S, self.task.queries)
        q = _apply(M, 0, _heads(z[positions], H))  # (H, Q, D)
        scores = jnp.einsum("hqd,hld->hql", q, keys)
        w = self.config.local_window
        if w:
            # the w positions just before each query, one exact entry per token; the maps are
            # applied once per position and then gathered (not once per query and position)
            near = previous_positions(positions, w, T)  # (Q, w)
            zh = _heads(z, H)  # (H, T, D)
            scores = jnp.concatenate(
                [scores, jnp.einsum("hqd,hqkd->hqk", q, _apply(M, 1, zh)[:, near])],
                axis=-1,
            )
        a = jax.nn.softmax(self.task.gamma * scores, axis=-1)
        out = jnp.einsum("hql,hld->hqd", a[..., :L], values)
        if w:
            out = out + jnp.einsum(
                "hqk,hqkd->hqd", a[..., L:], _apply(M, 2, zh)[:, near]
            )
        return _apply(M, 3, out)

    # -- interventions (trained/_interventions.py) ---------------------------------------------

    def head_outputs(
        self, tokens: Int[Array, "blocks stride"]
    ) -> Float[Array, "heads queries dim"]:
        """Each compressed-layer head's output $O_h \\sum a v$ at every query of one context,
        in the general path's coordinates (exact geometry: the context's T + 1 coordinates, e_0
        first; otherwise the embedding space).

        **Arguments:**
        - `tokens`: token ids (L, S).

        **Returns:** shape (H, Q, D); their sum times beta, read out, gives `logits`.
        """
        space = self._space(tokens)
        z = self._residual(space)
        return self._attend(z, self._gates(space, z))

    def ablated_logits(
        self,
        tokens: Int[Array, "blocks stride"],
        knocked: Bool[Array, " heads"],
        replacement: Float[Array, "heads dim"],
        residual_shift: Float[Array, " dim"] | None = None,
    ):
        """`logits` with the outputs of the `knocked` compressed-layer heads replaced by
        `replacement` (the same vector at every query), and `residual_shift` added to the
        compressed layer's input at every position (general path; the same forward pass).

        **Arguments:**
        - `tokens`: token ids (L, S).
        - `knocked`: which heads to replace, (H,).
        - `replacement`: per head, the vector that replaces its output, (H, D) in the
          coordinates of `head_outputs`.
        - `residual_shift`: (D,) or None.

        **Returns:** as `logits`.
        """
        return self._forward(tokens, (knocked, replacement), residual_shift)

    def _forward(self, tokens, replace=None, residual_shift=None):
        """The general path of `logits`, with the optional interventions of `ablated_logits`."""
        space = self._space(tokens)
        z = self._residual(space)
        if residual_shift is not None:
            z = z + residual_shift
        heads = self._attend(z, self._gates(space, z))
        if replace is not None:
            knocked, replacement = replace
            heads = jnp.where(knocked[:, None, None], replacement[:, None, :], heads)
        return space.readout(self.task, self.task.beta * jnp.sum(heads, axis=0))


class _ContextSpace(eqx.Module):
    """One context in coordinates: embeddings `X` (T, D) of its positions, gate vectors `c` in
    the same coordinates, and the geometry (with the learned unembedding, if any) that reads
    logits out of them."""

    X: Float[Array, "positions dim"]
    c: Float[Array, "heads branches offsets dim"] | None
    geometry: AbstractGeometry
    unembedding: Float[Array, "vocab dim"] | None
    tokens: Int[Array, " positions"]

    def readout(self, task: Task, outputs: Float[Array, "queries dim"]):
        return self.geometry.context_readout(
            task, outputs, self.tokens, self.unembedding
        )


def _both_branches(y):
    """(H, 1, ...) tied parameters or gates as (H, 2, ...); untied ones unchanged."""
    return jnp.broadcast_to(y, (y.shape[0], 2) + y.shape[2:])


def _apply(maps, which: int, x):
    """Map `which` (0..3: Q, K, V, O) of every head applied to x (H, ..., D); identity maps
    (None) leave x as it is."""
    if maps is None:
        return x
    return jnp.einsum("hij,h...j->h...i", maps[which], x)


def _heads(x, H: int):
    """x (..., D) repeated for each of H heads, (H, ..., D)."""
    return jnp.broadcast_to(x, (H,) + x.shape)


def _near_identity(key, H, d, rho):
    """Four per-head d x d maps: identity plus Gaussian noise of standard deviation rho/sqrt(d)."""
    noise = jax.random.normal(key, (4, H, d, d)) * (rho / np.sqrt(d))
    return jnp.eye(d) + noise


def init_model(
    task: Task,
    config: ModelConfig,
    key: PRNGKeyArray,
    *,
    rho: float = 0.1,
    geometry: AbstractGeometry | None = None,
) -> CompressedModel:
    """A compressed model of `task` with the switches of `config`, at its initial parameters.

    - Gate vectors c: uniform in the ball of radius `rho` (`initial_gate_vectors(key, task,
      geometry, rho, tied)` with `key` itself, so the theorem's setting starts at the full flow's
      c(0); tied: one branch).
    - Bias-only gates (`gates="bias"`): the static part of such a c, $b = \\langle c, m
      \\rangle$ (exact geometry: `initial_biases(key, task, rho, tied)`, the reduced flow's
      b(0)); explicit biases beside linear scores (`bias=True`) start at zero.
    - Learned embeddings: entries N(0, 1/d) (rows of about unit norm, no shared component).
    - Learned unembedding: the initial embeddings plus N(0, rho^2/d) noise (starts near tied).
    - Learned maps (both layers): identity plus N(0, rho^2/d) noise per entry (starts near the
      theorem's identity maps).
    - The first layer's position bias (`layers=2`): zero (uniform causal attention at the start).

    **Arguments:**
    - `task`: the task (L, S, W, H, N, queries, gamma, beta, kappa; its geometry for fixed
      embeddings).
    - `config`: the switches (`ModelConfig`).
    - `key`: PRNG key.
    - `rho`: radius of the initial gate ball (keyword), > 0.
    - `geometry`: the fixed embeddings (keyword): `ExactGeometry` for `embeddings="exact"`, a
      `DenseGeometry` for `"approximate"` (None: `make_geometry(task, ...)`, drawn from a stream
      of `key`; not under vmap, where it must be given).

    **Returns:** a `CompressedModel`.

    ```python
    task = Task(L=4, S=3, H=1, N=64)
    model = init_model(task, ModelConfig(), jax.random.key(0))
    model.gate_vectors.shape  # (1, 2, 3, 65)
    ```
    """
    if not isinstance(config, ModelConfig):
        raise ValueError(f"config must be a ModelConfig, got {type(config).__name__}")
    if config.local_window:
        _require_int("local_window", config.local_window, 0, task.T - 1)
    geometry = _fixed_geometry(task, config, key, geometry)
    H, T = task.H, task.T
    dim = geometry.dim if geometry is not None else config.d
    embeddings = unembedding = maps = first_maps = position_bias = None
    if config.embeddings is Embeddings.LEARNED:
        embeddings = jax.random.normal(
            jax.random.fold_in(key, _EMBEDDINGS), (task.vocabulary, dim)
        ) / np.sqrt(dim)
    if config.unembedding is Unembedding.LEARNED:
        base = embeddings if embeddings is not None else geometry.embeddings
        unembedding = base + jax.random.normal(
            jax.random.fold_in(key, _UNEMBEDDING), base.shape
        ) * (rho / np.sqrt(dim))
    if config.maps is Maps.LEARNED:
        maps = _near_identity(jax.random.fold_in(key, _MAPS), H, dim, rho)
        if config.layers == 2:
            first_maps = _near_identity(
                jax.random.fold_in(key, _FIRST_MAPS), H, dim, rho
            )
    if config.layers == 2:
        position_bias = jnp.zeros((H, T))

    init = _GATE_INIT[config.gates]
    gate_vectors, gate_biases = init(key, task, config, geometry, embeddings, rho, dim)
    return CompressedModel(
        task=task,
        config=config,
        geometry=geometry,
        gate_vectors=gate_vectors,
        gate_biases=gate_biases,
        embeddings=embeddings,
        unembedding=unembedding,
        maps=maps,
        first_maps=first_maps,
        position_bias=position_bias,
    )


def _linear_gates(key, task, config, geometry, embeddings, rho, dim):
    """c ball-uniform of radius rho (the full flow's c(0) on a fixed geometry); the explicit
    biases (`bias=True`) at zero."""
    B = 1 if config.tied else 2
    if geometry is not None:
        c = initial_gate_vectors(key, task, geometry, rho, config.tied)[:, :B]
    else:
        c = ball_uniform(key, (task.H, B, task.W, dim), rho)
    return c, jnp.zeros((task.H, B, task.W)) if config.bias else None


def _bias_gates(key, task, config, geometry, embeddings, rho, dim):
    """b = <c, m> of such a c (exact geometry: the reduced flow's b(0), `initial_biases`)."""
    B = 1 if config.tied else 2
    if isinstance(geometry, ExactGeometry):
        return None, initial_biases(key, task, rho, config.tied)[:, :B]
    m = geometry.mean_embedding() if geometry is not None else jnp.mean(embeddings, 0)
    return None, ball_uniform(key, (task.H, B, task.W, dim), rho) @ m


# The initial (gate vectors, gate biases) of each gate class; the model's paths follow from
# which of the two it has (`CompressedModel._gate_scores`).
_GATE_INIT = {
    GateClass.LINEAR: _linear_gates,
    GateClass.BIAS: _bias_gates,
    GateClass.UNIFORM: lambda *args: (None, None),
}


def _fixed_geometry(task, config, key, geometry):
    """The fixed embeddings a config asks for, checked against the task."""
    kind = config.embeddings
    if kind is Embeddings.LEARNED:
        if geometry is not None:
            raise ValueError(
                "geometry gives fixed embeddings; embeddings='learned' learns its own"
            )
        return None
    if kind is Embeddings.EXACT and not task.exact:
        raise ValueError(
            f"embeddings='exact' needs an exact task (eps = 0, no d); got eps={task.eps}, "
            f"d={task.d}"
        )
    if kind is Embeddings.APPROXIMATE and task.exact:
        raise ValueError(
            "embeddings='approximate' needs a task with eps > 0 or d; this task is exact"
        )
    if geometry is None:
        return make_geometry(task, jax.random.fold_in(key, _GEOMETRY))
    want = ExactGeometry if kind is Embeddings.EXACT else DenseGeometry
    if not isinstance(geometry, want):
        raise ValueError(
            f"geometry must be a {want.__name__} for embeddings='{kind}', got "
            f"{type(geometry).__name__}"
        )
    if geometry.N != task.vocabulary:
        raise ValueError(
            f"geometry must have N = {task.vocabulary} tokens (the task's), got {geometry.N}"
        )
    return geometry


def dense_twin(model: CompressedModel) -> CompressedModel:
    """The same model on the exact geometry's dense N x (N+1) realization (small N only): a
    test of the structured path against the literal one."""
    return eqx.tree_at(lambda m: m.geometry, model, model.geometry.dense())


def general_path(model: CompressedModel) -> CompressedModel:
    """The same model computing its logits on the general path even where the library's applies
    (a test of one against the other)."""
    return dataclasses.replace(model, general=True)


__all__ = ["CompressedModel", "init_model"]
