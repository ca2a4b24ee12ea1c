"""Gradient flows of many seeds at once: vmapped, sharded over local devices, summarized.

Seed i of base seed s starts from the key `fold_in(fold_in(key(s), 1), i)`, so its numbers do not
depend on how seeds are chunked or sharded. The sample of contexts uses `fold_in(key(s), 2)` and an
approximate geometry `fold_in(key(s), 3)`.
"""

from __future__ import annotations

import dataclasses
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

from ..flow._config import Dynamics, FlowConfig, Init, check_flow
from ..flow._init import initial_biases, initial_gate_vectors, project_to_mean
from ..flow._integrate import solve_full, solve_reduced
from ..flow._sample import flow_sample, sample_size, seed_keys
from ..flow._solution import Status
from ..internal._lanes import (
    LANE_AXIS,
    broadcast_lanes,
    lane_mesh,
    pad_lanes,
    padded_size,
)
from ..internal._modes import _enum
from ..internal._programs import stored_call
from ..internal._progress import Progress
from ..internal._warnings import warn_at_caller
from ..model._gates import (
    LinearGates,
    distinct_within_blocks,
    selectable_offsets,
    value_follows_key,
)
from ..model._geometry import DenseGeometry
from ..model._task import SEED_MAX, SEED_MIN, SEEDS_MAX, Task, _require_int
from ._results import FlowRun, FlowSample, FlowSummary, SeedResults

# Statuses that are failures (not merely unfinished by t_max).
FAILURES = (Status.MAX_STEPS, Status.NONFINITE, Status.SOLVER_ERROR)
# The full flow's sample fields (`run_flow(...)["sample"]`; empty for the reduced flow).
# the fields of a full flow's sample (null in a reduced flow's report)
SAMPLE_FIELDS = tuple(f.name for f in dataclasses.fields(FlowSample))


