"""Sweeps: a grid of parameter values run as one vectorized computation, returned as a
labeled dataset.

A sweep takes a template (a `Task`, and a `FlowConfig`, an `OracleMinimizer` or gates), a grid of
values for some of its traced scalars, and returns an `xarray.Dataset` whose dimensions are named
after the grid parameters (then seed, head, offset, ...), with every fixed parameter and the library
version in its attributes.

How it runs. The grid points (crossed with seeds for flows) are cut into blocks of a fixed number of
points; every block is one call of one compiled program (vmap over the block, sharded over local
devices), padded with copies of its last point, so a sweep over k points compiles exactly the
programs a sweep over one point compiles. Only parameters that set a shape are looped in Python:
N (and kappa under an approximate geometry) for the full flow, every parameter for the oracle
under an approximate geometry. With `out`, each finished block is written atomically
(`blocks/block-NNNNN.npz`, each recording the sweep's parameters and code version) beside a
manifest of them (`sweep.json`), so an interrupted sweep resumes at its first unfinished block,
using only blocks that prove they are its own; the assembled dataset is `sweep.nc`.
Before anything is
allocated, the memory of the largest block and of every point's results is estimated
(`sweep_bytes`): a sweep that cannot fit is refused with a one-line `MemoryError`. With a Dask
`distributed` scheduler address, blocks are computed by the cluster's workers (same blocks, same
programs, same numbers).
"""

from __future__ import annotations

import abc
import dataclasses
import itertools
import json
import math
import numbers
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import equinox as eqx
import jax
import numpy as np

from ..flow._config import TRACED_FIELDS as FLOW_FIELDS, FlowConfig, check_flow
from ..flow._solution import STATUSES, Status
from ..internal._counts import is_exact_geometry
from ..internal._io import (
    CacheWarning,
    _atomic_write,
    claimed_output_dir,
    library_version,
    to_json,
    write_json_atomic,
    write_npz_atomic,
    write_text_atomic,
)
from ..internal._lanes import padded_size, shard_lanes, stack_lanes
from ..internal._memory import (
    BACKWARD_COPIES,
    F64,
    check_memory,
    flow_bytes,
    loss_bytes,
    oracle_bytes,
    with_total,
)
from ..internal._progress import Progress
from ..internal._table import format_table
from ..internal._warnings import warn_at_caller
from ..model._gates import SharedGates, value_follows_key
from ..model._loss import check_gate_shape, phase_accuracy, phase_gap, phase_losses
from ..model._task import (
    N_MAX,
    SEED_MAX,
    SEED_MIN,
    SEEDS_MAX,
    Task,
    _require_int,
    assumptions_silenced,
)
from ..oracle._minimize import OracleMinimizer
from ..oracle._point import (
    POINT_SCALARS,
    OraclePoint,
    config_dict,
    exact_oracle_points,
    oracle_point,
)
from ..trained._config import ModelConfig, TrainConfig
from ..trained._train import train
from ._flows import (
    flow_sample,
    independent_distinct_baseline,
    run_lanes,
    sample_size,
    seed_keys,
    selected_distinct_fraction,
)
from ._sweep_checks import (
    TASK_FIELDS,
    PointChecks,
    SweepFailureWarning,
    check_grid_points,
    sweep_problems,
)
from ._training import BRANCHES, summarize_training, train_bytes

# Points per block (a fixed shape: every block is padded to it). Flows: lanes = points x seeds.
# Oracle: one point per device (more points per call only lengthen the vectorized local searches).
LOSS_BLOCK = 256
FLOW_LANES = 4096
# Most lanes (points x seeds) one explicit block may hold: every block is padded to its size, so
# a huge block would allocate for points that do not exist.
MAX_BLOCK_LANES = 2**16


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


def _check_grid(kind: str, task: Task, grid: dict) -> dict[str, list]:
    if not grid:
        raise ValueError(
            "grid must name at least one parameter, e.g. grid={'beta': [2, 4, 8]}"
        )
    allowed = sweep_kind(kind).grid_names
    clean = {}
    for name, values in grid.items():
        if name not in allowed:
            raise ValueError(
                f"grid parameter {name!r} is not swept by a {kind} sweep; choose from "
                f"{list(allowed)}"
            )
        values = (
            list(np.atleast_1d(np.asarray(values)).tolist())
            if not isinstance(values, (list, tuple))
            else list(values)
        )
        if not values:
            raise ValueError(f"grid parameter {name!r} has no values")
        for v in values:
            if (
                isinstance(v, bool)
                or not isinstance(v, numbers.Real)
                # an integer beyond float64's range is finite (math.isfinite would overflow)
                or not (isinstance(v, numbers.Integral) or math.isfinite(v))
            ):
                raise ValueError(
                    f"grid values of {name!r} must be finite numbers, got {v!r}"
                )
        if name == "N" and not all(
            isinstance(v, numbers.Integral) or float(v) == int(v) for v in values
        ):
            raise ValueError(f"grid values of 'N' must be integers, got {values}")
        if name == "N" and any(v > N_MAX for v in values):
            big = max(values)
            shown = f"{big:.6g}" if big <= 1e300 else "an integer above 1e300"
            raise ValueError(
                f"grid values of 'N' must be <= {N_MAX} (the largest vocabulary, 2^53), "
                f"got {shown}"
            )
        clean[name] = (
            [int(v) for v in values] if name == "N" else [float(v) for v in values]
        )
        _refuse_duplicates(name, clean[name])
    return clean


def _refuse_duplicates(name: str, values: list) -> None:
    # a repeated value would be two rows with one label: selections and JSON would mix them
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(
            f"grid parameter {name!r} repeats {', '.join(repr(v) for v in repeated)}: "
            "give each value once"
        )


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


