"""Running a sweep: the checks of `sweep`'s arguments, the memory estimate, the blocks computed
locally or on a Dask cluster and resumed from an output directory, and the public `sweep`."""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...flow._config import FlowConfig
from ...internal._io import (
    _atomic_write,
    claimed_output_dir,
    library_version,
    to_json,
    write_npz_atomic,
    write_text_atomic,
)
from ...internal._memory import F64, MemoryEstimate, check_memory, with_total
from ...internal._progress import Progress
from ...internal._warnings import warn_at_caller
from ...model._gates import SharedGates
from ...model._task import N_MAX, SEED_MAX, SEED_MIN, Task, _require_int
from ...oracle._minimize import OracleMinimizer
from ...trained._config import ModelConfig, TrainConfig
from .._paper_matrix import MatrixSize
from ._checks import SweepFailureWarning, sweep_problems
from ._cluster import run_on_cluster
from ._matrix import check_matrix_grid
from ._registry import sweep_kind
from ._spec import SweepSpec, grid_point
from ._store import (
    BLOCK_RECORD,
    _check_manifest,
    _read_block,
    assemble,
    blocks_of,
    summary_table,
)

# Most lanes (points x seeds) one explicit block may hold: every block is padded to its size, so
# a huge block would allocate for points that do not exist.
MAX_BLOCK_LANES = 2**16


def _n_points(spec: SweepSpec) -> int:
    return math.prod(len(v) for v in spec.grid.values())


def _block_size(spec: SweepSpec) -> int:
    """Grid points of a block as computed: every block is padded to this size."""
    return sweep_kind(spec.kind).block_points(spec)


# Host bytes per grid point outside the result arrays: its dict of grid values, its label in
# `blocks_of`, its entry of `points_of` (a dict of Python numbers and lists).
POINT_OVERHEAD = 2048


def sweep_bytes(spec: SweepSpec) -> MemoryEstimate:
    """Memory of a sweep, by part and `total`: its largest block (`block_bytes` of the kind, the
    parts prefixed `block_`) and every point's results on the host (the blocks' arrays, the
    assembled dataset and `points_of`: three copies).

    ```python
    sweep_bytes(spec).total
    ```
    """
    kind = sweep_kind(spec.kind)
    n = _n_points(spec)
    block = kind.block_bytes(spec)
    out = {f"block_{k}": v for k, v in block.parts.items()}
    sizes = {"seed": spec.seeds, "branch": 2, "context": spec.extra.get("contexts", 1)}
    if "H" in spec.task:  # a `Task` (the matrix's task is a `RetrievalTask`)
        sizes["head"] = spec.task["H"]
        sizes["block"] = spec.task["L"]
        sizes["offset"] = spec.task.get("W", spec.task["S"])
        sizes["phase"] = spec.task["S"]
    for dim, values in kind.coordinates(spec).items():  # the kind's other dimensions
        sizes.setdefault(dim, len(values))
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
    resumed = len(parts)  # blocks read from an earlier run
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
            # the ETA: the rate after the first block computed here, which compiles
            bar.update(len(blocks[b]), warmup=len(parts) == resumed + 1)

        if scheduler is None:
            for b in todo:
                bar.note(f"computing {_points_text(spec, blocks[b])}")
                # the points' own progress (training steps, flow seeds) after the count
                with bar.nested():
                    arrays = compute_block(spec, blocks[b])
                finish(b, arrays)
        else:
            run_on_cluster(compute_block, spec, blocks, todo, scheduler, finish)
    ds = assemble(spec, parts)
    if out is not None:
        _atomic_write(out / "sweep.nc", ds.to_netcdf)
        write_text_atomic(out / "summary.txt", summary_table(ds) + "\n")
    problems = sweep_problems(ds)
    if not problems.ok:  # as the single-point paths: failures are never silent
        warn_at_caller(problems.message(), SweepFailureWarning)
    return ds


def _points_text(spec: SweepSpec, indices: list[int]) -> str:
    """The grid points of a block for the progress display: `row=W8/S8 8 KV, steps=5600`."""
    first = ", ".join(f"{k}={v}" for k, v in grid_point(spec.grid, indices[0]).items())
    return first if len(indices) == 1 else f"{len(indices)} points from {first}"


