"""Integration of a gradient flow (docs/theory.md §6, Theorem 2) on diffrax.

`integrate` takes one dynamics (`_dynamics`), integrates with an adaptive solver and a PID
step-size controller from t = 0 to `t_max`, stops early by a diffrax `Event` once every head
delta-selects (key mass >= 1 - delta at some r and value mass >= 1 - delta at r + 1, uniformly over
windows), saves statistics only (`SaveAt(fn=...)`) at log-spaced times, and returns a
`FlowSolution`. The functions below it are the same flows under the names of the math.
"""

from __future__ import annotations

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ..model._gates import concentrated_offsets
from ..model._geometry import AbstractGeometry
from ..model._task import Task
from ._config import ROOT_FINDERS, SOLVERS, FlowConfig
from ._dynamics import (
    AbstractDynamics,
    FullDynamics,
    ReducedDynamics,
    head_selection,
)
from ._solution import FlowSolution, Status


# The solver calls the dynamics' functions at several places (its stages, the first step size, the
# event's root finder, the saved statistics): as a jitted call, each is traced and lowered once
# per argument shapes instead of once per place (the same program once XLA inlines the calls).
@eqx.filter_jit
def _call(method: str, dynamics: AbstractDynamics, *args):
    return getattr(dynamics, method)(*args)


def integrate(dynamics: AbstractDynamics, y0, config: FlowConfig) -> FlowSolution:
    """Integrate $\\dot y = F(y)$ from 0 to `t_max`, stopping once every head delta-selects.

    Jittable and vmappable; the config's numbers (`delta`, `t_max`, tolerances) are traced.
    Failures are explicit (`throw=False`): the `status` is a `Status` code, `SELECTED` (the Event
    fired), `T_MAX` (reached without selection), `MAX_STEPS`, `NONFINITE` (state, vector field or
    statistics not finite at the end) or `SOLVER_ERROR`.

    **Arguments:**
    - `dynamics`: an `AbstractDynamics` (vector field, statistics, worst-case masses).
    - `y0`: initial state.
    - `config`: solver, tolerances, t_max, delta, save times.

    **Returns:** a `FlowSolution`. Offsets at the end are read with delta * (1 + 1e-6), the root
    finder's slack.

    ```python
    task = Task(L=8, S=4, H=2, N=4096, beta=4.0)
    b0 = initial_biases(jax.random.key(0), task, 0.1)
    sol = integrate(ReducedDynamics(task), b0, FlowConfig())
    sol.selected, Status(int(sol.status)).label
    ```
    """
    delta = config.delta
    term = diffrax.ODETerm(lambda t, y, args: _call("vector_field", dynamics, y))
    event = diffrax.Event(
        lambda t, y, args, **kw: _call("margin", dynamics, y, delta),
        root_finder=ROOT_FINDERS[config.root_finder](rtol=1e-10, atol=1e-10),
    )
    saveat = diffrax.SaveAt(
        subs=[
            diffrax.SubSaveAt(
                t0=True,
                ts=config.save_times(),
                fn=lambda t, y, args: _call("statistics", dynamics, y),
            ),
            diffrax.SubSaveAt(t1=True, fn=lambda t, y, args: y),
        ]
    )
    sol = diffrax.diffeqsolve(
        term,
        SOLVERS[config.solver](),
        0.0,
        config.t_max,
        None,
        y0,
        saveat=saveat,
        stepsize_controller=diffrax.PIDController(
            rtol=config.rtol,
            atol=config.atol,
            norm=lambda e: _call("error_norm", dynamics, e),
        ),
        event=event,
        max_steps=config.max_steps,
        # never differentiated: plain while loops, which trace and compile faster than the
        # default adjoint's checkpointed ones (the same numbers)
        adjoint=diffrax.ForwardMode(),
        throw=False,
    )
    traj_t, t_end = sol.ts[0], sol.ts[1][-1]
    saved = jnp.isfinite(traj_t)
    traj = jax.tree.map(
        lambda a: jnp.where(saved.reshape((-1,) + (1,) * (a.ndim - 1)), a, jnp.nan),
        sol.ys[0],
    )
    y_end = jax.tree.map(lambda a: a[-1], sol.ys[1])
    final = _call("statistics", dynamics, y_end)
    worst = _call("worst_masses", dynamics, y_end)
    leaves = jax.tree.leaves((y_end, _call("vector_field", dynamics, y_end), final))
    finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(x)) for x in leaves]))
    # At the event the margin is zero only up to the root finder's tolerance: read the final
    # selection with a relative slack of 1e-6 on delta (kept below 1/2, where selection is unique).
    delta = jnp.minimum(delta * (1 + 1e-6), 0.5 - 1e-12)
    status = jnp.select(
        [
            ~finite,
            sol.result == diffrax.RESULTS.event_occurred,
            sol.result == diffrax.RESULTS.successful,
            sol.result == diffrax.RESULTS.max_steps_reached,
        ],
        [Status.NONFINITE, Status.SELECTED, Status.T_MAX, Status.MAX_STEPS],
        Status.SOLVER_ERROR,
    )
    return FlowSolution(
        t=jnp.where(saved, traj_t, jnp.nan),
        trajectory=traj,
        final=final,
        t_final=t_end,
        state=y_end,
        key_offsets=concentrated_offsets(worst[:, 0], delta),
        value_offsets=concentrated_offsets(worst[:, 1], delta),
        selected=head_selection(worst, delta, dynamics.tied),
        status=status,
        num_steps=sol.stats["num_steps"],
        num_accepted_steps=sol.stats["num_accepted_steps"],
        num_rejected_steps=sol.stats["num_rejected_steps"],
    )


