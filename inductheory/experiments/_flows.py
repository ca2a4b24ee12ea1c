"""Gradient flows of many seeds at once: vmapped, sharded over local devices, summarized.

Seed i of base seed s starts from the key `fold_in(fold_in(key(s), 1), i)`, so its numbers do not
depend on how seeds are chunked or sharded. The sample of contexts uses `fold_in(key(s), 2)` and an
approximate geometry `fold_in(key(s), 3)`.
"""

from __future__ import annotations

import functools
import math
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ..flow._config import FlowConfig, check_flow
from ..flow._init import initial_biases, initial_gate_vectors, project_to_mean
from ..flow._integrate import solve_full, solve_reduced
from ..flow._solution import Status
from ..internal._lanes import broadcast_lanes, stack_lanes
from ..internal._programs import stored_call
from ..internal._progress import Progress
from ..model._contexts import balanced_contexts, sample_contexts
from ..model._gates import (
    LinearGates,
    distinct_within_blocks,
    selectable_offsets,
    value_follows_key,
)
from ..model._geometry import ExactGeometry, make_geometry
from ..model._task import Task, _require_int
from ._results import FlowRun, FlowSample, FlowSummary, SeedResults

# Statuses that are failures (not merely unfinished by t_max).
FAILURES = (Status.MAX_STEPS, Status.NONFINITE, Status.SOLVER_ERROR)


def sample_size(task: Task, config: FlowConfig) -> int:
    """Contexts actually used: M, rounded up to a multiple of N/L for balanced samples."""
    if config.sample == "iid":
        return config.M
    per_permutation = task.vocabulary // task.L
    return per_permutation * max(1, math.ceil(config.M / per_permutation))


def flow_sample(task: Task, config: FlowConfig, seed: int = 0):
    """Geometry and fixed sample of contexts of the full dynamics for base seed `seed`.

    Balanced (default): `balanced_contexts` with ceil(M / (N/L)) permutations; i.i.d.:
    `sample_contexts` with M contexts.

    **Returns:** `(geometry, contexts)`.
    """
    base = jax.random.key(seed)
    geometry = make_geometry(task, jax.random.fold_in(base, 3))
    ckey = jax.random.fold_in(base, 2)
    if config.sample == "iid":
        contexts = sample_contexts(ckey, task, config.M)
    else:
        contexts = balanced_contexts(
            ckey, task, sample_size(task, config) // (task.vocabulary // task.L)
        )
    return geometry, contexts


def seed_keys(seed: int, indices) -> jax.Array:
    """Raw key data (n, 2) of the seeds `indices` under base seed `seed`."""
    flow = jax.random.fold_in(jax.random.key(seed), 1)
    return jax.vmap(lambda i: jax.random.key_data(jax.random.fold_in(flow, i)))(
        jnp.asarray(indices)
    )


def one_lane(task: Task, config: FlowConfig, key_data, shared) -> dict:
    """One flow: the seed `key_data` under `task` and `config` (per-lane values, traced).

    Reduced: b(0) = `initial_biases`. Full: c(0) = `initial_gate_vectors` (or its projection
    on span(m)
    with `init="projected"`) on the shared `(geometry, contexts)`; under exact geometry it also runs
    the reduced flow from the exact projection $b(0) = \\langle c(0), m \\rangle$ and returns its
    selection as `reduced_selected`.

    **Returns:** `FlowSolution.to_dict()` (without the state for the full dynamics: (H, 2, S, d) per
    seed is too large to keep for many seeds; the biases are saved).
    """
    key = jax.random.wrap_key_data(key_data)
    if config.dynamics == "reduced":
        return solve_reduced(
            task, config, initial_biases(key, task, config.rho, config.tied)
        ).to_dict()
    geometry, contexts = shared
    if isinstance(geometry, ExactGeometry):
        geometry = eqx.tree_at(
            lambda g: g.kappa, geometry, task.kappa
        )  # kappa is traced per lane
    c0 = initial_gate_vectors(key, task, geometry, config.rho, config.tied)
    if config.init == "projected":
        c0 = project_to_mean(c0, geometry)
    out = solve_full(task, config, geometry, contexts, c0).to_dict(state=False)
    if task.exact:
        out["reduced_selected"] = solve_reduced(
            task, config, LinearGates(c0).biases(geometry)
        ).selected
    return out