class NoSelectionWarning(UserWarning):
    """No seed of a flow run selected: its distinct fraction is NaN and its histogram empty."""


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
    if config.dynamics is Dynamics.REDUCED:
        return solve_reduced(
            task, config, initial_biases(key, task, config.rho, config.tied)
        ).to_dict()
    geometry, contexts = shared
    # an exact geometry takes the lane's traced kappa
    geometry = geometry.for_task(task)
    c0 = initial_gate_vectors(key, task, geometry, config.rho, config.tied)
    if config.init is Init.PROJECTED:
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

    `fn(*per_lane, shared)`. The lane axis is sharded with a `NamedSharding` on the 1-d
    `lane_mesh` and the shared argument is replicated; XLA's SPMD partitioner splits the batched
    solver loop so that each device integrates its own lanes. (`jax.shard_map` is not used:
    diffrax's Newton event root find fails to trace inside it.) The lane count must be a multiple
    of the number of devices (`run_flow` and `sweep` pad to `padded_size`).

    **Returns:** `(mapped, n_devices)`.
    """
    devices = list(jax.devices() if devices is None else devices)
    mesh = lane_mesh(devices)
    batched, replicated = NamedSharding(mesh, P(LANE_AXIS)), NamedSharding(mesh, P())
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


# Steps of the first pass of `run_lanes`: enough for a typical flow to select; a vmapped solver loop
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


_one_lane_each = jax.vmap(one_lane, in_axes=(0, 0, 0, None))


def _map_lanes(tasks, configs, keys, shared, devices) -> dict:
    mapped, n_dev = lane_map(devices)
    n = keys.shape[0]
    size = padded_size(n, devices)
    tasks, configs, keys = (
        pad_lanes(t, size) for t in (tasks, configs, np.asarray(keys))
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
        pick = lambda tree: pad_lanes(
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
    return float(np.mean(distinct_within_blocks(np.asarray(selected)[..., None])))


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


def _closest_to_selection(worst) -> np.ndarray:
    """Per seed, the mass its least-selected gate (head and key or value) puts on its top
    offset, from worst-case masses (..., heads, 2, offsets); selection needs >= 1 - delta."""
    return np.min(np.max(np.asarray(worst), axis=-1), axis=(-2, -1))


def no_selection_message(run: FlowRun, *, options: bool = False) -> str:
    """What a run of `run_flow` in which no seed selected says about itself, and what to try.

    **Arguments:**
    - `run`: the `FlowRun` that `run_flow` returns.
    - `options`: name the parameters as command-line options (`--t-max`) instead of fields.

    **Returns:** the message (one line).

    ```python
    no_selection_message(run_flow(task, FlowConfig(tied=True), 8))
    ```
    """
    name = (lambda n: "--" + n.replace("_", "-")) if options else (lambda n: n)
    result = run.to_dict()
    config, summary, ps = result["config"], result["summary"], result["per_seed"]
    counts = {k: v for k, v in summary["status_counts"].items() if v}
    status = ", ".join(f"{k}: {v}" for k, v in counts.items())
    text = (
        f"no seed selected ({status} of {summary['seeds']}), so distinct_fraction is NaN "
        "and offset_histogram is empty"
    )
    at_t_max = np.asarray(ps["status"]) == Status.T_MAX
    if not at_t_max.any():
        return text
    # The seed closest to selection, and how far its weakest gate moved over the last save
    # interval: a gate still moving wants a longer run, one at rest sits at a stationary mixture.
    closest = np.where(at_t_max, _closest_to_selection(ps["final"]["worst"]), -np.inf)
    i = int(np.argmax(closest))
    t = np.asarray(ps["t"][i])
    j = int(np.flatnonzero(np.isfinite(t))[-1])
    before = float(_closest_to_selection(ps["worst"][i, j - 1]))
    tied = (
        f"; a tied gate (one gate for key r and value r + 1) can settle between r and r + 1: "
        f"try untied gates ({'without --tied' if options else 'tied=False'})"
        if config.get("tied")
        else ""
    )
    return (
        f"{text}; the seed closest to selection holds {closest[i]:.4g} of its weakest gate "
        f"on one offset (selection needs >= {1 - config['delta']:.4g}, set by {name('delta')}), "
        f"a change of {closest[i] - before:+.2g} since t = {t[j - 1]:.3g}: if it is still "
        f"rising, raise {name('t_max')} (and {name('max_steps')}); a gate that has stopped "
        "moving sits at a stationary mixture of offsets, which a longer run will not select: "
        f"change the setting{tied}"
    )


def seed_chunk(
    dynamics: str, seeds: int, chunk: int | None = None, devices=None
) -> int:
    """Seeds per compiled call of `run_flow`: `chunk` (default 4096 for the reduced flow, 2 per
    device for the full one), at most `seeds`, rounded up to a multiple of the device count.

    **Example:** on one device `seed_chunk("reduced", 64) == 64`.
    """
    if chunk is None:
        n_dev = len(jax.devices() if devices is None else devices)
        chunk = (
            4096
            if _enum(Dynamics, "dynamics", dynamics) is Dynamics.REDUCED
            else 2 * n_dev
        )
    _require_int("chunk", chunk, 1)
    return padded_size(min(chunk, seeds), devices)


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
    Warns with `NoSelectionWarning` (saying what to try) when no seed selects: the
    distinct fraction is then NaN.

    ```python
    run = run_flow(Task(L=8, S=4, H=2, N=10**6, beta=4.0), FlowConfig(), 64)
    run.summary.distinct_fraction
    ```
    """
    check_flow(task, config)
    # also refuses bool (seeds=True) and floats; numpy integers are Python ints from here on
    seeds = _require_int("seeds", seeds, 1, SEEDS_MAX)
    seed = _require_int("seed", seed, SEED_MIN, SEED_MAX)
    shared, sample = (None, None), None
    if config.dynamics is Dynamics.FULL:
        shared, sample = _full_sample(task, config, seed)
    n_dev = len(jax.devices() if devices is None else devices)
    chunk = seed_chunk(config.dynamics, seeds, chunk, devices)
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
            warmup = compile_s is None
            if warmup:
                compile_s = time.perf_counter() - t0
            n = min(chunk, seeds - lo)
            parts.append(jax.tree.map(lambda a, n=n: a[:n], out))
            bar.update(n, warmup=warmup)  # the ETA: the rate after the compiling chunk
    per_seed = SeedResults.from_dict(jax.tree.map(lambda *a: np.concatenate(a), *parts))
    return _flow_run(
        task,
        config,
        seed,
        sample,
        per_seed,
        n_dev,
        time.perf_counter() - start,
        compile_s,
    )


def _full_sample(task: Task, config: FlowConfig, seed: int):
    """`(shared, sample)` of the full dynamics: the `flow_sample` and its `FlowSample`."""
    geometry, contexts = flow_sample(task, config, seed)
    sample = FlowSample(
        M=int(contexts.shape[0]),
        M_requested=config.M,
        sample=config.sample,
        geometry=type(geometry).__name__,
        dim=geometry.dim,
        eps_realized=geometry.eps,
    )
    return (geometry, contexts), sample


def _flow_run(
    task, config, seed, sample, per_seed: SeedResults, n_dev, wall_s, compile_s
) -> FlowRun:
    """The `FlowRun` of per-seed results: summary over the seeds that selected, warning if none."""
    selected = per_seed.selected
    status = per_seed.status
    # Distinct fraction and histogram over the seeds that selected (status "selected"), never over
    # failed or unfinished ones; NaN when none selected. `selected_seeds` says how many they cover.
    ok = status == Status.SELECTED
    summary = FlowSummary(
        seeds=int(status.shape[0]),
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
        wall_s=wall_s,
        first_chunk_s_including_compile=compile_s,
        same_selection_as_reduced_fraction=(
            None
            if per_seed.reduced_selected is None
            else float(np.mean(np.all(per_seed.reduced_selected == selected, axis=1)))
        ),
    )
    run = FlowRun(
        task=task,
        config=config,
        seed=seed,
        sample=sample,
        per_seed=per_seed,
        summary=summary,
    )
    if not summary.selected_seeds:
        warn_at_caller(no_selection_message(run), NoSelectionWarning)
    return run


def _lane_config(config: FlowConfig, penalized: bool) -> FlowConfig:
    """`config` as it runs among penalized variants: no penalty term becomes weight 0.

    $J + 0 \\cdot \\mathrm{overlap}$ has the gradient of $J$ exactly (0 times a finite number,
    added), so the lane computes the numbers of the unpenalized program in a program it shares
    with the penalized ones.
    """
    if penalized and config.coordination is None:
        return config.replace(coordination=0.0)
    return config


def run_flow_variants(
    task: Task,
    configs,
    seeds,
    *,
    seed: int = 0,
    devices=None,
) -> list[FlowRun]:
    """`run_flow(task, config, n, seed=seed)` of several reduced-flow configurations of one task,
    each family that shares a compiled program run as one batch of lanes.

    Configurations that differ only in traced numbers (`TRACED_FIELDS`: rho, delta, t_max, tau,
    the overlap weight, ...) share a program; a configuration without the overlap penalty
    (`coordination=None`) joins penalized ones with weight 0, which adds exactly 0 to its
    gradient. Each family runs once through `run_lanes` (its lanes in two passes, see there), so a
    figure's variants compile once per family instead of once per variant and call. Every run
    equals `run_flow`'s bit for bit (a lane's numbers depend neither on which lanes share its
    batch nor on a step budget it did not reach; tested).

    **Arguments:**
    - `task`: the task (exact geometry).
    - `configs`: reduced-dynamics `FlowConfig`s.
    - `seeds`: seeds per configuration, one count for all or one per configuration.
    - `seed`, `devices`: as in `run_flow`.

    **Returns:** one `FlowRun` per configuration, in order (each with its own config; timings are
    those of its family's batch).

    ```python
    base = FlowConfig(dynamics="reduced")
    runs = run_flow_variants(task, [base, base.replace(coordination=0.1)], 64)
    ```
    """
    configs = list(configs)
    if not configs:
        raise ValueError("configs must hold at least one FlowConfig, got none")
    counts = [seeds] * len(configs) if np.ndim(seeds) == 0 else list(seeds)
    if len(counts) != len(configs):
        raise ValueError(
            f"seeds must be one count or one per configuration ({len(configs)}), "
            f"got {len(counts)}"
        )
    counts = [_require_int("seeds", n, 1, SEEDS_MAX) for n in counts]
    seed = _require_int("seed", seed, SEED_MIN, SEED_MAX)
    for config in configs:
        check_flow(task, config)
        if config.dynamics is not Dynamics.REDUCED:
            raise ValueError(
                f"run_flow_variants needs dynamics='reduced', got '{config.dynamics}'"
            )
    devices = tuple(jax.devices() if devices is None else devices)
    n_dev = len(devices)

    def family(config):  # the static part of the program a lane runs in
        return jax.tree.structure(_lane_config(config, True))

    families: dict = {}
    for i, config in enumerate(configs):
        families.setdefault(family(config), []).append(i)
    runs: list = [None] * len(configs)
    for members in families.values():
        penalized = any(configs[i].coordination is not None for i in members)
        lane_configs = [_lane_config(configs[i], penalized) for i in members]
        start = time.perf_counter()
        out = run_lanes(
            broadcast_lanes(task, sum(counts[i] for i in members)),
            jax.tree.map(
                lambda *a: np.concatenate(a),
                *[broadcast_lanes(c, counts[i]) for c, i in zip(lane_configs, members)],
            ),
            np.concatenate(
                [np.asarray(seed_keys(seed, np.arange(counts[i]))) for i in members]
            ),
            (None, None),
            devices,
        )
        wall = time.perf_counter() - start
        lo = 0
        for i in members:
            part = jax.tree.map(lambda a, lo=lo, n=counts[i]: a[lo : lo + n], out)
            lo += counts[i]
            runs[i] = _flow_run(
                task,
                configs[i],
                seed,
                None,
                SeedResults.from_dict(part),
                n_dev,
                wall,
                wall,
            )
    return runs


def padded_lane(task: Task, config: FlowConfig, c0, geometry, contexts, active_dim, _):
    """One full flow from a given `c0` on a zero-padded `geometry` (`FullDynamics(active_dim=)`).

    **Returns:** `FlowSolution.to_dict()` without the state, as `one_lane`.
    """
    return solve_full(task, config, geometry, contexts, c0, active_dim).to_dict(
        state=False
    )


def pad_columns(a, width: int):
    """`a` with zero columns appended on its last axis up to `width`."""
    return jnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, width - a.shape[-1])])


