"""Theorem 1 measured at one task: the oracle optimum against the best hard selection.

For a task, `oracle_point` minimizes the per-context loss over the oracle class
(`minimize_oracle`) in M contexts, enumerates the hard selections of each (`best_vertex`),
and reports whether the global minimizer found is a hard selection with distinct heads and by
how much it beats the best vertex (the regime map over a grid is `inductheory.experiments`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..internal._lanes import lane, stack_lanes
from ..internal._progress import Progress
from ..internal._records import field_values
from ..model._contexts import sample_contexts
from ..model._geometry import ExactGeometry, make_geometry
from ..model._loss import context_loss
from ..model._task import Task, quiet_task
from ._minimize import (
    OracleMinimizer,
    OracleResult,
    classify,
    context_geometry,
    descend,
    minimize_oracle,
    oracle_result,
    starts,
)
from ._vertices import VertexResult, best_vertex, vertex_configs, vertex_gates


def config_dict(config: OracleMinimizer) -> dict:
    """Every setting of an `OracleMinimizer`, for JSON and cache keys."""
    return field_values(config)


@dataclasses.dataclass(frozen=True)
class ContextRecord:
    """One context of an `oracle_point`: the best point found against the best hard selection.

    **Fields:**
    - `best_loss`: the lower of `minimizer_loss` and `best_vertex_loss`.
    - `minimizer_loss`: the local searches' best; `minimizer_failed`: it ended above the best
      vertex (which then is the point classified).
    - `best_random_loss`: the best of the random starts only.
    - `best_vertex_loss`: the best hard selection's loss.
    - `gap`: `best_vertex_loss - best_loss` (>= 0); `beats_vertex`: larger than the tolerance.
    - `hard_selection`, `distinct_heads`: the classification of the best point.
    - `offsets`, `vertex_offsets`: its offsets and the best vertex's (H, L).
    - `fw_gap`: the Frank-Wolfe gap at the minimizer's point.
    - `share_starts_hard`: share of the starts that ended at a hard selection.
    - `key_gates`, `value_gates`: the best point's gates (H, L, W).
    - `vertex_method`, `n_vertices`: how the vertices were enumerated, and how many.
    """

    best_loss: float
    minimizer_loss: float
    minimizer_failed: bool
    best_random_loss: float
    best_vertex_loss: float
    gap: float
    beats_vertex: bool
    hard_selection: bool
    distinct_heads: bool
    offsets: Any
    vertex_offsets: Any
    fw_gap: float
    share_starts_hard: float
    key_gates: Any
    value_gates: Any
    vertex_method: str
    n_vertices: int

    def to_dict(self) -> dict:
        """The fields as a dict, the gates as `gates: {"key", "value"}`."""
        out = {}
        for f in dataclasses.fields(self):
            if f.name == "key_gates":
                out["gates"] = {"key": self.key_gates, "value": self.value_gates}
            elif f.name != "value_gates":
                out[f.name] = getattr(self, f.name)
        return out

    @classmethod
    def from_dict(cls, record: dict) -> ContextRecord:
        """The record of `to_dict()` (or its JSON form, as read back from a cache)."""
        fields = {k: v for k, v in record.items() if k != "gates"}
        return cls(
            **fields,
            key_gates=record["gates"]["key"],
            value_gates=record["gates"]["value"],
        )


@dataclasses.dataclass(frozen=True)
class OracleSummary:
    """The scalars of Theorem 1 at one task, without per-context records: what an
    `OraclePoint` and a regime map's `RegimePoint` share.

    **Fields:**
    - `task`: the task.
    - `eps`, `dim`: the realized geometry error and dimension.
    - `n_contexts`: contexts M; `seeds`: best vertices also used as starts.
    - `best_loss`, `best_vertex_loss`: means over contexts of the per-context optimum and best
      vertex loss.
    - `gap`: largest best-vertex-minus-optimum over contexts (>= 0).
    - `hard_selection`, `distinct_heads`: in every context.
    - `share_hard`, `share_hard_distinct`, `share_beats_vertex`, `share_minimizer_failed`: shares
      of the contexts.
    - `max_fw_gap`: largest Frank-Wolfe gap over contexts.
    """

    task: Task
    eps: float
    dim: int
    n_contexts: int
    seeds: int
    best_loss: float
    best_vertex_loss: float
    gap: float
    hard_selection: bool
    distinct_heads: bool
    share_hard: float
    share_hard_distinct: float
    share_beats_vertex: float
    max_fw_gap: float
    share_minimizer_failed: float

    def to_dict(self) -> dict:
        """`task` (its `to_dict()`) and the scalars, in field order."""
        return {
            "task": self.task.to_dict(),
            **{k: getattr(self, k) for k in POINT_SCALARS},
        }


# The scalar fields after the task, in the order of the dicts.
POINT_SCALARS = tuple(f.name for f in dataclasses.fields(OracleSummary))[1:]


@dataclasses.dataclass(frozen=True)
class OraclePoint(OracleSummary):
    """Theorem 1 at one task (`oracle_point`): the oracle optimum against the best hard selection.

    **Fields:** those of `OracleSummary`, and `contexts`: the per-context records
    (`ContextRecord`).

    ```python
    point = oracle_point(Task(L=4, S=3, H=2, N=4096, beta=2.0), jax.random.key(0))
    point.hard_selection, point.contexts[0].offsets
    same = OraclePoint.from_dict(json.loads(to_json(point.to_dict())))
    ```
    """

    contexts: tuple[ContextRecord, ...]

    def to_dict(self) -> dict:
        """`task` (its `to_dict()`), the scalars and `contexts` (a list of record dicts)."""
        return {
            **super().to_dict(),
            "contexts": [c.to_dict() for c in self.contexts],
        }

    @classmethod
    def from_dict(cls, point: dict) -> OraclePoint:
        """The point of `to_dict()` or of its JSON form (a cache entry), values as given.

        **Arguments:**
        - `point`: the dict, with `task` as `Task.to_dict()`.

        **Returns:** an `OraclePoint`; `from_dict(p).to_dict() == p`.
        """
        return cls(
            task=quiet_task(**point["task"]),
            **{k: point[k] for k in POINT_SCALARS},
            contexts=tuple(ContextRecord.from_dict(c) for c in point["contexts"]),
        )


def oracle_point(
    task: Task,
    key,
    config: OracleMinimizer = OracleMinimizer(),
    *,
    contexts: int = 1,
    seeds: int = 8,
    tolerance: float = 1e-9,
    progress: bool = False,
) -> OraclePoint:
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
    - `progress`: show a `Progress` line of the contexts done on stderr.

    **Returns:** an `OraclePoint` (`to_dict()` for JSON): `best_loss` (mean over contexts of the
    per-context minimum), `best_vertex_loss`, `gap` (largest best-vertex-minus-optimum over
    contexts, >= 0; a local search that ends above the best vertex is replaced by that vertex and
    flagged in `minimizer_failed` / `share_minimizer_failed`), `hard_selection` /
    `distinct_heads` (in every context), `share_hard`, `share_hard_distinct`,
    `share_beats_vertex`, the realized `eps`, and per-context records (`contexts`,
    `ContextRecord`) with losses, offsets and gates.

    ```python
    oracle_point(Task(L=4, S=3, H=2, N=4096, beta=2.0), jax.random.key(0)).hard_selection
    ```
    """
    if contexts < 1:
        raise ValueError(f"contexts must be >= 1, got {contexts}")
    if seeds < 0:
        raise ValueError(f"seeds must be >= 0 (vertex starts), got {seeds}")
    starts_each = f"{config.restarts} random + {seeds} vertex starts per context"
    bar = Progress(contexts, "oracle contexts", enabled=progress)
    bar.note(f"vertices, then {starts_each}")
    if task.exact and contexts == 1:
        # every context is equivalent under exact geometry: the compiled batched path, one point
        with bar:
            point = exact_oracle_points(
                stack_lanes([task]),
                jnp.asarray(jax.random.key_data(key))[None],
                config,
                seeds=seeds,
                tolerance=tolerance,
                template=task,
            )[0]
            bar.update(note=starts_each)
        return point
    k_geo, k_ctx, k_min = jax.random.split(key, 3)
    geometry = make_geometry(task, k_geo)
    tokens_all = sample_contexts(k_ctx, task, contexts)
    records = []
    with bar:
        for m in range(contexts):
            tokens = tokens_all[m]
            geo = context_geometry(geometry, tokens)
            vertex = best_vertex(task, geo, tokens, k=max(seeds, 1), tied=config.tied)
            res = minimize_oracle(
                task,
                geo,
                tokens,
                jax.random.fold_in(k_min, m),
                config,
                seeds=vertex.top_offsets[:seeds] if seeds else None,
            )
            records.append(context_record(task, config, res, vertex, tolerance))
            # the ETA: the rate after the first context, which compiles
            bar.update(note=starts_each, warmup=m == 0)
    return point_summary(task, geometry, records, seeds)


