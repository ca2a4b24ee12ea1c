"""What a sweep checks before and after it runs: every grid point validated as the single-point
path validates it, assumption warnings said once per distinct warning, failures and non-finite
results reported.

Before: `check_grid_points` builds what every grid point would build (its `Task`, its
`FlowConfig`, the flow's task-against-config check) and refuses the first invalid one in one line
naming the grid values; warnings are grouped (one per distinct warning, naming the grid values
concerned). After: `sweep_problems` finds the points whose flows failed (max_steps, nonfinite,
solver_error) and the results that are not finite.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import warnings
from collections.abc import Callable

import numpy as np

from ...flow._config import (
    TRACED_FIELDS as FLOW_FIELDS,
    Dynamics,
    FlowConfig,
    Sample,
    check_flow,
)
from ...internal._warnings import warn_at_caller
from ...model._task import Task
from .._flows import FAILURES

TASK_FIELDS = ("N", "gamma", "beta", "kappa")
# Failure statuses of a flow by label (t_max is an outcome, not a failure).
FAILURE_LABELS = tuple(s.label for s in FAILURES)
# Grid values named in one message before "and k more".
SHOWN_VALUES = 6


class SweepFailureWarning(UserWarning):
    """Some points of a sweep hold failed flow seeds or results that are not finite."""


def point_label(point: dict) -> str:
    """`"beta=2.0, rho=0.1"`: grid values as given (floats by `repr`, so distinct values read
    distinct)."""
    return ", ".join(f"{k}={v!r}" for k, v in point.items())


def _joined(labels: list[str]) -> str:
    more = len(labels) - SHOWN_VALUES
    return "; ".join(labels[:SHOWN_VALUES]) + (f" and {more} more" if more > 0 else "")


# Numbers inside a warning's text: two warnings that differ only in them are one warning.
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


class PointChecks:
    """Runs the checks of grid points: raises their first error naming the point, gathers their
    warnings by kind (one per text up to its numbers; those of the template are not repeated).

    **Arguments:**
    - `template_build`: the checks of the template (its warnings are not said again).
    - `errors`: the exception classes re-raised with the point's label (same class).

    ```python
    checks = PointChecks(lambda: Task(**template))
    checks.attempt({"gamma": 2.0}, lambda: Task(**{**template, "gamma": 2.0}))
    checks.warn()  # one warning per distinct assumption, naming the grid values
    ```
    """

    def __init__(
        self,
        template_build: Callable[[], object] = lambda: None,
        errors: tuple[type[Exception], ...] = (ValueError,),
    ):
        self.said = {message for _, message in self._caught(template_build)}
        self.errors = errors
        self.groups: dict[tuple, tuple[type[Warning], str, list[str]]] = {}

    @staticmethod
    def _caught(build) -> list[tuple[type[Warning], str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            build()
        return [(w.category, str(w.message)) for w in caught]

    def attempt(self, point: dict, build: Callable[[], object]) -> None:
        try:
            found = self._caught(build)
        except self.errors as err:
            if not point:  # the template's own value: the single-point message
                raise
            raise type(err)(f"grid point {point_label(point)}: {err}") from None
        for category, message in found:
            if message in self.said:
                continue
            key = (category, _NUMBER.sub("#", message))
            _, _, labels = self.groups.setdefault(key, (category, message, []))
            if point_label(point) not in labels:
                labels.append(point_label(point))

    def warn(self) -> None:
        for category, message, labels in self.groups.values():
            where = [label for label in labels if label]
            warn_at_caller(
                f"{message} (at grid {_joined(where)})" if where else message, category
            )


def _values(grid: dict, name: str, default) -> list:
    return grid.get(name, [default])


def check_grid_points(
    task: Task, grid: dict[str, list], config: FlowConfig | None = None
) -> None:
    """Validate every grid point as the single-point path would, before anything runs.

    Each task value replaces the template's field and builds a `Task`; for flows, each
    `FlowConfig` value builds a config (t_max and t_save_min jointly), every (N, rho) pair goes
    through `check_flow`, and balanced full-dynamics samples need L*S to divide every N. A grid
    of `tau` is refused unless the objective is the worst phase (tau changes nothing else).

    **Arguments:**
    - `task`: the template task.
    - `grid`: the checked grid, `{name: values}`.
    - `config`: the flow configuration of a flow sweep (its points are checked too), or
      None for the other kinds.

    **Returns:** nothing. Raises `ValueError` naming the first invalid grid point; warns once per
    distinct warning (`TheoryAssumptionWarning` for assumptions), naming the grid values.

    ```python
    check_grid_points(Task(L=4, S=4, H=2, N=1024), {"gamma": [0.5, 2.0]})  # warns once
    ```
    """
    template = task.to_dict()
    flow = config is not None
    settings = config.to_dict() if flow else {}

    def template_build():
        Task(**template)
        if flow:
            check_flow(task, FlowConfig(**settings))

    seen = PointChecks(template_build)
    for name, values in grid.items():
        if name in TASK_FIELDS:
            for v in values:
                seen.attempt({name: v}, lambda n=name, v=v: Task(**{**template, n: v}))
    if flow:
        _check_flow_points(task, grid, config, seen)
    seen.warn()


def _check_flow_points(
    task: Task, grid: dict, config: FlowConfig, seen: PointChecks
) -> None:
    settings = config.to_dict()
    if "tau" in grid and config.objective != "worst-phase":
        raise ValueError(
            "grid parameter 'tau' changes nothing: it is the temperature of "
            f"objective='worst-phase', and the objective is {config.objective!r}"
        )
    for name in FLOW_FIELDS:
        if name in grid and name not in ("t_max", "t_save_min"):
            for v in grid[name]:
                seen.attempt(
                    {name: v}, lambda n=name, v=v: FlowConfig(**{**settings, n: v})
                )
    if "t_max" in grid or "t_save_min" in grid:
        # the one joint constraint of a config: 0 < t_save_min < t_max
        for t_max, t_save_min in itertools.product(
            _values(grid, "t_max", settings["t_max"]),
            _values(grid, "t_save_min", settings["t_save_min"]),
        ):
            point = {
                k: v
                for k, v in (("t_max", t_max), ("t_save_min", t_save_min))
                if k in grid
            }
            seen.attempt(
                point,
                lambda a=t_max, b=t_save_min: FlowConfig(
                    **{**settings, "t_max": a, "t_save_min": b}
                ),
            )
    if "N" in grid or "rho" in grid:
        with warnings.catch_warnings():  # each value's own warnings were gathered above
            warnings.simplefilter("ignore")
            tasks = {
                n: Task(**{**task.to_dict(), "N": n})
                for n in _values(grid, "N", int(task.N))
            }
            configs = {
                r: config.replace(rho=r) for r in _values(grid, "rho", settings["rho"])
            }
        for (n, t), (r, c) in itertools.product(tasks.items(), configs.items()):
            point = {k: v for k, v in (("N", n), ("rho", r)) if k in grid}
            seen.attempt(point, lambda t=t, c=c: check_flow(t, c))
    if (
        config.dynamics is Dynamics.FULL
        and config.sample is Sample.BALANCED
        and "N" in grid
    ):
        T = task.L * task.S
        for n in grid["N"]:
            if n % T:
                raise ValueError(
                    f"grid point N={n!r}: balanced samples need L*S = {T} to divide N = {n}"
                )


@dataclasses.dataclass(frozen=True)
class SweepProblems:
    """What went wrong at the points of a finished sweep.

    **Arguments:**
    - `failed`: `{status: seeds}` of failed flow seeds (max_steps, nonfinite, solver_error).
    - `seeds`: flow seeds in the whole sweep (0 for kinds without seeds).
    - `failed_points`: labels of the grid points with a failed seed.
    - `nonfinite`: `"variable at point"` for every result that is NaN or infinite where a value
      is due (a flow's distinct fraction with no selected seed is NaN by definition, not listed).
    - `points`: grid points in the sweep.

    ```python
    problems = sweep_problems(ds)
    problems.ok  # True when nothing failed
    ```
    """

    failed: dict[str, int]
    seeds: int
    failed_points: tuple[str, ...]
    nonfinite: tuple[str, ...]
    points: int

    @property
    def ok(self) -> bool:
        return not self.failed and not self.nonfinite

    def failure_text(self) -> str:
        """One line on the failed seeds ("" if none)."""
        if not self.failed:
            return ""
        detail = ", ".join(f"{k}: {v}" for k, v in self.failed.items())
        return (
            f"{sum(self.failed.values())} of {self.seeds} seeds failed ({detail}) at "
            f"{len(self.failed_points)} of {self.points} grid points "
            f"({_joined(list(self.failed_points))}); those points' fractions cover only their "
            "selected seeds"
        )

    def nonfinite_text(self) -> str:
        """One line on the results that are not finite ("" if none)."""
        if not self.nonfinite:
            return ""
        return (
            f"{len(self.nonfinite)} results are not finite: {_joined(list(self.nonfinite))}; "
            "the settings are beyond float64 (try a smaller beta or gamma)"
        )

    def message(self) -> str:
        """Both lines joined (the text of `SweepFailureWarning`)."""
        return "; ".join(t for t in (self.failure_text(), self.nonfinite_text()) if t)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _labels_where(ds, mask: np.ndarray, dims: list[str]) -> list[str]:
    coords = [ds.coords[d].values.tolist() for d in dims]
    return [
        point_label({d: coords[k][i] for k, (d, i) in enumerate(zip(dims, idx))})
        for idx in np.argwhere(mask)
    ]


def sweep_problems(ds) -> SweepProblems:
    """The failed seeds and non-finite results of a sweep's dataset (vectorized over points).

    **Arguments:**
    - `ds`: the dataset `sweep` returns.

    **Returns:** a `SweepProblems`.

    ```python
    sweep_problems(sweep("flow", task, {"rho": [0.1]}, config=FlowConfig(max_steps=2))).failed
    ```
    """
    dims = json.loads(ds.attrs["parameters"])["extra"]["grid_order"]
    n_grid = len(dims)
    points = int(np.prod([ds.sizes[d] for d in dims]))
    failed, seeds, failed_points = {}, 0, []
    checks = {}  # variable -> mask of entries that must be finite (None: all)
    if ds.attrs["kind"] == "flow":
        status = np.asarray(ds.status.values).astype(str)
        seeds = int(status.size)
        bad = np.isin(status, FAILURE_LABELS)
        failed = {
            k: int(np.sum(status == k)) for k in FAILURE_LABELS if np.any(status == k)
        }
        failed_points = _labels_where(ds, bad.any(axis=-1), dims)
        checks = {
            "selected_fraction": None,
            "value_is_key_plus_one_fraction": None,
            "distinct_fraction": np.asarray(ds.selected_fraction.values) > 0,
            "final_loss": ~bad,
        }
    else:
        checks = {name: None for name in ds.data_vars}
        if ds.attrs["kind"] == "matrix":  # curves padded with NaN past their last point
            kept = np.asarray(ds.curve_steps.values) >= 0
            checks["curve"] = np.broadcast_to(
                np.expand_dims(kept, -2), ds.curve.transpose(*dims, ...).shape
            )
    nonfinite = []
    for name, due in checks.items():
        values = np.asarray(ds[name].values)
        if values.dtype.kind not in "fc":
            continue
        wrong = ~np.isfinite(values)
        if due is not None:
            wrong &= due
        wrong = wrong.reshape(wrong.shape[:n_grid] + (-1,)).any(axis=-1)
        nonfinite += [f"{name} at {label}" for label in _labels_where(ds, wrong, dims)]
    return SweepProblems(
        failed=failed,
        seeds=seeds,
        failed_points=tuple(failed_points),
        nonfinite=tuple(nonfinite),
        points=points,
    )


__all__ = [
    "PointChecks",
    "SweepFailureWarning",
    "SweepProblems",
    "check_grid_points",
    "point_label",
    "sweep_problems",
]
