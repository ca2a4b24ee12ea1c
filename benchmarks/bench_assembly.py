"""Benchmark of a loss sweep's assembly (not a test): run `python benchmarks/bench_assembly.py`.

A loss sweep of n grid points (the closed form: milliseconds of compute) timed end to end, then
`points_of` and `summary_table` on its dataset, at n = 10^3, 10^4, 10^5. With `--old`, the same
sweeps through the per-point path this replaced (the whole grid rebuilt for every point of a
block, a `Task` per point, `ds.sel` per point), up to `--old-max` points (it is quadratic in n);
the datasets and point lists of both paths are compared.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import time
from unittest import mock

import numpy as np

import inductheory as it
from inductheory.experiments import _sweep as sw
from inductheory.experiments._sweep import _driver, _loss, _spec, _store
from inductheory.internal._lanes import stack_lanes
from inductheory.model._gates import hard_selection


def _old_compute_block(spec, indices):
    points = [sw.grid_points(spec.grid)[i] for i in indices]
    return sw.sweep_kind(spec.kind).compute_block(spec, points)


def _old_stacked_tasks(spec, points):
    return stack_lanes(_spec._tasks(spec, points))


def _old_points_of(ds):
    grid_dims = json.loads(ds.attrs["parameters"])["extra"]["grid_order"]
    per_point = sw.sweep_kind(ds.attrs["kind"]).point_keys
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


def _run(n: int, old: bool) -> tuple[dict, object, list]:
    task = it.Task(L=4, S=3, H=1, N=64)
    grid = {
        "beta": np.linspace(1.0, 8.0, n // 10).tolist(),
        "gamma": np.linspace(0.5, 1.0, 10).tolist(),
    }
    gates = hard_selection(3, [0])
    patches = (
        [
            mock.patch.object(_driver, "compute_block", _old_compute_block),
            mock.patch.object(_loss, "_stacked_tasks", _old_stacked_tasks),
        ]
        if old
        else []
    )
    with contextlib.ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        t0 = time.perf_counter()
        ds = sw.sweep("loss", task, grid, gates=gates)
        t1 = time.perf_counter()
        points = (_old_points_of if old else sw.points_of)(ds)
        t2 = time.perf_counter()
        if old:
            with mock.patch.object(_store, "points_of", _old_points_of):
                sw.summary_table(ds)
        else:
            sw.summary_table(ds)
        t3 = time.perf_counter()
    return {"sweep": t1 - t0, "points_of": t2 - t1, "summary": t3 - t2}, ds, points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument(
        "--old", action="store_true", help="also time the per-point path"
    )
    parser.add_argument("--old-max", type=int, default=10000)
    args = parser.parse_args()
    _run(100, False)  # compile the block program once, outside the timings
    print(
        f"{'points':>8}  {'path':>4}  {'sweep s':>8}  {'points_of s':>11}  {'summary s':>9}"
    )
    for n in (int(v) for v in args.sizes.split(",")):
        times, ds, points = _run(n, False)
        row = [f"{times[k]:.3f}" for k in ("sweep", "points_of", "summary")]
        print(f"{n:>8}  {'new':>4}  {row[0]:>8}  {row[1]:>11}  {row[2]:>9}")
        if args.old and n <= args.old_max:
            times, old_ds, old_points = _run(n, True)
            row = [f"{times[k]:.3f}" for k in ("sweep", "points_of", "summary")]
            print(f"{n:>8}  {'old':>4}  {row[0]:>8}  {row[1]:>11}  {row[2]:>9}")
            same = old_ds.identical(ds) and old_points == points
            print(f"{'':>8}  same dataset and points: {same}")


if __name__ == "__main__":
    main()
