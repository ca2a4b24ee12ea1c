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

from ._config import Task, quiet_task
from ._contexts import sample_contexts
from ._geometry import make_geometry
from ._io import cached
from ._oracle import OracleMinimizer, classify, context_geometry, minimize_oracle
from ._vertices import best_vertex, vertex_gates


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
    classify the best point found. Under exact geometry every context is equivalent (THEORY.md
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
    k_geo, k_ctx, k_min = jax.random.split(key, 3)
    geometry = make_geometry(task, k_geo)
    tokens_all = sample_contexts(k_ctx, task, contexts)
    records = []
    for m in range(contexts):
        tokens = tokens_all[m]
        geo = context_geometry(geometry, tokens)
        vertex = best_vertex(task, geo, tokens, k=max(seeds, 1))
        res = minimize_oracle(
            task, geo, tokens, jax.random.fold_in(k_min, m), config, seeds=vertex.top_offsets[:seeds] if seeds else None
        )
        slack = tolerance * (1 + abs(vertex.loss))
        # A vertex is a feasible oracle point: if the local search ended above the best vertex, the
        # vertex is the best point found, and it is the one classified.
        failed = res.loss > vertex.loss + slack
        if failed:
            gates = vertex_gates(task.S, jnp.asarray(vertex.offsets))
            offsets, hard, distinct = classify(gates, config.delta)
        else:
            gates, offsets, hard, distinct = res.gates, res.offsets, res.hard, res.distinct
        best = min(res.loss, vertex.loss)
        gap = vertex.loss - best
        records.append(
            {
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
        )
    hard = np.array([r["hard_selection"] for r in records])
    distinct = np.array([r["distinct_heads"] for r in records])
    return {
        "task": task.to_dict(),
        "eps": float(geometry.eps),
        "dim": int(geometry.dim),
        "n_contexts": contexts,
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
    N_grid = sorted(int(n) for n in N_grid)
    beta_grid = sorted(float(b) for b in beta_grid)
    if not N_grid or not beta_grid:
        raise ValueError("N_grid and beta_grid must each hold at least one value")
    if isinstance(refine, bool) or not isinstance(refine, int) or refine < 0:
        raise ValueError(f"refine must be an integer >= 0, got {refine!r}")

    def run(N: int, beta: float) -> dict:
        t = with_point(task, N=N, beta=beta)
        params = point_params(t, config, seed=seed, contexts=contexts, seeds=seeds)
        point = cached(
            directory,
            params,
            lambda: oracle_point(t, jax.random.key(seed), config, contexts=contexts, seeds=seeds),
        )
        summary = summary_of(point)
        summary["ok"] = criterion(point, t)
        if on_point is not None:
            on_point(summary)
        return summary

    points, boundary = [], []
    for beta in beta_grid:
        ok = {}
        for N in N_grid:
            s = run(N, beta)
            points.append(s)
            ok[N] = s["ok"]
        N_star, N_below = None, None
        for i, N in enumerate(N_grid):
            if all(ok[n] for n in N_grid[i:]):
                N_star = N
                N_below = N_grid[i - 1] if i > 0 else None
                break
        if N_star is not None and N_below is not None:
            lo, hi = N_below, N_star
            for _ in range(refine):
                mid = int(round(math.sqrt(lo * hi)))
                if mid <= lo or mid >= hi:
                    break
                s = run(mid, beta)
                points.append(s)
                lo, hi = (lo, mid) if s["ok"] else (mid, hi)
            N_star, N_below = hi, lo
        boundary.append(
            {"beta": beta, "N_star": N_star, "N_below": N_below, "bracketed": N_star is not None and N_below is not None}
        )
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
