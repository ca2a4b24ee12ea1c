"""Training the compressed model with optax: many seeds at once, in compiled chunks of steps,
with log-spaced statistics, held-out measures and resumable checkpoints (docs/theory.md §11).

Seed i of base seed s starts from the full flow's key of seed i (`seed_keys`), and a full-batch
run trains on the full flow's balanced sample (`flow_sample`): with every switch at the theorem's
setting and plain gradient descent of step eta, step k is the explicit Euler step of the full
flow, so the gates after k steps follow the flow at t = k eta with an error O(eta). Beyond the
flow's streams (1 seeds, 2 sample, 3 geometry), held-out contexts use `fold_in(key(s), 4)` and
the fresh contexts of minibatch step k for seed i `fold_in(fold_in(fold_in(key(s), 5), k), i)`:
a seed's numbers do not depend on which seeds train beside it.

This module holds the loop (prepare, place, step in chunks, finish); its parts have their own:
`_optimizer` (settings and schedules), `_compile` (how programs compile), `_programs` (the
compiled chunk and evaluation), `_seeds` (the seeds as lanes), `_run` (the records) and
`_checkpoint` (the files). May import: `inductheory.internal`, `inductheory.model`,
`inductheory.flow` and those.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from ..flow._config import FlowConfig
from ..flow._sample import flow_sample
from ..internal._io import claimed_output_dir
from ..internal._lanes import lane_mesh, pad_lanes, padded_size, shard_lanes
from ..internal._progress import Progress
from ..model._contexts import sample_contexts
from ..model._task import SEED_MAX, SEED_MIN, SEEDS_MAX, Task, _require_int
from ._checkpoint import (
    CHECKPOINT,
    _load_checkpoint,
    _State,
    _write_checkpoint,
    _write_result,
    load_run,
)
from ._config import ModelConfig, TrainConfig
from ._measures import measure
from ._optimizer import make_optimizer, optimizer_settings
from ._programs import _lane_group, _Programs
from ._run import TrainRun, TrainStatistics, TrainTimings, _parameters, log_steps

# besides this module's own: `_partition`, `load_run` and `make_optimizer` (figures/ and cli/
# import them from here)
from ._seeds import (
    _initial_models,
    _lanes,
    _map_arrays,
    _partition as _partition,
    _split,
    seed_model,
)

# Streams of the base seed's key beyond the flow's (1 seeds, 2 sample, 3 geometry).
HELD_OUT_STREAM, BATCH_STREAM = 4, 5


def _replicated(tree, devices):
    if len(devices) == 1:
        return tree
    return jax.device_put(tree, NamedSharding(lane_mesh(devices), PartitionSpec()))


def _check_population(model) -> None:
    """A one-line `ValueError` where the model's population loss has no closed form."""
    eqx.filter_eval_shape(lambda m: m.population_loss(), model)


