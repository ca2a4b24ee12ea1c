"""Settings of a gradient-flow run (docs/theory.md §6): which dynamics, initial radius,
solver, budget."""

from __future__ import annotations

import enum
import math

import diffrax
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, Float

from ..internal._modes import _enum
from ..internal._warnings import warn_at_caller
from ..model._objective import Objective, ObjectiveKind
from ..model._task import (
    Task,
    TheoryAssumptionWarning,
    _require_int,
    _require_real,
    traced_value,
)

SOLVERS = {
    "tsit5": diffrax.Tsit5,
    "dopri5": diffrax.Dopri5,
    "dopri8": diffrax.Dopri8,
    "bosh3": diffrax.Bosh3,
    "heun": diffrax.Heun,
}


class Dynamics(enum.StrEnum):
    """Which gradient flow `FlowConfig` integrates (docs/theory.md §6).

    - `REDUCED`: the exact 2HS-dimensional flow of the offset coordinates (exact geometry only).
    - `FULL`: the d-dimensional flow of the linear gate class on a Monte-Carlo sample of contexts.

    A member is the string of its value (`Dynamics.FULL == "full"`), so `FlowConfig` takes
    either and JSON, cache keys and command-line choices read the same.
    """

    REDUCED = "reduced"
    FULL = "full"


DYNAMICS = tuple(m.value for m in Dynamics)


class Sample(enum.StrEnum):
    """How the full flow's Monte-Carlo sample of contexts is drawn: `BALANCED`
    (`balanced_contexts`) or `IID` (`sample_contexts`)."""

    BALANCED = "balanced"
    IID = "iid"


class Init(enum.StrEnum):
    """The full flow's initial gate vectors: `BALL` (uniform in the ball of radius rho) or
    `PROJECTED` (that draw projected on span(m), where the gates are static)."""

    BALL = "ball"
    PROJECTED = "projected"


SAMPLES = tuple(m.value for m in Sample)
INITS = tuple(m.value for m in Init)
# How the selection Event locates its time (tolerances in `integrate`).
ROOT_FINDERS = {"newton": optx.Newton, "bisection": optx.Bisection}
# Fields that flow through a program (0-d arrays, traced); the others set it (static).
TRACED_FIELDS = (
    "rho",
    "delta",
    "t_max",
    "rtol",
    "atol",
    "t_save_min",
    "tau",
    "coordination",
)


