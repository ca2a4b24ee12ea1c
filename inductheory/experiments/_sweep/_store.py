"""A sweep's blocks and their store: which points each block holds, the block files and the
manifest of an output directory, the assembled dataset and what is read back from it."""

from __future__ import annotations

import itertools
import json
import math
import warnings
from pathlib import Path

import jax
import numpy as np

from ...internal._io import CacheWarning, library_version, to_json, write_json_atomic
from ...internal._table import format_table
from ._registry import sweep_kind
from ._spec import SweepSpec, grid_points


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


__all__ = [
    "BLOCK_RECORD",
    "assemble",
    "blocks_of",
    "points_of",
    "summary_table",
]
