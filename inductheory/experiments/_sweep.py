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
(`blocks/block-NNNNN.nc`) beside a manifest of the sweep's parameters, so an interrupted sweep
resumes at its first unfinished block; the assembled dataset is `sweep.nc`. With a Dask
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import equinox as eqx
import jax
import numpy as np

from ..flow._config import TRACED_FIELDS as FLOW_FIELDS
from ..flow._config import FlowConfig, check_flow
from ..flow._solution import STATUSES, Status
from ..internal._io import (
    _atomic_write,
    to_json,
    write_json_atomic,
    write_npz_atomic,
    write_text_atomic,
)
from ..internal._lanes import padded_size, shard_lanes, stack_lanes
from ..internal._progress import Progress
from ..internal._table import format_table
from ..internal._warnings import warn_at_caller
from ..model._gates import SharedGates, value_follows_key
from ..model._loss import check_gate_shape, phase_accuracy, phase_gap, phase_losses
from ..model._task import Task, TheoryAssumptionWarning
from ..oracle._minimize import OracleMinimizer
from ..oracle._point import (
    OraclePoint,
    config_dict,
    exact_oracle_points,
    oracle_point,
)
from ._flows import (
    flow_sample,
    independent_distinct_baseline,
    run_lanes,
    seed_keys,
    selected_distinct_fraction,
)
from ._sweep_checks import SweepFailureWarning, check_grid_points, sweep_problems

TASK_FIELDS = ("N", "gamma", "beta", "kappa")
# Points per block (a fixed shape: every block is padded to it). Flows: lanes = points x seeds.
# Oracle: one point per device (more points per call only lengthen the vectorized local searches).
LOSS_BLOCK = 256
FLOW_LANES = 4096


def _version() -> str:
    from .. import __version__

    return __version__


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
                or not math.isfinite(v)
            ):
                raise ValueError(
                    f"grid values of {name!r} must be finite numbers, got {v!r}"
                )
        if name == "N" and any(float(v) != int(v) for v in values):
            raise ValueError(f"grid values of 'N' must be integers, got {values}")
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


def _split(point: dict) -> tuple[dict, dict]:
    return (
        {k: v for k, v in point.items() if k in TASK_FIELDS},
        {k: v for k, v in point.items() if k not in TASK_FIELDS},
    )


def _exact(spec: SweepSpec) -> bool:
    """Whether the template's geometry is exact (no eps, no d): no shape depends on kappa."""
    return not spec.task.get("eps") and spec.task.get("d") is None


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
    import warnings

    from ..model._task import TheoryAssumptionWarning

    with (
        warnings.catch_warnings()
    ):  # the template was checked; grid points leave the regime on purpose
        warnings.simplefilter("ignore", TheoryAssumptionWarning)
        return [Task(**{**spec.task, **_split(p)[0]}) for p in points]


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
      `coordinates`, `attributes`: see each method.

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
        check_gate_shape(task, gates)
        extra = {
            "gates_key": np.asarray(gates.key).tolist(),
            "gates_value": np.asarray(gates.value).tolist(),
        }
        return {}, extra, 0

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
            stack_lanes(_tasks(spec, _padded(points, padded_size(len(points)))))
        )
        gates = SharedGates(
            key=np.asarray(spec.extra["gates_key"]),
            value=np.asarray(spec.extra["gates_value"]),
        )
        out = jax.device_get(_loss_map(tasks, gates))
        return {name: np.asarray(value)[:n] for name, value in out.items()}

    def coordinates(self, spec):
        return {}

    def attributes(self, spec):
        return {}


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
                f"sweep('flow') needs a FlowConfig, got {type(config).__name__}"
            )
        check_flow(task, config)
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise ValueError(f"seeds must be an integer >= 1, got {seeds!r}")
        return config.to_dict(), {}, seeds

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
        with warnings.catch_warnings():  # said once for the grid by `check_grid_points`
            warnings.simplefilter("ignore", TheoryAssumptionWarning)
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


_ORACLE_SCALARS = (
    "best_loss",
    "best_vertex_loss",
    "gap",
    "hard_selection",
    "distinct_heads",
    "share_hard",
    "share_hard_distinct",
    "share_beats_vertex",
    "max_fw_gap",
    "share_minimizer_failed",
    "eps",
)


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
                f"sweep('oracle') needs an OracleMinimizer, got {type(config).__name__}"
            )
        settings = config_dict(config)
        extra = {"contexts": int(contexts), "vertex_starts": int(vertex_starts)}
        if contexts < 1 or vertex_starts < 0:
            raise ValueError(
                f"contexts must be >= 1 and vertex_starts >= 0, got {contexts}, {vertex_starts}"
            )
        return settings, extra, 0

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

    def coordinates(self, spec):
        return {}

    def attributes(self, spec):
        return {}


# The kinds of `sweep(kind, ...)` and of `inductheory sweep KIND`, by public name.
SWEEP_KINDS: dict[str, type[AbstractSweepKind]] = {
    cls.name: cls for cls in (LossSweep, FlowSweep, OracleSweep)
}
KINDS = tuple(SWEEP_KINDS)


def sweep_kind(name: str) -> AbstractSweepKind:
    """The registered sweep kind called `name` (a key of `SWEEP_KINDS`).

    **Arguments:**
    - `name`: `"loss"`, `"flow"` or `"oracle"`.

    **Returns:** an instance of the kind's class.

    ```python
    sweep_kind("oracle").grid_names  # ("N", "gamma", "beta", "kappa")
    ```
    """
    if not isinstance(name, str) or name not in SWEEP_KINDS:
        raise ValueError(f"kind must be one of {tuple(SWEEP_KINDS)}, got {name!r}")
    return SWEEP_KINDS[name]()


