"""The abstract kind of sweep: what every kind computes at a grid point and how it is labeled."""

from __future__ import annotations

import abc
from typing import Any

import equinox as eqx
import numpy as np

from ...internal._memory import MemoryEstimate
from ...model._gates import SharedGates
from ...model._task import Task
from ._spec import SweepSpec


class AbstractSweepKind(eqx.Module):
    """What one kind of sweep computes at a grid point, and how its results are labeled.

    A sweep evaluates a map $p \\mapsto f(p)$ at every point $p$ of a grid of traced scalars of
    the template (task fields, and the settings a kind accepts): `grid_names` are the parameters
    it accepts; `compute_block` evaluates $f$ at a block of points as one compiled call;
    `variables` names the per-point dimensions of each result array of $f$, so that the dataset
    has dimensions (grid..., per-point...). Everything else (blocks, padding, stores, resume,
    Dask) is shared by every kind.

    Subclasses are final and define every member below:

    - `name`: the public kind name, as given to `sweep(name, ...)` and the CLI.
    - `description`: one line, for the CLI's help.
    - `grid_names`: the grid parameters the kind accepts.
    - `variables`: `{variable: per-point dimensions}` of every array `compute_block` returns.
    - `labels`: `{variable: names}` of variables stored as integer codes, named in the dataset.
    - `point_keys`: the variables of each `points_of` entry (the single-point command's keys).
    - `table_keys`: the headline variables of `summary_table`.
    - `prepare`, `default_block`, `looped_names`, `block_points`, `compute_block`,
      `block_bytes`, `coordinates`, `attributes`: see each method.

    A new kind is one final subclass added to `SWEEP_KINDS` (and its command-line options to
    `_OPTIONS` of `inductheory.cli._sweep`).

    ```python
    kind = sweep_kind("flow")
    kind.variables["selected"]  # ("seed", "head")
    ```
    """

    name: eqx.AbstractClassVar[str]
    description: eqx.AbstractClassVar[str]
    grid_names: eqx.AbstractClassVar[tuple[str, ...]]
    variables: eqx.AbstractClassVar[dict[str, tuple[str, ...]]]
    labels: eqx.AbstractClassVar[dict[str, tuple[str, ...]]]
    point_keys: eqx.AbstractClassVar[tuple[str, ...]]
    table_keys: eqx.AbstractClassVar[tuple[str, ...]]

    @abc.abstractmethod
    def prepare(
        self,
        task: Task,
        *,
        config: Any,
        gates: SharedGates | None,
        seeds: int,
        contexts: int,
        vertex_starts: int,
    ) -> tuple[dict, dict, int]:
        """Check the inputs of `sweep` this kind uses (the rest are ignored).

        **Returns:** `(settings, extra, seeds)` of the `SweepSpec`: the kind's settings as plain
        data, its other inputs (`extra`) and its seeds per point (0 where it has none).
        """

    @abc.abstractmethod
    def check_points(self, task: Task, grid: dict[str, list], config: Any) -> None:
        """Validate every grid point as the single-point path would, warning once per
        assumption (`check_grid_points`); `config` as given to `sweep`."""

    @abc.abstractmethod
    def default_block(self, grid: dict[str, list], seeds: int) -> int:
        """Grid points per compiled call when `sweep` is given no `block`."""

    @abc.abstractmethod
    def looped_names(self, spec: SweepSpec) -> tuple[str, ...]:
        """Grid parameters that set a shape or a sample (looped in Python, not vectorized)."""

    @abc.abstractmethod
    def block_points(self, spec: SweepSpec) -> int:
        """The most grid points of one block."""

    @abc.abstractmethod
    def compute_block(
        self, spec: SweepSpec, points: list[dict]
    ) -> dict[str, np.ndarray]:
        """The arrays of `variables` at `points` (leading axis: the points, padding removed)."""

    @abc.abstractmethod
    def block_bytes(self, spec: SweepSpec) -> MemoryEstimate:
        """Memory of the sweep's largest block, by part and `total` (`inductheory.internal._memory`
        estimates), for the check made before anything is allocated."""

    @abc.abstractmethod
    def coordinates(self, spec: SweepSpec) -> dict:
        """Coordinates of the per-point dimensions (beyond the grid's), as ranges or short lists:
        the memory check reads their lengths before anything is allocated."""

    @abc.abstractmethod
    def attributes(self, spec: SweepSpec) -> dict:
        """Dataset attributes of this kind (beyond the parameters every sweep records)."""


__all__ = [
    "AbstractSweepKind",
]
