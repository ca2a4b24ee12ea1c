"""A `train` run on disk: the checkpoint written after every chunk (the state a stopped run
resumes from) and the finished run's files, read back by `load_run`.

May import: `inductheory.internal`, `inductheory.model`, `inductheory.flow`, `._config`,
`._measures`, `._run`, `._seeds`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import equinox as eqx
import numpy as np

from ..flow._config import FlowConfig
from ..flow._sample import flow_sample
from ..internal._io import _atomic_write, write_json_atomic, write_npz_atomic
from ..model._task import Task, assumptions_silenced
from ._config import ModelConfig, TrainConfig
from ._measures import ModelMeasures
from ._run import TrainRun, TrainStatistics, TrainTimings
from ._seeds import _initial_models, _stack

CHECKPOINT, RESULT, STATISTICS, MODELS, MEASURES = (
    "checkpoint.eqx",
    "train.json",
    "statistics.npz",
    "models.eqx",
    "measures.npz",
)


@dataclasses.dataclass
class _State:
    """What a run changes as it steps: the steps done, every seed's trainable parameters and
    optimizer state, and the statistics buffers of the logged steps (what a checkpoint holds)."""

    done: int
    params: object
    opt_state: object
    buffers: dict


def _load_checkpoint(path: Path, state: _State) -> _State:
    """The state stored in the checkpoint at `path` (`_write_checkpoint`), shaped like `state`."""
    like = (np.zeros((), np.int64), state.params, state.opt_state, state.buffers)
    done, params, opt_state, buffers = eqx.tree_deserialise_leaves(path, like)
    return _State(
        int(done), params, opt_state, {k: np.array(v) for k, v in buffers.items()}
    )


def _write_checkpoint(path: Path, done: int, params, opt_state, buffers) -> None:
    """The state after `done` steps, in one file written atomically."""
    state = (np.asarray(done, np.int64), params, opt_state, buffers)
    _atomic_write(path, lambda tmp: eqx.tree_serialise_leaves(tmp, state))


def _write_result(directory: Path, run: TrainRun) -> None:
    write_npz_atomic(
        directory / STATISTICS, steps=run.steps, **run.statistics.to_dict()
    )
    _atomic_write(
        directory / MODELS,
        lambda tmp: eqx.tree_serialise_leaves(tmp, run.models),
    )
    write_npz_atomic(
        directory / MEASURES,
        **{
            f.name: np.asarray(getattr(run.measures, f.name))
            for f in dataclasses.fields(run.measures)
        },
    )
    # the record last: a directory with it holds a finished run
    write_json_atomic(directory / RESULT, run.to_dict())


def load_run(directory) -> TrainRun:
    """The finished `train` run written to `directory` (`train(..., out=directory)`).

    **Arguments:**
    - `directory`: the run's output directory.

    **Returns:** the `TrainRun`, with the final models of every seed and the held-out measures
    exactly as the run computed them.

    **Raises:** `ValueError` when `directory` holds no finished run.

    ```python
    train(task, ModelConfig(), TrainConfig(steps=100), 4, out="run")
    load_run("run").measures.key_offsets  # (4, H)
    ```
    """
    directory = Path(directory)
    missing = [
        n
        for n in (RESULT, STATISTICS, MODELS, MEASURES)
        if not (directory / n).is_file()
    ]
    if missing:
        raise ValueError(
            f"directory {str(directory)!r} holds no finished train run "
            f"(missing {', '.join(missing)})"
        )
    record = json.loads((directory / RESULT).read_text())
    with assumptions_silenced():  # the run was warned about when it trained
        task = Task(**record["task"])
    model_config = ModelConfig(**record["model_config"])
    config = TrainConfig(**record["train_config"])
    seeds, seed = int(record["seeds"]), int(record["seed"])
    geometry, _ = flow_sample(task, FlowConfig(dynamics="full", M=config.M), seed)
    like = _stack(_initial_models(task, model_config, config, seeds, seed, geometry))
    models = eqx.tree_deserialise_leaves(directory / MODELS, like)
    with np.load(directory / STATISTICS) as f:
        steps = f["steps"]
        statistics = TrainStatistics(
            **{k.name: f[k.name] for k in dataclasses.fields(TrainStatistics)}
        )
    with np.load(directory / MEASURES) as f:
        measures = ModelMeasures(**{k: f[k] for k in f.files})
    return TrainRun(
        task=task,
        model_config=model_config,
        train_config=config,
        seed=seed,
        seeds=seeds,
        M=record["summary"]["M"],
        steps=steps,
        statistics=statistics,
        measures=measures,
        models=models,
        timings=TrainTimings(**record["summary"]["timings"]),
    )


__all__ = ["load_run"]
