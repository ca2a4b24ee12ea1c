"""The matrix sweep: the rows of the paper's experiment matrix as the points of a sweep."""

from __future__ import annotations

import dataclasses
import enum
import math
import numbers
from typing import ClassVar

import numpy as np

from ...internal._memory import F64, check_memory, with_total
from ...internal._records import field_values
from ...trained._architecture import Architecture, RetrievalTask
from ...trained._config import TrainConfig
from ...trained._transformer_train import training_bytes
from .._paper_matrix import (
    CURVE_POINTS,
    MatrixRow,
    MatrixSize,
    matrix_row,
    run_row,
)
from ._checks import PointChecks
from ._kind import AbstractSweepKind
from ._spec import SweepSpec, grid_points

# The `Architecture` fields a matrix sweep's grid may set: each value changes every row, as the
# architecture options of `inductheory matrix` do.
ARCHITECTURE_FIELDS = tuple(f.name for f in dataclasses.fields(Architecture))
# The `TrainConfig` fields a matrix sweep's grid may set.
MATRIX_TRAIN_FIELDS = ("lr", "steps", "overlap_penalty")
# The `RetrievalTask` fields a matrix sweep's grid may set (the symbols tokens are drawn from).
MATRIX_TASK_FIELDS = ("vocab",)
# The most points a matrix sweep's grid may have: each trains a row from many seeds (minutes at
# the full size), so 10^4 points are weeks of compute; a larger grid is a typo or a mistake.
MATRIX_POINTS_MAX = 10_000


def _plain(value):
    """An enum member as its value (plain data for the spec, its JSON and the dataset)."""
    return value.value if isinstance(value, enum.Enum) else value


def plain_fields(module) -> dict:
    """The fields of a dataclass (a task, an architecture, a training) as plain data."""
    return {k: _plain(v) for k, v in field_values(module).items()}


def _architecture_value(name: str, value):
    """`value` of the `Architecture` field `name` as plain data (an enum's value), or a one-line
    `ValueError` naming the grid parameter."""
    default = next(
        f.default for f in dataclasses.fields(Architecture) if f.name == name
    )
    if isinstance(default, enum.Enum):
        kind = type(default)
        try:
            return kind(value).value
        except ValueError:
            choices = ", ".join(m.value for m in kind)
            raise ValueError(
                f"grid values of {name!r} must be one of {choices}, got {value!r}"
            ) from None
    if isinstance(default, bool):
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"grid values of {name!r} must be booleans, got {value!r}")
        return bool(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"grid values of {name!r} must be integers, got {value!r}")
    return int(value)


def _train_value(name: str, value):
    if name in ("steps", *MATRIX_TASK_FIELDS):
        if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, numbers.Integral
        ):
            raise ValueError(f"grid values of {name!r} must be integers, got {value!r}")
        return int(value)
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
    ):
        raise ValueError(
            f"grid values of {name!r} must be finite numbers, got {value!r}"
        )
    return float(value)


def check_matrix_grid(size: MatrixSize, grid: dict | None) -> dict[str, list]:
    """The grid of a matrix sweep, checked and as plain data, `row` first.

    **Arguments:**
    - `size`: the `MatrixSize` (its rows are the default of `row`).
    - `grid`: `{name: values}` (None: every row of `size`); names among `row` (row names of
      `MATRIX`), the fields of `Architecture` (enums by member or value), `lr`, `steps`,
      `overlap_penalty` and `vocab` (the task's symbols, integers: `RetrievalTask.vocab`).

    **Returns:** `{name: values}` with `row` first; raises a one-line `ValueError` naming the
    parameter (an unknown row lists the rows).
    """
    grid = {} if grid is None else dict(grid)
    _check_point_count(size, grid)
    allowed = MatrixSweep.grid_names
    clean: dict[str, list] = {}
    for name, values in grid.items():
        if name not in allowed:
            raise ValueError(
                f"grid parameter {name!r} is not swept by a matrix sweep; choose from "
                f"{list(allowed)}"
            )
        if isinstance(values, (str, enum.Enum)) or not hasattr(values, "__iter__"):
            values = [values]
        values = list(values)
        if not values:
            raise ValueError(f"grid parameter {name!r} has no values")
        if name == "row":
            for v in values:
                if not isinstance(v, str):
                    raise ValueError(
                        f"grid values of 'row' must be row names, got {v!r}"
                    )
                matrix_row(v)  # an unknown row is refused, naming the rows
            clean[name] = values
        elif name in MATRIX_TRAIN_FIELDS + MATRIX_TASK_FIELDS:
            clean[name] = [_train_value(name, v) for v in values]
        else:
            clean[name] = [_architecture_value(name, v) for v in values]
        repeated = [v for i, v in enumerate(clean[name]) if v in clean[name][:i]]
        if repeated:
            raise ValueError(
                f"grid parameter {name!r} repeats {', '.join(map(repr, repeated))}: "
                "give each value once"
            )
    rows = clean.pop("row", [r.name for r in size.matrix])
    return {"row": rows, **clean}