def train(
    task: Task,
    model_config: ModelConfig,
    train_config: TrainConfig,
    seeds: int,
    *,
    seed: int = 0,
    out=None,
    progress: bool = False,
    devices=None,
) -> TrainRun:
    """Train the compressed model of `task` from `seeds` seeds at once.

    Seed i starts from `init_model(task, model_config, key_i, rho=train_config.rho,
    geometry=geometry)` with key_i the full flow's key of seed i and the geometry of the full
    flow's sample (`flow_sample`), and takes `train_config.steps` optimizer steps
    (`make_optimizer`) of the mean cross-entropy: on the flow's fixed balanced sample of M
    contexts (`batch="full"`), the population loss (`"population"`), or fresh contexts at every
    step (a number). All seeds are vmapped (the fixed parts of the model get no optimizer state),
    split over `devices`, and stepped in `lax.scan` chunks of `train_config.chunk` steps through
    one compiled program. At the `log_steps` the loss and gate statistics on held-out contexts
    are kept (`TrainStatistics`; no parameters along the way); at the end the model's measures
    on the `eval_contexts` held-out contexts.

    **Arguments:**
    - `task`, `model_config`, `train_config`: the task, the model's switches and the training.
    - `seeds`: number of seeds (indices 0..seeds-1 under base seed `seed`).
    - `seed`: base seed (keys, sample, geometry, held-out contexts, batches).
    - `out`: a directory for the result (`train.json`, `statistics.npz`, the final models
      `models.eqx`) and a checkpoint after every chunk: a run stopped anywhere resumes from its
      last chunk with the numbers of an uninterrupted run. A directory holding a run with other
      parameters is refused.
    - `progress`: show a `Progress` line on stderr (per chunk).
    - `devices`: devices to split the seeds over (default all local devices).

    **Returns:** a `TrainRun`.

    **Raises:** `ValueError` naming the parameter, e.g. `batch="population"` for a model
    without a closed-form population loss.

    ```python
    task = Task(L=4, S=3, H=2, N=48, beta=4.0)
    run = train(task, ModelConfig(), TrainConfig(lr=0.5, steps=200, M=48), 8)
    run.measures.key_offsets  # (8, H)
    ```
    """
    seeds = _require_int("seeds", seeds, 1, SEEDS_MAX)
    seed = _require_int("seed", seed, SEED_MIN, SEED_MAX)
    if train_config.overlap_penalty:
        raise ValueError(
            "overlap_penalty applies to the paper's transformers (train_transformer, "
            f"`inductheory train paper`), not this model; got {train_config.overlap_penalty}"
        )
    devices = tuple(jax.devices() if devices is None else devices)
    parameters = _parameters(task, model_config, train_config, seeds, seed)
    setup, state = _prepare_run(task, model_config, train_config, seeds, seed, devices)
    with claimed_output_dir(out, "train", parameters) as directory:
        checkpoint = None if directory is None else Path(directory) / CHECKPOINT
        if checkpoint is not None and checkpoint.exists():
            state = _load_checkpoint(checkpoint, state)
        setup, state = _placed(setup, state)
        start_time = time.perf_counter()
        loop_timings = _run_chunks(setup, state, checkpoint, progress)
        run = _finish_run(setup, state, loop_timings, start_time)
        if directory is not None:
            _write_result(Path(directory), run)
    return run


@dataclasses.dataclass(frozen=True)
class _Setup:
    """What a `train` run fixes before its first step: its parameters, the compiled programs,
    the training data (`_Programs.loss_of`), the held-out contexts, the fixed parts of the models
    `(per_seed, shared)`, the lanes, the logged steps and which steps of the chunks log. After
    `_placed`, the arrays are on the devices."""

    task: Task
    model_config: ModelConfig
    config: TrainConfig
    seeds: int
    seed: int
    devices: tuple
    programs: _Programs
    M: int | None
    data: object
    held_out: jax.Array
    static: tuple
    lanes: np.ndarray | jax.Array  # 0..n-1, the seeds padded to the devices
    logged: np.ndarray
    log_mask: np.ndarray


def _prepare_run(
    task, model_config, config, seeds: int, seed: int, devices: tuple
) -> tuple[_Setup, _State]:
    """The run's `_Setup` and its state at step 0: the full flow's sample and geometry, the
    held-out contexts, the seeds' initial models split into trainable and fixed parts, the
    optimizer's initial state and empty statistics buffers. Raises the one-line `ValueError`s
    of `train` (no closed-form population loss, nothing to train)."""
    geometry, contexts = flow_sample(
        task, FlowConfig(dynamics="full", M=config.M), seed
    )
    base = jax.random.key(seed)
    held_out = sample_contexts(
        jax.random.fold_in(base, HELD_OUT_STREAM), task, config.eval_contexts
    )
    models = _initial_models(task, model_config, config, seeds, seed, geometry)
    if config.batch == "population":
        _check_population(models[0])
    data = {
        "full": contexts,
        "population": None,
    }.get(
        config.batch,
        jax.random.key_data(jax.random.fold_in(base, BATCH_STREAM)),
    )
    size = padded_size(seeds, devices)
    params, static = _split(models)
    if not jax.tree.leaves(params):
        raise ValueError(
            f"model_config has nothing to train (gates='{model_config.gates}' with fixed "
            "embeddings, identity maps, a tied unembedding and one layer): measure the model "
            "with `measure` instead"
        )
    optimizer = optimizer_settings(config)
    programs = _Programs(
        task,
        task.vocabulary,
        config.batch,
        optimizer,
        config.chunk,
        _lane_group(devices),
        devices,
    )
    opt_state = eqx.filter_vmap(optimizer.transformation().init)(params)
    logged, log_mask, buffers = _logging(
        config, programs, params, static, held_out, seeds
    )
    setup = _Setup(
        task=task,
        model_config=model_config,
        config=config,
        seeds=seeds,
        seed=seed,
        devices=devices,
        programs=programs,
        M=int(contexts.shape[0]) if config.batch == "full" else None,
        data=data,
        held_out=held_out,
        static=static,
        lanes=np.arange(size),
        logged=logged,
        log_mask=log_mask,
    )
    return setup, _State(0, params, opt_state, buffers)


