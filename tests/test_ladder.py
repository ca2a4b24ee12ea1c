"""The relaxation ladder: which switches each rung has on, and a tiny run measured on held-out
contexts."""

import dataclasses
import json

import numpy as np
import pytest

from inductheory.experiments._ladder import (
    SWITCHES,
    LadderSettings,
    RungResult,
    ladder_rungs,
    run_ladder,
    rung_summary,
)
from inductheory.model._task import quiet_task
from inductheory.trained import ModelConfig

TASK = quiet_task(L=4, S=3, H=2, N=48, beta=4.0)


def _differences(a, b) -> set[str]:
    """Names of the task, model and training fields in which two rungs differ."""
    out = set()
    for part in ("model_config", "train_config"):
        x, y = getattr(a, part), getattr(b, part)
        out |= {
            f"{part}.{f.name}"
            for f in dataclasses.fields(x)
            if getattr(x, f.name) != getattr(y, f.name)
        }
    ta, tb = a.task.to_dict(), b.task.to_dict()
    return out | {f"task.{k}" for k in ta if ta[k] != tb[k]}


# What each switch alone changes against the theorem rung (written out here, not taken from the
# module under test).
EXPECTED = {
    "minibatch": {"train_config.batch"},
    "adam": {"train_config.optimizer", "train_config.lr"},
    "approximate": {"model_config.embeddings", "task.d"},
    "learned": {
        "model_config.embeddings",
        "model_config.d",
        "model_config.maps",
        "model_config.unembedding",
    },
    "gate_bias": {"model_config.bias"},
    "local": {"model_config.local_window"},
    "layers": {"model_config.layers"},
}


def test_the_theorem_rung_is_the_theorem_setting_with_full_batch_gradient_descent():
    theorem = ladder_rungs(TASK)[0]
    assert theorem.name == "theorem" and theorem.model_config == ModelConfig()
    assert theorem.model_config.theorem_setting
    t = theorem.train_config
    assert (t.optimizer, t.batch, t.schedule, t.weight_decay) == (
        "gd",
        "full",
        "constant",
        0.0,
    )
    assert theorem.task == TASK


def test_each_switch_alone_differs_from_the_theorem_rung_in_that_switch_only():
    rungs = {r.name: r for r in ladder_rungs(TASK, batch=8, adam_lr=3e-3, d=12)}
    theorem = rungs["theorem"]
    assert set(EXPECTED) == set(SWITCHES)
    for switch, fields in EXPECTED.items():
        rung = rungs[f"alone:{switch}"]
        assert rung.switches == (switch,) and rung.kind == "alone"
        assert _differences(rung, theorem) == fields, switch
    assert rungs["alone:minibatch"].train_config.batch == 8
    assert rungs["alone:adam"].train_config.lr == 3e-3
    assert rungs["alone:learned"].model_config.d == 12
    assert rungs["alone:adam"].model_config.theorem_setting


def test_cumulative_rungs_nest_in_the_ladder_order():
    rungs = [r for r in ladder_rungs(TASK) if r.kind == "cumulative"]
    assert [r.switches for r in rungs] == [
        SWITCHES[: i + 1] for i in range(len(SWITCHES))
    ]
    last = rungs[-1]
    assert last.model_config == ModelConfig(
        embeddings="learned",
        d=LadderSettings().d,
        maps="learned",
        unembedding="learned",
        bias=True,
        local_window=LadderSettings().local_window,
        layers=2,
    )
    assert last.train_config.optimizer == "adam" and last.train_config.batch == 16
    # learned embeddings replace the approximate geometry: the task is exact again
    assert last.task == TASK
    for before, after in zip(rungs, rungs[1:]):
        # each step keeps what the rung before it turned on, except the embeddings it replaces
        changed = _differences(after, before)
        assert changed == EXPECTED[after.switches[-1]] | (
            {"task.d"} if after.switches[-1] == "learned" else set()
        )


def test_the_control_has_static_gates_on_the_learned_rung():
    rungs = {r.name: r for r in ladder_rungs(TASK)}
    control, learned = rungs["control"], rungs["cumulative:learned"]
    assert _differences(control, learned) == {"model_config.gates"}
    assert control.model_config.gates == "bias"


def test_ladder_rungs_rejects_a_task_outside_the_theorem_rung():
    with pytest.raises(ValueError, match="task must be an exact-geometry"):
        ladder_rungs(quiet_task(L=4, S=3, H=2, N=48, beta=4.0, queries="all"))
    with pytest.raises(ValueError, match="ladder_rungs takes the settings"):
        ladder_rungs(TASK, nope=1)
    with pytest.raises(ValueError, match="lr must be > 0"):
        ladder_rungs(TASK, lr=0.0)


@pytest.fixture(scope="module")
def tiny():
    rungs = {r.name: r for r in ladder_rungs(TASK, steps=30, eval_contexts=16)}
    return run_ladder([rungs["theorem"], rungs["alone:layers"]], 2)


def test_a_tiny_ladder_measures_every_rung_on_held_out_contexts(tiny):
    from inductheory.trained import train

    theorem = tiny["theorem"]
    rung = theorem.rung
    run = train(rung.task, rung.model_config, rung.train_config, 2)
    # the same measures as the training run's own held-out measures
    np.testing.assert_array_equal(
        theorem.measures.key_offsets, run.measures.key_offsets
    )
    np.testing.assert_allclose(theorem.measures.loss, run.measures.loss, rtol=1e-12)
    # with all queries the within phases are the within-trained model's own
    within = np.asarray(theorem.measures.phase_accuracy)
    every = np.asarray(theorem.boundary.phase_accuracy)
    assert every.shape == (2, TASK.S) and within.shape == (2, TASK.S - 1)
    np.testing.assert_allclose(every[:, :-1], within, rtol=1e-12)
    s = rung_summary(theorem)
    assert s.selected.n == 2 * TASK.H * 2 and s.value_follows_key.n == 4
    assert s.distinct.n == 2 and s.distinct_baseline == pytest.approx(0.5)
    mass = np.asarray(theorem.measures.argmax_mass)
    assert s.gate_mass.key.mean == pytest.approx(mass[..., 0].mean())
    # the summary's dict form reads back as the same record
    assert type(s).from_dict(json.loads(json.dumps(s.to_dict()))) == s
    assert all(1 / TASK.W - 1e-12 <= x <= 1 + 1e-12 for x in mass.ravel())
    assert theorem.cpu_s > 0 and tiny.seeds == 2


def test_a_rung_result_round_trips_through_json(tiny):
    r = tiny["alone:layers"]
    back = RungResult.from_dict(json.loads(json.dumps(r.to_dict())), r.rung)
    assert rung_summary(back) == rung_summary(r)
    with pytest.raises(ValueError, match="another rung"):
        RungResult.from_dict(r.to_dict(), tiny["theorem"].rung)


def test_run_ladder_rejects_bad_input():
    rung = ladder_rungs(TASK)[0]
    with pytest.raises(ValueError, match="seeds"):
        run_ladder([rung], 0)
    with pytest.raises(ValueError, match="unique names"):
        run_ladder([rung, rung], 1)
