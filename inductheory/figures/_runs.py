"""Computations shared by several figures: cached flow batches and oracle points, common settings.

Every expensive call goes through `_io.cached(cache_dir, params, compute)`, keyed by every
parameter,
so a rerun (or another figure asking for the same run) reuses it. Figures call these through the
module (`_runs.flow_runs(...)`), so that tests can intercept them in one place.
"""

from __future__ import annotations

from pathlib import Path

import jax.numpy as jnp
import numpy as np

from ..experiments._flows import run_flow, run_flow_variants, run_flows
from ..experiments._results import FlowOutcomes
from ..flow._config import FlowConfig
from ..internal._io import (
    cached,
    load_cached,
    parameter_key,
    read_only_cache,
    store_cached,
)
from ..internal._progress import announce
from ..internal._warnings import warnings_named
from ..model._gates import shared_gates_from_logits
from ..model._task import Task, assumptions_silenced, quiet_task
from ..trained._train import _parameters, load_run, train

task_of = (
    quiet_task  # figures choose settings outside the theorems' assumptions on purpose
)

# The task shared by the weak-spot and coverage runs (S and H vary).
BASE = dict(L=8, N=4096, gamma=1.0, beta=4.0, kappa=1.0)


def _shape(task: Task) -> str:
    """The task's sizes for a progress line (the window only where it differs from S)."""
    window = f" W={task.W}" if task.W != task.S else ""
    return f"L={task.L} S={task.S} H={task.H}{window} N={task.N}"


def _flow_params(
    task: Task, config: FlowConfig, seeds: int, seed: int, trajectories: bool
):
    return {
        "kind": "flow",
        "task": task.to_dict(),
        "config": config.to_dict(),
        "seeds": seeds,
        "seed": seed,
        "trajectories": trajectories,
    }


def _flow_result(run, trajectories: bool) -> dict:
    """What `flow_runs` caches of a `FlowRun`: its `FlowOutcomes` as a dict."""
    return FlowOutcomes.of(run, trajectories).to_dict()


def flow_runs(
    task: Task,
    config: FlowConfig,
    seeds: int,
    cache_dir,
    *,
    seed: int = 0,
    trajectories: bool = False,
) -> FlowOutcomes:
    """Per-seed outcomes of `run_flow` (and trajectories if asked), cached by every parameter."""

    def compute():
        name = f"a {config.dynamics} flow, {_shape(task)}, {seeds} seeds"
        announce(f"computing {name}")
        with warnings_named(name), assumptions_silenced():
            run = run_flow(task, config, seeds, seed=seed)
        return _flow_result(run, trajectories)

    return FlowOutcomes.from_dict(
        cached(
            cache_dir, _flow_params(task, config, seeds, seed, trajectories), compute
        )
    )


def trained_run(
    task: Task,
    model_config,
    train_config,
    seeds: int,
    cache_dir,
    *,
    seed: int = 0,
    label: str = "a model",
):
    """`train` of the compressed model, cached by every parameter: the run's own output
    directory under `cache_dir/train/` (final models, statistics and held-out measures;
    interrupted runs resume from their last chunk), loaded back with `load_run`. Figures that
    train the same configuration share one run."""
    named = warnings_named(f"training {label}, {_shape(task)}, {seeds} seeds")
    if cache_dir is None:
        with named, assumptions_silenced():
            return train(task, model_config, train_config, seeds, seed=seed)
    params = _parameters(task, model_config, train_config, seeds, seed)
    directory = Path(cache_dir) / "train" / parameter_key(params)
    try:
        return load_run(directory)
    except ValueError:
        pass
    announce(f"training {label}, {_shape(task)}, {seeds} seeds")
    if read_only_cache(
        directory
    ):  # read, never written: the run is kept in memory only
        with named, assumptions_silenced():
            return train(task, model_config, train_config, seeds, seed=seed)
    with named, assumptions_silenced():
        train(task, model_config, train_config, seeds, seed=seed, out=directory)
    # the loaded run, so that a fresh and a cached run are the very same numbers
    return load_run(directory)


