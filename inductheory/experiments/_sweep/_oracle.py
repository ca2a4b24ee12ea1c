"""The oracle sweep: Theorem 1 at every grid point, the oracle minimum against the best hard
selection."""

from __future__ import annotations

from typing import ClassVar

import jax
import numpy as np

from ...internal._lanes import padded_size, shard_lanes, stack_lanes
from ...internal._memory import oracle_bytes
from ...model._task import Task, _require_int
from ...oracle._minimize import OracleMinimizer
from ...oracle._point import (
    POINT_SCALARS,
    OraclePoint,
    config_dict,
    exact_oracle_points,
    oracle_point,
)
from ._checks import TASK_FIELDS, check_grid_points
from ._kind import AbstractSweepKind
from ._spec import _exact, _padded, _tasks

# The oracle's per-point scalars a sweep keeps: its numbers, then the realized eps.
_ORACLE_SCALARS = tuple(
    k for k in POINT_SCALARS if k not in ("eps", "dim", "n_contexts", "seeds")
) + ("eps",)


class OracleSweep(AbstractSweepKind):
    """Theorem 1 at every grid point: the oracle minimum against the best hard selection.

    At each task $p$: `oracle_point` under an `OracleMinimizer` (`contexts` contexts, the
    `vertex_starts` best vertices as extra starts, PRNG seed `seed`): the best loss found, the
    best vertex loss, their gap, whether the minimizer is a (distinct) hard selection, and the
    offsets of each context's minimizer. Grid: task fields. Under exact geometry with one context
    the points of a block run as one vectorized program; otherwise every point is its own block.

    ```python
    ds = sweep("oracle", Task(L=4, S=4, H=2, N=1024), {"beta": [4, 8]},
               config=OracleMinimizer(restarts=8))
    ```
    """

    name: ClassVar[str] = "oracle"
    description: ClassVar[str] = "oracle minimum vs hard selections (Theorem 1)"
    grid_names: ClassVar[tuple[str, ...]] = TASK_FIELDS
    variables: ClassVar[dict[str, tuple[str, ...]]] = {
        **{name: () for name in _ORACLE_SCALARS},
        "offsets": ("context", "head", "block"),
    }
    labels: ClassVar[dict[str, tuple[str, ...]]] = {}
    point_keys: ClassVar[tuple[str, ...]] = _ORACLE_SCALARS + ("offsets",)
    table_keys: ClassVar[tuple[str, ...]] = (
        "best_loss",
        "best_vertex_loss",
        "gap",
        "hard_selection",
        "distinct_heads",
    )

    def prepare(self, task, *, config, gates, seeds, contexts, vertex_starts):
        config = OracleMinimizer() if config is None else config
        if not isinstance(config, OracleMinimizer):
            raise ValueError(
                f"config must be an OracleMinimizer for sweep('oracle'), got "
                f"{type(config).__name__}"
            )
        settings = config_dict(config)
        extra = {
            "contexts": _require_int("contexts", contexts, 1),
            "vertex_starts": _require_int("vertex_starts", vertex_starts, 0),
        }
        return settings, extra, 0

    def check_points(self, task, grid, config):
        check_grid_points(task, grid)

    def default_block(self, grid, seeds):
        # one point per device: more only lengthen the vectorized searches
        return padded_size(1)

    def looped_names(self, spec):
        return () if _exact(spec) else tuple(spec.grid)

    def block_points(self, spec):
        return 1 if self.looped_names(spec) else spec.block

    def compute_block(self, spec, points):
        results = self._results(spec, _tasks(spec, points))
        arrays = {
            k: np.array([getattr(r, k) for r in results]) for k in _ORACLE_SCALARS
        }
        arrays["offsets"] = np.array([[c.offsets for c in r.contexts] for r in results])
        return arrays

    def _results(self, spec, tasks: list[Task]) -> list[OraclePoint]:
        """The `OraclePoint` of every task: the one place that calls the oracle."""
        config = OracleMinimizer(**spec.settings)
        contexts, vertex_starts = spec.extra["contexts"], spec.extra["vertex_starts"]
        key = jax.random.key(spec.seed)
        if tasks[0].exact and contexts == 1:
            padded = _padded(tasks, padded_size(spec.block))
            keys = np.stack([np.asarray(jax.random.key_data(key))] * len(padded))
            return exact_oracle_points(
                shard_lanes(stack_lanes(padded)),
                shard_lanes(keys),
                config,
                seeds=vertex_starts,
                template=tasks[0],
            )[: len(tasks)]
        return [
            oracle_point(t, key, config, contexts=contexts, seeds=vertex_starts)
            for t in tasks
        ]

    def block_bytes(self, spec):
        t = spec.task
        one = oracle_bytes(
            N=max(spec.grid.get("N", [t["N"]])),
            L=t["L"],
            S=t.get("W", t["S"]),
            H=t["H"],
            restarts=spec.settings["restarts"],
            vertex_starts=spec.extra["vertex_starts"],
            contexts=spec.extra["contexts"],
            eps=t.get("eps"),
            d=t.get("d"),
            windowed=_tasks(spec, [{}])[0].windowed,
            tied=spec.settings["tied"],
        )
        # exact geometry, one context: the block's points are one vectorized program
        vectorized = _exact(spec) and spec.extra["contexts"] == 1
        points = padded_size(self.block_points(spec)) if vectorized else 1
        return one.scaled(points)

    def coordinates(self, spec):
        return {}

    def attributes(self, spec):
        return {}


__all__ = [
    "OracleSweep",
]
