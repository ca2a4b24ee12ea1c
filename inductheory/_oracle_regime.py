"""Theorem 1 measured: oracle optimum vs best hard selection per point, and the regime map.

For a task, `oracle_point` minimizes the per-context loss over the oracle class
(`minimize_oracle`) in M contexts, enumerates the hard selections of each (`best_vertex`),
and reports whether the global minimizer found is a hard selection with distinct heads and by
how much it beats the best vertex. `regime_map` does this over a grid of (eps, beta, N), point
by point through `_io.cached`, and locates the boundary $N^*(\\beta)$ beyond which the minimizer
is a hard selection (bisection in log N between grid points), then fits
$\\log N^* \\approx a + b \\beta$.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

import equinox as eqx

from ._config import Task, quiet_task
from ._contexts import sample_contexts
from ._lanes import lane, padded_size, shard_lanes, stack_lanes
from ._geometry import ExactGeometry, make_geometry
from ._io import load_cached, store_cached
from ._oracle import OracleMinimizer, OracleResult, classify, context_geometry, descend, minimize_oracle, oracle_result, starts
from ._vertices import VertexResult, best_vertex, context_loss, vertex_configs, vertex_gates


def config_dict(config: OracleMinimizer) -> dict:
    """Every setting of an `OracleMinimizer`, for JSON and cache keys."""
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def oracle_point(
    task: Task,
    key,
    config: OracleMinimizer = OracleMinimizer(),
    *,
    contexts: int = 1,
    seeds: int = 8,
    tolerance: float = 1e-9,
) -> dict:
    """Theorem 1 at one task: global minimization over the oracle class vs the best hard selection.

    In each of `contexts` sampled contexts: enumerate the hard selections (`best_vertex`), run
    `minimize_oracle` from `config.restarts` random starts plus the `seeds` best vertices, and
    classify the best point found. Under exact geometry every context is equivalent (docs/theory.md
    §5), so `contexts=1` is the population answer; with eps > 0 each context is its own problem.

    **Arguments:**
    - `task`: the configuration (exact or approximate geometry).
    - `key`: PRNG key (geometry, contexts, starts); the same key gives the same numbers.
    - `config`: the minimizer's settings.
    - `contexts`: number of contexts M.
    - `seeds`: how many of the best vertices also serve as starts (0: random starts only).
    - `tolerance`: the optimum "beats" the best vertex when its loss is lower by more than
      `tolerance * (1 + |vertex loss|)`.

    **Returns:** a JSON-able dict: `best_loss` (mean over contexts of the per-context minimum),
    `best_vertex_loss`, `gap` (largest best-vertex-minus-optimum over contexts, >= 0; a local
    search that ends above the best vertex is replaced by that vertex and flagged in
    `minimizer_failed` / `share_minimizer_failed`), `hard_selection` / `distinct_heads` (in every context), `share_hard`,
    `share_hard_distinct`, `share_beats_vertex`, the realized `eps`, and per-context records
    (`contexts`) with losses, offsets and gates.

    ```python
    oracle_point(Task(L=4, S=3, H=2, N=4096, beta=2.0), jax.random.key(0))["hard_selection"]
    ```
    """
    if contexts < 1:
        raise ValueError(f"contexts must be >= 1, got {contexts}")
    if seeds < 0:
        raise ValueError(f"seeds must be >= 0 (vertex starts), got {seeds}")
    if task.exact and contexts == 1:
        # every context is equivalent under exact geometry: the compiled batched path, one point
        return exact_oracle_points(stack_lanes([task]), jnp.asarray(jax.random.key_data(key))[None], config,
                                   seeds=seeds, tolerance=tolerance, template=task)[0]
    k_geo, k_ctx, k_min = jax.random.split(key, 3)
    geometry = make_geometry(task, k_geo)
    tokens_all = sample_contexts(k_ctx, task, contexts)
    records = []
    for m in range(contexts):
        tokens = tokens_all[m]
        geo = context_geometry(geometry, tokens)
        vertex = best_vertex(task, geo, tokens, k=max(seeds, 1), tied=config.tied)
        res = minimize_oracle(
            task, geo, tokens, jax.random.fold_in(k_min, m), config, seeds=vertex.top_offsets[:seeds] if seeds else None
        )
        records.append(context_record(task, config, res, vertex, tolerance))
    return point_summary(task, geometry, records, seeds)


@eqx.filter_jit
def _exact_points(tasks: Task, keys, config: OracleMinimizer, geometry, configs, seeds: int):
    def one(task, key_data):
        _, _, k_min = jax.random.split(jax.random.wrap_key_data(key_data), 3)
        tokens = jnp.arange(task.L * task.S).reshape(task.L, task.S)  # the exact path never reads tokens
        losses = jax.lax.map(lambda r: context_loss(task, geometry, vertex_gates(task.W, r, config.tied), tokens), configs,
                             batch_size=min(4096, configs.shape[0]))
        order = jnp.argsort(losses, stable=True)[: max(seeds, 1)]
        z0 = starts(jax.random.fold_in(k_min, 0), task, config, configs[order[:seeds]] if seeds else None)
        return (losses[order], order, *descend(task, geometry, tokens, z0, config))

    return jax.vmap(one)(tasks, keys)


def exact_oracle_points(tasks: Task, keys, config: OracleMinimizer = OracleMinimizer(), *, seeds: int = 8,
                        tolerance: float = 1e-9, template: Task) -> list[dict]:
    """`oracle_point` of many exact-geometry tasks at once (one context each), vmapped.

    Under exact geometry one context is the population problem; the vertex enumeration, the seeded
    starts and the local searches of every point run as one compiled, vectorized program that
    depends only on the static part (L, S, H, the minimizer's settings, the number of points).

    **Arguments:**
    - `tasks`: validated exact-geometry tasks stacked along a leading axis (`stack_lanes`).
    - `keys`: raw PRNG key data, one row per point (the key of `oracle_point`).
    - `config`, `seeds`, `tolerance`: as in `oracle_point`.
    - `template`: one of the tasks, as concrete numbers (the shape and the geometry kind).

    **Returns:** one `oracle_point` dict per point.
    """
    template.require_exact("exact_oracle_points")
    # The exact path reads neither the geometry's N nor its kappa (both cancel, docs/theory.md §4); a fixed
    # placeholder keeps N, which is static in `ExactGeometry`, out of the compiled program's key.
    geometry = ExactGeometry(template.L * template.S, 1.0)
    configs, method = vertex_configs(template, geometry, tied=config.tied)
    top_losses, order, p, values, fw = jax.device_get(
        _exact_points(tasks, jnp.asarray(keys), config, geometry, jnp.asarray(configs), seeds))
    points = []
    for i in range(len(keys)):
        task = lane(tasks, i)
        top = configs[order[i]]
        vertex = VertexResult(loss=float(top_losses[i][0]), offsets=top[0], top_offsets=top,
                              top_losses=np.asarray(top_losses[i]), n_evaluated=len(configs), method=method)
        res = oracle_result(p[i], values[i], fw[i], config)
        points.append(point_summary(task, geometry, [context_record(task, config, res, vertex, tolerance)], seeds))
    return points


def context_record(task: Task, config: OracleMinimizer, res: OracleResult, vertex: VertexResult,
                   tolerance: float) -> dict:
    """One context's record of `oracle_point`: the minimizer's best against the best vertex."""
    slack = tolerance * (1 + abs(vertex.loss))
    # A vertex is a feasible oracle point: if the local search ended above the best vertex, the
    # vertex is the best point found, and it is the one classified.
    failed = res.loss > vertex.loss + slack
    if failed:
        gates = vertex_gates(task.W, jnp.asarray(vertex.offsets), config.tied)
        offsets, hard, distinct = classify(gates, config.delta, config.tied)
    else:
        gates, offsets, hard, distinct = res.gates, res.offsets, res.hard, res.distinct
    best = min(res.loss, vertex.loss)
    gap = vertex.loss - best
    return {
        "best_loss": best,
        "minimizer_loss": res.loss,
        "minimizer_failed": bool(failed),
        "best_random_loss": res.best_random_loss,
        "best_vertex_loss": vertex.loss,
        "gap": gap,
        "beats_vertex": bool(gap > slack),
        "hard_selection": hard,
        "distinct_heads": distinct,
        "offsets": offsets,
        "vertex_offsets": vertex.offsets,
        "fw_gap": res.fw_gap,
        "share_starts_hard": float(np.mean(res.start_hard)),
        "gates": {"key": gates.key, "value": gates.value},
        "vertex_method": vertex.method,
        "n_vertices": vertex.n_evaluated,
    }


def point_summary(task: Task, geometry, records: list[dict], seeds: int) -> dict:
    """The `oracle_point` dict of a task from its per-context records."""
    hard = np.array([r["hard_selection"] for r in records])
    distinct = np.array([r["distinct_heads"] for r in records])
    return {
        "task": task.to_dict(),
        "eps": float(geometry.eps),
        "dim": int(task.N) + 1 if isinstance(geometry, ExactGeometry) else int(geometry.dim),
        "n_contexts": len(records),
        "seeds": seeds,
        "best_loss": float(np.mean([r["best_loss"] for r in records])),
        "best_vertex_loss": float(np.mean([r["best_vertex_loss"] for r in records])),
        "gap": float(max(r["gap"] for r in records)),
        "hard_selection": bool(hard.all()),
        "distinct_heads": bool(distinct.all()),
        "share_hard": float(hard.mean()),
        "share_hard_distinct": float(distinct.mean()),
        "share_beats_vertex": float(np.mean([r["beats_vertex"] for r in records])),
        "max_fw_gap": float(max(r["fw_gap"] for r in records)),
        "share_minimizer_failed": float(np.mean([r["minimizer_failed"] for r in records])),
        "contexts": records,
    }


def with_point(task: Task, **changes) -> Task:
    """`task` with some parameters changed (assumption warnings silenced: the caller chose them)."""
    return quiet_task(**{**task.to_dict(), **changes})


def point_params(task: Task, config: OracleMinimizer, *, seed: int, contexts: int, seeds: int) -> dict:
    """The cache key of one `oracle_point` (everything its numbers depend on)."""
    return {
        "kind": "oracle_point",
        "task": task.to_dict(),
        "config": config_dict(config),
        "seed": seed,
        "contexts": contexts,
        "seeds": seeds,
    }


def summary_of(point: dict) -> dict:
    """The scalar fields of an `oracle_point` result (no per-context records)."""
    return {k: v for k, v in point.items() if k != "contexts"}


def criterion(point: dict, task: Task) -> bool:
    """Theorem 1's conclusion at a point: hard selections in every context, with distinct heads
    under exact geometry (eps = 0), hard only under approximate geometry."""
    return bool(point["share_hard_distinct"] == 1.0) if task.exact else bool(point["share_hard"] == 1.0)


def regime_map(
    task: Task,
    N_grid,
    beta_grid,
    *,
    seed: int = 0,
    config: OracleMinimizer = OracleMinimizer(),
    contexts: int = 1,
    seeds: int = 8,
    refine: int = 0,
    directory=None,
    on_point: Callable[[dict], None] | None = None,
) -> dict:
    """The share of contexts whose oracle minimizer is a hard selection, over a grid of (beta, N).

    Every point is `oracle_point` of `task` with that N and beta (other parameters, the geometry
    included, from `task`), cached in `directory` (`_io.cached`) so an interrupted map resumes.
    For each beta the boundary is $N^* = $ the smallest grid N such that Theorem 1's conclusion
    (`criterion`) holds at it and at every larger grid N; with `refine` > 0 it is narrowed by
    that many bisection steps in log N between the largest failing grid N below it and it.
    Then $\\log N^*$ is fitted linearly in beta over the betas whose boundary is bracketed.

    **Arguments:**
    - `task`: template task (L, S, H, gamma, kappa, eps or d).
    - `N_grid`, `beta_grid`: grid values.
    - `seed`: PRNG seed of every point (`jax.random.key(seed)`).
    - `config`, `contexts`, `seeds`: as in `oracle_point`.
    - `refine`: bisection steps per beta.
    - `directory`: cache directory or `None`.
    - `on_point`: called with each point's summary as it finishes (progress display).

    **Returns:** a dict with `points` (summaries, in grid order then refinement order),
    `boundary` (per beta: `N_star`, `N_below` the largest N known to fail below it or None,
    `bracketed`), and `fit` (`slope`, `intercept` of log N* vs beta, or None with < 2 betas).
    """
    if any(isinstance(n, bool) or float(n) != int(n) for n in N_grid):
        raise ValueError(f"N_grid must hold integers, got {list(N_grid)}")
    N_grid = sorted(int(n) for n in N_grid)
    beta_grid = sorted(float(b) for b in beta_grid)
    if not N_grid or not beta_grid:
        raise ValueError("N_grid and beta_grid must each hold at least one value")
    if isinstance(refine, bool) or not isinstance(refine, int) or refine < 0:
        raise ValueError(f"refine must be an integer >= 0, got {refine!r}")

    def run_many(pairs: list[tuple[int, float]]) -> list[dict]:
        tasks = [with_point(task, N=N, beta=beta) for N, beta in pairs]
        params = [point_params(t, config, seed=seed, contexts=contexts, seeds=seeds) for t in tasks]
        found = [load_cached(directory, p) for p in params]
        todo = [i for i, f in enumerate(found) if f is None]
        if todo and task.exact and contexts == 1:
            # compiled once for every point; one point per call (batching more points only lengthens
            # the vectorized local searches on a CPU), or one per device where there are several
            key = jax.random.key_data(jax.random.key(seed))
            step = padded_size(1)
            for lo in range(0, len(todo), step):
                idx = todo[lo:lo + step]
                chunk = [tasks[i] for i in idx] + [tasks[idx[-1]]] * (step - len(idx))
                fresh = exact_oracle_points(shard_lanes(stack_lanes(chunk)), shard_lanes(np.stack([key] * step)),
                                            config, seeds=seeds, template=chunk[0])
                for i, point in zip(idx, fresh):
                    found[i] = store_cached(directory, params[i], point)  # kept at once: a map resumes here
        else:
            for i in todo:
                point = oracle_point(tasks[i], jax.random.key(seed), config, contexts=contexts, seeds=seeds)
                found[i] = store_cached(directory, params[i], point)
        summaries = []
        for t, point in zip(tasks, found):
            summary = summary_of(point)
            summary["ok"] = criterion(point, t)
            if on_point is not None:
                on_point(summary)
            summaries.append(summary)
        return summaries

    points = run_many([(N, beta) for beta in beta_grid for N in N_grid])
    brackets = {}
    for b, beta in enumerate(beta_grid):
        ok = {N: s["ok"] for N, s in zip(N_grid, points[b * len(N_grid):(b + 1) * len(N_grid)])}
        N_star, N_below = None, None
        for i, N in enumerate(N_grid):
            if all(ok[n] for n in N_grid[i:]):
                N_star, N_below = N, (N_grid[i - 1] if i > 0 else None)
                break
        brackets[beta] = [N_below, N_star]
    # bisection in log N, one vectorized call per step for every bracketed beta
    for _ in range(refine):
        mids = {}
        for beta, (lo, hi) in brackets.items():
            if lo is not None and hi is not None:
                mid = int(round(math.sqrt(lo * hi)))
                if lo < mid < hi:
                    mids[beta] = mid
        if not mids:
            break
        for (beta, mid), s in zip(mids.items(), run_many([(mid, beta) for beta, mid in mids.items()])):
            points.append(s)
            brackets[beta] = [brackets[beta][0], mid] if s["ok"] else [mid, brackets[beta][1]]
    boundary = [
        {"beta": beta, "N_star": hi, "N_below": lo, "bracketed": hi is not None and lo is not None}
        for beta, (lo, hi) in brackets.items()
    ]
    return {"points": points, "boundary": boundary, "fit": fit_log_threshold(boundary)}


def log_boundary(b: dict) -> float:
    """log of the boundary estimate: the geometric middle $\\sqrt{N^* N_{below}}$ of a bracket, or
    $\\log N^*$ when nothing below it failed."""
    if b["N_below"] is None:
        return math.log(b["N_star"])
    return 0.5 * (math.log(b["N_star"]) + math.log(b["N_below"]))


def fit_log_threshold(boundary: list[dict]) -> dict | None:
    """Least-squares line $\\log N^* = a + b \\beta$ through the bracketed boundaries.

    Uses the geometric midpoint $\\sqrt{N^* N_{below}}$ of each bracket.

    **Returns:** `{"slope": b, "intercept": a, "n": count}`, or None with fewer than 2 points.
    """
    rows = [(b["beta"], log_boundary(b)) for b in boundary if b["bracketed"]]
    if len(rows) < 2:
        return None
    x, y = np.array(rows).T
    slope, intercept = np.polyfit(x, y, 1)
    return {"slope": float(slope), "intercept": float(intercept), "n": len(rows)}
