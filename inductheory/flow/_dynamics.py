"""Gradient-flow dynamics of the linear gate class (docs/theory.md §6) behind one contract.

A dynamics says what the state is and how it moves: its `vector_field`, the `statistics` saved along
the way, and the worst-case gate masses over windows (`worst_masses`) from which selection is read.
`integrate` (in `_flow`) takes any dynamics; a new one subclasses `AbstractDynamics` here.

With `tied=True` both branches use the key branch's parameters (one gate per head, as in kernels
that share K and V): the state keeps its shape, the value half follows the key half exactly, and
selection asks for key mass >= 1 - delta on one offset (key at r with value at r+1 is impossible).

- `ReducedDynamics`: the exact flow on the symmetric subspace c in span(m), state b of shape
  (H, 2, W):
  $\\dot b = -(\\kappa + 1/N) \\nabla_b \\bar L(b)$, $\\bar L$ = `population_loss` of
  `shared_gates_from_logits(b)` (exact geometry).
- `FullDynamics`: $\\dot c = -\\nabla_c \\hat L(c)$, state c of shape (H, 2, W, d), $\\hat L$ =
  `monte_carlo_loss` of `LinearGates(c)` on a fixed sample of contexts (every query enumerated).
"""

# No `from __future__ import annotations` here: equinox reads the `AbstractVar` annotations when
# the class is created and does not accept them as strings.

import abc
from typing import final

import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array, Float, Int, PyTree

from ..model._gates import (
    LinearGates,
    selected_offsets,
    shared_gates_from_logits,
)
from ..model._geometry import AbstractGeometry
from ..model._loss import (
    monte_carlo_loss,
    monte_carlo_phase_losses,
    phase_losses,
    population_loss,
)
from ..model._measures import effective_number, effective_offsets
from ..model._objective import Objective
from ..model._positions import window_tokens
from ..model._task import Task
from ._init import mean_norm_squared


def tie(y: Float[Array, "heads 2 ..."]) -> Float[Array, "heads 2 ..."]:
    """Both branches set to the key branch: the tied parametrization (one gate per head)."""
    return jnp.broadcast_to(y[:, :1], y.shape)


def concentration_margin(
    worst: Float[Array, "heads 2 offsets"], delta
) -> Float[Array, ""]:
    """$\\min_h \\max_r p^K_{\\min}(r) - (1 - \\delta)$: >= 0 when every head's key gate holds
    mass >= 1 - delta on one offset (the selection event of tied gates)."""
    return jnp.min(jnp.max(worst[:, 0], axis=-1)) - (1 - delta)


def head_selection(
    worst: Float[Array, "heads 2 offsets"], delta, tied: bool = False
) -> Int[Array, " heads"]:
    """The offset r each head delta-selects uniformly (worst-case masses), or -1.

    Selection at r: $\\min p^K(r) \\ge 1 - \\delta$ and $\\min p^V(r + 1) \\ge 1 - \\delta$,
    minima over the windows; tied: $\\min p^K(r) \\ge 1 - \\delta$ (the rule of
    `selected_offsets`).
    """
    return selected_offsets(worst[:, 0], worst[:, 1], delta, tied)


def selection_margin(worst: Float[Array, "heads 2 offsets"], delta) -> Float[Array, ""]:
    """A continuous function of the gates that is >= 0 exactly when every head delta-selects.

    $g = \\min_h \\max_{r \\le S-2} \\min(p^K_{\\min}(r), p^V_{\\min}(r+1)) - (1 - \\delta)$; the
    selection Event finds its zero crossing with a root find (`FlowConfig.root_finder`), so the
    reported time to selection is the crossing time itself, not the end of a solver step.
    """
    pair = jnp.minimum(worst[:, 0, :-1], worst[:, 1, 1:])
    return jnp.min(jnp.max(pair, axis=-1)) - (1 - delta)


