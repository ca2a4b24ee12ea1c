"""The trained runs of the figures trained_effective_offsets and previous_token: the paper
protocol's rungs at W8/S8, and for the previous-token question each rung with one and with two
layers (the variants the protocol lacks are defined here from its rungs)."""

from __future__ import annotations

import dataclasses

from ..experiments._ladder import Rung, ladder_rungs
from ..model._task import quiet_task
from ..trained._train import TrainRun
from . import _runs

# provisional: the ladder's small task, every query in the loss
TASK = dict(L=4, S=3, H=2, N=48, gamma=1.0, beta=4.0, kappa=1.0)
FULL, QUICK = (32, 400), (4, 200)
RUNGS = {"theorem": "theorem", "realistic": "cumulative:layers"}


def _rung(name: str, quick: bool) -> Rung:
    steps = (QUICK if quick else FULL)[1]
    rungs = {r.name: r for r in ladder_rungs(quick_task(), steps=steps)}
    r = rungs[RUNGS[name]]
    return dataclasses.replace(
        r, task=quiet_task(**{**r.task.to_dict(), "queries": "all"})
    )


def quick_task():
    return quiet_task(**TASK)


def _train(rung: Rung, quick: bool, cache_dir, label: str) -> TrainRun:
    seeds = (QUICK if quick else FULL)[0]
    return _runs.trained_run(
        rung.task, rung.model_config, rung.train_config, seeds, cache_dir, label=label
    )


def rung_run(name: str, quick: bool, cache_dir) -> TrainRun:
    """The run of the protocol's rung `name` ("theorem" or "realistic")."""
    return _train(_rung(name, quick), quick, cache_dir, f"the {name} rung")


def with_layers(rung: Rung, layers: int) -> Rung:
    """`rung` with `layers` layers, every other switch as it is."""
    config = dataclasses.replace(rung.model_config, layers=layers)
    return dataclasses.replace(rung, model_config=config)


def layer_pairs(quick: bool, cache_dir) -> list[tuple[str, TrainRun, TrainRun]]:
    """Per rung `(name, one-layer run, two-layer run)`: the theorem rung and the theorem rung
    with two layers; the realistic rung (two layers) and the same with one layer."""
    pairs = []
    for name in RUNGS:
        rung = _rung(name, quick)
        runs = {}
        for layers in (1, 2):
            if rung.model_config.layers == layers:
                runs[layers] = rung_run(name, quick, cache_dir)
            else:
                runs[layers] = _train(
                    with_layers(rung, layers),
                    quick,
                    cache_dir,
                    f"the {name} rung with {layers} layer(s)",
                )
        pairs.append((name, runs[1], runs[2]))
    return pairs


def parameters(quick: bool) -> dict:
    seeds, steps = QUICK if quick else FULL
    return {
        "task": ", ".join(f"{k}={v}" for k, v in TASK.items()) + ", queries=all",
        "training": f"{seeds} seeds per arm, {steps} steps (the ladder's rungs)",
    }