def _check_point_count(size: MatrixSize, grid: dict) -> None:
    """A one-line `ValueError` naming the grid when its points (the product of its values'
    counts, the default rows included) exceed `MATRIX_POINTS_MAX`: refused before any point is
    checked (every point builds an architecture and trains `seeds` models)."""
    counts = {
        name: 1
        if isinstance(values, (str, enum.Enum)) or not hasattr(values, "__len__")
        else len(values)
        for name, values in grid.items()
    }
    counts.setdefault("row", len(size.matrix))
    points = math.prod(counts.values())
    if points > MATRIX_POINTS_MAX:
        said = " x ".join(f"{name}: {n}" for name, n in counts.items())
        raise ValueError(
            f"grid has {points} points ({said}); a matrix sweep takes at most "
            f"{MATRIX_POINTS_MAX} (each point trains {size.seeds} seeds): split it"
        )


def spec_size(spec: SweepSpec) -> MatrixSize:
    """The `MatrixSize` of a matrix sweep's spec (without the grid's changes)."""
    return MatrixSize(
        task=RetrievalTask(**spec.task),
        reference=Architecture(**spec.settings["reference"]),
        train=TrainConfig(**spec.settings["train"]),
        seeds=spec.seeds,
    )


def point_row(size: MatrixSize, point: dict) -> tuple[MatrixRow, MatrixSize]:
    """`(row, size)` of one grid point: the named row with the point's architecture fields as
    changes (the point's coordinates name it in the dataset), the size with its `lr` and
    `steps` and its task with the point's `vocab`.

    ```python
    point_row(QUICK_SIZE, {"row": "W4/S4", "kv_heads": 2, "steps": 10})
    ```
    """
    row = matrix_row(point["row"])
    changes = {k: v for k, v in point.items() if k in ARCHITECTURE_FIELDS}
    if changes:
        row = dataclasses.replace(row, changes={**row.changes, **changes}, paper=None)
    train = {k: v for k, v in point.items() if k in MATRIX_TRAIN_FIELDS}
    if train:
        size = dataclasses.replace(size, train=dataclasses.replace(size.train, **train))
    task = {k: v for k, v in point.items() if k in MATRIX_TASK_FIELDS}
    if task:
        size = dataclasses.replace(size, task=dataclasses.replace(size.task, **task))
    return row, size


def _check_point(size: MatrixSize, point: dict) -> None:
    """A one-line `ValueError` where the point's training or architecture is refused, a
    `MemoryError` where its training cannot fit (`training_bytes`)."""
    row, size = point_row(size, point)  # its `TrainConfig` checks lr and steps
    arch = row.architecture(size.reference)
    arch.check_task(size.task)
    check_memory(
        training_bytes(size.task, arch, size.train, size.seeds),
        f"training {size.seeds} seeds",
    )


def _curve_points(spec: SweepSpec) -> int:
    """Points of the stored loss curves: the most any point's `loss_curve` has (padded)."""
    steps = spec.grid.get("steps", [spec.settings["train"]["steps"]])
    return min(CURVE_POINTS, max(steps))


def _padded(a: np.ndarray, width: int, fill) -> np.ndarray:
    a = np.asarray(a)
    pad = [(0, 0)] * (a.ndim - 1) + [(0, width - a.shape[-1])]
    return np.pad(a.astype(np.result_type(a, type(fill))), pad, constant_values=fill)


