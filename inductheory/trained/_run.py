"""What a `train` run returns: its parameters, the statistics of the logged steps (`log_steps`),
the held-out measures, the final models and the timings, as typed records.

May import: `inductheory.internal`, `inductheory.model`, `._config`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..internal._io import library_version
from ..internal._records import field_values
from ..model._task import Task
from ._config import ModelConfig, TrainConfig


def log_steps(steps: int, log_points: int) -> np.ndarray:
    """The steps at which statistics are kept: 0, `log_points` log-spaced steps in [1, steps]
    (rounded; repeats dropped) and the last.

    **Example:** `log_steps(1000, 4)` is `[0, 1, 10, 100, 1000]`.
    """
    spaced = np.rint(np.geomspace(1, steps, log_points)).astype(np.int64)
    return np.unique(np.concatenate([[0], spaced, [steps]]))


@dataclasses.dataclass(frozen=True)
class TrainStatistics:
    """Statistics of every seed at the logged steps (numpy, leading axes (seeds, logged steps)),
    gate masses over the held-out contexts' windows (context, entry).

    - `loss` (seeds, n_log): the training loss at that step (the fixed sample's, the
      population's, or that step's fresh batch's).
    - `mass` (seeds, n_log, H, 2, W): mean gate mass per head, branch (key, value) and offset.
    - `worst` (seeds, n_log, H, 2, W): its minimum over the windows.
    - `static_offsets`, `avg_offsets` (seeds, n_log, H, 2): the effective offsets of
      `effective_offsets` (docs/theory.md §9).
    """

    loss: np.ndarray
    mass: np.ndarray
    worst: np.ndarray
    static_offsets: np.ndarray
    avg_offsets: np.ndarray

    def to_dict(self) -> dict:
        return field_values(self)


@dataclasses.dataclass(frozen=True)
class TrainTimings:
    """Wall times of a `train` run: the whole run, its first chunk (with compilation; None when
    resumed after the last chunk), and steps per second over the other chunks (None with one)."""

    wall_s: float
    first_chunk_s_including_compile: float | None
    steps_per_s: float | None
    devices: int


@dataclasses.dataclass(frozen=True)
class TrainRun:
    """The result of `train`: every parameter, the logged statistics, the held-out measures and
    the final models of every seed.

    - `task`, `model_config`, `train_config`, `seed`, `seeds`: the parameters.
    - `M`: contexts of the fixed sample (`batch="full"`; None otherwise).
    - `steps`: the logged steps (`log_steps`).
    - `statistics`: a `TrainStatistics`.
    - `measures`: the model's measures on the held-out contexts, each with a leading seed axis.
    - `models`: the final models, array leaves with a leading seed axis.
    - `timings`: a `TrainTimings`.
    """

    task: Task
    model_config: ModelConfig
    train_config: TrainConfig
    seed: int
    seeds: int
    M: int | None
    steps: np.ndarray
    statistics: TrainStatistics
    measures: object
    models: object
    timings: TrainTimings

    def parameters(self) -> dict:
        """Every parameter of the run (what an output directory is claimed with)."""
        return _parameters(
            self.task, self.model_config, self.train_config, self.seeds, self.seed
        )

    def to_dict(self) -> dict:
        """JSON-able: the parameters, the logged steps and statistics, per seed the held-out
        `key_offsets`, `value_offsets` and `phase_accuracy`, and a `summary` over seeds."""
        m = self.measures
        per_seed = {
            name: np.asarray(getattr(m, name))
            for name in ("key_offsets", "value_offsets", "phase_accuracy")
        }
        follows = np.asarray(m.value_follows_key)
        summary = dict(
            seeds=self.seeds,
            M=self.M,
            train_loss_mean=float(np.mean(self.statistics.loss[:, -1])),
            held_out_loss_mean=float(np.mean(np.asarray(m.loss))),
            mean_accuracy_mean=float(np.mean(np.asarray(m.mean_accuracy))),
            phase_gap_mean=float(np.mean(np.asarray(m.phase_gap))),
            value_follows_key_seeds=int(
                np.sum(np.all(follows.reshape(self.seeds, -1), axis=1))
            ),
            timings=dataclasses.asdict(self.timings),
        )
        return dict(
            self.parameters(),
            steps=self.steps,
            statistics=self.statistics.to_dict(),
            per_seed=per_seed,
            summary=summary,
        )


def _parameters(task, model_config, train_config, seeds, seed) -> dict:
    return dict(
        task=task.to_dict(),
        model_config=field_values(model_config),
        train_config=field_values(train_config),
        seeds=seeds,
        seed=seed,
        version=library_version(),
    )


__all__ = ["TrainRun", "TrainStatistics", "TrainTimings", "log_steps"]
