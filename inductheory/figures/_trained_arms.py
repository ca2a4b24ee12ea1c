"""The trained runs of the figures trained_effective_offsets and previous_token: the paper
protocol's rungs at W8/S8 (`_trained.paper_run`, shared with the other trained-model figures),
and for the previous-token question each rung with one and with two layers (the variant the
protocol lacks is defined here from its rung, trained through `_runs.trained_run`)."""

from __future__ import annotations

import dataclasses

from ..experiments._ladder import Rung
from ..trained._train import TrainRun
from . import _runs, _trained

# The protocol's setting these figures train at.
SETTING = "W8/S8"
# The protocol's rungs, in the figures' order.
RUNGS = ("theorem", "realistic")


def _rung(name: str, quick: bool) -> Rung:
    s = _trained.paper_setting(SETTING)
    return _trained.paper_rung(
        name, _trained.paper_task(s.S, s.W, quick=quick), quick=quick
    )


def rung_run(name: str, quick: bool, cache_dir) -> TrainRun:
    """The protocol's run of rung `name` at `SETTING` (shared with the other figures)."""
    return _trained.paper_run(SETTING, name, quick=quick, cache_dir=cache_dir)


def with_layers(rung: Rung, layers: int) -> Rung:
    """`rung` with `layers` layers, every other switch as it is."""
    config = dataclasses.replace(rung.model_config, layers=layers)
    return dataclasses.replace(rung, model_config=config)


def layer_pairs(quick: bool, cache_dir) -> list[tuple[str, TrainRun, TrainRun]]:
    """Per rung of `RUNGS`, `(name, one-layer run, two-layer run)`: the theorem rung (one layer)
    and the same with two layers; the realistic rung (two layers) and the same with one."""
    pairs = []
    for name in RUNGS:
        protocol = rung_run(name, quick, cache_dir)
        other = with_layers(_rung(name, quick), 3 - protocol.model_config.layers)
        variant = _runs.trained_run(
            other.task,
            other.model_config,
            other.train_config,
            protocol.seeds,
            cache_dir,
            seed=protocol.seed,
            label=f"the {name} rung at {SETTING} with "
            f"{other.model_config.layers} layer(s)",
        )
        one, two = sorted((protocol, variant), key=lambda r: r.model_config.layers)
        pairs.append((name, one, two))
    return pairs


def label(name: str) -> str:
    """The protocol's short name of a rung."""
    return _trained.rung_label(name)


def parameters(quick: bool) -> dict:
    """The task and training of the runs, as text for the figures' data."""
    s = _trained.paper_setting(SETTING)
    task = _trained.paper_task(s.S, s.W, quick=quick)
    theorem, realistic = (_rung(n, quick) for n in RUNGS)
    t, r = theorem.train_config, realistic.train_config
    m = realistic.model_config
    return {
        "task": f"{SETTING}: L={task.L}, S={task.S}, W={task.W}, H={task.H}, N={task.N}, "
        f"beta={task.beta}, gamma={task.gamma}, kappa={task.kappa}, queries=all",
        "training": f"{_trained.QUICK_SEEDS if quick else _trained.SEEDS} seeds per run; "
        f"theorem rung: gradient descent lr={t.lr}, {t.steps} steps on the full flow's "
        f"balanced sample (M={t.M}); realistic rung: {r.optimizer} lr={r.lr}, {r.steps} "
        f"steps of {r.batch} fresh contexts, learned embeddings, maps and unembedding "
        f"d={m.d}, gate bias, exact local branch w={m.local_window}, two layers; "
        f"statistics at the steps 0 and {t.log_points} log-spaced (the protocol's runs)",
    }