def sample_gates(
    geometry: AbstractGeometry,
    contexts: Int[Array, "contexts blocks offsets"],
    c: Float[Array, "heads 2 offsets dim"],
    batch_size: int | None = None,
) -> Float[Array, "contexts heads 2 blocks offsets"]:
    """Gate probabilities $p^B_{h,l}(r)$ of `LinearGates(c)` in every context of a sample, shape
    (M, H, 2, L, W); `contexts` are the entries' tokens (M, L, W) (`window_tokens`); `batch_size`
    contexts at a time (`None`: all)."""
    gates = LinearGates(c)

    def one(tokens):
        g = gates.for_context(geometry, tokens)
        return jnp.stack([g.key, g.value], axis=1)

    if batch_size is None:
        return jax.vmap(one)(contexts)
    return jax.lax.map(one, contexts, batch_size=batch_size)


class AbstractDynamics(eqx.Module):
    """What `integrate` needs of a gradient flow over gates.

    Subclasses implement `vector_field(y)`, `statistics(y)` (a dict of arrays saved along the
    trajectory; must hold `loss`) and `worst_masses(y)` (shape (H, 2, S): the smallest gate mass of
    each head, branch and offset over all windows, which drives selection), and hold the fields
    `tied` (static: one gate per head for both branches) and `objective` (an `Objective` to descend
    instead of the loss, or None). The selection read-outs (`margin`, `selected`) and the tied
    parametrization (`parameters`, `tied_field`) are shared and never overridden.

    Abstract/final pattern: every field and `__init__` live in the final subclass, which is never
    subclassed itself (to change one method, wrap a dynamics instead).
    """

    tied: eqx.AbstractVar[bool]
    objective: eqx.AbstractVar[Objective | None]

    @abc.abstractmethod
    def vector_field(self, y: PyTree) -> PyTree:
        """The time derivative of the state."""

    @abc.abstractmethod
    def statistics(self, y: PyTree) -> dict:
        """Statistics of the state saved along the trajectory."""

    @abc.abstractmethod
    def worst_masses(self, y: PyTree) -> Float[Array, "heads 2 offsets"]:
        """Minimum gate masses over windows."""

    @abc.abstractmethod
    def error_norm(self, error: PyTree) -> Float[Array, ""]:
        """The norm of the solver's scaled error estimate (the step-size controller's)."""

    def margin(self, y: PyTree, delta) -> Float[Array, ""]:
        """`selection_margin` of the state: >= 0 exactly when every head delta-selects (tied: when
        every head's gate concentrates, `concentration_margin`)."""
        if self.tied:
            return concentration_margin(self.worst_masses(y), delta)
        return selection_margin(self.worst_masses(y), delta)

    def selected(self, y: PyTree, delta) -> Int[Array, " heads"]:
        """`head_selection` of the state: the offset each head delta-selects, or -1 (tied: the
        offset its gate concentrates on)."""
        return head_selection(self.worst_masses(y), delta, self.tied)

    def parameters(self, y: PyTree) -> PyTree:
        """The parameters the gates are computed from: `y`, or `tie(y)` for tied gates."""
        return tie(y) if self.tied else y

    def tied_field(self, dy: PyTree) -> PyTree:
        """Keep a tied state tied: the value half moves exactly as the key half."""
        return tie(dy) if self.tied else dy