def solve_reduced(
    task: Task, config: FlowConfig, b0: Float[Array, "heads 2 offsets"]
) -> FlowSolution:
    """The reduced flow of one seed from biases `b0`: `integrate(ReducedDynamics(task), b0,
    config)`.

    ```python
    task, config = Task(L=8, S=4, H=2, N=10**6, beta=4.0), FlowConfig()
    sol = jax.jit(solve_reduced)(task, config, initial_biases(jax.random.key(0), task, 0.1))
    sol.selected  # one offset per head
    ```
    """
    return integrate(
        ReducedDynamics(task, tied=config.tied, objective=config.objective_function()),
        b0,
        config,
    )


def solve_full(
    task: Task,
    config: FlowConfig,
    geometry: AbstractGeometry,
    contexts: Int[Array, "contexts blocks offsets"],
    c0: Float[Array, "heads 2 offsets dim"],
    active_dim=None,
) -> FlowSolution:
    """The full flow of one seed from gate vectors `c0` on a fixed sample:
    `integrate(FullDynamics(task, geometry, contexts, config.batch_size), c0, config)`
    (`active_dim`: the unpadded dimension of a zero-padded geometry, see `FullDynamics`)."""
    return integrate(
        FullDynamics(
            task,
            geometry,
            contexts,
            config.batch_size,
            tied=config.tied,
            objective=config.objective_function(),
            active_dim=active_dim,
        ),
        c0,
        config,
    )


# The vector fields as plain functions of the math's arguments.


def reduced_vector_field(
    task: Task, b: Float[Array, "heads 2 offsets"]
) -> Float[Array, "heads 2 offsets"]:
    """$\\dot b = -(\\kappa + 1/N) \\nabla_b \\bar L(b)$, the exact flow on span(m)
    (`ReducedDynamics`)."""
    return ReducedDynamics(task).vector_field(b)


def full_vector_field(
    task: Task, geometry: AbstractGeometry, contexts, c, batch_size: int | None = None
):
    """$\\dot c = -\\nabla_c \\hat L(c)$ for the linear class on a fixed sample (`FullDynamics`)."""
    return FullDynamics(task, geometry, contexts, batch_size).vector_field(c)


__all__ = [
    "full_vector_field",
    "integrate",
    "reduced_vector_field",
    "solve_full",
    "solve_reduced",
]