def compute_block(spec: SweepSpec, indices: list[int]) -> dict[str, np.ndarray]:
    """The arrays of one block of grid points (leading axis: the block's points, padding removed).

    Pure function of `spec` and `indices`: what a local run or a Dask worker computes.
    """
    points = [grid_points(spec.grid)[i] for i in indices]
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
        "inductheory_version": _version(),
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


def _read_block(path: Path) -> dict | None:
    try:
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    except Exception:  # a damaged block is recomputed
        return None


def run_spec(spec: SweepSpec, *, out=None, scheduler=None, progress: bool = False):
    """Compute every block of `spec` (locally or on a Dask cluster), resuming from `out`;
    assemble."""
    blocks = blocks_of(spec)
    parts: dict[int, dict] = {}
    block_dir = None
    if out is not None:
        out = Path(out)
        block_dir = out / "blocks"
        block_dir.mkdir(parents=True, exist_ok=True)
        manifest = out / "sweep.json"
        wanted = json.loads(
            to_json(
                {"spec": spec.to_dict(), "inductheory_version": _version()},
                sort_keys=True,
            )
        )
        if manifest.exists():
            stored = json.loads(manifest.read_text())
            if stored != wanted:
                spec_was, spec_now = stored.get("spec", {}), wanted["spec"]
                differ = sorted(
                    k
                    for k in {**spec_was, **spec_now}
                    if spec_was.get(k) != spec_now.get(k)
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
        else:
            write_json_atomic(manifest, wanted)
        for b in range(len(blocks)):
            path = block_dir / f"block-{b:05d}.npz"
            if path.exists():
                arrays = _read_block(path)
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
                write_npz_atomic(block_dir / f"block-{b:05d}.npz", **arrays)
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
    per_point = sweep_kind(ds.attrs["kind"]).point_keys
    out = []
    for values in itertools.product(*(ds.coords[d].values.tolist() for d in grid_dims)):
        sel = ds.sel(dict(zip(grid_dims, values)))
        entry = dict(zip(grid_dims, values))
        for k in per_point:
            if k in sel:
                v = sel[k].values
                entry[k] = v.tolist() if v.ndim else v.item()
        out.append(entry)
    return out


def sweep(
    kind: str,
    task: Task,
    grid: dict[str, Sequence[float]],
    *,
    config: FlowConfig | OracleMinimizer | None = None,
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
    """Run `kind` ("loss", "flow" or "oracle") at every point of a grid; return an `xarray.Dataset`.

    Each kind is a final `AbstractSweepKind` registered in `SWEEP_KINDS` (`LossSweep`,
    `FlowSweep`, `OracleSweep`); this function checks the inputs, builds the `SweepSpec` and
    runs its blocks.

    **Arguments:**
    - `kind`: `"loss"` (exact population loss and per-phase accuracy of shared `gates`), `"flow"`
      (gradient flows of `seeds` seeds under `config`, a `FlowConfig`) or `"oracle"` (Theorem 1 at
      each point, `config` an `OracleMinimizer`).
    - `task`: the template task; grid values replace its fields.
    - `grid`: `{name: values}`; names among N, gamma, beta, kappa (every kind) and rho, delta,
      t_max, rtol, atol, t_save_min (flows). The dataset's dimensions follow the grid's order.
    - `seeds`, `seed`: flows: seeds 0..seeds-1 under base seed `seed` (the keys of `run_flow`: a
      seed's numbers do not depend on the grid). Oracle: the PRNG seed of every point.
    - `contexts`, `vertex_starts`: oracle: contexts per point and best vertices used as starts.
    - `block`: grid points per compiled call; every block is padded to it, so sweeps with the same
      `block` compile the same programs whatever their number of points. Default: 256 (loss), 1 per
      device (oracle: more points per call only lengthen the vectorized local searches), and for
      flows 4096 // seeds capped at the grid size rounded up to a power of two.
    - `out`: directory for the resumable blocks, `sweep.nc` and `summary.txt` (`None`: in memory).
    - `scheduler`: a Dask `distributed` scheduler address or `Client` (blocks on its workers).
    - `progress`: show progress on stderr.

    **Returns:** the dataset: dimensions named after the grid parameters, then `seed`, `head`,
    `branch`, `offset`, `phase`, `context`, `block` as the kind needs; every fixed parameter and the
    library version in `attrs`.

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
    grid = _check_grid(kind, task, grid)
    settings, extra, seeds = sweeper.prepare(
        task,
        config=config,
        gates=gates,
        seeds=seeds,
        contexts=contexts,
        vertex_starts=vertex_starts,
    )
    if (
        kind == "flow"
    ):  # every grid point validated (and warned about) before anything runs
        check_grid_points(kind, task, grid, FlowConfig() if config is None else config)
    else:
        check_grid_points(kind, task, grid)
    if block is None:
        block = sweeper.default_block(grid, seeds)
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError(f"block must be an integer >= 1, got {block!r}")
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
    return run_spec(spec, out=out, scheduler=scheduler, progress=progress)


__all__ = [
    "KINDS",
    "SWEEP_KINDS",
    "AbstractSweepKind",
    "FlowSweep",
    "LossSweep",
    "OracleSweep",
    "SweepSpec",
    "assemble",
    "blocks_of",
    "compute_block",
    "grid_points",
    "points_of",
    "run_spec",
    "summary_table",
    "sweep",
    "sweep_kind",
]
