"""Typed results: `FlowRun`, `OraclePoint` and `RegimeMap` give, through `to_dict()`, the dicts
that `run_flow`, `oracle_point` and `regime_map` returned before they were typed."""

import json

import jax
import numpy as np
import pytest

import inductheory as it
from inductheory.experiments._flows import (
    FAILURES,
    independent_distinct_baseline,
    offset_histogram,
    selected_distinct_fraction,
)
from inductheory.internal._io import to_json
from inductheory.model._gates import selectable_offsets, value_follows_key

TASK = it.Task(L=4, S=4, H=2, N=4096, beta=4.0)
CONFIG = it.FlowConfig(rho=0.05, t_max=1e6, n_save=16)
PER_SEED_KEYS = {
    "t",
    "mass",
    "worst",
    "loss",
    "static_offsets",
    "avg_offsets",
    "biases",
    "final",
    "t_final",
    "key_offsets",
    "value_offsets",
    "selected",
    "status",
    "num_steps",
    "num_accepted_steps",
    "num_rejected_steps",
}
SUMMARY_KEYS = [
    "seeds",
    "devices",
    "selected_seeds",
    "failed_seeds",
    "selected_fraction",
    "value_is_key_plus_one_fraction",
    "distinct_fraction",
    "distinct_baseline_independent_uniform",
    "offset_histogram",
    "status_counts",
    "wall_s",
    "first_chunk_s_including_compile",
]
TIMINGS = ("wall_s", "first_chunk_s_including_compile")


def old_summary(task, config, ps: dict, seeds: int, n_dev: int) -> dict:
    """The summary dict as `run_flow` built it before `FlowSummary` (timings left out)."""
    selected, status = ps["selected"], ps["status"]
    ok = status == it.Status.SELECTED
    out = {
        "seeds": seeds,
        "devices": n_dev,
        "selected_seeds": int(np.sum(ok)),
        "failed_seeds": int(np.sum(np.isin(status, list(FAILURES)))),
        "selected_fraction": float(np.mean(ok)),
        "value_is_key_plus_one_fraction": float(
            np.mean(value_follows_key(ps["key_offsets"], ps["value_offsets"]))
        ),
        "distinct_fraction": selected_distinct_fraction(selected, status),
        "distinct_baseline_independent_uniform": independent_distinct_baseline(
            task.H, task.W, config.tied
        ),
        "offset_histogram": offset_histogram(
            selected[ok], selectable_offsets(task.W, config.tied)
        ),
        "status_counts": {s.label: int(np.sum(status == s)) for s in it.Status},
    }
    if "reduced_selected" in ps:
        out["same_selection_as_reduced_fraction"] = float(
            np.mean(np.all(ps["reduced_selected"] == selected, axis=1))
        )
    return out


def _without_timings(d: dict) -> dict:
    return {**d, "summary": {k: v for k, v in d["summary"].items() if k not in TIMINGS}}


def test_flow_run_to_dict_is_the_old_dict():
    run = it.run_flow(TASK, CONFIG, 3)
    assert isinstance(run, it.FlowRun)
    out = run.to_dict()
    assert list(out) == ["task", "config", "seed", "sample", "per_seed", "summary"]
    assert out["task"] == TASK.to_dict() and out["config"] == CONFIG.to_dict()
    assert out["seed"] == 0 and out["sample"] == {} and run.sample is None
    # the reduced dynamics keep the final state (the biases) per seed
    assert set(out["per_seed"]) == PER_SEED_KEYS | {"state"}
    assert list(out["summary"]) == SUMMARY_KEYS
    for k in out["per_seed"]:
        if k != "final":
            assert out["per_seed"][k] is getattr(run.per_seed, k)
    old = old_summary(TASK, CONFIG, out["per_seed"], 3, len(jax.devices()))
    assert to_json(_without_timings(out)["summary"], sort_keys=True) == to_json(
        old, sort_keys=True
    )
    assert run.summary.selected_seeds == old["selected_seeds"] == 3
    assert out["summary"]["wall_s"] == run.summary.wall_s > 0


