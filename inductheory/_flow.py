"""Gradient flow of the linear gate class (THEORY.md §6, Theorem 2) on diffrax.

Two dynamics:
- `reduced`: the exact flow on the symmetric subspace c in span(m), of dimension 2HS:
  $\\dot b = -(\\kappa + 1/N) \\nabla_b \\bar L(b)$, $\\bar L$ = `population_loss` of
  `shared_gates_from_logits(b)` (exact geometry).
- `full`: $\\dot c = -\\nabla_c \\hat L(c)$, $\\hat L$ = `monte_carlo_loss` of `LinearGates(c)` on a fixed
  sample of M contexts (every query enumerated), on the structured exact geometry or a dense one.

Both integrate with an adaptive solver and a PID step-size controller from t = 0 to `t_max`, stop
early by a diffrax `Event` once every head delta-selects (key mass >= 1 - delta at some r and value
mass >= 1 - delta at r + 1, uniformly over the sample's contexts and blocks), and save statistics
only (`SaveAt(fn=...)`) at log-spaced times.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array, Float, Int, PyTree

from ._config import Task, TheoryAssumptionWarning, _require_int, _require_real
from ._gates import LinearGates, first_offset, selected_offsets, shared_gates_from_logits
from ._geometry import Geometry
from ._init import mean_norm_squared
from ._loss import monte_carlo_loss, population_loss
from ._measures import effective_number, effective_offsets

SOLVERS = {
    "tsit5": diffrax.Tsit5,
    "dopri5": diffrax.Dopri5,
    "dopri8": diffrax.Dopri8,
    "bosh3": diffrax.Bosh3,
    "heun": diffrax.Heun,
}
DYNAMICS = ("reduced", "full")
SAMPLES = ("balanced", "iid")
INITS = ("ball", "projected")
# Per-seed outcome codes, in this order (`STATUSES[code]`).
STATUSES = ("selected", "t_max", "max_steps", "nonfinite", "solver_error")
SELECTED, T_MAX, MAX_STEPS, NONFINITE, SOLVER_ERROR = range(len(STATUSES))


class FlowConfig(eqx.Module):
    """Everything about a gradient-flow run except the task.

    **Arguments:**
    - `dynamics`: `"reduced"` (2HS-dimensional exact flow) or `"full"` (d-dimensional linear class on
      a Monte-Carlo sample).
    - `rho`: radius of the ball-uniform c(0), > 0 (small for Theorem 2).
    - `delta`: selection tolerance in (0, 1/2).
    - `t_max`: final time, > 0.
    - `solver`: one of `SOLVERS` (adaptive, with an embedded error estimate).
    - `rtol`, `atol`: PID controller tolerances, > 0.
    - `max_steps`: solver step budget.
    - `M`: contexts in the sample (full dynamics). Balanced samples hold a multiple of N/L contexts;
      `M` is rounded up to one (see `sample_size`).
    - `sample`: `"balanced"` (default, `balanced_contexts`) or `"iid"` (`sample_contexts`).
    - `init`: full dynamics only: `"ball"` (c(0) ball-uniform) or `"projected"` (its projection on
      span(m), token-specific components zero).
    - `batch_size`: contexts per batch in the loss (`None`: all at once); bounds memory.
    - `n_save`: number of log-spaced save times in [`t_save_min`, `t_max`] (plus t = 0; the end state is
      reported separately as `final`).
    - `t_save_min`: first save time, in (0, t_max).

    Raises `ValueError` naming the parameter and its constraint; warns with
    `TheoryAssumptionWarning` when rho >= 1 (Theorem 2 needs a small init).

    ```python
    config = FlowConfig(dynamics="reduced", rho=0.1, delta=1e-3, t_max=1e6)
    ```
    """

    dynamics: str = eqx.field(static=True, default="reduced")
    rho: float = eqx.field(static=True, default=0.1)
    delta: float = eqx.field(static=True, default=1e-3)
    t_max: float = eqx.field(static=True, default=1e6)
    solver: str = eqx.field(static=True, default="tsit5")
    rtol: float = eqx.field(static=True, default=1e-8)
    atol: float = eqx.field(static=True, default=1e-10)
    max_steps: int = eqx.field(static=True, default=100_000)
    M: int = eqx.field(static=True, default=1024)
    sample: str = eqx.field(static=True, default="balanced")
    init: str = eqx.field(static=True, default="ball")
    batch_size: int | None = eqx.field(static=True, default=None)
    n_save: int = eqx.field(static=True, default=64)
    t_save_min: float = eqx.field(static=True, default=1e-2)

    def __check_init__(self):
        if self.dynamics not in DYNAMICS:
            raise ValueError(f"dynamics must be one of {DYNAMICS}, got {self.dynamics!r}")
        if _require_real("rho", self.rho) <= 0:
            raise ValueError(f"rho must be > 0, got {self.rho}")
        if not 0 < _require_real("delta", self.delta) < 0.5:
            raise ValueError(f"delta must satisfy 0 < delta < 1/2, got {self.delta}")
        if _require_real("t_max", self.t_max) <= 0:
            raise ValueError(f"t_max must be > 0, got {self.t_max}")
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {tuple(SOLVERS)}, got {self.solver!r}")
        for name in ("rtol", "atol"):
            if _require_real(name, getattr(self, name)) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        _require_int("max_steps", self.max_steps, 1)
        _require_int("M", self.M, 1)
        if self.sample not in SAMPLES:
            raise ValueError(f"sample must be one of {SAMPLES}, got {self.sample!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.batch_size is not None:
            _require_int("batch_size", self.batch_size, 1)
        _require_int("n_save", self.n_save, 1)
        if not 0 < _require_real("t_save_min", self.t_save_min) < self.t_max:
            raise ValueError(f"t_save_min must satisfy 0 < t_save_min < t_max = {self.t_max}, got {self.t_save_min}")
        if self.rho >= 1:
            warnings.warn(
                f"outside Theorem 2's assumptions: small initialization (got rho={self.rho} >= 1)",
                TheoryAssumptionWarning,
                stacklevel=3,
            )

    def to_dict(self) -> dict:
        """Every parameter, for JSON summaries."""
        names = ("dynamics", "rho", "delta", "t_max", "solver", "rtol", "atol", "max_steps", "M", "sample",
                 "init", "batch_size", "n_save", "t_save_min")
        return {n: getattr(self, n) for n in names}

    def save_times(self) -> Float[Array, " n_save"]:
        """The log-spaced save times $t_{\\min} (t_{\\max} / t_{\\min})^{k/(n-1)}$."""
        return jnp.geomspace(self.t_save_min, self.t_max, self.n_save)


def check_flow(task: Task, config: FlowConfig) -> None:
    """Validate a task against a flow configuration.

    Raises `ValueError` for the reduced dynamics outside exact geometry (the reduction of §6 needs
    eps = 0). Warns with `TheoryAssumptionWarning` for eps > 0 (Theorem 2 assumes eps = 0) and when
    N is not large relative to log(e / rho) (here: N < 10 log(e / rho)).
    """
    if config.dynamics == "reduced" and not task.exact:
        raise ValueError("dynamics='reduced' needs exact geometry (eps = 0): drop eps/d or use dynamics='full'")
    if not task.exact:
        warnings.warn("outside Theorem 2's assumptions: eps = 0 (the task has an approximate geometry)",
                      TheoryAssumptionWarning, stacklevel=2)
    if task.N < 10 * math.log(math.e / config.rho):
        warnings.warn(f"outside Theorem 2's assumptions: N large relative to log(e/rho) "
                      f"(N = {task.N}, log(e/rho) = {math.log(math.e / config.rho):.3g})",
                      TheoryAssumptionWarning, stacklevel=2)


# ---------------------------------------------------------------------------------------------
# Vector fields


def reduced_loss(task: Task, b: Float[Array, "heads 2 offsets"]) -> Float[Array, ""]:
    """$\\bar L(b)$ = `population_loss(task, shared_gates_from_logits(b))`."""
    return population_loss(task, shared_gates_from_logits(b))


def reduced_vector_field(task: Task, b: Float[Array, "heads 2 offsets"]) -> Float[Array, "heads 2 offsets"]:
    """$\\dot b = -(\\kappa + 1/N) \\nabla_b \\bar L(b)$, the exact flow on span(m) (THEORY.md §6).

    On c in span(m), $\\langle c^B_{h,r}, x \\rangle = b_{h,B,r}$ for every token, so $L(c) = \\bar L(b)$
    with $b = \\langle c, m \\rangle$; the gradient $\\nabla_b \\bar L \\otimes m$ stays in span(m) and
    $\\dot b = \\langle \\dot c, m \\rangle = -|m|^2 \\nabla_b \\bar L$, $|m|^2 = \\kappa + 1/N$.

    **Arguments:**
    - `task`: exact-geometry configuration.
    - `b`: biases, shape (H, 2, S).

    **Returns:** $\\dot b$, shape (H, 2, S).
    """
    return -mean_norm_squared(task) * jax.grad(lambda x: reduced_loss(task, x))(b)


def sample_loss(
    task: Task, geometry: Geometry, contexts: Int[Array, "contexts blocks offsets"],
    c: Float[Array, "heads 2 offsets dim"], batch_size: int | None = None,
) -> Float[Array, ""]:
    """$\\hat L(c)$ = `monte_carlo_loss` of `LinearGates(c)` on the fixed sample."""
    return monte_carlo_loss(task, geometry, LinearGates(c), contexts, batch_size=batch_size)


def full_vector_field(
    task: Task, geometry: Geometry, contexts: Int[Array, "contexts blocks offsets"],
    c: Float[Array, "heads 2 offsets dim"], batch_size: int | None = None,
) -> Float[Array, "heads 2 offsets dim"]:
    """$\\dot c = -\\nabla_c \\hat L(c)$ for the linear class on a fixed sample of contexts.

    Under `ExactGeometry` the scores are gathers and the gradient a scatter-add: O(M L S H) work
    plus O(H S N) memory, never an N x (N+1) matrix.

    **Arguments:**
    - `task`, `geometry`: configuration and realized geometry.
    - `contexts`: token ids (M, L, S).
    - `c`: gate vectors (H, 2, S, d).
    - `batch_size`: contexts per batch in the loss.

    **Returns:** $\\dot c$, shape (H, 2, S, d).
    """
    return -jax.grad(lambda x: sample_loss(task, geometry, contexts, x, batch_size))(c)


# ---------------------------------------------------------------------------------------------
# Gates on the sample and statistics


def sample_gates(
    geometry: Geometry, contexts: Int[Array, "contexts blocks offsets"],
    c: Float[Array, "heads 2 offsets dim"], batch_size: int | None = None,
) -> Float[Array, "contexts heads 2 blocks offsets"]:
    """Gate probabilities $p^B_{h,l}(r)$ of `LinearGates(c)` in every context of the sample."""
    gates = LinearGates(c)

    def one(tokens):
        g = gates.for_context(geometry, tokens)
        return jnp.stack([g.key, g.value], axis=1)

    if batch_size is None:
        return jax.vmap(one)(contexts)
    return jax.lax.map(one, contexts, batch_size=batch_size)


def _worst(p: Float[Array, "windows heads 2 offsets"]) -> Float[Array, "heads 2 offsets"]:
    return jnp.min(p, axis=0)


def _branch_offsets(worst: Float[Array, "heads offsets"], delta: float) -> Int[Array, " heads"]:
    return first_offset(worst >= 1 - delta)


def head_selection(worst: Float[Array, "heads 2 offsets"], delta: float) -> Int[Array, " heads"]:
    """The offset r each head delta-selects uniformly (worst-case masses), or -1.

    Selection at r: $\\min p^K(r) \\ge 1 - \\delta$ and $\\min p^V(r + 1) \\ge 1 - \\delta$, minima over
    the sample's contexts and blocks (same rule as `selected_offsets`).
    """
    return selected_offsets(worst[:, 0], worst[:, 1], delta)


def selection_margin(worst: Float[Array, "heads 2 offsets"], delta: float) -> Float[Array, ""]:
    """A continuous function of the gates that is >= 0 exactly when every head delta-selects.

    $g = \\min_h \\max_{r \\le S-2} \\min(p^K_{\\min}(r), p^V_{\\min}(r+1)) - (1 - \\delta)$; the
    Event finds its zero crossing with a Newton root find, so the reported time to selection is the
    crossing time itself, not the end of a solver step.
    """
    pair = jnp.minimum(worst[:, 0, :-1], worst[:, 1, 1:])
    return jnp.min(jnp.max(pair, axis=-1)) - (1 - delta)


def _windows(p: Float[Array, "contexts heads 2 blocks offsets"]) -> Float[Array, "windows heads 2 offsets"]:
    M, H, _, L, S = p.shape
    return jnp.moveaxis(p, 3, 1).reshape(M * L, H, 2, S)


def reduced_statistics(task: Task, b: Float[Array, "heads 2 offsets"]) -> dict:
    """Saved statistics of the reduced flow (gates are static: every window has p = softmax(b)).

    **Returns:** dict with `mass` (H, 2, S), `worst` (H, 2, S), `loss` (), `static_offsets` (H, 2),
    `avg_offsets` (H, 2), `biases` (H, 2, S).
    """
    p = jax.nn.softmax(b, axis=-1)
    eff = effective_number(p)
    return dict(mass=p, worst=p, loss=reduced_loss(task, b), static_offsets=eff, avg_offsets=eff, biases=b)


def full_statistics(
    task: Task, geometry: Geometry, contexts: Int[Array, "contexts blocks offsets"],
    c: Float[Array, "heads 2 offsets dim"], batch_size: int | None = None,
) -> dict:
    """Saved statistics of the full flow over the sample's M*L windows (context, block).

    **Returns:** dict with `mass` (H, 2, S) averaged over windows, `worst` (H, 2, S) minimum over
    windows, `loss` () on the sample, `static_offsets` and `avg_offsets` (H, 2) of THEORY.md §9,
    `biases` (H, 2, S) = $\\langle c, m \\rangle$.

    Our formalization: the effective offsets are measured on the training sample's own windows,
    not on held-out ones as in the paper (THEORY.md §9); on a balanced sample started in span(m)
    the two coincide, since the gates are then the same in every window.
    """
    w = _windows(sample_gates(geometry, contexts, c, batch_size))
    static, avg = effective_offsets(jnp.moveaxis(w, 0, -2))
    return dict(
        mass=jnp.mean(w, axis=0), worst=_worst(w), loss=sample_loss(task, geometry, contexts, c, batch_size),
        static_offsets=static, avg_offsets=avg, biases=LinearGates(c).biases(geometry),
    )


# ---------------------------------------------------------------------------------------------
# Integration


def integrate(
    vector_field: Callable[[PyTree], PyTree],
    y0: PyTree,
    config: FlowConfig,
    statistics: Callable[[PyTree], dict],
    worst_masses: Callable[[PyTree], Float[Array, "heads 2 offsets"]],
) -> dict:
    """Integrate $\\dot y = F(y)$ from 0 to `t_max`, stopping once every head delta-selects.

    Jittable and vmappable. Failures are explicit: `throw=False`, and the outcome is a `status`
    code (`STATUSES`): `selected` (the Event fired), `t_max` (reached without selection),
    `max_steps`, `nonfinite` (state, vector field or loss not finite at the end), `solver_error`.

    **Arguments:**
    - `vector_field`: F, a pure function of the state.
    - `y0`: initial state.
    - `config`: solver, tolerances, t_max, delta, save times.
    - `statistics`: state -> dict of arrays (saved at t = 0 and the save times, and as `final` at the end).
    - `worst_masses`: state -> (H, 2, S) minimum gate masses over windows (drives the Event).

    **Returns:** dict with `t` (n_save + 1,), each statistic with a leading time axis (NaN after the
    end), `final` (statistics at the end), `t_final` (the event time when selected), `key_offsets`,
    `value_offsets` (H,) at the end (-1 where none; read with delta * (1 + 1e-6), the root finder's slack), `selected` (H,), `state` (the final state), `status`, `result` (diffrax code), `num_steps`,
    `num_accepted_steps`, `num_rejected_steps`.
    """
    delta = config.delta
    term = diffrax.ODETerm(lambda t, y, args: vector_field(y))
    event = diffrax.Event(
        lambda t, y, args, **kw: selection_margin(worst_masses(y), delta),
        root_finder=optx.Newton(rtol=1e-10, atol=1e-10),
    )
    saveat = diffrax.SaveAt(
        subs=[
            diffrax.SubSaveAt(t0=True, ts=config.save_times(), fn=lambda t, y, args: statistics(y)),
            diffrax.SubSaveAt(t1=True, fn=lambda t, y, args: y),
        ]
    )
    sol = diffrax.diffeqsolve(
        term, SOLVERS[config.solver](), 0.0, config.t_max, None, y0,
        saveat=saveat, stepsize_controller=diffrax.PIDController(rtol=config.rtol, atol=config.atol),
        event=event, max_steps=config.max_steps, throw=False,
    )
    traj_t, t_end = sol.ts[0], sol.ts[1][-1]
    traj = jax.tree.map(lambda a: jnp.where(jnp.isfinite(traj_t).reshape((-1,) + (1,) * (a.ndim - 1)), a, jnp.nan), sol.ys[0])
    y_end = jax.tree.map(lambda a: a[-1], sol.ys[1])
    final = statistics(y_end)
    worst = worst_masses(y_end)
    finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves((y_end, vector_field(y_end), final))]))
    # At the event the margin is zero only up to the root finder's tolerance: read the final
    # selection with a relative slack of 1e-6 on delta (kept below 1/2, where selection is unique).
    delta = min(delta * (1 + 1e-6), 0.5 - 1e-12)
    heads = head_selection(worst, delta)
    status = jnp.select(
        [~finite, sol.result == diffrax.RESULTS.event_occurred, sol.result == diffrax.RESULTS.successful,
         sol.result == diffrax.RESULTS.max_steps_reached],
        [NONFINITE, SELECTED, T_MAX, MAX_STEPS], SOLVER_ERROR,
    )
    return dict(
        t=jnp.where(jnp.isfinite(traj_t), traj_t, jnp.nan), **traj, final=final, t_final=t_end, state=y_end,
        key_offsets=_branch_offsets(worst[:, 0], delta), value_offsets=_branch_offsets(worst[:, 1], delta),
        selected=heads, status=status, result=sol.result._value,
        num_steps=sol.stats["num_steps"], num_accepted_steps=sol.stats["num_accepted_steps"],
        num_rejected_steps=sol.stats["num_rejected_steps"],
    )


def solve_reduced(task: Task, config: FlowConfig, b0: Float[Array, "heads 2 offsets"]) -> dict:
    """The reduced flow of one seed from biases `b0` (see `integrate` for the returned dict).

    ```python
    task, config = Task(L=8, S=4, H=2, N=10**6, beta=4.0), FlowConfig()
    out = jax.jit(lambda b: solve_reduced(task, config, b))(initial_biases(jax.random.key(0), task, 0.1))
    out["selected"]  # one offset per head
    ```
    """
    return integrate(
        lambda b: reduced_vector_field(task, b), b0, config,
        lambda b: reduced_statistics(task, b), lambda b: jax.nn.softmax(b, axis=-1),
    )


def solve_full(
    task: Task, config: FlowConfig, geometry: Geometry, contexts: Int[Array, "contexts blocks offsets"],
    c0: Float[Array, "heads 2 offsets dim"],
) -> dict:
    """The full flow of one seed from gate vectors `c0` on a fixed sample (see `integrate`).

    Selection is required uniformly over the sample: the Event uses the minimum masses over every
    context and block.
    """
    bs = config.batch_size
    return integrate(
        lambda c: full_vector_field(task, geometry, contexts, c, bs), c0, config,
        lambda c: full_statistics(task, geometry, contexts, c, bs),
        lambda c: _worst(_windows(sample_gates(geometry, contexts, c, bs))),
    )


__all__ = [
    "DYNAMICS",
    "FlowConfig",
    "SOLVERS",
    "STATUSES",
    "check_flow",
    "full_statistics",
    "full_vector_field",
    "head_selection",
    "integrate",
    "reduced_loss",
    "reduced_statistics",
    "reduced_vector_field",
    "selection_margin",
    "sample_gates",
    "sample_loss",
    "solve_full",
    "solve_reduced",
]