def _logging(config, programs, params, static, held_out, seeds: int):
    """`(logged, log_mask, buffers)`: the logged steps (`log_steps`), whether each step of the
    chunks logs its statistics (steps before the last; the last is logged by `evaluate`), and
    zeroed buffers (seeds, logged steps, ...) of the loss and every gate statistic."""
    logged = log_steps(config.steps, config.log_points)
    # a chunk reads `chunk` entries from its start, which can be any step (`_chunk_bounds`)
    log_mask = np.zeros(config.steps + config.chunk, bool)
    log_mask[logged[logged < config.steps]] = True
    stat_shapes = jax.eval_shape(programs.lanes_statistics, params, static, held_out)
    buffers = {"loss": np.zeros((seeds, logged.size))} | {
        k: np.zeros((seeds, logged.size) + v.shape[1:], v.dtype)
        for k, v in stat_shapes.items()
    }
    return logged, log_mask, buffers


def _placed(setup: _Setup, state: _State) -> tuple[_Setup, _State]:
    """`setup` and `state` on the devices: every per-seed array padded to the lanes and split
    over the devices, the arrays every lane shares replicated."""
    size, devices = setup.lanes.size, setup.devices

    def place(tree):
        arrays, rest = eqx.partition(tree, eqx.is_array)
        arrays = jax.tree.map(jnp.asarray, pad_lanes(arrays, size))
        return eqx.combine(shard_lanes(arrays, devices), rest)

    params, opt_state, per_seed = (
        place(t) for t in (state.params, state.opt_state, setup.static[0])
    )
    static = (per_seed, _replicated(setup.static[1], devices))
    data, held_out = _replicated((setup.data, setup.held_out), devices)
    setup = dataclasses.replace(
        setup,
        static=static,
        data=data,
        held_out=held_out,
        lanes=shard_lanes(jnp.asarray(setup.lanes), devices),
    )
    return setup, dataclasses.replace(state, params=params, opt_state=opt_state)


def _run_chunks(setup: _Setup, state: _State, checkpoint, progress: bool) -> tuple:
    """Step `state` (in place) from its `done` steps to the last in chunks of
    `setup.config.chunk` steps, filling its buffers at the logged steps and writing
    `checkpoint` (when not None) after every chunk.

    **Returns:** `(first, rest_s, rest_steps)`: the seconds of the first chunk (None when no
    chunk ran), and the seconds and steps of the others."""
    config, seeds, programs = setup.config, setup.seeds, setup.programs
    row = {int(s): j for j, s in enumerate(setup.logged)}
    first, rest_s, rest_steps = None, 0.0, 0
    with Progress(config.steps, "train", enabled=progress) as bar:
        if state.done:
            bar.update(state.done)
        if state.done < config.steps:
            bar.note("compiling (or reading from the cache) and running the first step")
        for start, stop in _chunk_bounds(state.done, config.steps, config.chunk):
            t0 = time.perf_counter()
            log_mask = setup.log_mask[start : start + config.chunk].copy()
            # the steps after `stop` belong to the next chunk
            log_mask[stop - start :] = False
            state.params, state.opt_state, (loss, stats) = programs.run_chunk(
                state.params,
                state.opt_state,
                setup.static,
                setup.data,
                setup.held_out,
                setup.lanes,
                jnp.asarray(start),
                jnp.asarray(stop),
                jnp.asarray(log_mask),
            )
            loss, stats = jax.device_get((loss, stats))
            for i in np.flatnonzero(log_mask):
                j = row[start + int(i)]
                state.buffers["loss"][:, j] = loss[i, :seeds]
                for k, v in stats.items():
                    state.buffers[k][:, j] = v[i, :seeds]
            n = stop - start
            state.done = stop
            if checkpoint is not None:
                _write_checkpoint(
                    checkpoint,
                    state.done,
                    _lanes(jax.device_get(state.params), seeds),
                    _lanes(jax.device_get(state.opt_state), seeds),
                    state.buffers,
                )
            elapsed, warmup = time.perf_counter() - t0, first is None
            if warmup:
                first = elapsed
            else:
                rest_s, rest_steps = rest_s + elapsed, rest_steps + n
            # the first chunk's time is mostly compiling: the ETA counts from its end
            bar.update(n, f"loss {np.mean(loss[n - 1, :seeds]):.4g}", warmup=warmup)
    return first, rest_s, rest_steps