@final
class ReducedDynamics(AbstractDynamics):
    """The exact flow on span(m): $\\dot b = -(\\kappa + 1/N) \\nabla_b \\bar L(b)$
    (docs/theory.md §6).

    On c in span(m), $\\langle c^B_{h,r}, x \\rangle = b_{h,B,r}$ for every token, so
    $L(c) = \\bar L(b)$
    with $b = \\langle c, m \\rangle$; the gradient $\\nabla_b \\bar L \\otimes m$ stays in
    span(m) and
    $\\dot b = \\langle \\dot c, m \\rangle = -|m|^2 \\nabla_b \\bar L$, $|m|^2 = \\kappa + 1/N$.

    **Arguments:**
    - `task`: exact-geometry configuration (its scalars are traced).
    - `tied`: one gate per head for both branches (keyword).
    - `objective`: an `Objective` to descend instead of the loss (keyword; None: the loss).

    ```python
    dyn = ReducedDynamics(Task(L=8, S=4, H=2, N=4096, beta=4.0))
    dyn.vector_field(jnp.zeros((2, 2, 4)))  # zero at the uniform point
    ```
    """

    # declared first (keyword-only) so that the pytree keeps the order (tied, objective, ...)
    tied: bool = eqx.field(static=True, default=False, kw_only=True)
    objective: Objective | None = eqx.field(default=None, kw_only=True)
    task: Task

    def loss(self, b: Float[Array, "heads 2 offsets"]) -> Float[Array, ""]:
        """$\\bar L(b)$ = `population_loss(task, shared_gates_from_logits(b))`."""
        return population_loss(self.task, shared_gates_from_logits(self.parameters(b)))

    def training_loss(self, b: Float[Array, "heads 2 offsets"]) -> Float[Array, ""]:
        """What the flow descends: `loss`, or the `objective` of the exact per-phase losses."""
        if self.objective is None:
            return self.loss(b)
        gates = shared_gates_from_logits(self.parameters(b))
        return self.objective(phase_losses(self.task, gates), gates.key)

    def vector_field(
        self, b: Float[Array, "heads 2 offsets"]
    ) -> Float[Array, "heads 2 offsets"]:
        return self.tied_field(
            -mean_norm_squared(self.task) * jax.grad(self.training_loss)(b)
        )

    def statistics(self, b: Float[Array, "heads 2 offsets"]) -> dict:
        """`mass` and `worst` (H, 2, S) (equal: gates are static, every window has p = softmax(b)),
        `loss` (), `static_offsets` and `avg_offsets` (H, 2) (equal), `biases` (H, 2, S)."""
        p = self.worst_masses(b)
        eff = effective_number(p)
        return dict(
            mass=p,
            worst=p,
            loss=self.loss(b),
            static_offsets=eff,
            avg_offsets=eff,
            biases=b,
        )

    def worst_masses(
        self, b: Float[Array, "heads 2 offsets"]
    ) -> Float[Array, "heads 2 offsets"]:
        return jax.nn.softmax(self.parameters(b), axis=-1)

    def error_norm(self, error: Float[Array, "heads 2 offsets"]) -> Float[Array, ""]:
        """The RMS norm (diffrax's default)."""
        return optx.rms_norm(error)


def _windows(
    p: Float[Array, "contexts heads 2 blocks offsets"],
) -> Float[Array, "windows heads 2 offsets"]:
    M, H, _, L, W = p.shape
    return jnp.moveaxis(p, 3, 1).reshape(M * L, H, 2, W)