class MatrixSweep(AbstractSweepKind):
    """Rows of the paper's experiment matrix trained at every grid point (`matrix`).

    At each point (a row of `MATRIX`, optionally changed by `Architecture` fields, and the
    size's training with its `lr` and `steps`): one `run_row` of `size.seeds` seeds under base
    seed `seed`, with its held-out measures per seed and phase, its initial loss, plateau change
    and loss curve. Grid: `row` (row names; default every row of the size), any field of
    `Architecture`, `lr`, `steps` and `vocab`. One point per block by default: rows differ in
    shapes, and each finished row is stored at once. Run it with `matrix_sweep`; every array equals
    `run_row`'s (curves padded with NaN, and their steps with -1, to the grid's longest).

    ```python
    ds = matrix_sweep(QUICK_SIZE, {"row": ["W8/S8 8 KV", "W4/S4"]})
    ds.phase_accuracy.sel(row="W4/S4")  # (seed, phase)
    ```
    """

    name: ClassVar[str] = "matrix"
    description: ClassVar[str] = (
        "rows of the paper's experiment matrix trained from many seeds (resumable by row)"
    )
    grid_names: ClassVar[tuple[str, ...]] = (
        ("row",) + ARCHITECTURE_FIELDS + MATRIX_TRAIN_FIELDS + MATRIX_TASK_FIELDS
    )
    variables: ClassVar[dict[str, tuple[str, ...]]] = {
        "held_out_loss": ("seed",),
        "initial_loss": ("seed",),
        "plateau_change": ("seed",),
        "mean_accuracy": ("seed",),
        "worst_phase": ("seed",),
        "phase_gap": ("seed",),
        "phase_accuracy": ("seed", "phase"),
        "phase_loss": ("seed", "phase"),
        "correct": ("seed", "context", "phase"),
        "curve_steps": ("curve_point",),
        "curve": ("seed", "curve_point"),
        "held_out_loss_mean": (),
        "mean_accuracy_mean": (),
        "worst_phase_mean": (),
        "phase_gap_mean": (),
        "wall_s": (),
    }
    labels: ClassVar[dict[str, tuple[str, ...]]] = {}
    point_keys: ClassVar[tuple[str, ...]] = (
        "held_out_loss",
        "initial_loss",
        "plateau_change",
        "mean_accuracy",
        "worst_phase",
        "phase_gap",
        "phase_accuracy",
        "held_out_loss_mean",
        "mean_accuracy_mean",
        "worst_phase_mean",
        "phase_gap_mean",
        "wall_s",
    )
    table_keys: ClassVar[tuple[str, ...]] = (
        "held_out_loss_mean",
        "mean_accuracy_mean",
        "worst_phase_mean",
        "phase_gap_mean",
        "wall_s",
    )

    def prepare(self, task, *, config, gates, seeds, contexts, vertex_starts):
        """`task` is the `MatrixSize` (its seeds are the sweep's); the rest are ignored."""
        if not isinstance(task, MatrixSize):
            raise TypeError(
                f"a matrix sweep's size must be a MatrixSize, got {type(task).__name__}"
            )
        settings = {
            "reference": plain_fields(task.reference),
            "train": plain_fields(task.train),
        }
        extra = {"contexts": task.train.eval_contexts, "period": task.task.period}
        return settings, extra, task.seeds

    def check_points(self, task, grid, config):
        """Every point's row, architecture (against the task) and training, as `inductheory
        matrix` checks them before any training; `task` is the `MatrixSize`."""
        checks = PointChecks()
        for point in grid_points(grid):
            checks.attempt(point, lambda p=point: _check_point(task, p))
        checks.warn()

    def default_block(self, grid, seeds):
        return 1  # one row per block: each finished row is stored at once

    def looped_names(self, spec):
        return ()

    def block_points(self, spec):
        return spec.block

    def compute_block(self, spec, points):
        size = spec_size(spec)
        width = _curve_points(spec)
        results = [run_row(*point_row(size, p), seed=spec.seed) for p in points]
        out: dict[str, list] = {k: [] for k in self.variables}
        for r in results:
            m = r.measures
            per_seed = {
                "held_out_loss": np.asarray(m.loss),
                "initial_loss": np.asarray(r.initial_loss),
                "plateau_change": np.asarray(r.plateau_change),
                "mean_accuracy": m.mean_accuracy,
                "worst_phase": m.worst_accuracy,
                "phase_gap": m.gap,
            }
            values = {
                **per_seed,
                "phase_accuracy": np.asarray(m.phase_accuracy),
                "phase_loss": np.asarray(m.phase_loss),
                "correct": np.asarray(m.correct),
                "curve_steps": _padded(r.curve_steps, width, -1),
                "curve": _padded(r.curve, width, np.nan),
                "wall_s": np.float64(r.wall_s),
            }
            for k in ("held_out_loss", "mean_accuracy", "worst_phase", "phase_gap"):
                values[f"{k}_mean"] = per_seed[k].mean()
            for k, v in values.items():
                out[k].append(v)
        return {k: np.stack(v) for k, v in out.items()}

    def block_bytes(self, spec):
        # what a block keeps of its rows; the training's own working memory (the models, their
        # optimizer states and activations) is `train_transformer`'s and not estimated here
        seeds, T = spec.seeds, spec.task["T"]
        steps = max(spec.grid.get("steps", [spec.settings["train"]["steps"]]))
        contexts = spec.settings["train"]["eval_contexts"]
        return with_total(
            loss_history=F64 * seeds * steps,
            held_out_contexts=F64 * contexts * T,
            measures=F64 * spec.block * seeds * (contexts + 2) * spec.task["period"],
        )

    def coordinates(self, spec):
        return {
            "seed": range(spec.seeds),
            "phase": range(spec.task["period"]),
            "context": range(spec.settings["train"]["eval_contexts"]),
            "curve_point": range(_curve_points(spec)),
        }

    def attributes(self, spec):
        return {"queries_per_context": spec.task["T"] // spec.task["period"]}


__all__ = [
    "ARCHITECTURE_FIELDS",
    "MATRIX_TASK_FIELDS",
    "MATRIX_TRAIN_FIELDS",
    "MatrixSweep",
    "check_matrix_grid",
    "plain_fields",
    "point_row",
    "spec_size",
]