@eqx.filter_jit
def _exact_points(
    tasks: Task, keys, config: OracleMinimizer, geometry, configs, seeds: int
):
    def one(task, key_data):
        _, _, k_min = jax.random.split(jax.random.wrap_key_data(key_data), 3)
        tokens = jnp.arange(task.L * task.S).reshape(
            task.L, task.S
        )  # the exact path never reads tokens
        losses = jax.lax.map(
            lambda r: context_loss(
                task, geometry, vertex_gates(task.W, r, config.tied), tokens
            ),
            configs,
            batch_size=min(4096, configs.shape[0]),
        )
        order = jnp.argsort(losses, stable=True)[: max(seeds, 1)]
        z0 = starts(
            jax.random.fold_in(k_min, 0),
            task,
            config,
            configs[order[:seeds]] if seeds else None,
        )
        return losses[order], order, descend(task, geometry, tokens, z0, config)

    return jax.vmap(one)(tasks, keys)


def exact_oracle_points(
    tasks: Task,
    keys,
    config: OracleMinimizer = OracleMinimizer(),
    *,
    seeds: int = 8,
    tolerance: float = 1e-9,
    template: Task,
) -> list[OraclePoint]:
    """`oracle_point` of many exact-geometry tasks at once (one context each), vmapped.

    Under exact geometry one context is the population problem; the vertex enumeration, the seeded
    starts and the local searches of every point run as one compiled, vectorized program that
    depends only on the static part (L, S, H, the minimizer's settings, the number of points).

    **Arguments:**
    - `tasks`: validated exact-geometry tasks stacked along a leading axis (`stack_lanes`).
    - `keys`: raw PRNG key data, one row per point (the key of `oracle_point`).
    - `config`, `seeds`, `tolerance`: as in `oracle_point`.
    - `template`: one of the tasks, as concrete numbers (the shape and the geometry kind).

    **Returns:** one `OraclePoint` per point.
    """
    template.require_exact("exact_oracle_points")
    # The exact path reads neither the geometry's N nor its kappa (both cancel,
    # docs/theory.md §4); a fixed
    # placeholder keeps N, which is static in `ExactGeometry`, out of the compiled program's key.
    geometry = ExactGeometry(template.L * template.S, 1.0)
    configs, method = vertex_configs(template, geometry, tied=config.tied)
    top_losses, order, end = jax.device_get(
        _exact_points(
            tasks, jnp.asarray(keys), config, geometry, jnp.asarray(configs), seeds
        )
    )
    points = []
    for i in range(len(keys)):
        task = lane(tasks, i)
        top = configs[order[i]]
        vertex = VertexResult(
            loss=float(top_losses[i][0]),
            offsets=top[0],
            top_offsets=top,
            top_losses=np.asarray(top_losses[i]),
            n_evaluated=len(configs),
            method=method,
        )
        res = oracle_result(jax.tree.map(lambda x, i=i: x[i], end), config)
        points.append(
            point_summary(
                task,
                geometry,
                [context_record(task, config, res, vertex, tolerance)],
                seeds,
            )
        )
    return points


