"""The flow sweep: gradient flows (Theorem 2) of many seeds at every grid point."""

from __future__ import annotations

import math
import numbers
from typing import ClassVar

import numpy as np

from ...flow._config import (
    TRACED_FIELDS as FLOW_FIELDS,
    Dynamics,
    FlowConfig,
    check_flow,
)
from ...flow._solution import STATUSES, Status
from ...internal._lanes import padded_size, stack_lanes
from ...internal._memory import flow_bytes
from ...model._gates import value_follows_key
from ...model._task import SEEDS_MAX, Task, assumptions_silenced
from .._flows import (
    flow_sample,
    independent_distinct_baseline,
    run_lanes,
    sample_size,
    seed_keys,
    selected_distinct_fraction,
)
from ._checks import TASK_FIELDS, check_grid_points
from ._kind import AbstractSweepKind
from ._spec import _exact, _padded, _split, _tasks

# Most lanes (points x seeds) of a flow sweep's default block.
FLOW_LANES = 4096


class FlowSweep(AbstractSweepKind):
    """Gradient flows (Theorem 2) of `seeds` seeds at every grid point.

    At each point $p$ (a task and a `FlowConfig`): the flows of seeds $0..s-1$ (the keys of
    `run_flow`, so a seed's numbers do not depend on the grid), each seed's selected offsets,
    status and final state, and the across-seed fractions (selected, distinct, value = key + 1).
    Grid: task fields and the traced `FlowConfig` fields. The full dynamics loop over N (and
    kappa under an approximate geometry), which set the sample's shape.

    ```python
    ds = sweep("flow", Task(L=8, S=4, H=2, N=4096), {"rho": [0.05, 0.2]},
               config=FlowConfig(), seeds=64)
    ```
    """

    name: ClassVar[str] = "flow"
    description: ClassVar[str] = "gradient flows (Theorem 2), many seeds per point"
    grid_names: ClassVar[tuple[str, ...]] = TASK_FIELDS + FLOW_FIELDS
    variables: ClassVar[dict[str, tuple[str, ...]]] = {
        "selected": ("seed", "head"),
        "key_offsets": ("seed", "head"),
        "value_offsets": ("seed", "head"),
        "reduced_selected": ("seed", "head"),
        "status": ("seed",),
        "t_final": ("seed",),
        "final_loss": ("seed",),
        "final_mass": ("seed", "head", "branch", "offset"),
        "num_steps": ("seed",),
        "selected_fraction": (),
        "distinct_fraction": (),
        "value_is_key_plus_one_fraction": (),
    }
    labels: ClassVar[dict[str, tuple[str, ...]]] = {"status": STATUSES}
    point_keys: ClassVar[tuple[str, ...]] = (
        "key_offsets",
        "value_offsets",
        "selected",
        "status",
        "t_final",
        "distinct_fraction",
        "selected_fraction",
        "value_is_key_plus_one_fraction",
    )
    table_keys: ClassVar[tuple[str, ...]] = (
        "distinct_fraction",
        "selected_fraction",
        "value_is_key_plus_one_fraction",
    )

    def prepare(self, task, *, config, gates, seeds, contexts, vertex_starts):
        config = FlowConfig() if config is None else config
        if not isinstance(config, FlowConfig):
            raise ValueError(
                f"config must be a FlowConfig for sweep('flow'), got {type(config).__name__}"
            )
        check_flow(task, config)
        if (
            isinstance(seeds, bool)
            or not isinstance(seeds, numbers.Integral)
            or seeds < 1
        ):
            raise ValueError(f"seeds must be an integer >= 1, got {seeds!r}")
        if seeds > SEEDS_MAX:
            raise ValueError(f"seeds must be <= {SEEDS_MAX}, got {seeds}")
        return config.to_dict(), {}, int(seeds)

    def check_points(self, task, grid, config):
        check_grid_points(task, grid, FlowConfig() if config is None else config)

    def default_block(self, grid, seeds):
        # up to FLOW_LANES lanes per call, but no more points than the grid holds (rounded up
        # to a power of two, so nearby grid sizes share a program): small sweeps pay no padding
        n_points = math.prod(len(v) for v in grid.values())
        return min(max(1, FLOW_LANES // seeds), 1 << (n_points - 1).bit_length())

    def looped_names(self, spec):
        if Dynamics(spec.settings["dynamics"]) is not Dynamics.FULL:
            return ()
        return ("N",) if _exact(spec) else ("N", "kappa")

    def block_points(self, spec):
        return spec.block

    def compute_block(self, spec, points):
        n, seeds = len(points), spec.seeds
        padded = _padded(points, spec.block)
        tasks = _tasks(spec, padded)
        with assumptions_silenced():  # said once for the grid by `check_grid_points`
            configs = [FlowConfig(**{**spec.settings, **_split(p)[1]}) for p in padded]
        out = self._lanes(spec, tasks, configs)
        shape = lambda a: a.reshape((len(padded), seeds) + a.shape[1:])[:n]
        selected = shape(out["selected"])
        status = shape(out["status"])
        arrays = {
            "selected": selected,
            "key_offsets": shape(out["key_offsets"]),
            "value_offsets": shape(out["value_offsets"]),
            "status": status,
            "t_final": shape(out["t_final"]),
            "final_loss": shape(out["final"]["loss"]),
            "final_mass": shape(out["final"]["mass"]),
            "num_steps": shape(out["num_steps"]),
            "selected_fraction": np.mean(status == Status.SELECTED, axis=1),
            "distinct_fraction": np.array(
                [selected_distinct_fraction(s, st) for s, st in zip(selected, status)]
            ),
        }
        arrays["value_is_key_plus_one_fraction"] = np.mean(
            value_follows_key(arrays["key_offsets"], arrays["value_offsets"]),
            axis=1,
        )
        if "reduced_selected" in out:
            arrays["reduced_selected"] = shape(out["reduced_selected"])
        return arrays

    def _lanes(self, spec, tasks: list[Task], configs: list[FlowConfig]) -> dict:
        """`run_lanes` of every (point, seed) lane, as a dict of arrays (lanes point-major):
        the one call into the flow runner."""
        seeds = spec.seeds
        shared = (None, None)
        if Dynamics(spec.settings["dynamics"]) is Dynamics.FULL:
            shared = flow_sample(tasks[0], configs[0], spec.seed)
        keys = np.asarray(seed_keys(spec.seed, np.arange(seeds)))
        lane_tasks = stack_lanes([t for t in tasks for _ in range(seeds)])
        lane_configs = stack_lanes([c for c in configs for _ in range(seeds)])
        lane_keys = np.tile(keys, (len(tasks), 1))
        return run_lanes(lane_tasks, lane_configs, lane_keys, shared)

    def block_bytes(self, spec):
        t, config = spec.task, FlowConfig(**spec.settings)
        N = max(spec.grid.get("N", [t["N"]]))
        lanes = padded_size(self.block_points(spec) * spec.seeds)
        M = config.M
        if config.dynamics is Dynamics.FULL and N % t["L"] == 0:
            M = sample_size(_tasks(spec, [{"N": N}])[0], config)
        return flow_bytes(
            dynamics=config.dynamics,
            N=N,
            L=t["L"],
            S=t.get("W", t["S"]),
            H=t["H"],
            M=M,
            seeds=lanes,
            chunk=lanes,  # every lane of a block is integrated at once
            n_save=config.n_save,
            eps=t.get("eps"),
            d=t.get("d"),
            batch_size=config.batch_size,
        )

    def coordinates(self, spec):
        return {"seed": range(spec.seeds), "branch": ["key", "value"]}

    def attributes(self, spec):
        return {
            "distinct_baseline_independent_uniform": independent_distinct_baseline(
                spec.task["H"],
                spec.task.get("W", spec.task["S"]),  # to_dict omits W at its default, S
                spec.settings.get("tied", False),
            )
        }


__all__ = [
    "FlowSweep",
]