def sharded_seed_map(fn, devices=None, lane_args: int = 1):
    """jit(vmap(fn)) over a leading lane axis of the first `lane_args` arguments, split across
    `devices` (default: all local devices); the last argument is shared.

    `fn(*per_lane, shared)`. The lane axis is sharded with a `NamedSharding` on a 1-d `Mesh` named
    "seeds" and the shared argument is replicated; XLA's SPMD partitioner splits the batched solver
    loop so that each device integrates its own lanes. (`jax.shard_map` is not used:
    diffrax's Newton
    event root find fails to trace inside it.) The lane count must be a multiple of the number of
    devices (`run_flow` and `sweep` pad).

    **Returns:** `(mapped, n_devices)`.
    """
    devices = list(jax.devices() if devices is None else devices)
    mesh = Mesh(np.asarray(devices), ("seeds",))
    batched, replicated = NamedSharding(mesh, P("seeds")), NamedSharding(mesh, P())
    in_axes = (0,) * lane_args + (None,)
    mapped = jax.jit(
        jax.vmap(fn, in_axes=in_axes),
        in_shardings=(batched,) * lane_args + (replicated,),
        out_shardings=batched,
    )
    return mapped, len(devices)


@functools.lru_cache(maxsize=8)
def lane_map(devices: tuple):
    """The compiled-once `sharded_seed_map(one_lane)` for these devices.

    One function object per device set, so jax's jit cache is keyed on the static part only (task
    shape, dynamics, solver, budgets, lane count): new values of any traced scalar reuse the
    program.
    """
    return sharded_seed_map(one_lane, devices, lane_args=3)


# Steps of the first pass of `run_lanes`. Flows select in about 120-170 steps; a vmapped solver loop
# runs until its slowest lane stops, so one lane that wanders for 10^4+ steps would hold every lane.
FIRST_PASS_STEPS = 512
# Batches of at most this many lanes run in one pass (a second program would cost more than
# it saves).
ONE_PASS_LANES = 64


def _with_max_steps(configs: FlowConfig, max_steps: int) -> FlowConfig:
    """Stacked `configs` with another (static) step budget; the traced leaves are untouched."""
    leaves, treedef = jax.tree.flatten(configs)
    one = jax.tree.unflatten(treedef, [np.asarray(x)[0] for x in leaves]).replace(
        max_steps=max_steps
    )
    return jax.tree.unflatten(jax.tree.structure(one), leaves)


def _pad_lanes(tree, size: int):
    """Every leaf padded along its lane axis to `size` by repeating its last lane."""
    return jax.tree.map(
        lambda x: (
            np.concatenate([x, np.repeat(x[-1:], size - x.shape[0], 0)])
            if size > x.shape[0]
            else x
        ),
        tree,
    )


_one_lane_each = jax.vmap(one_lane, in_axes=(0, 0, 0, None))