class FlowConfig(eqx.Module):
    """Everything about a gradient-flow run except the task.

    Fields that set the compiled program (dynamics, solver, root finder, step budget, sample
    and save
    sizes, tied, objective) are static; the numbers (`rho`, `delta`, `t_max`, `rtol`, `atol`,
    `t_save_min`, `tau`, `coordination`) are stored as 0-d arrays, so changing them reuses the
    compiled program.

    **Arguments:**
    - `dynamics`: `"reduced"` (2HS-dimensional exact flow) or `"full"` (d-dimensional linear
      class on
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
    - `n_save`: number of log-spaced save times in [`t_save_min`, `t_max`] (plus t = 0; the
      end state is
      reported separately as `final`).
    - `t_save_min`: first save time, in (0, t_max).
    - `tied`: one gate per head for both branches (key and value share $c_{h,r}$, as in kernels
      that compress K and V with one score); the selection event then asks for a key
      mass >= 1 - delta on one offset, since key at r with value at r+1 is impossible.
    - `objective`: what the flow descends: `"mean"` (the population loss of the theorems) or
      `"worst-phase"` (the soft maximum of the per-phase losses at temperature `tau`, see
      `Objective`).
    - `tau`: temperature of the worst-phase objective, > 0 (default 1); refused with the mean
      objective, which has no temperature.
    - `coordination`: weight lambda >= 0 of the overlap penalty
      $\\lambda \\sum_{h \\ne h'} \\langle p^K_h, p^K_{h'} \\rangle$ added to the objective,
      or None (none).
    - `root_finder`: how the selection time is located inside the solver step where the margin
      changes sign: `"newton"` (default) or `"bisection"`. Newton can stall in the margin's rounding
      noise when its slope is tiny (small delta, late selection) and end in a `solver_error`;
      bisection does not.

    Raises `ValueError` naming the parameter and its constraint; warns with
    `TheoryAssumptionWarning` when rho >= 1 (Theorem 2 needs a small init), and with `UserWarning`
    when an option of the full dynamics (`M`, `sample`, `init`, `batch_size`) is set with the
    reduced dynamics, which ignore it.

    ```python
    config = FlowConfig(dynamics="reduced", rho=0.1, delta=1e-3, t_max=1e6)
    ```
    """

    dynamics: Dynamics = eqx.field(static=True)
    rho: Float[Array, ""]
    delta: Float[Array, ""]
    t_max: Float[Array, ""]
    solver: str = eqx.field(static=True)
    rtol: Float[Array, ""]
    atol: Float[Array, ""]
    max_steps: int = eqx.field(static=True)
    M: int = eqx.field(static=True)
    sample: Sample = eqx.field(static=True)
    init: Init = eqx.field(static=True)
    batch_size: int | None = eqx.field(static=True)
    n_save: int = eqx.field(static=True)
    t_save_min: Float[Array, ""]
    tied: bool = eqx.field(static=True)
    objective: str = eqx.field(static=True)
    tau: Float[Array, ""]
    coordination: Float[Array, ""] | None
    root_finder: str = eqx.field(static=True)

    def __init__(
        self,
        dynamics: Dynamics | str = Dynamics.REDUCED,
        rho: float = 0.1,
        delta: float = 1e-3,
        t_max: float = 1e6,
        solver: str = "tsit5",
        rtol: float = 1e-8,
        atol: float = 1e-10,
        max_steps: int = 100_000,
        M: int = 1024,
        sample: Sample | str = Sample.BALANCED,
        init: Init | str = Init.BALL,
        batch_size: int | None = None,
        n_save: int = 64,
        t_save_min: float = 1e-2,
        tied: bool = False,
        objective: str = "mean",
        tau: float | None = None,
        coordination: float | None = None,
        root_finder: str = "newton",
    ):
        dynamics = _enum(Dynamics, "dynamics", dynamics)
        rho = _require_real("rho", rho)
        if rho <= 0:
            raise ValueError(f"rho must be > 0, got {rho}")
        delta = _require_real("delta", delta)
        if not 0 < delta < 0.5:
            raise ValueError(f"delta must satisfy 0 < delta < 1/2, got {delta}")
        t_max = _require_real("t_max", t_max)
        if t_max <= 0:
            raise ValueError(f"t_max must be > 0, got {t_max}")
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {tuple(SOLVERS)}, got {solver!r}")
        rtol, atol = _require_real("rtol", rtol), _require_real("atol", atol)
        for name, value in (("rtol", rtol), ("atol", atol)):
            if value <= 0:
                raise ValueError(f"{name} must be > 0, got {value}")
        max_steps = _require_int("max_steps", max_steps, 1)
        M = _require_int("M", M, 1)
        sample = _enum(Sample, "sample", sample)
        init = _enum(Init, "init", init)
        if batch_size is not None:
            batch_size = _require_int("batch_size", batch_size, 1)
        n_save = _require_int("n_save", n_save, 1)
        t_save_min = _require_real("t_save_min", t_save_min)
        if not 0 < t_save_min < t_max:
            raise ValueError(
                f"t_save_min must satisfy 0 < t_save_min < t_max = {t_max}, got {t_save_min}"
            )
        if rho >= 1:
            warn_at_caller(
                f"outside Theorem 2's assumptions: small initialization (got rho={rho} >= 1)",
                TheoryAssumptionWarning,
            )
        if not isinstance(tied, (bool, np.bool_)):
            raise ValueError(f"tied must be True or False, got {tied!r}")
        self.tied = bool(tied)
        if root_finder not in ROOT_FINDERS:
            raise ValueError(
                f"root_finder must be one of {tuple(ROOT_FINDERS)}, got {root_finder!r}"
            )
        self.root_finder = root_finder
        goal = Objective(
            objective, 1.0 if tau is None else tau, coordination
        )  # validates
        if tau is not None and goal.kind is not ObjectiveKind.WORST_PHASE:
            # the mean objective has no temperature: a tau would change nothing
            raise ValueError(
                f"tau applies to objective='worst-phase' only (the temperature of its soft "
                f"maximum), got tau={tau!r} with objective={goal.kind.value!r}"
            )
        ignored = [
            name
            for name, value, default in (
                ("M", M, 1024),
                ("sample", sample, "balanced"),
                ("init", init, "ball"),
                ("batch_size", batch_size, None),
            )
            if value != default
        ]
        if dynamics is Dynamics.REDUCED and ignored:
            # the reduced flow is exact: it has no sample and no choice of init
            warn_at_caller(
                f"{', '.join(ignored)} appl{'ies' if len(ignored) == 1 else 'y'} to "
                "dynamics='full' only; the reduced dynamics ignore "
                f"{'it' if len(ignored) == 1 else 'them'}",
                UserWarning,
            )
        self.objective, self.tau, self.coordination = (
            goal.kind,
            goal.tau,
            goal.coordination,
        )
        self.dynamics, self.solver, self.max_steps, self.M = (
            dynamics,
            solver,
            max_steps,
            M,
        )
        self.sample, self.init, self.batch_size, self.n_save = (
            sample,
            init,
            batch_size,
            n_save,
        )
        self.rho, self.delta, self.t_max = (
            traced_value(rho),
            traced_value(delta),
            traced_value(t_max),
        )
        self.rtol, self.atol, self.t_save_min = (
            traced_value(rtol),
            traced_value(atol),
            traced_value(t_save_min),
        )

    def to_dict(self) -> dict:
        """Every parameter as a Python value, for JSON summaries and cache keys."""
        names = (
            "dynamics",
            "rho",
            "delta",
            "t_max",
            "solver",
            "rtol",
            "atol",
            "max_steps",
            "M",
            "sample",
            "init",
            "batch_size",
            "n_save",
            "t_save_min",
        )
        out = {
            n: float(getattr(self, n)) if n in TRACED_FIELDS else getattr(self, n)
            for n in names
        }
        # only when set, so the parameters (cache keys, stored data) of plain runs are unchanged
        if self.tied:
            out["tied"] = True
        if self.objective != ObjectiveKind.MEAN:
            out["objective"], out["tau"] = self.objective, float(self.tau)
        if self.coordination is not None:
            out["coordination"] = float(self.coordination)
        if self.root_finder != "newton":
            out["root_finder"] = self.root_finder
        return out

    def objective_function(self) -> Objective | None:
        """The `Objective` the flow descends, or None for the plain population loss."""
        goal = Objective.of_values(self.objective, self.tau, self.coordination)
        return None if goal.is_default else goal

    def replace(self, **changes) -> FlowConfig:
        """A new, validated configuration with some parameters changed."""
        return FlowConfig(**{**self.to_dict(), **changes})

    def save_times(self) -> Float[Array, " n_save"]:
        """The log-spaced save times $t_{\\min} (t_{\\max} / t_{\\min})^{k/(n-1)}$."""
        # geomspace's last point can round above t_max (e.g. t_max = 2000), which diffrax
        # refuses; clipping moves no other point
        return jnp.minimum(
            jnp.geomspace(self.t_save_min, self.t_max, self.n_save), self.t_max
        )