def blocks_of(spec: SweepSpec) -> list[list[int]]:
    """Point indices of each block: consecutive points sharing their looped parameters, at most
    `spec.block` per block."""
    kind = sweep_kind(spec.kind)
    points = grid_points(spec.grid)
    outer = kind.looped_names(spec)
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(points):
        groups.setdefault(tuple(p.get(n) for n in outer), []).append(i)
    size = kind.block_points(spec)
    return [
        idx[j : j + size] for idx in groups.values() for j in range(0, len(idx), size)
    ]


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
    def block_bytes(self, spec: SweepSpec) -> dict:
        """Memory of the sweep's largest block, by part and `total` (`inductheory.internal._memory`
        estimates), for the check made before anything is allocated."""

    @abc.abstractmethod
    def coordinates(self, spec: SweepSpec) -> dict:
        """Coordinates of the per-point dimensions (beyond the grid's)."""

    @abc.abstractmethod
    def attributes(self, spec: SweepSpec) -> dict:
        """Dataset attributes of this kind (beyond the parameters every sweep records)."""


def _padded(items: list, size: int) -> list:
    return items + [items[-1]] * (size - len(items))


class LossSweep(AbstractSweepKind):
    """The exact population loss of fixed shared gates at every grid point.

    At each task $p$: the loss $\\mathcal{L}_p(g)$ of the gates $g$ (closed form, exact geometry),
    its per-phase terms, the per-phase accuracy and the phase gap. Grid: task fields.

    ```python
    ds = sweep("loss", Task(L=4, S=4, H=2, N=1024), {"beta": [1, 4]},
               gates=hard_selection(4, [0, 2]))
    ```
    """

    name: ClassVar[str] = "loss"
    description: ClassVar[str] = "exact loss and per-phase accuracy of shared gates"
    grid_names: ClassVar[tuple[str, ...]] = TASK_FIELDS
    variables: ClassVar[dict[str, tuple[str, ...]]] = {
        "loss": (),
        "phase_loss": ("phase",),
        "phase_accuracy": ("phase",),
        "phase_gap": (),
    }
    labels: ClassVar[dict[str, tuple[str, ...]]] = {}
    point_keys: ClassVar[tuple[str, ...]] = (
        "loss",
        "phase_loss",
        "phase_accuracy",
        "phase_gap",
    )
    table_keys: ClassVar[tuple[str, ...]] = ("loss", "phase_accuracy", "phase_gap")

    def prepare(self, task, *, config, gates, seeds, contexts, vertex_starts):
        task.require_exact("sweep('loss') (the closed form of shared gates)")
        if gates is None:
            raise ValueError(
                "sweep('loss') needs gates (e.g. hard_selection(S, offsets))"
            )
        if not isinstance(gates, SharedGates):
            raise TypeError(
                "gates must be SharedGates (e.g. hard_selection(S, offsets)), got "
                f"{type(gates).__name__}"
            )
        check_gate_shape(task, gates)
        # before the gates become the spec's JSON lists (a Python float each)
        check_memory(loss_point_bytes(task), "sweep loss (one grid point)")
        extra = {
            "gates_key": np.asarray(gates.key).tolist(),
            "gates_value": np.asarray(gates.value).tolist(),
        }
        return {}, extra, 0

    def check_points(self, task, grid, config):
        check_grid_points(task, grid)

    def default_block(self, grid, seeds):
        return LOSS_BLOCK

    def looped_names(self, spec):
        return ()

    def block_points(self, spec):
        return spec.block

    def compute_block(self, spec, points):
        n = len(points)
        points = _padded(points, spec.block)
        tasks = shard_lanes(
            _stacked_tasks(spec, _padded(points, padded_size(len(points))))
        )
        gates = SharedGates(
            key=np.asarray(spec.extra["gates_key"]),
            value=np.asarray(spec.extra["gates_value"]),
        )
        out = jax.device_get(_loss_map(tasks, gates))
        return {name: np.asarray(value)[:n] for name, value in out.items()}

    def block_bytes(self, spec):
        t = spec.task
        L, W, H = t["L"], t.get("W", t["S"]), t["H"]
        # the closed form, no gradient: one row of L*S + 1 logits per query and the heads' outputs
        per_point = loss_bytes(1, L, W, H, L * t["S"] + 1) // BACKWARD_COPIES
        return {"logits": padded_size(_block_size(spec)) * per_point}

    def coordinates(self, spec):
        return {}

    def attributes(self, spec):
        return {}


# Bytes of one number in a JSON-able Python list: the float object and its slot in the list.
LIST_FLOAT = 32


def loss_point_bytes(task: Task) -> dict:
    """Memory of one point of a loss sweep, by part and `total`, before anything is built: the
    shared gates (H x W, key and value) as arrays and as the spec's JSON lists, and the closed
    form's logits (`LossSweep.block_bytes` of one point). A huge H is refused at once (the gates
    alone of H = 1e8 are gigabytes)."""
    cells = 2 * task.H * task.W
    logits = loss_bytes(1, task.L, task.W, task.H, task.L * task.S + 1)
    return with_total(
        gates=F64 * cells,
        gates_record=LIST_FLOAT * cells,
        logits=logits // BACKWARD_COPIES,
    )


@jax.jit
def _loss_map(tasks, gates):
    def one(task):
        losses, accuracy = phase_losses(task, gates), phase_accuracy(task, gates)
        return {
            "loss": losses.mean(),
            "phase_loss": losses,
            "phase_accuracy": accuracy,
            "phase_gap": phase_gap(accuracy),
        }

    return jax.vmap(one)(tasks)