@pytest.mark.slow
def test_full_flow_run_to_dict_is_the_old_dict():
    config = it.FlowConfig(dynamics="full", M=48, t_max=1e5, n_save=8)
    run = it.run_flow(TASK, config, 2)
    out = run.to_dict()
    assert set(out["per_seed"]) == PER_SEED_KEYS | {"reduced_selected"}
    assert list(out["summary"]) == SUMMARY_KEYS + ["same_selection_as_reduced_fraction"]
    assert out["sample"] == {
        "M": it.experiments.sample_size(TASK, config),  # balanced: a multiple of N / L
        "M_requested": 48,
        "sample": "balanced",
        "geometry": "ExactGeometry",
        "dim": run.sample.dim,
        "eps_realized": run.sample.eps_realized,
    }
    old = old_summary(TASK, config, out["per_seed"], 2, len(jax.devices()))
    assert to_json(_without_timings(out)["summary"], sort_keys=True) == to_json(
        old, sort_keys=True
    )


SMALL = it.OracleMinimizer(restarts=6, steps=80, polish_steps=80)
POINT_KEYS = [
    "task",
    "eps",
    "dim",
    "n_contexts",
    "seeds",
    "best_loss",
    "best_vertex_loss",
    "gap",
    "hard_selection",
    "distinct_heads",
    "share_hard",
    "share_hard_distinct",
    "share_beats_vertex",
    "max_fw_gap",
    "share_minimizer_failed",
    "contexts",
]
RECORD_KEYS = [
    "best_loss",
    "minimizer_loss",
    "minimizer_failed",
    "best_random_loss",
    "best_vertex_loss",
    "gap",
    "beats_vertex",
    "hard_selection",
    "distinct_heads",
    "offsets",
    "vertex_offsets",
    "fw_gap",
    "share_starts_hard",
    "gates",
    "vertex_method",
    "n_vertices",
]


def test_oracle_point_to_dict_and_back():
    task = it.Task(L=4, S=4, H=2, N=16, beta=8.0)
    point = it.oracle_point(task, jax.random.key(0), SMALL)
    assert isinstance(point, it.OraclePoint)
    d = point.to_dict()
    assert list(d) == POINT_KEYS and list(d["contexts"][0]) == RECORD_KEYS
    assert d["task"] == task.to_dict() and d["n_contexts"] == len(point.contexts) == 1
    assert set(d["contexts"][0]["gates"]) == {"key", "value"}
    assert d["hard_selection"] is point.hard_selection is False
    # the JSON form (what the caches store) reads back to the same JSON
    text = to_json(d, sort_keys=True)
    again = it.OraclePoint.from_dict(json.loads(text))
    assert to_json(again.to_dict(), sort_keys=True) == text
    assert again.task == task and again.best_loss == point.best_loss


def test_regime_map_to_dict_and_resume(tmp_path):
    task = it.Task(L=4, S=4, H=2, N=16, beta=8.0)
    kw = dict(config=SMALL, directory=tmp_path)
    regime = it.regime_map(task, [16, 4096], [8.0], **kw)
    assert isinstance(regime, it.RegimeMap)
    d = regime.to_dict()
    assert list(d) == ["points", "boundary", "fit"] and d["fit"] is None
    assert list(d["points"][0]) == POINT_KEYS[:-1] + ["ok"]
    assert d["boundary"] == [
        {"beta": 8.0, "N_star": 4096, "N_below": 16, "bracketed": True}
    ]
    assert [p.task.N for p in regime.points] == [16, 4096]
    # read back from the cache: the same map
    assert to_json(it.regime_map(task, [16, 4096], [8.0], **kw).to_dict()) == to_json(d)


def test_fit_log_threshold_takes_brackets():
    from inductheory.experiments import BoundaryBracket, LogThresholdFit, log_boundary

    brackets = [
        BoundaryBracket(beta=2.0, N_star=64, N_below=16, bracketed=True),
        BoundaryBracket(beta=4.0, N_star=1024, N_below=256, bracketed=True),
        BoundaryBracket(beta=6.0, N_star=16, N_below=None, bracketed=False),
    ]
    fit = it.experiments.fit_log_threshold(brackets)
    assert isinstance(fit, LogThresholdFit) and fit.n == 2
    assert fit.slope == pytest.approx((np.log(512) - np.log(32)) / 2.0, rel=1e-12)
    assert log_boundary(brackets[2]) == np.log(16)
    assert it.experiments.fit_log_threshold(brackets[:1]) is None