def check_flow(task: Task, config: FlowConfig) -> None:
    """Validate a task against a flow configuration.

    Raises `ValueError` for the reduced dynamics outside exact geometry (the reduction of §6 needs
    eps = 0). Warns with `TheoryAssumptionWarning` for eps > 0 (Theorem 2 assumes eps = 0) and when
    N is not large relative to log(e / rho) (here: N < 10 log(e / rho)). Raises `TypeError` when
    `task` is not a `Task` or `config` not a `FlowConfig`.
    """
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task, got {type(task).__name__}")
    if not isinstance(config, FlowConfig):
        raise TypeError(
            f"config must be a FlowConfig (e.g. FlowConfig(dynamics='reduced')), "
            f"got {type(config).__name__}"
        )
    if config.dynamics is Dynamics.REDUCED and not task.exact:
        raise ValueError(
            "dynamics='reduced' needs exact geometry (eps = 0): drop eps/d or use dynamics='full'"
        )
    if not task.exact:
        warn_at_caller(
            "outside Theorem 2's assumptions: eps = 0 (the task has an approximate geometry)",
            TheoryAssumptionWarning,
        )
    rho, N = float(config.rho), int(task.N)
    if N < 10 * math.log(math.e / rho):
        warn_at_caller(
            f"outside Theorem 2's assumptions: N large relative to log(e/rho) "
            f"(N = {N}, log(e/rho) = {math.log(math.e / rho):.3g})",
            TheoryAssumptionWarning,
        )


__all__ = [
    "DYNAMICS",
    "Dynamics",
    "FlowConfig",
    "INITS",
    "Init",
    "ROOT_FINDERS",
    "SAMPLES",
    "Sample",
    "SOLVERS",
    "check_flow",
]