def flow_runs_together(
    task: Task, configs, seeds, cache_dir, *, seed: int = 0
) -> list[FlowOutcomes]:
    """`flow_runs` of several reduced-flow configurations of one task: the ones not cached yet
    run together, one batch per compiled program (`run_flow_variants`, the same numbers bit for
    bit), each cached under its own `flow_runs` key.

    **Arguments:** `seeds`: one count for all configurations or one per configuration; the rest
    as in `flow_runs`.

    **Returns:** the `flow_runs` outcomes, in the order of `configs`.
    """
    configs = list(configs)
    counts = [seeds] * len(configs) if np.ndim(seeds) == 0 else list(seeds)
    params = [_flow_params(task, c, n, seed, False) for c, n in zip(configs, counts)]
    found = [load_cached(cache_dir, p) for p in params]
    todo = [i for i, f in enumerate(found) if f is None]
    if todo:
        run = (
            f"{len(todo)} reduced flows together, {_shape(task)}, "
            f"{sum(counts[i] for i in todo)} seeds in all"
        )
        announce(f"computing {run}")
        with warnings_named(run), assumptions_silenced():
            runs = run_flow_variants(
                task, [configs[i] for i in todo], [counts[i] for i in todo], seed=seed
            )
        for i, run in zip(todo, runs):
            found[i] = store_cached(cache_dir, params[i], _flow_result(run, False))
    return [FlowOutcomes.from_dict(f) for f in found]


def padded_flow_runs(
    tasks, config: FlowConfig, seeds: int, cache_dir, *, seed: int = 0
) -> list[FlowOutcomes]:
    """`flow_runs` of approximate-geometry tasks equal but for d: the ones not cached yet run
    together in one compiled program (`run_flows`, the same runs up to rounding), each cached
    under its own `flow_runs` key."""
    params = [_flow_params(t, config, seeds, seed, False) for t in tasks]
    found = [load_cached(cache_dir, p) for p in params]
    todo = [i for i, f in enumerate(found) if f is None]
    if todo:
        dims = ", ".join(str(tasks[i].d) for i in todo)
        run = (
            f"{config.dynamics} flows, {_shape(tasks[0])}, d in ({dims}), "
            f"{seeds} seeds each"
        )
        announce(f"computing {run}, in one program")
        with warnings_named(run), assumptions_silenced():
            runs = run_flows([tasks[i] for i in todo], config, seeds, seed=seed)
        for i, run in zip(todo, runs):
            found[i] = store_cached(cache_dir, params[i], _flow_result(run, False))
    return [FlowOutcomes.from_dict(f) for f in found]


def oracle_point(
    task: Task, config, cache_dir, *, contexts: int = 1, seeds: int = 8, seed: int = 0
):
    """One oracle-minimizer point (`oracle.oracle_point`), cached under the regime map's key.

    **Returns:** an `OraclePoint` read from its JSON form (fresh or cached alike).
    """
    import jax

    from ..experiments._regime import point_params
    from ..oracle._point import OraclePoint, oracle_point as compute_point

    params = point_params(task, config, seed=seed, contexts=contexts, seeds=seeds)

    def compute():
        run = f"an oracle point, {_shape(task)}, {contexts} context(s), {seeds} vertex seeds"
        announce(f"computing {run}")
        with warnings_named(run):
            return compute_point(
                task, jax.random.key(seed), config, contexts=contexts, seeds=seeds
            ).to_dict()

    return OraclePoint.from_dict(cached(cache_dir, params, compute))


def theorem2_setups(quick: bool):
    """((reduced task, config, seeds), (full task, config, seeds)) of the Theorem 2 and Fig.
    5a figures."""
    reduced_task = task_of(L=8, S=4, H=2, N=4096, gamma=1.0, beta=4.0, kappa=1.0)
    full_task = task_of(
        L=8, S=4, H=2, N=256 if quick else 1024, gamma=1.0, beta=4.0, kappa=1.0
    )
    reduced = FlowConfig(dynamics="reduced", rho=0.1, delta=1e-3, t_max=1e6, n_save=48)
    full = FlowConfig(dynamics="full", rho=0.1, delta=1e-3, t_max=1e6, n_save=48, M=1)
    return (reduced_task, reduced, 3 if quick else 6), (
        full_task,
        full,
        2 if quick else 4,
    )


def reduced_config(quick: bool, **changes) -> tuple[FlowConfig, int]:
    """The reduced-flow configuration and seed count shared by the weak-spot and coverage runs, so
    that runs common to both figures are computed (and compiled) once."""
    params = dict(
        dynamics="reduced", rho=0.1, delta=1e-3, t_max=1e7, n_save=8, max_steps=200_000
    )
    return FlowConfig(**{**params, **changes}), (16 if quick else 256)


def converged_gates(run: FlowOutcomes, seed_index: int):
    """The shared gates of seed `seed_index` at the end of a reduced flow."""
    return shared_gates_from_logits(jnp.asarray(run.final_biases[seed_index]))


def last_finite(a) -> np.ndarray:
    """The last saved (finite) value of each seed's trajectory: `a` of shape (seeds, T, ...)."""
    a = np.asarray(a, float)
    return np.array(
        [row[np.isfinite(row.reshape(row.shape[0], -1)[:, 0])][-1] for row in a]
    )