def context_record(
    task: Task,
    config: OracleMinimizer,
    res: OracleResult,
    vertex: VertexResult,
    tolerance: float,
) -> ContextRecord:
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
    return ContextRecord(
        best_loss=best,
        minimizer_loss=res.loss,
        minimizer_failed=bool(failed),
        best_random_loss=res.best_random_loss,
        best_vertex_loss=vertex.loss,
        gap=gap,
        beats_vertex=bool(gap > slack),
        hard_selection=hard,
        distinct_heads=distinct,
        offsets=offsets,
        vertex_offsets=vertex.offsets,
        fw_gap=res.fw_gap,
        share_starts_hard=float(np.mean(res.start_hard)),
        key_gates=gates.key,
        value_gates=gates.value,
        vertex_method=vertex.method,
        n_vertices=vertex.n_evaluated,
    )


def point_summary(
    task: Task, geometry, records: list[ContextRecord], seeds: int
) -> OraclePoint:
    """The `OraclePoint` of a task from its per-context records."""
    hard = np.array([r.hard_selection for r in records])
    distinct = np.array([r.distinct_heads for r in records])
    return OraclePoint(
        task=task,
        eps=float(geometry.eps),
        dim=int(task.N) + 1 if task.exact else int(geometry.dim),
        n_contexts=len(records),
        seeds=seeds,
        best_loss=float(np.mean([r.best_loss for r in records])),
        best_vertex_loss=float(np.mean([r.best_vertex_loss for r in records])),
        gap=float(max(r.gap for r in records)),
        hard_selection=bool(hard.all()),
        distinct_heads=bool(distinct.all()),
        share_hard=float(hard.mean()),
        share_hard_distinct=float(distinct.mean()),
        share_beats_vertex=float(np.mean([r.beats_vertex for r in records])),
        max_fw_gap=float(max(r.fw_gap for r in records)),
        share_minimizer_failed=float(np.mean([r.minimizer_failed for r in records])),
        contexts=tuple(records),
    )