def _map_lanes(tasks, configs, keys, shared, devices) -> dict:
    mapped, n_dev = lane_map(devices)
    n = keys.shape[0]
    size = n_dev * -(-n // n_dev)
    tasks, configs, keys = (
        _pad_lanes(t, size) for t in (tasks, configs, np.asarray(keys))
    )
    if n_dev == 1 and devices == tuple(
        jax.devices()
    ):  # the stored program, when the store is on
        out = stored_call("flow_lanes", _one_lane_each, (tasks, configs, keys, shared))
    else:
        out = mapped(tasks, configs, keys, shared)
    out = jax.device_get(out)
    return jax.tree.map(lambda a: np.array(a[:n]), out)


def run_lanes(tasks, configs, keys, shared, devices=None) -> dict:
    """Run `one_lane` over stacked lanes (leading axis n, padded to the device count); numpy out.

    Batches of more than `ONE_PASS_LANES` lanes run in two passes, with the same numbers as one:
    every lane first runs with a budget of `FIRST_PASS_STEPS` steps; the lanes that ran out of it
    run again from their start with the full `max_steps`, in a batch of their own (a power of two of
    lanes, at least 8). A lane's result depends neither on a budget it did not reach nor on which
    lanes share its batch (tested bit for bit), so this only saves stepping every lane as long as
    the slowest one.
    """
    devices = tuple(jax.devices() if devices is None else devices)
    budget = configs.max_steps
    if budget <= FIRST_PASS_STEPS or keys.shape[0] <= ONE_PASS_LANES:
        return _map_lanes(tasks, configs, keys, shared, devices)
    out = _map_lanes(
        tasks, _with_max_steps(configs, FIRST_PASS_STEPS), keys, shared, devices
    )
    todo = np.flatnonzero(out["status"] == Status.MAX_STEPS)
    if todo.size:
        size = max(8, 1 << int(todo.size - 1).bit_length())
        if (
            size >= keys.shape[0]
        ):  # most lanes ran long: rerun them all in the original batch
            todo, size = np.arange(keys.shape[0]), keys.shape[0]
        pick = lambda tree: _pad_lanes(
            jax.tree.map(lambda x: np.asarray(x)[todo], tree), size
        )
        again = _map_lanes(
            pick(tasks), pick(configs), pick(np.asarray(keys)), shared, devices
        )
        for leaf, rerun in zip(jax.tree.leaves(out), jax.tree.leaves(again)):
            leaf[todo] = rerun[: todo.size]
    return out


def independent_distinct_baseline(H: int, W: int, tied: bool = False) -> float:
    """Probability that H heads choosing independently and uniformly among their selectable
    offsets pick pairwise distinct ones: $\\prod_{i<H} (n - i)/n$ with
    n = `selectable_offsets(W, tied)` (W - 1, or W for tied gates; W = S without windows).

    **Example:** `independent_distinct_baseline(2, 4) == 2 / 3`.
    """
    n = selectable_offsets(W, tied)
    return float(np.prod([(n - i) / n for i in range(H)]))


def distinct_fraction(selected) -> float:
    """Fraction of seeds whose heads all selected, at pairwise distinct offsets. `selected`:
    (seeds, H)."""
    selected = jnp.asarray(selected)
    return float(np.mean(np.asarray(distinct_within_blocks(selected[..., None]))))


def selected_distinct_fraction(selected, status) -> float:
    """`distinct_fraction` over the seeds whose flow selected (status `SELECTED`), never
    over failed or
    unfinished ones; NaN when none selected. `selected`: (seeds, H), `status`: (seeds,)."""
    ok = np.asarray(status) == Status.SELECTED
    return distinct_fraction(np.asarray(selected)[ok]) if ok.any() else float("nan")


def offset_histogram(selected, n_offsets: int) -> np.ndarray:
    """Counts of selected offsets 0..n_offsets-1 per head, shape (H, n_offsets) (heads without a
    selection left out). A selection (key r, value r+1) has W-1 possible offsets, a tied gate W."""
    selected = np.asarray(selected)
    return np.stack(
        [np.bincount(s[s >= 0], minlength=n_offsets)[:n_offsets] for s in selected.T]
    )


def run_flow(
    task: Task,
    config: FlowConfig,
    seeds: int,
    *,
    seed: int = 0,
    chunk: int | None = None,
    devices=None,
    progress: bool = False,
) -> FlowRun:
    """Integrate the flow of `seeds` seeds and summarize them.

    **Arguments:**
    - `task`, `config`: the task and flow configuration (`check_flow` is applied).
    - `seeds`: number of seeds (indices 0..seeds-1 under base seed `seed`).
    - `seed`: base seed (sample, geometry and per-seed keys).
    - `chunk`: seeds per compiled call (default 4096 reduced, 2 per device full); progress is shown
      per chunk.
    - `devices`: devices to shard over (default all local devices).
    - `progress`: show a `Progress` line on stderr.

    **Returns:** a `FlowRun`: `per_seed` (`SeedResults`, numpy arrays with a leading seed axis,
    see `integrate`), `summary` (`FlowSummary`: distinct fraction, baseline, histogram, status
    counts, timings), `task`, `config`, `seed` and `sample` (`FlowSample`: M, eps; None for the
    reduced dynamics) — every parameter; `to_dict()` gives them as JSON-able dicts.

    ```python
    run = run_flow(Task(L=8, S=4, H=2, N=10**6, beta=4.0), FlowConfig(), 64)
    run.summary.distinct_fraction
    ```
    """
    check_flow(task, config)
    _require_int("seeds", seeds, 1)  # also refuses bool (seeds=True) and floats
    shared, sample = (None, None), None
    if config.dynamics == "full":
        geometry, contexts = flow_sample(task, config, seed)
        shared = (geometry, contexts)
        sample = FlowSample(
            M=int(contexts.shape[0]),
            M_requested=config.M,
            sample=config.sample,
            geometry=type(geometry).__name__,
            dim=geometry.dim,
            eps_realized=geometry.eps,
        )
    n_dev = len(jax.devices() if devices is None else devices)
    if chunk is None:
        chunk = 4096 if config.dynamics == "reduced" else 2 * n_dev
    _require_int("chunk", chunk, 1)
    chunk = min(chunk, seeds)
    chunk = n_dev * math.ceil(chunk / n_dev)
    parts, compile_s, start = [], None, time.perf_counter()
    with Progress(seeds, f"flow ({config.dynamics})", enabled=progress) as bar:
        for lo in range(0, seeds, chunk):
            idx = np.arange(lo, lo + chunk)
            t0 = time.perf_counter()
            out = run_lanes(
                broadcast_lanes(task, chunk),
                broadcast_lanes(config, chunk),
                seed_keys(seed, idx),
                shared,
                devices,
            )
            if compile_s is None:
                compile_s = time.perf_counter() - t0
            n = min(chunk, seeds - lo)
            parts.append(jax.tree.map(lambda a, n=n: a[:n], out))
            bar.update(n)
    per_seed = SeedResults.from_dict(jax.tree.map(lambda *a: np.concatenate(a), *parts))
    selected = per_seed.selected
    status = per_seed.status
    # Distinct fraction and histogram over the seeds that selected (status "selected"), never over
    # failed or unfinished ones; NaN when none selected. `selected_seeds` says how many they cover.
    ok = status == Status.SELECTED
    summary = FlowSummary(
        seeds=seeds,
        devices=n_dev,
        selected_seeds=int(np.sum(ok)),
        failed_seeds=int(np.sum(np.isin(status, list(FAILURES)))),
        selected_fraction=float(np.mean(ok)),
        value_is_key_plus_one_fraction=float(
            np.mean(value_follows_key(per_seed.key_offsets, per_seed.value_offsets))
        ),
        distinct_fraction=selected_distinct_fraction(selected, status),
        distinct_baseline_independent_uniform=independent_distinct_baseline(
            task.H, task.W, config.tied
        ),
        offset_histogram=offset_histogram(
            selected[ok], selectable_offsets(task.W, config.tied)
        ),
        status_counts={s.label: int(np.sum(status == s)) for s in Status},
        wall_s=time.perf_counter() - start,
        first_chunk_s_including_compile=compile_s,
        same_selection_as_reduced_fraction=(
            None
            if per_seed.reduced_selected is None
            else float(np.mean(np.all(per_seed.reduced_selected == selected, axis=1)))
        ),
    )
    return FlowRun(
        task=task,
        config=config,
        seed=seed,
        sample=sample,
        per_seed=per_seed,
        summary=summary,
    )


__all__ = [
    "FlowRun",
    "FlowSample",
    "FlowSummary",
    "SeedResults",
    "distinct_fraction",
    "flow_sample",
    "independent_distinct_baseline",
    "offset_histogram",
    "broadcast_lanes",
    "lane_map",
    "one_lane",
    "run_lanes",
    "run_flow",
    "sample_size",
    "seed_keys",
    "sharded_seed_map",
    "stack_lanes",
]
