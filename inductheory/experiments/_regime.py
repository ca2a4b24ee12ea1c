"""The regime map of Theorem 1: oracle points over a (beta, N) grid and the boundary $N^*(\\beta)$.

`regime_map` runs `oracle_point` over the grid, point by point through the content-keyed cache,
and locates the boundary beyond which the minimizer is a hard selection (bisection in log N
between grid points), then fits $\\log N^* \\approx a + b \\beta$.

May import: `inductheory.internal`, `inductheory.model`, `inductheory.oracle`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import numpy as np

from ..internal._io import load_cached, store_cached
from ..internal._lanes import pad_items, padded_size, shard_lanes, stack_lanes
from ..internal._progress import Progress
from ..internal._records import Record
from ..model._task import Task, task_with
from ..oracle._minimize import OracleMinimizer
from ..oracle._point import (
    POINT_SCALARS,
    OraclePoint,
    OracleSummary,
    config_dict,
    exact_oracle_points,
    oracle_point,
)


def point_params(
    task: Task, config: OracleMinimizer, *, seed: int, contexts: int, seeds: int
) -> dict:
    """The cache key of one `oracle_point` (everything its numbers depend on)."""
    return {
        "kind": "oracle_point",
        "task": task.to_dict(),
        "config": config_dict(config),
        "seed": seed,
        "contexts": contexts,
        "seeds": seeds,
    }


@dataclasses.dataclass(frozen=True)
class RegimePoint(OracleSummary):
    """One point of a regime map: the scalars of its `OraclePoint` (`OracleSummary`) and
    Theorem 1's verdict `ok` (`criterion`).

    **Example:** `[p.task.N for p in regime_map(task, [64, 256], [2.0]).points if p.ok]`.
    """

    ok: bool

    def to_dict(self) -> dict:
        """`task` (its `to_dict()`), the scalars and `ok`."""
        return {**super().to_dict(), "ok": self.ok}


@dataclasses.dataclass(frozen=True)
class BoundaryBracket(Record):
    """The boundary of one beta: hard selection holds from `N_star` on, and failed at `N_below`.

    **Fields:** `beta`; `N_star` (None if no grid N qualifies); `N_below`, the largest N known to
    fail below it (None if none); `bracketed`: both are known.

    **Example:** `BoundaryBracket(beta=4.0, N_star=256, N_below=64, bracketed=True)`.
    """

    beta: float
    N_star: int | None
    N_below: int | None
    bracketed: bool


@dataclasses.dataclass(frozen=True)
class LogThresholdFit(Record):
    """The least-squares line $\\log N^* = $ `intercept` $+$ `slope` $\\beta$ through `n`
    bracketed boundaries.

    **Example:** `fit.intercept + fit.slope * 4.0` is the fitted log N* at beta = 4.
    """

    slope: float
    intercept: float
    n: int


@dataclasses.dataclass(frozen=True)
class RegimeMap:
    """The result of `regime_map`.

    **Fields:**
    - `points`: a `RegimePoint` per computed point (grid order, then refinement order).
    - `boundary`: a `BoundaryBracket` per beta.
    - `fit`: the `LogThresholdFit` of log N* vs beta, or None with fewer than 2 bracketed betas.

    ```python
    regime = regime_map(Task(L=4, S=4, H=2, N=64), [16, 64, 256], [2.0, 8.0])
    [(b.beta, b.N_star) for b in regime.boundary], regime.fit
    ```
    """

    points: tuple[RegimePoint, ...]
    boundary: tuple[BoundaryBracket, ...]
    fit: LogThresholdFit | None

    def to_dict(self) -> dict:
        """`points`, `boundary` (lists of dicts) and `fit` (a dict or None)."""
        return {
            "points": [p.to_dict() for p in self.points],
            "boundary": [b.to_dict() for b in self.boundary],
            "fit": None if self.fit is None else self.fit.to_dict(),
        }


def summary_of(point: OraclePoint, ok: bool) -> RegimePoint:
    """The scalar fields of an `oracle_point` result (no per-context records), with `ok`."""
    return RegimePoint(
        task=point.task, **{k: getattr(point, k) for k in POINT_SCALARS}, ok=ok
    )


def criterion(point: OraclePoint, task: Task) -> bool:
    """Theorem 1's conclusion at a point: hard selections in every context, with distinct heads
    under exact geometry (eps = 0), hard only under approximate geometry."""
    return (
        bool(point.share_hard_distinct == 1.0)
        if task.exact
        else bool(point.share_hard == 1.0)
    )


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
    on_point: Callable[[RegimePoint], None] | None = None,
    progress: bool = False,
) -> RegimeMap:
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
    - `progress`: show a `Progress` line of the points computed (not found in `directory`).

    **Returns:** a `RegimeMap` with `points` (`RegimePoint` summaries, in grid order then
    refinement order), `boundary` (a `BoundaryBracket` per beta: `N_star`, `N_below` the largest N
    known to fail below it or None, `bracketed`), and `fit` (`LogThresholdFit`: `slope`,
    `intercept` of log N* vs beta, or None with < 2 betas); `to_dict()` for JSON.
    """
    if any(isinstance(n, bool) or float(n) != int(n) for n in N_grid):
        raise ValueError(f"N_grid must hold integers, got {list(N_grid)}")
    N_grid = sorted(int(n) for n in N_grid)
    beta_grid = sorted(float(b) for b in beta_grid)
    if not N_grid or not beta_grid:
        raise ValueError("N_grid and beta_grid must each hold at least one value")
    if isinstance(refine, bool) or not isinstance(refine, int) or refine < 0:
        raise ValueError(f"refine must be an integer >= 0, got {refine!r}")

    def run_many(pairs: list[tuple[int, float]]) -> list[RegimePoint]:
        tasks = [task_with(task, N=N, beta=beta) for N, beta in pairs]
        params = [
            point_params(t, config, seed=seed, contexts=contexts, seeds=seeds)
            for t in tasks
        ]
        found = [load_cached(directory, p) for p in params]
        todo = [i for i, f in enumerate(found) if f is None]
        with Progress(len(todo), "oracle points", enabled=progress) as bar:
            if todo and task.exact and contexts == 1:
                # compiled once for every point; one point per call (batching more points only
                # lengthens the vectorized local searches on a CPU), or one per device where there
                # are several
                key = jax.random.key_data(jax.random.key(seed))
                step = padded_size(1)
                for lo in range(0, len(todo), step):
                    idx = todo[lo : lo + step]
                    chunk = pad_items([tasks[i] for i in idx], step)
                    fresh = exact_oracle_points(
                        shard_lanes(stack_lanes(chunk)),
                        shard_lanes(np.stack([key] * step)),
                        config,
                        seeds=seeds,
                        template=chunk[0],
                    )
                    for i, point in zip(idx, fresh):
                        found[i] = store_cached(
                            directory, params[i], point.to_dict()
                        )  # kept at once: a map resumes here
                        # the ETA: the rate after the first call, which compiles
                        bar.update(warmup=lo == 0)
            else:
                for i in todo:
                    point = oracle_point(
                        tasks[i],
                        jax.random.key(seed),
                        config,
                        contexts=contexts,
                        seeds=seeds,
                    )
                    found[i] = store_cached(directory, params[i], point.to_dict())
                    bar.update(warmup=i == todo[0])
        summaries = []
        for t, stored in zip(tasks, found):
            # the JSON form, fresh or cached alike, so a resumed map has the same numbers
            point = OraclePoint.from_dict(stored)
            summary = summary_of(point, criterion(point, t))
            if on_point is not None:
                on_point(summary)
            summaries.append(summary)
        return summaries

    points = run_many([(N, beta) for beta in beta_grid for N in N_grid])
    brackets = {}
    for b, beta in enumerate(beta_grid):
        ok = {
            N: s.ok
            for N, s in zip(N_grid, points[b * len(N_grid) : (b + 1) * len(N_grid)])
        }
        N_star, N_below = None, None
        # the boundary is where the conclusion holds from there on up: a grid N that passes
        # below one that fails is not yet the regime (Theorem 1 is a large-N statement)
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
                # the geometric midpoint: the threshold is linear in beta on a log N scale
                mid = int(round(math.sqrt(lo * hi)))
                if lo < mid < hi:
                    mids[beta] = mid
        if not mids:
            break
        for (beta, mid), s in zip(
            mids.items(), run_many([(mid, beta) for beta, mid in mids.items()])
        ):
            points.append(s)
            brackets[beta] = (
                [brackets[beta][0], mid] if s.ok else [mid, brackets[beta][1]]
            )
    boundary = tuple(
        BoundaryBracket(
            beta=beta,
            N_star=hi,
            N_below=lo,
            bracketed=hi is not None and lo is not None,
        )
        for beta, (lo, hi) in brackets.items()
    )
    return RegimeMap(
        points=tuple(points), boundary=boundary, fit=fit_log_threshold(boundary)
    )


def log_boundary(b: BoundaryBracket) -> float:
    """log of the boundary estimate: the geometric middle $\\sqrt{N^* N_{below}}$ of a bracket, or
    $\\log N^*$ when nothing below it failed."""
    if b.N_below is None:
        return math.log(b.N_star)
    return 0.5 * (math.log(b.N_star) + math.log(b.N_below))


def fit_log_threshold(boundary) -> LogThresholdFit | None:
    """Least-squares line $\\log N^* = a + b \\beta$ through the bracketed boundaries.

    Uses the geometric midpoint $\\sqrt{N^* N_{below}}$ of each bracket.

    **Arguments:**
    - `boundary`: `BoundaryBracket`s (one per beta).

    **Returns:** `LogThresholdFit(slope=b, intercept=a, n=count)`, or None with fewer than 2
    bracketed boundaries.
    """
    rows = [(b.beta, log_boundary(b)) for b in boundary if b.bracketed]
    if len(rows) < 2:
        return None
    x, y = np.array(rows).T
    slope, intercept = np.polyfit(x, y, 1)
    return LogThresholdFit(slope=float(slope), intercept=float(intercept), n=len(rows))