def _check_arguments(task, grid) -> None:
    """Refuse a template that is not a `Task` and a grid that is not a mapping (`TypeError`)."""
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task, got {type(task).__name__}")
    if not isinstance(grid, Mapping):
        raise TypeError(
            "grid must be a mapping {name: values}, e.g. {'beta': [2, 4]}, got "
            f"{type(grid).__name__}"
        )


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
    `SweepSpec` and runs its blocks. The `"matrix"` kind (`MatrixSweep`: rows of the paper
    matrix, whose template is a `MatrixSize`) is run by `matrix_sweep`.

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
    if kind == "matrix":
        raise ValueError(
            "a matrix sweep's template is a MatrixSize, not a Task: call "
            "matrix_sweep(size, grid)"
        )
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


def matrix_sweep(
    size: MatrixSize,
    grid: dict[str, Sequence] | None = None,
    *,
    seed: int = 0,
    block: int | None = None,
    out: str | os.PathLike | None = None,
    scheduler: Any = None,
    progress: bool = False,
):
    """Train rows of the paper's experiment matrix at every point of a grid (the `matrix`
    kind, `MatrixSweep`); return an `xarray.Dataset`.

    Every point is one `run_row(row, size, seed=seed)` (`size.seeds` seeds); its arrays are
    `run_row`'s. Blocks, their store in `out` (an interrupted sweep resumes at its first
    unfinished row), the memory check and Dask are those of `sweep`.

    **Arguments:**
    - `size`: a `MatrixSize` (`FULL_SIZE`, `QUICK_SIZE` or one of your own): task, reference
      architecture, training and seeds.
    - `grid`: `{name: values}` (None: every row of `size`): `row` (names of `MATRIX` rows;
      default the rows of `size`), any field of `Architecture` (a change applied to every row,
      as `inductheory matrix`'s options), `lr` and `steps` (the size's: a row with a
      `steps_factor` trains that many times more). Dimensions: `row` first, then the
      grid's order.
    - `seed`: the base seed of every row (a seed's numbers do not depend on the grid).
    - `block`: rows per block (default 1: each finished row is stored at once).
    - `out`, `scheduler`, `progress`: as `sweep`.

    **Returns:** the dataset: dimensions `row`, the other grid parameters, then `seed`,
    `phase`, `context`, `curve_point` (see `MatrixSweep`). Raises a one-line `ValueError`
    naming the parameter for a bad grid (an unknown row lists the rows) or a refused point.

    ```python
    ds = matrix_sweep(QUICK_SIZE, {"row": ["W8/S8 8 KV", "W4/S4"], "steps": [50]},
                      out="matrix-sweep", scheduler="tcp://127.0.0.1:8786")
    ds.worst_phase.sel(row="W4/S4")  # per seed
    ```
    """
    kind = sweep_kind("matrix")
    if not isinstance(size, MatrixSize):
        raise TypeError(f"size must be a MatrixSize, got {type(size).__name__}")
    if grid is not None and not isinstance(grid, Mapping):
        raise TypeError(
            "grid must be a mapping {name: values}, e.g. {'row': ['W4/S4']}, got "
            f"{type(grid).__name__}"
        )
    seed = _require_int("seed", seed, SEED_MIN, SEED_MAX)
    grid = check_matrix_grid(size, grid)
    settings, extra, seeds = kind.prepare(
        size, config=None, gates=None, seeds=size.seeds, contexts=1, vertex_starts=1
    )
    kind.check_points(size, grid, None)  # every point, before anything runs
    if block is None:
        block = kind.default_block(grid, seeds)
    if isinstance(block, bool) or not isinstance(block, numbers.Integral) or block < 1:
        raise ValueError(f"block must be an integer >= 1, got {block!r}")
    extra["grid_order"] = list(grid)
    spec = SweepSpec(
        kind="matrix",
        task=size.task.record(),
        settings=settings,
        grid=grid,
        seeds=seeds,
        seed=seed,
        block=int(block),
        extra=extra,
    )
    check_sweep_memory(spec)
    with claimed_output_dir(out, "sweep matrix"):
        return run_spec(spec, out=out, scheduler=scheduler, progress=progress)


__all__ = [
    "check_sweep_memory",
    "compute_block",
    "matrix_sweep",
    "run_spec",
    "sweep",
    "sweep_bytes",
]