class FlowSweep(AbstractSweepKind):
    """Gradient flows (Theorem 2) of `seeds` seeds at every grid point.

    At each point $p$ (a task and a `FlowConfig`): the flows of seeds $0..s-1$ (the keys of
    `run_flow`, so a seed's numbers do not depend on the grid), each seed's selected offsets,
    status and final state, and the across-seed fractions (selected, distinct, value = key + 1).
    Grid: task fields and the traced `FlowConfig` fields. The full dynamics loop over N (and
    kappa under an approximate geometry), which set the sample's shape.

    ```python
    ds = sweep("flow", Task(L=8, S=4, H=2, N=4096), {"rho": [0.05, 0.2]},
               config=FlowConfig(), seeds=64)
    ```
    """

    name: ClassVar[str] = "flow"
    description: ClassVar[str] = "gradient flows (Theorem 2), many seeds per point"
    grid_names: ClassVar[tuple[str, ...]] = TASK_FIELDS + FLOW_FIELDS
    variables: ClassVar[dict[str, tuple[str, ...]]] = {
        "selected": ("seed", "head"),
        "key_offsets": ("seed", "head"),
        "value_offsets": ("seed", "head"),
        "reduced_selected": ("seed", "head"),
        "status": ("seed",),
        "t_final": ("seed",),
        "final_loss": ("seed",),
        "final_mass": ("seed", "head", "branch", "offset"),
        "num_steps": ("seed",),
        "selected_fraction": (),
        "distinct_fraction": (),
        "value_is_key_plus_one_fraction": (),
    }
    labels: ClassVar[dict[str, tuple[str, ...]]] = {"status": STATUSES}
    point_keys: ClassVar[tuple[str, ...]] = (
        "key_offsets",
        "value_offsets",
        "selected",
        "status",
        "t_final",
        "distinct_fraction",
        "selected_fraction",
        "value_is_key_plus_one_fraction",
    )
    table_keys: ClassVar[tuple[str, ...]] = (
        "distinct_fraction",
        "selected_fraction",
        "value_is_key_plus_one_fraction",
    )

    def prepare(self, task, *, config, gates, seeds, contexts, vertex_starts):
        config = FlowConfig() if config is None else config
        if not isinstance(config, FlowConfig):
            raise ValueError(
                f"config must be a FlowConfig for sweep('flow'), got {type(config).__name__}"
            )
        check_flow(task, config)
        if (
            isinstance(seeds, bool)
            or not isinstance(seeds, numbers.Integral)
            or seeds < 1
        ):
            raise ValueError(f"seeds must be an integer >= 1, got {seeds!r}")
        if seeds > SEEDS_MAX:
            raise ValueError(f"seeds must be <= {SEEDS_MAX}, got {seeds}")
        return config.to_dict(), {}, int(seeds)

    def check_points(self, task, grid, config):
        check_grid_points(task, grid, FlowConfig() if config is None else config)

    def default_block(self, grid, seeds):
        # up to FLOW_LANES lanes per call, but no more points than the grid holds (rounded up
        # to a power of two, so nearby grid sizes share a program): small sweeps pay no padding
        n_points = math.prod(len(v) for v in grid.values())
        return min(max(1, FLOW_LANES // seeds), 1 << (n_points - 1).bit_length())

    def looped_names(self, spec):
        if spec.settings["dynamics"] != "full":
            return ()
        return ("N",) if _exact(spec) else ("N", "kappa")

    def block_points(self, spec):
        return spec.block

    def compute_block(self, spec, points):
        n, seeds = len(points), spec.seeds
        padded = _padded(points, spec.block)
        tasks = _tasks(spec, padded)
        with assumptions_silenced():  # said once for the grid by `check_grid_points`
            configs = [FlowConfig(**{**spec.settings, **_split(p)[1]}) for p in padded]
        out = self._lanes(spec, tasks, configs)
        shape = lambda a: a.reshape((len(padded), seeds) + a.shape[1:])[:n]
        selected = shape(out["selected"])
        status = shape(out["status"])
        arrays = {
            "selected": selected,
            "key_offsets": shape(out["key_offsets"]),
            "value_offsets": shape(out["value_offsets"]),
            "status": status,
            "t_final": shape(out["t_final"]),
            "final_loss": shape(out["final"]["loss"]),
            "final_mass": shape(out["final"]["mass"]),
            "num_steps": shape(out["num_steps"]),
            "selected_fraction": np.mean(status == Status.SELECTED, axis=1),
            "distinct_fraction": np.array(
                [selected_distinct_fraction(s, st) for s, st in zip(selected, status)]
            ),
        }
        arrays["value_is_key_plus_one_fraction"] = np.mean(
            value_follows_key(arrays["key_offsets"], arrays["value_offsets"]),
            axis=1,
        )
        if "reduced_selected" in out:
            arrays["reduced_selected"] = shape(out["reduced_selected"])
        return arrays

    def _lanes(self, spec, tasks: list[Task], configs: list[FlowConfig]) -> dict:
        """`run_lanes` of every (point, seed) lane, as a dict of arrays (lanes point-major):
        the one call into the flow runner."""
        seeds = spec.seeds
        shared = (None, None)
        if spec.settings["dynamics"] == "full":
            shared = flow_sample(tasks[0], configs[0], spec.seed)
        keys = np.asarray(seed_keys(spec.seed, np.arange(seeds)))
        lane_tasks = stack_lanes([t for t in tasks for _ in range(seeds)])
        lane_configs = stack_lanes([c for c in configs for _ in range(seeds)])
        lane_keys = np.tile(keys, (len(tasks), 1))
        return run_lanes(lane_tasks, lane_configs, lane_keys, shared)

    def block_bytes(self, spec):
        t, config = spec.task, FlowConfig(**spec.settings)
        N = max(spec.grid.get("N", [t["N"]]))
        lanes = padded_size(_block_size(spec) * spec.seeds)
        M = config.M
        if config.dynamics == "full" and N % t["L"] == 0:
            M = sample_size(_tasks(spec, [{"N": N}])[0], config)
        return flow_bytes(
            dynamics=config.dynamics,
            N=N,
            L=t["L"],
            S=t.get("W", t["S"]),
            H=t["H"],
            M=M,
            seeds=lanes,
            chunk=lanes,  # every lane of a block is integrated at once
            n_save=config.n_save,
            eps=t.get("eps"),
            d=t.get("d"),
            batch_size=config.batch_size,
        )

    def coordinates(self, spec):
        return {"seed": np.arange(spec.seeds), "branch": ["key", "value"]}

    def attributes(self, spec):
        return {
            "distinct_baseline_independent_uniform": independent_distinct_baseline(
                spec.task["H"],
                spec.task.get("W", spec.task["S"]),  # to_dict omits W at its default, S
                spec.settings.get("tied", False),
            )
        }


# The oracle's per-point scalars a sweep keeps: its numbers, then the realized eps.
_ORACLE_SCALARS = tuple(
    k for k in POINT_SCALARS if k not in ("eps", "dim", "n_contexts", "seeds")
) + ("eps",)


class OracleSweep(AbstractSweepKind):
    """Theorem 1 at every grid point: the oracle minimum against the best hard selection.

    At each task $p$: `oracle_point` under an `OracleMinimizer` (`contexts` contexts, the
    `vertex_starts` best vertices as extra starts, PRNG seed `seed`): the best loss found, the
    best vertex loss, their gap, whether the minimizer is a (distinct) hard selection, and the
    offsets of each context's minimizer. Grid: task fields. Under exact geometry with one context
    the points of a block run as one vectorized program; otherwise every point is its own block.

    ```python
    ds = sweep("oracle", Task(L=4, S=4, H=2, N=1024), {"beta": [4, 8]},
               config=OracleMinimizer(restarts=8))
    ```
    """

    name: ClassVar[str] = "oracle"
    description: ClassVar[str] = "oracle minimum vs hard selections (Theorem 1)"
    grid_names: ClassVar[tuple[str, ...]] = TASK_FIELDS
    variables: ClassVar[dict[str, tuple[str, ...]]] = {
        **{name: () for name in _ORACLE_SCALARS},
        "offsets": ("context", "head", "block"),
    }
    labels: ClassVar[dict[str, tuple[str, ...]]] = {}
    point_keys: ClassVar[tuple[str, ...]] = _ORACLE_SCALARS + ("offsets",)
    table_keys: ClassVar[tuple[str, ...]] = (
        "best_loss",
        "best_vertex_loss",
        "gap",
        "hard_selection",
        "distinct_heads",
    )

    def prepare(self, task, *, config, gates, seeds, contexts, vertex_starts):
        config = OracleMinimizer() if config is None else config
        if not isinstance(config, OracleMinimizer):
            raise ValueError(
                f"config must be an OracleMinimizer for sweep('oracle'), got "
                f"{type(config).__name__}"
            )
        settings = config_dict(config)
        extra = {
            "contexts": _require_int("contexts", contexts, 1),
            "vertex_starts": _require_int("vertex_starts", vertex_starts, 0),
        }
        return settings, extra, 0

    def check_points(self, task, grid, config):
        check_grid_points(task, grid)

    def default_block(self, grid, seeds):
        # one point per device: more only lengthen the vectorized searches
        return padded_size(1)

    def looped_names(self, spec):
        return () if _exact(spec) else tuple(spec.grid)

    def block_points(self, spec):
        return 1 if self.looped_names(spec) else spec.block

    def compute_block(self, spec, points):
        results = self._results(spec, _tasks(spec, points))
        arrays = {
            k: np.array([getattr(r, k) for r in results]) for k in _ORACLE_SCALARS
        }
        arrays["offsets"] = np.array([[c.offsets for c in r.contexts] for r in results])
        return arrays

    def _results(self, spec, tasks: list[Task]) -> list[OraclePoint]:
        """The `OraclePoint` of every task: the one place that calls the oracle."""
        config = OracleMinimizer(**spec.settings)
        contexts, vertex_starts = spec.extra["contexts"], spec.extra["vertex_starts"]
        key = jax.random.key(spec.seed)
        if tasks[0].exact and contexts == 1:
            padded = _padded(tasks, padded_size(spec.block))
            keys = np.stack([np.asarray(jax.random.key_data(key))] * len(padded))
            return exact_oracle_points(
                shard_lanes(stack_lanes(padded)),
                shard_lanes(keys),
                config,
                seeds=vertex_starts,
                template=tasks[0],
            )[: len(tasks)]
        return [
            oracle_point(t, key, config, contexts=contexts, seeds=vertex_starts)
            for t in tasks
        ]

    def block_bytes(self, spec):
        t = spec.task
        one = oracle_bytes(
            N=max(spec.grid.get("N", [t["N"]])),
            L=t["L"],
            S=t.get("W", t["S"]),
            H=t["H"],
            restarts=spec.settings["restarts"],
            vertex_starts=spec.extra["vertex_starts"],
            contexts=spec.extra["contexts"],
            eps=t.get("eps"),
            d=t.get("d"),
            windowed=_tasks(spec, [{}])[0].windowed,
            tied=spec.settings["tied"],
        )
        # exact geometry, one context: the block's points are one vectorized program
        vectorized = _exact(spec) and spec.extra["contexts"] == 1
        points = padded_size(_block_size(spec)) if vectorized else 1
        return {k: points * v for k, v in one.items()}

    def coordinates(self, spec):
        return {}

    def attributes(self, spec):
        return {}


# The `TrainConfig` fields a train sweep's grid may set (the rest set programs or shapes).
TRAIN_FIELDS = ("rho", "lr")


def _train_configs(config) -> tuple[ModelConfig, TrainConfig]:
    """`(model_config, train_config)` of the `config` of a train sweep: a `TrainConfig` (the
    model at the theorem's setting), a pair of both, or None (every default)."""
    if config is None:
        return ModelConfig(), TrainConfig()
    if isinstance(config, TrainConfig):
        return ModelConfig(), config
    if (
        isinstance(config, tuple)
        and len(config) == 2
        and isinstance(config[0], ModelConfig)
        and isinstance(config[1], TrainConfig)
    ):
        return config
    raise ValueError(
        "config must be a TrainConfig or a pair (ModelConfig, TrainConfig) for "
        f"sweep('train'), got {type(config).__name__}"
    )


def _fields_of(module) -> dict:
    return {f.name: getattr(module, f.name) for f in dataclasses.fields(module)}


class TrainSweep(AbstractSweepKind):
    """The compressed model trained from `seeds` seeds at every grid point (`train`).

    At each point $p$ (a task, the model's switches and a `TrainConfig`): `train` of seeds
    $0..s-1$ under base seed `seed` (a seed's numbers do not depend on the grid), its per-seed
    held-out measures and the fractions of `summarize_training`. Grid: task fields, the initial
    radius `rho` and the learning rate `lr`. Every point is one `train` call (its seeds vmapped;
    runs of equal settings share their compiled programs), a block of points runs them in turn.

    ```python
    ds = sweep("train", Task(L=4, S=3, H=2, N=48), {"lr": [0.25, 0.5]},
               config=(ModelConfig(), TrainConfig(steps=200, M=48)), seeds=8)
    ```
    """

    name: ClassVar[str] = "train"
    description: ClassVar[str] = (
        "the compressed model trained with optax, many seeds per point"
    )
    grid_names: ClassVar[tuple[str, ...]] = TASK_FIELDS + TRAIN_FIELDS
    variables: ClassVar[dict[str, tuple[str, ...]]] = {
        "key_offsets": ("seed", "head"),
        "value_offsets": ("seed", "head"),
        "argmax_mass": ("seed", "head", "branch"),
        "phase_accuracy": ("seed", "phase"),
        "final_loss": ("seed",),
        "held_out_loss": ("seed",),
        "value_is_key_plus_one_fraction": (),
        "distinct_fraction": (),
        "mean_accuracy": (),
        "phase_gap": (),
    }
    labels: ClassVar[dict[str, tuple[str, ...]]] = {}
    point_keys: ClassVar[tuple[str, ...]] = (
        "key_offsets",
        "value_offsets",
        "phase_accuracy",
        "final_loss",
        "value_is_key_plus_one_fraction",
        "distinct_fraction",
        "mean_accuracy",
        "phase_gap",
    )
    table_keys: ClassVar[tuple[str, ...]] = (
        "value_is_key_plus_one_fraction",
        "distinct_fraction",
        "mean_accuracy",
        "phase_gap",
    )

    def prepare(self, task, *, config, gates, seeds, contexts, vertex_starts):
        model_config, train_config = _train_configs(config)
        seeds = _require_int("seeds", seeds, 1, SEEDS_MAX)
        settings = {
            "model_config": _fields_of(model_config),
            "train_config": _fields_of(train_config),
        }
        return settings, {}, seeds

    def check_points(self, task, grid, config):
        check_grid_points(task, grid)
        settings = _fields_of(_train_configs(config)[1])
        checks = PointChecks()
        for name in TRAIN_FIELDS:
            for v in grid.get(name, ()):
                checks.attempt(
                    {name: v}, lambda n=name, v=v: TrainConfig(**{**settings, n: v})
                )
        checks.warn()
        # `train` draws the full flow's balanced sample whatever its batch
        T = task.L * task.S
        for n in grid.get("N", [int(task.N)]):
            if n % T:
                where = f"grid point N={n!r}: " if "N" in grid else ""
                raise ValueError(
                    f"{where}balanced samples need L*S = {T} to divide N = {n}"
                )

    def default_block(self, grid, seeds):
        return 1  # one train call per block: each finished point is stored at once

    def looped_names(self, spec):
        return ()

    def block_points(self, spec):
        return spec.block

    def _configs(self, spec, point) -> tuple[ModelConfig, TrainConfig]:
        train_config = {**spec.settings["train_config"], **_split(point)[1]}
        return ModelConfig(**spec.settings["model_config"]), TrainConfig(**train_config)

    def compute_block(self, spec, points):
        runs = []
        for task, point in zip(_tasks(spec, points), points):
            model_config, train_config = self._configs(spec, point)
            runs.append(
                train(task, model_config, train_config, spec.seeds, seed=spec.seed)
            )
        summaries = [summarize_training(r) for r in runs]
        stack = lambda get: np.stack([np.asarray(get(r)) for r in runs])
        return {
            "key_offsets": stack(lambda r: r.measures.key_offsets),
            "value_offsets": stack(lambda r: r.measures.value_offsets),
            "argmax_mass": stack(lambda r: r.measures.argmax_mass),
            "phase_accuracy": stack(lambda r: r.measures.phase_accuracy),
            "final_loss": stack(lambda r: r.statistics.loss[:, -1]),
            "held_out_loss": stack(lambda r: r.measures.loss),
            "value_is_key_plus_one_fraction": np.array(
                [s.value_follows_key_share for s in summaries]
            ),
            "distinct_fraction": np.array([s.distinct_share for s in summaries]),
            "mean_accuracy": np.array([s.mean_accuracy_mean for s in summaries]),
            "phase_gap": np.array([s.phase_gap_mean for s in summaries]),
        }

    def block_bytes(self, spec):
        # the points of a block are trained one after the other: the largest N's run
        N = max(spec.grid.get("N", [spec.task["N"]]))
        with assumptions_silenced():
            task = Task(**{**spec.task, "N": N})
        return train_bytes(task, *self._configs(spec, {}), spec.seeds)

    def coordinates(self, spec):
        return {"seed": np.arange(spec.seeds), "branch": list(BRANCHES)}

    def attributes(self, spec):
        return {
            "distinct_baseline_independent_uniform": independent_distinct_baseline(
                spec.task["H"],
                spec.task.get("W", spec.task["S"]),
                spec.settings["model_config"]["tied"],
            )
        }


# The kinds of `sweep(kind, ...)` and of `inductheory sweep KIND`, by public name.
SWEEP_KINDS: dict[str, type[AbstractSweepKind]] = {
    cls.name: cls for cls in (LossSweep, FlowSweep, OracleSweep, TrainSweep)
}
KINDS = tuple(SWEEP_KINDS)


def sweep_kind(name: str) -> AbstractSweepKind:
    """The registered sweep kind called `name` (a key of `SWEEP_KINDS`).

    **Arguments:**
    - `name`: `"loss"`, `"flow"`, `"oracle"` or `"train"`.

    **Returns:** an instance of the kind's class.

    ```python
    sweep_kind("oracle").grid_names  # ("N", "gamma", "beta", "kappa")
    ```
    """
    if not isinstance(name, str) or name not in SWEEP_KINDS:
        raise ValueError(f"kind must be one of {tuple(SWEEP_KINDS)}, got {name!r}")
    return SWEEP_KINDS[name]()


def _n_points(spec: SweepSpec) -> int:
    return math.prod(len(v) for v in spec.grid.values())


def _block_size(spec: SweepSpec) -> int:
    """Grid points of a block as computed: every block is padded to this size."""
    return sweep_kind(spec.kind).block_points(spec)


# Host bytes per grid point outside the result arrays: its dict of grid values, its label in
# `blocks_of`, its entry of `points_of` (a dict of Python numbers and lists).
POINT_OVERHEAD = 2048


def sweep_bytes(spec: SweepSpec) -> dict:
    """Memory of a sweep, by part and `total`: its largest block (`block_bytes` of the kind, the
    parts prefixed `block_`) and every point's results on the host (the blocks' arrays, the
    assembled dataset and `points_of`: three copies).

    ```python
    sweep_bytes(spec)["total"]
    ```
    """
    kind = sweep_kind(spec.kind)
    n = _n_points(spec)
    block = kind.block_bytes(spec)
    out = {f"block_{k}": v for k, v in block.items() if k != "total"}
    sizes = {
        "seed": spec.seeds,
        "head": spec.task["H"],
        "branch": 2,
        "block": spec.task["L"],
    }
    sizes["offset"] = spec.task.get("W", spec.task["S"])
    sizes["phase"] = spec.task["S"]
    sizes["context"] = spec.extra.get("contexts", 1)
    per_point = sum(
        F64 * math.prod(sizes[d] for d in dims) for dims in kind.variables.values()
    )
    out["results"] = n * (3 * per_point + POINT_OVERHEAD)
    return with_total(**out)


def check_sweep_memory(spec: SweepSpec) -> None:
    """Raise `MemoryError` (one line) when `sweep_bytes(spec)` exceeds the memory available."""
    check_memory(
        sweep_bytes(spec),
        f"sweep {spec.kind} ({_n_points(spec)} points, {_block_size(spec)} per block"
        + (f", {spec.seeds} seeds each)" if spec.seeds else ")"),
    )


def compute_block(spec: SweepSpec, indices: list[int]) -> dict[str, np.ndarray]:
    """The arrays of one block of grid points (leading axis: the block's points, padding removed).

    Pure function of `spec` and `indices`: what a local run or a Dask worker computes.
    """
    points = [grid_point(spec.grid, i) for i in indices]
    return sweep_kind(spec.kind).compute_block(spec, points)


def assemble(spec: SweepSpec, parts: dict[int, dict[str, np.ndarray]]):
    """The dataset of a sweep from its blocks' arrays (`parts[b]` for block b)."""
    import xarray as xr

    kind = sweep_kind(spec.kind)
    blocks = blocks_of(spec)
    n_points = sum(len(b) for b in blocks)
    names = sorted(parts[0])
    flat = {}
    for name in names:
        first = parts[0][name]
        full = np.empty((n_points,) + first.shape[1:], dtype=first.dtype)
        for b, idx in enumerate(blocks):
            full[idx] = parts[b][name]
        flat[name] = full
    grid_dims = list(spec.grid)
    shape = tuple(len(spec.grid[d]) for d in grid_dims)
    data_vars = {}
    for name, arr in flat.items():
        if name in kind.labels:
            arr = np.asarray(kind.labels[name])[arr]
        data_vars[name] = (
            grid_dims + list(kind.variables[name]),
            arr.reshape(shape + arr.shape[1:]),
        )
    coords = {d: spec.grid[d] for d in grid_dims}
    coords.update(kind.coordinates(spec))
    # lanes are batched per device: the last digits can depend on the device count (that of the
    # process assembling the dataset; blocks resumed or computed on a cluster may have had others)
    attrs = {
        "kind": spec.kind,
        "inductheory_version": library_version(),
        "seed": spec.seed,
        "devices": jax.device_count(),
        "platform": jax.default_backend(),
        "parameters": to_json(
            {
                "task": spec.task,
                "settings": spec.settings,
                "extra": spec.extra,
                "seeds": spec.seeds,
                "block": spec.block,
            },
            sort_keys=True,
        ),
    }
    for k, v in {**spec.task, **spec.settings}.items():
        if (
            k not in spec.grid
            and isinstance(v, (int, float, str))
            and not isinstance(v, bool)
        ):
            attrs[k] = v
    attrs.update(kind.attributes(spec))
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


# The key of a block file holding the JSON of its sweep (spec and code version): a block is used
# only by the sweep it proves it belongs to.
BLOCK_RECORD = "_sweep"


def _read_block(
    path: Path, wanted: dict, proven: bool, names, size: int
) -> dict | None:
    """The arrays of the block file at `path` if it belongs to the sweep `wanted`, else None
    (missing; or damaged or foreign, reported by a `CacheWarning` naming the file).

    A block belongs to the sweep when the record inside it is `wanted` (spec and code version),
    or, for block files without a record (older versions), when the manifest `proven` it; its
    arrays must be the kind's, each of `size` points."""
    if not path.exists():
        return None
    problem = None
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as err:  # truncated, garbage, a directory: recomputed
        arrays, problem = None, f"cannot be read ({type(err).__name__})"
    if arrays is not None:
        record = arrays.pop(BLOCK_RECORD, None)
        if record is not None:
            try:
                record = json.loads(str(record))
            except ValueError:
                record = {}
        if record is None and not proven:
            problem = "records no sweep and no manifest proves it belongs to this one"
        elif record is not None and record != wanted:
            problem = "belongs to another sweep (other parameters or code version)"
        elif set(arrays) != set(names) or any(
            a.ndim == 0 or a.shape[0] != size for a in arrays.values()
        ):
            problem = "does not hold this block's arrays"
    if problem is None:
        return arrays
    warnings.warn(
        f"sweep block {path} {problem}; recomputing it", CacheWarning, stacklevel=3
    )
    return None


def _check_manifest(out: Path, wanted: dict) -> bool:
    """Compare the manifest `out/sweep.json` with the sweep `wanted` (refused if it differs);
    write it if missing or damaged. True when a stored manifest proves the directory's blocks."""
    manifest = out / "sweep.json"
    stored = None
    if manifest.exists():
        try:
            stored = json.loads(manifest.read_text())
            if not isinstance(stored, dict) or not isinstance(stored.get("spec"), dict):
                raise ValueError("not a {spec, inductheory_version} record")
        except (OSError, UnicodeDecodeError, ValueError) as err:
            warnings.warn(
                f"sweep manifest {manifest} cannot be read ({type(err).__name__}); rewriting "
                "it (each block is checked against the sweep it records)",
                CacheWarning,
                stacklevel=3,
            )
            stored = None
    if stored is None:
        write_json_atomic(manifest, wanted)
        return False
    if stored != wanted:
        spec_was, spec_now = stored.get("spec", {}), wanted["spec"]
        differ = sorted(
            k for k in {**spec_was, **spec_now} if spec_was.get(k) != spec_now.get(k)
        )
        if stored.get("inductheory_version") != wanted["inductheory_version"]:
            differ.append("inductheory_version")
        hint = (
            " (the default oracle block is one point per device: give the stored block)"
            if differ == ["block"]
            else ""
        )
        raise ValueError(
            f"--out {out} holds a different sweep (differs in: {', '.join(differ)}; see "
            f"{manifest}){hint}; choose another directory"
        )
    return True


def run_spec(spec: SweepSpec, *, out=None, scheduler=None, progress: bool = False):
    """Compute every block of `spec` (locally or on a Dask cluster), resuming from `out`;
    assemble.

    With `out`, a block file is reused only when it proves it belongs to this sweep (the spec
    and code version recorded inside it); damaged or foreign blocks are recomputed, each with
    a `CacheWarning` naming the file."""
    check_sweep_memory(spec)  # before the grid's points are even listed
    blocks = blocks_of(spec)
    parts: dict[int, dict] = {}
    block_dir = None
    wanted = json.loads(
        to_json(
            {"spec": spec.to_dict(), "inductheory_version": library_version()},
            sort_keys=True,
        )
    )
    record = np.array(to_json(wanted, sort_keys=True))
    if out is not None:
        out = Path(out)
        block_dir = out / "blocks"
        block_dir.mkdir(parents=True, exist_ok=True)
        proven = _check_manifest(out, wanted)
        names = tuple(sweep_kind(spec.kind).variables)
        for b in range(len(blocks)):
            path = block_dir / f"block-{b:05d}.npz"
            arrays = _read_block(path, wanted, proven, names, len(blocks[b]))
            if arrays is not None:
                parts[b] = arrays
    todo = [b for b in range(len(blocks)) if b not in parts]
    total = sum(len(b) for b in blocks)
    with Progress(total, f"sweep {spec.kind}", enabled=progress) as bar:
        bar.update(
            total - sum(len(blocks[b]) for b in todo),
            note="(resumed)" if len(todo) < len(blocks) else "",
        )

        def finish(b, arrays):
            parts[b] = arrays
            if block_dir is not None:
                write_npz_atomic(
                    block_dir / f"block-{b:05d}.npz", **arrays, **{BLOCK_RECORD: record}
                )
            bar.update(len(blocks[b]))

        if scheduler is None:
            for b in todo:
                finish(b, compute_block(spec, blocks[b]))
        else:
            _run_on_cluster(spec, blocks, todo, scheduler, finish)
    ds = assemble(spec, parts)
    if out is not None:
        _atomic_write(out / "sweep.nc", ds.to_netcdf)
        write_text_atomic(out / "summary.txt", summary_table(ds) + "\n")
    problems = sweep_problems(ds)
    if not problems.ok:  # as the single-point paths: failures are never silent
        warn_at_caller(problems.message(), SweepFailureWarning)
    return ds


def _run_on_cluster(spec, blocks, todo, scheduler, finish) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ValueError(
            "a scheduler address needs dask.distributed: pip install 'inductheory[distributed]'"
        ) from None
    client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
    try:
        futures = {
            client.submit(compute_block, spec, blocks[b], pure=False): b for b in todo
        }
        for future in as_completed(futures):
            finish(futures[future], future.result())
    finally:
        if client is not scheduler:
            client.close()


def summary_table(ds) -> str:
    """A plain text table: one row per grid point, its parameters and headline results."""
    dims = json.loads(ds.attrs["parameters"])["extra"]["grid_order"]
    keys = sweep_kind(ds.attrs["kind"]).table_keys
    rows = []
    for point in points_of(ds):
        rows.append([point[d] for d in dims] + [_fmt(point[k]) for k in keys])
    return format_table(dims + list(keys), rows)


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return ",".join(_fmt(x) for x in v)
    return v


def points_of(ds) -> list[dict]:
    """One dict per grid point: its parameter values and the single-point command's result keys
    (loss: `loss`, `phase_accuracy`, `phase_gap`; flow: `key_offsets`, `value_offsets`, `selected`,
    `status` per seed and the across-seed fractions; oracle: `best_loss`, `hard_selection`,
    `distinct_heads`, ...)."""
    grid_dims = json.loads(ds.attrs["parameters"])["extra"]["grid_order"]
    per_point = [k for k in sweep_kind(ds.attrs["kind"]).point_keys if k in ds]
    coords = [ds.coords[d].values.tolist() for d in grid_dims]
    n_points = math.prod(len(c) for c in coords)
    # each variable read once, grid dimensions first, one row per point (C order, as the grid)
    columns = {}
    for k in per_point:
        values = ds[k].transpose(*grid_dims, ...).values
        columns[k] = values.reshape(
            (n_points,) + values.shape[len(grid_dims) :]
        ).tolist()
    return [
        {**dict(zip(grid_dims, values)), **{k: columns[k][i] for k in per_point}}
        for i, values in enumerate(itertools.product(*coords))
    ]


def _check_arguments(task, grid) -> None:
    """Refuse a template that is not a `Task` and a grid that is not a mapping (`TypeError`)."""
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task, got {type(task).__name__}")
    if not isinstance(grid, Mapping):
        raise TypeError(
            "grid must be a mapping {name: values}, e.g. {'beta': [2, 4]}, got "
            f"{type(grid).__name__}"
        )


def _check_block(block: int, seeds: int) -> int:
    """`block`, or `ValueError` when its lanes (points x seeds) exceed `MAX_BLOCK_LANES`."""
    largest = max(1, MAX_BLOCK_LANES // max(seeds, 1))
    if block > largest:
        per = f" of {seeds} seeds" if seeds > 1 else ""
        raise ValueError(
            f"block must be <= {largest} grid points{per} per compiled call (at most "
            f"{MAX_BLOCK_LANES} lanes; every block is padded to its size), got {block}"
        )
    return block


def sweep(
    kind: str,
    task: Task,
    grid: dict[str, Sequence[float]],
    *,
    config: FlowConfig
    | OracleMinimizer
    | TrainConfig
    | tuple[ModelConfig, TrainConfig]
    | None = None,
    gates: SharedGates | None = None,
    seeds: int = 64,
    seed: int = 0,
    contexts: int = 1,
    vertex_starts: int = 8,
    block: int | None = None,
    out: str | os.PathLike | None = None,
    scheduler: Any = None,
    progress: bool = False,
):
    """Run `kind` ("loss", "flow", "oracle" or "train") at every point of a grid; return an
    `xarray.Dataset`.

    Each kind is a final `AbstractSweepKind` registered in `SWEEP_KINDS` (`LossSweep`,
    `FlowSweep`, `OracleSweep`, `TrainSweep`); this function checks the inputs, builds the
    `SweepSpec` and runs its blocks.

    **Arguments:**
    - `kind`: `"loss"` (exact population loss and per-phase accuracy of shared `gates`), `"flow"`
      (gradient flows of `seeds` seeds under `config`, a `FlowConfig`), `"oracle"` (Theorem 1 at
      each point, `config` an `OracleMinimizer`) or `"train"` (`train` of `seeds` seeds, `config`
      a `TrainConfig` or a pair `(ModelConfig, TrainConfig)`).
    - `task`: the template task; grid values replace its fields.
    - `grid`: `{name: values}`; names among N, gamma, beta, kappa (every kind) and rho, delta,
      t_max, rtol, atol, t_save_min (flows), rho and lr (train). The dataset's dimensions follow
      the grid's order.
    - `seeds`, `seed`: flows and train: seeds 0..seeds-1 under base seed `seed` (the keys of
      `run_flow`: a seed's numbers do not depend on the grid). Oracle: the PRNG seed of every
      point.
    - `contexts`, `vertex_starts`: oracle: contexts per point and best vertices used as starts.
    - `block`: grid points per compiled call; every block is padded to it, so sweeps with the same
      `block` compile the same programs whatever their number of points. Default: 256 (loss), 1 per
      device (oracle: more points per call only lengthen the vectorized local searches), and for
      flows 4096 // seeds capped at the grid size rounded up to a power of two, and 1 for train
      (each point is one `train` call). At most
      `MAX_BLOCK_LANES` lanes (points x seeds) per block.
    - `out`: directory for the resumable blocks, `sweep.nc` and `summary.txt` (`None`: in memory).
    - `scheduler`: a Dask `distributed` scheduler address or `Client` (blocks on its workers).
    - `progress`: show progress on stderr.

    Raises `MemoryError` (one line) before anything runs when the largest block or the results
    would not fit in the memory available (`sweep_bytes`, `INDUCTHEORY_MAX_BYTES`).

    **Returns:** the dataset: dimensions named after the grid parameters, then `seed`, `head`,
    `branch`, `offset`, `phase`, `context`, `block` as the kind needs; every fixed parameter and the
    library version in `attrs`. Raises `TypeError` for arguments of the wrong type (a task that
    is not a `Task`, gates that are not `SharedGates`, ...) and `ValueError` for bad values, each
    naming the argument; numpy integers are accepted wherever an integer is.

    Every grid point is validated before anything runs, as the single-point path validates it
    (`ValueError` naming the point; repeated grid values and a grid of `tau` without the
    worst-phase objective are refused); warnings outside the theorems' assumptions are said once
    per distinct warning, naming the grid values. Failed flow seeds or results that are not finite
    warn with `SweepFailureWarning` (see `sweep_problems`).

    ```python
    ds = sweep("flow", Task(L=8, S=4, H=2, N=4096, beta=4.0), {"beta": [2, 4, 8], "N": [256, 4096]},
               config=FlowConfig(rho=0.1), seeds=256)
    ds.distinct_fraction.sel(beta=4.0)
    ```
    """
    sweeper = sweep_kind(kind)  # an unknown kind is refused before its grid is checked
    _check_arguments(task, grid)
    seed = _require_int("seed", seed, SEED_MIN, SEED_MAX)
    grid = _check_grid(kind, task, grid)
    settings, extra, seeds = sweeper.prepare(
        task,
        config=config,
        gates=gates,
        seeds=seeds,
        contexts=contexts,
        vertex_starts=vertex_starts,
    )
    sweeper.check_points(task, grid, config)  # every point, before anything runs
    if block is None:
        block = sweeper.default_block(grid, seeds)
    if isinstance(block, bool) or not isinstance(block, numbers.Integral) or block < 1:
        raise ValueError(f"block must be an integer >= 1, got {block!r}")
    block = _check_block(int(block), seeds)
    extra["grid_order"] = list(grid)
    spec = SweepSpec(
        kind=kind,
        task=task.to_dict(),
        settings=settings,
        grid=grid,
        seeds=seeds,
        seed=seed,
        block=block,
        extra=extra,
    )
    check_sweep_memory(spec)  # refused before the output directory is even claimed
    # a directory holds one command's outputs: another command's are refused, not mixed
    with claimed_output_dir(out, f"sweep {kind}"):
        return run_spec(spec, out=out, scheduler=scheduler, progress=progress)


__all__ = [
    "KINDS",
    "SWEEP_KINDS",
    "AbstractSweepKind",
    "FlowSweep",
    "LossSweep",
    "OracleSweep",
    "SweepSpec",
    "TrainSweep",
    "assemble",
    "blocks_of",
    "check_sweep_memory",
    "compute_block",
    "grid_point",
    "grid_points",
    "points_of",
    "run_spec",
    "summary_table",
    "sweep",
    "sweep_bytes",
    "sweep_kind",
]
