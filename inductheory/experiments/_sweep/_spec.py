"""A sweep's spec as plain data, its grid points, and the tasks of a block of points."""

from __future__ import annotations

import dataclasses
import itertools

import equinox as eqx
import jax
import numpy as np

from ...internal._counts import is_exact_geometry
from ...model._task import Task, assumptions_silenced
from ._checks import TASK_FIELDS


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """Everything a sweep's numbers depend on, as plain data (picklable, JSON-able).

    `kind` is the name of a registered kind (`SWEEP_KINDS`); `settings` and `extra` are what
    its `prepare` returned. `to_dict()` is the manifest of a stored sweep (resume compares it).
    """

    kind: str
    task: dict
    settings: dict
    grid: dict
    seeds: int
    seed: int
    block: int
    extra: dict

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def grid_points(grid: dict[str, list]) -> list[dict]:
    """The cartesian product of the grid, first parameter slowest (C order)."""
    names = list(grid)
    return [
        dict(zip(names, values))
        for values in itertools.product(*(grid[n] for n in names))
    ]


def grid_point(grid: dict[str, list], index: int) -> dict:
    """Point `index` of `grid_points(grid)`, without building the others.

    ```python
    grid_point({"beta": [1, 2], "N": [64, 128]}, 1)  # {"beta": 1, "N": 128}
    ```
    """
    names = list(grid)
    position = np.unravel_index(index, tuple(len(grid[n]) for n in names))
    return {n: grid[n][int(i)] for n, i in zip(names, position)}


def _split(point: dict) -> tuple[dict, dict]:
    return (
        {k: v for k, v in point.items() if k in TASK_FIELDS},
        {k: v for k, v in point.items() if k not in TASK_FIELDS},
    )


def _exact(spec: SweepSpec) -> bool:
    """Whether the template's geometry is exact (no eps, no d): no shape depends on kappa."""
    return is_exact_geometry(spec.task.get("eps"), spec.task.get("d"))


def _tasks(spec: SweepSpec, points: list[dict]) -> list[Task]:
    # validated and warned about once for the whole grid by `check_grid_points`
    with assumptions_silenced():
        return [Task(**{**spec.task, **_split(p)[0]}) for p in points]


def _stacked_tasks(spec: SweepSpec, points: list[dict]) -> Task:
    """`stack_lanes(_tasks(spec, points))` without a `Task` per point.

    `sweep` has checked every grid value of every task field (`check_grid_points`: `Task`
    checks N, gamma, beta and kappa each on its own, so that refuses exactly what a task per
    point would); here the template's leaves are only replaced by the points' values.
    """
    names = [n for n in spec.grid if n in TASK_FIELDS]
    template = _tasks(spec, points[:1])[0]
    stacked = jax.tree.map(
        lambda x: np.repeat(np.asarray(x)[None], len(points), axis=0), template
    )
    columns = [
        np.asarray([p[n] for p in points], dtype=np.asarray(getattr(template, n)).dtype)
        for n in names
    ]
    return eqx.tree_at(
        lambda t: tuple(getattr(t, n) for n in names), stacked, tuple(columns)
    )


def _padded(items: list, size: int) -> list:
    return items + [items[-1]] * (size - len(items))


__all__ = [
    "SweepSpec",
    "grid_point",
    "grid_points",
]