def run_flows(
    tasks,
    config: FlowConfig,
    seeds: int,
    *,
    seed: int = 0,
    chunk: int | None = None,
    devices=None,
) -> list[FlowRun]:
    """`run_flow(task, config, seeds, seed=seed)` of each of several approximate-geometry tasks
    that differ only in d, all in one compiled program.

    Each task's geometry is padded with zero columns to the largest d, and each seed's c(0) drawn
    at the task's own d (as `one_lane` draws it) and padded with zeros. A zero column adds nothing
    to any score, so the flow never moves c there, and the solver's error norm leaves it out
    (`FullDynamics(active_dim=)`): every run equals `run_flow`'s up to rounding (tested), while
    the tasks share one program instead of compiling one per d. The scores cost O(largest d)
    per token in every lane: group tasks of similar d.

    **Arguments:**
    - `tasks`: approximate-geometry `Task`s equal but for `d`.
    - `config`, `seeds`, `seed`, `chunk`, `devices`: as in `run_flow` (full dynamics; `chunk`
      lanes, over all tasks, per call of the shared program).

    **Returns:** one `FlowRun` per task, in order (its timings are those of the shared call).

    ```python
    runs = run_flows([task.replace(d=d) for d in (16, 32)], FlowConfig(dynamics="full"), 8)
    ```
    """
    tasks = list(tasks)
    if not tasks:
        raise ValueError("tasks must hold at least one task, got none")
    for task in tasks:
        check_flow(task, config)
        if task.exact or task.d is None:
            raise ValueError(
                f"tasks must have an approximate geometry given by d, got {task.to_dict()}"
            )
        if {**task.to_dict(), "d": None} != {**tasks[0].to_dict(), "d": None}:
            raise ValueError(
                f"tasks must differ only in d, got {tasks[0].to_dict()} and {task.to_dict()}"
            )
    if config.dynamics is not Dynamics.FULL:
        raise ValueError(f"run_flows needs dynamics='full', got '{config.dynamics}'")
    seeds = _require_int("seeds", seeds, 1, SEEDS_MAX)
    seed = _require_int("seed", seed, SEED_MIN, SEED_MAX)
    devices = tuple(jax.devices() if devices is None else devices)
    samples = [_full_sample(task, config, seed) for task in tasks]
    width = max(shared[0].dim for shared, _ in samples)
    keys = seed_keys(seed, np.arange(seeds))
    c0s, geometries, contexts, active = [], [], [], []
    for task, ((geometry, ctx), _) in zip(tasks, samples):

        def draw(k, g=geometry, t=task):
            c0 = initial_gate_vectors(
                jax.random.wrap_key_data(k), t, g, config.rho, config.tied
            )
            return project_to_mean(c0, g) if config.init is Init.PROJECTED else c0

        c0s.append(pad_columns(jax.vmap(draw)(keys), width))
        padded = DenseGeometry(
            pad_columns(geometry.embeddings, width), geometry.kappa, geometry.eps
        )
        geometries += [padded] * seeds
        contexts += [ctx] * seeds
        active += [geometry.dim] * seeds
    n = len(tasks) * seeds
    stack = lambda items: jax.tree.map(lambda *a: np.stack(a), *items)
    lanes = [
        broadcast_lanes(tasks[0], n),  # the flow reads d from the geometry
        broadcast_lanes(config, n),
        np.concatenate(c0s),
        stack(geometries),
        np.stack(contexts),
        np.asarray(active),
    ]
    start = time.perf_counter()
    mapped, n_dev = sharded_seed_map(padded_lane, devices, lane_args=len(lanes))

    # Lanes run `chunk` at a time through the one program: a vmapped solver loop steps every lane
    # as long as its slowest one, and a seed that wanders to t_max would hold a large batch.
    chunk = seed_chunk("full", n, chunk, devices)
    parts = []
    for lo in range(0, n, chunk):
        rows = slice(lo, min(lo + chunk, n))
        part = [jax.tree.map(lambda x, r=rows: np.asarray(x)[r], x) for x in lanes]
        out = jax.device_get(mapped(*(pad_lanes(x, chunk) for x in part), None))
        k = rows.stop - rows.start
        parts.append(jax.tree.map(lambda a, k=k: np.array(a[:k]), out))
    out = jax.tree.map(lambda *a: np.concatenate(a), *parts)
    wall = time.perf_counter() - start
    runs = []
    for i, (task, (_, sample)) in enumerate(zip(tasks, samples)):
        part = jax.tree.map(lambda a, i=i: a[i * seeds : (i + 1) * seeds], out)
        runs.append(
            _flow_run(
                task,
                config,
                seed,
                sample,
                SeedResults.from_dict(part),
                n_dev,
                wall,
                wall,
            )
        )
    return runs


__all__ = [
    "FlowRun",
    "FlowSample",
    "FlowSummary",
    "SeedResults",
    "distinct_fraction",
    "flow_sample",
    "independent_distinct_baseline",
    "offset_histogram",
    "lane_map",
    "NoSelectionWarning",
    "no_selection_message",
    "one_lane",
    "run_lanes",
    "run_flow",
    "run_flow_variants",
    "run_flows",
    "sample_size",
    "seed_chunk",
    "seed_keys",
    "sharded_seed_map",
]