def _chunk_bounds(done: int, steps: int, chunk: int) -> list[tuple[int, int]]:
    """`(start, stop)` of the chunks that take a run from step `done` to `steps`: the first
    step alone (its progress line comes as soon as the program is compiled or read from the
    cache, not a whole chunk later), then up to the next multiple of `chunk`, then `chunk` steps
    at a time. A run's numbers do not depend on where its chunks end (tested).

    **Example:** `_chunk_bounds(0, 25, 10) == [(0, 1), (1, 10), (10, 20), (20, 25)]`.
    """
    if done >= steps:
        return []
    edges = sorted(
        {done, done + 1, steps, *range((done // chunk + 1) * chunk, steps, chunk)}
    )
    return list(zip(edges[:-1], edges[1:]))


def _finish_run(
    setup: _Setup, state: _State, loop_timings: tuple, start_time: float
) -> TrainRun:
    """The `TrainRun` of the trained `state`: the loss and statistics after the last step in
    its buffers' last column, the final models of every seed and their held-out measures, and
    the timings (`loop_timings` of `_run_chunks`, the wall time since `start_time`)."""
    seeds, static, buffers = setup.seeds, setup.static, state.buffers
    loss, stats = jax.device_get(
        setup.programs.evaluate(
            state.params, static, setup.data, setup.held_out, setup.lanes
        )
    )
    buffers["loss"][:, -1] = loss[:seeds]
    for k, v in stats.items():
        buffers[k][:, -1] = v[:seeds]
    # the seeds' models on the host: slicing and broadcasting there compiles nothing (as jax
    # arrays, every leaf's slice was a program of its own, about 1.5 CPU-s of a quick ladder)
    host = eqx.combine(
        _lanes(jax.device_get(eqx.combine(state.params, static[0])), seeds),
        _map_arrays(
            lambda a: np.broadcast_to(a, (seeds,) + a.shape), jax.device_get(static[1])
        ),
    )
    # jax.device_put, not jnp.asarray: that compiles a program per leaf
    final = _map_arrays(jax.device_put, host)
    per_seed = [measure(seed_model(host, i), setup.held_out) for i in range(seeds)]
    measures = jax.tree.map(lambda *a: np.stack([np.asarray(x) for x in a]), *per_seed)
    first, rest_s, rest_steps = loop_timings
    return TrainRun(
        task=setup.task,
        model_config=setup.model_config,
        train_config=setup.config,
        seed=setup.seed,
        seeds=seeds,
        M=setup.M,
        steps=setup.logged,
        statistics=TrainStatistics(**buffers),
        measures=measures,
        models=final,
        timings=TrainTimings(
            wall_s=time.perf_counter() - start_time,
            first_chunk_s_including_compile=first,
            steps_per_s=rest_steps / rest_s if rest_s else None,
            devices=len(setup.devices),
        ),
    )


__all__ = [
    "HELD_OUT_STREAM",
    "TrainRun",
    "load_run",
    "log_steps",
    "make_optimizer",
    "seed_model",
    "train",
]