@final
class FullDynamics(AbstractDynamics):
    """$\\dot c = -\\nabla_c \\hat L(c)$ for the linear class on a fixed sample of contexts.

    Under `ExactGeometry` the scores are gathers and the gradient a scatter-add: O(M L S H) work
    plus O(H S N) memory, never an N x (N+1) matrix. Under a `DenseGeometry` the logits of each
    context come from its basis (`context_bases`, computed once for the fixed sample): the
    same logits at O(N L S) per query instead of O(N d), with (M, N, L S) numbers held, about what
    the loss's own logits take; with a `batch_size` (a memory bound) the plain dense path is kept.
    Selection is required uniformly over the sample: `worst_masses` are minima over every context
    and block.

    **Arguments:**
    - `task`, `geometry`: configuration and realized geometry.
    - `contexts`: token ids (M, L, S).
    - `batch_size`: contexts per batch in the loss (`None`: all at once).
    - `tied`: one gate per head for both branches (keyword).
    - `objective`: an `Objective` to descend instead of the loss (keyword; None: the loss).
    - `context_bases`: use the per-context bases where the geometry has them (keyword; False: the
      plain dense path, the reference they are tested against).
    - `active_dim`: the first `active_dim` coordinates of R^d hold the embeddings, the others are
      zero padding (keyword, may be traced; None: all d). The flow never moves c along a zero
      coordinate, and the error norm leaves those out (`error_norm`), so a geometry padded with
      zero columns (and c(0) with zeros) gives the flow of the unpadded one up to rounding.

    ```python
    dyn = FullDynamics(task, geometry, contexts)
    dyn.vector_field(c0)  # (H, 2, W, d)
    ```
    """

    # declared first so that the pytree keeps the order (tied, objective, ...)
    tied: bool = eqx.field(static=True)
    objective: Objective | None
    task: Task
    geometry: AbstractGeometry
    contexts: Int[Array, "contexts blocks offsets"]
    batch_size: int | None = eqx.field(static=True)
    bases: AbstractGeometry | None
    active_dim: Int[Array, ""] | None

    def __init__(
        self,
        task: Task,
        geometry: AbstractGeometry,
        contexts: Int[Array, "contexts blocks offsets"],
        batch_size: int | None = None,
        *,
        tied: bool = False,
        objective: Objective | None = None,
        context_bases: bool = True,
        active_dim=None,
    ):
        self.tied, self.objective = tied, objective
        self.task, self.geometry, self.contexts = task, geometry, contexts
        self.batch_size = batch_size
        self.bases = (
            geometry.context_bases(contexts)
            if context_bases and batch_size is None
            else None
        )
        self.active_dim = active_dim

    def loss(self, c: Float[Array, "heads 2 offsets dim"]) -> Float[Array, ""]:
        """$\\hat L(c)$ = `monte_carlo_loss` of `LinearGates(c)` on the fixed sample."""
        return monte_carlo_loss(
            self.task,
            self.geometry,
            LinearGates(self.parameters(c)),
            self.contexts,
            batch_size=self.batch_size,
            bases=self.bases,
        )

    def training_loss(self, c: Float[Array, "heads 2 offsets dim"]) -> Float[Array, ""]:
        """What the flow descends: `loss`, or the `objective` of the sample's per-phase
        losses, with the
        overlap of the key gates averaged over the sample's windows."""
        if self.objective is None:
            return self.loss(c)
        losses = monte_carlo_phase_losses(
            self.task,
            self.geometry,
            LinearGates(self.parameters(c)),
            self.contexts,
            batch_size=self.batch_size,
            bases=self.bases,
        )
        key = jnp.moveaxis(self.gates(c)[:, :, 0], 2, 1)  # (M, L, H, W): windows first
        return self.objective(losses, key)

    def vector_field(
        self, c: Float[Array, "heads 2 offsets dim"]
    ) -> Float[Array, "heads 2 offsets dim"]:
        return self.tied_field(-jax.grad(self.training_loss)(c))

    def gates(
        self, c: Float[Array, "heads 2 offsets dim"]
    ) -> Float[Array, "contexts heads 2 blocks offsets"]:
        """Gate probabilities of `LinearGates(c)` in every context of the sample
        (`sample_gates`)."""
        return sample_gates(
            self.geometry,
            window_tokens(self.contexts, self.task.W),
            self.parameters(c),
            self.batch_size,
        )

    def statistics(self, c: Float[Array, "heads 2 offsets dim"]) -> dict:
        """Statistics over the sample's M*L windows (context, block): `mass` (H, 2, S) averaged,
        `worst` (H, 2, S) minimum, `loss` () on the sample, `static_offsets` and `avg_offsets`
        (H, 2) of docs/theory.md §9, `biases` (H, 2, S) = $\\langle c, m \\rangle$.

        Our formalization: the effective offsets are measured on the training sample's own windows,
        not on held-out ones as in the paper (docs/theory.md §9); on a balanced sample
        started in span(m)
        the two coincide, since the gates are then the same in every window.
        """
        w = _windows(self.gates(c))
        static, avg = effective_offsets(jnp.moveaxis(w, 0, -2))
        return dict(
            mass=jnp.mean(w, axis=0),
            worst=jnp.min(w, axis=0),
            loss=self.loss(c),
            static_offsets=static,
            avg_offsets=avg,
            biases=LinearGates(self.parameters(c)).biases(self.geometry),
        )

    def worst_masses(
        self, c: Float[Array, "heads 2 offsets dim"]
    ) -> Float[Array, "heads 2 offsets"]:
        return jnp.min(_windows(self.gates(c)), axis=0)

    def error_norm(
        self, error: Float[Array, "heads 2 offsets dim"]
    ) -> Float[Array, ""]:
        """The RMS norm over the `active_dim` coordinates that hold embeddings: on the padding
        the error estimate is zero, so the RMS over all d is rescaled by sqrt(d / active_dim)
        (by exactly 1 without padding)."""
        if self.active_dim is None:
            return optx.rms_norm(error)
        return optx.rms_norm(error) * jnp.sqrt(error.shape[-1] / self.active_dim)


__all__ = [
    "AbstractDynamics",
    "FullDynamics",
    "ReducedDynamics",
    "concentration_margin",
    "head_selection",
    "sample_gates",
    "selection_margin",
    "tie",
]
