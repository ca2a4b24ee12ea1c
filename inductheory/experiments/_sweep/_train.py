"""The train sweep: the compressed model trained from many seeds at every grid point."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ...internal._records import field_values
from ...model._task import SEEDS_MAX, Task, _require_int, assumptions_silenced
from ...trained._config import ModelConfig, TrainConfig
from ...trained._train import train
from .._flows import independent_distinct_baseline
from .._training import BRANCHES, summarize_training, train_bytes
from ._checks import TASK_FIELDS, PointChecks, check_grid_points
from ._kind import AbstractSweepKind
from ._spec import _split, _tasks

# The `TrainConfig` fields a train sweep's grid may set (the rest set programs or shapes).
TRAIN_FIELDS = ("rho", "lr")


def _train_configs(config) -> tuple[ModelConfig, TrainConfig]:
    """`(model_config, train_config)` of the `config` of a train sweep: a `TrainConfig` (the
    model at the theorem's setting), a pair of both, or None (every default)."""
    if config is None:
        return ModelConfig(), TrainConfig()
    if isinstance(config, TrainConfig):
        return ModelConfig(), config
    if (
        isinstance(config, tuple)
        and len(config) == 2
        and isinstance(config[0], ModelConfig)
        and isinstance(config[1], TrainConfig)
    ):
        return config
    raise ValueError(
        "config must be a TrainConfig or a pair (ModelConfig, TrainConfig) for "
        f"sweep('train'), got {type(config).__name__}"
    )


class TrainSweep(AbstractSweepKind):
    """The compressed model trained from `seeds` seeds at every grid point (`train`).

    At each point $p$ (a task, the model's switches and a `TrainConfig`): `train` of seeds
    $0..s-1$ under base seed `seed` (a seed's numbers do not depend on the grid), its per-seed
    held-out measures and the fractions of `summarize_training`. Grid: task fields, the initial
    radius `rho` and the learning rate `lr`. Every point is one `train` call (its seeds vmapped;
    runs of equal settings share their compiled programs), a block of points runs them in turn.

    ```python
    ds = sweep("train", Task(L=4, S=3, H=2, N=48), {"lr": [0.25, 0.5]},
               config=(ModelConfig(), TrainConfig(steps=200, M=48)), seeds=8)
    ```
    """

    name: ClassVar[str] = "train"
    description: ClassVar[str] = (
        "the compressed model trained with optax, many seeds per point"
    )
    grid_names: ClassVar[tuple[str, ...]] = TASK_FIELDS + TRAIN_FIELDS
    variables: ClassVar[dict[str, tuple[str, ...]]] = {
        "key_offsets": ("seed", "head"),
        "value_offsets": ("seed", "head"),
        "argmax_mass": ("seed", "head", "branch"),
        "phase_accuracy": ("seed", "phase"),
        "final_loss": ("seed",),
        "held_out_loss": ("seed",),
        "value_is_key_plus_one_fraction": (),
        "distinct_fraction": (),
        "mean_accuracy": (),
        "phase_gap": (),
    }
    labels: ClassVar[dict[str, tuple[str, ...]]] = {}
    point_keys: ClassVar[tuple[str, ...]] = (
        "key_offsets",
        "value_offsets",
        "phase_accuracy",
        "final_loss",
        "value_is_key_plus_one_fraction",
        "distinct_fraction",
        "mean_accuracy",
        "phase_gap",
    )
    table_keys: ClassVar[tuple[str, ...]] = (
        "value_is_key_plus_one_fraction",
        "distinct_fraction",
        "mean_accuracy",
        "phase_gap",
    )

    def prepare(self, task, *, config, gates, seeds, contexts, vertex_starts):
        model_config, train_config = _train_configs(config)
        seeds = _require_int("seeds", seeds, 1, SEEDS_MAX)
        settings = {
            "model_config": field_values(model_config),
            "train_config": field_values(train_config),
        }
        return settings, {}, seeds

    def check_points(self, task, grid, config):
        check_grid_points(task, grid)
        settings = field_values(_train_configs(config)[1])
        checks = PointChecks()
        for name in TRAIN_FIELDS:
            for v in grid.get(name, ()):
                checks.attempt(
                    {name: v}, lambda n=name, v=v: TrainConfig(**{**settings, n: v})
                )
        checks.warn()
        # `train` draws the full flow's balanced sample whatever its batch
        T = task.L * task.S
        for n in grid.get("N", [int(task.N)]):
            if n % T:
                where = f"grid point N={n!r}: " if "N" in grid else ""
                raise ValueError(
                    f"{where}balanced samples need L*S = {T} to divide N = {n}"
                )

    def default_block(self, grid, seeds):
        return 1  # one train call per block: each finished point is stored at once

    def looped_names(self, spec):
        return ()

    def block_points(self, spec):
        return spec.block

    def _configs(self, spec, point) -> tuple[ModelConfig, TrainConfig]:
        train_config = {**spec.settings["train_config"], **_split(point)[1]}
        return ModelConfig(**spec.settings["model_config"]), TrainConfig(**train_config)

    def compute_block(self, spec, points):
        runs = []
        for task, point in zip(_tasks(spec, points), points):
            model_config, train_config = self._configs(spec, point)
            runs.append(
                train(task, model_config, train_config, spec.seeds, seed=spec.seed)
            )
        summaries = [summarize_training(r) for r in runs]
        stack = lambda get: np.stack([np.asarray(get(r)) for r in runs])
        return {
            "key_offsets": stack(lambda r: r.measures.key_offsets),
            "value_offsets": stack(lambda r: r.measures.value_offsets),
            "argmax_mass": stack(lambda r: r.measures.argmax_mass),
            "phase_accuracy": stack(lambda r: r.measures.phase_accuracy),
            "final_loss": stack(lambda r: r.statistics.loss[:, -1]),
            "held_out_loss": stack(lambda r: r.measures.loss),
            "value_is_key_plus_one_fraction": np.array(
                [s.value_follows_key_share for s in summaries]
            ),
            "distinct_fraction": np.array([s.distinct_share for s in summaries]),
            "mean_accuracy": np.array([s.mean_accuracy_mean for s in summaries]),
            "phase_gap": np.array([s.phase_gap_mean for s in summaries]),
        }

    def block_bytes(self, spec):
        # the points of a block are trained one after the other: the largest N's run
        N = max(spec.grid.get("N", [spec.task["N"]]))
        with assumptions_silenced():
            task = Task(**{**spec.task, "N": N})
        return train_bytes(task, *self._configs(spec, {}), spec.seeds)

    def coordinates(self, spec):
        return {"seed": range(spec.seeds), "branch": list(BRANCHES)}

    def attributes(self, spec):
        return {
            "distinct_baseline_independent_uniform": independent_distinct_baseline(
                spec.task["H"],
                spec.task.get("W", spec.task["S"]),
                spec.settings["model_config"]["tied"],
            )
        }


__all__ = [
    "TrainSweep",
]
