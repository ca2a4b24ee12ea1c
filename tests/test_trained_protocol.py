"""The paper's protocol on trained models (figures/_trained.py): the five settings, the rungs,
and the baseline's phases grouped by position mod a compressed setting's stride."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inductheory.figures._trained import (
    PAPER_SETTINGS,
    model_correct,
    paper_rung,
    paper_setting,
    paper_task,
    phase_accuracy_by_position,
)
from inductheory.model import hard_selection
from inductheory.model._contexts import sample_contexts
from inductheory.model._loss import phase_accuracy
from inductheory.model._positions import query_positions
from inductheory.model._task import quiet_task
from inductheory.trained import ModelConfig, init_model

# The paper's mitigation table, written out here: (name, S, W, gates).
PAPER_TABLE = [
    ("W8/S8", 8, 8, "learned"),
    ("W8/S4", 4, 8, "learned"),
    ("W8/S6", 6, 8, "learned"),
    ("uniform", 8, 8, "uniform"),
    ("S=2", 2, 8, "learned"),
]


def test_the_five_settings_are_the_papers_on_one_number_of_positions():
    got = [(s.name, s.S, s.W, s.gates) for s in PAPER_SETTINGS]
    assert got == PAPER_TABLE
    tasks = [paper_task(s.S, s.W) for s in PAPER_SETTINGS]
    assert len({t.T for t in tasks}) == 1
    for t, (_, S, W, _) in zip(tasks, PAPER_TABLE):
        assert (t.S, t.W, t.L * t.S) == (S, W, tasks[0].T)
        assert t.exact and t.queries == "all" and t.n_phases == S
    # quick mode trains less on the very same task
    assert paper_task(8, 8, quick=True) == paper_task(8, 8)
    assert paper_setting("S=2") is PAPER_SETTINGS[-1]


def test_bad_settings_are_one_line_errors():
    with pytest.raises(ValueError, match="S must divide"):
        paper_task(5, 8)
    with pytest.raises(ValueError, match="setting must be one of"):
        paper_setting("W9/S9")
    with pytest.raises(ValueError, match="name must be one of"):
        paper_rung("ladder", paper_task(8, 8))
    with pytest.raises(ValueError, match="gates must be"):
        paper_rung("theorem", paper_task(8, 8), gates="hard")


def test_the_rungs_switches():
    task = paper_task(8, 8)
    theorem = paper_rung("theorem", task)
    assert (
        theorem.model_config == ModelConfig() and theorem.model_config.theorem_setting
    )
    t = theorem.train_config
    assert (t.optimizer, t.batch) == ("gd", "full")
    realistic = paper_rung("realistic", task)
    m = realistic.model_config
    assert (m.embeddings, m.maps, m.unembedding, m.gates) == (
        "learned",
        "learned",
        "learned",
        "linear",
    )
    assert m.bias and m.local_window == 1 and m.layers == 2
    assert realistic.train_config.optimizer == "adam"
    assert isinstance(realistic.train_config.batch, int)
    # the realistic rung learns its own embeddings: the task loses nothing but its geometry
    assert (realistic.task.S, realistic.task.W, realistic.task.queries) == (8, 8, "all")
    baseline = paper_rung("baseline", task)
    b = baseline.model_config
    assert b.local_window == task.T - 1 and b.gates == "uniform" and not b.bias
    assert b.layers == 2 and b.embeddings == "learned"
    assert baseline.train_config == realistic.train_config
    uniform = paper_rung("realistic", task, gates="uniform")
    assert uniform.model_config.gates == "uniform" and not uniform.model_config.bias
    assert paper_rung("theorem", task, gates="uniform").model_config.gates == "uniform"
    assert paper_rung("theorem", task, quick=True).train_config.steps < t.steps


def test_grouping_by_position_on_a_hand_example():
    # two contexts, six positions; stride 3 and 2
    correct = np.array([[1, 0, 0, 1, 1, 0], [1, 1, 0, 1, 0, 0]], bool)
    positions = np.arange(6)
    # stride 3: phase 0 = positions 0, 3; phase 1 = 1, 4; phase 2 = 2, 5
    np.testing.assert_allclose(
        phase_accuracy_by_position(correct, positions, 3), [4 / 4, 2 / 4, 0 / 4]
    )
    # stride 2: phase 0 = positions 0, 2, 4; phase 1 = 1, 3, 5
    np.testing.assert_allclose(
        phase_accuracy_by_position(correct, positions, 2), [3 / 6, 3 / 6]
    )
    # leading axes (seeds) are kept; a phase without queries is NaN
    got = phase_accuracy_by_position(correct[None], np.array([0, 1, 2, 3, 4, 0]), 6)
    assert got.shape == (1, 6) and np.isnan(got[0, 5])


def _hard_bias_model(task, offsets, strength=60.0):
    """Bias-only gates putting (nearly) all key mass on offset r_h and value mass on r_h + 1."""
    model = init_model(task, ModelConfig(gates="bias"), jax.random.key(0))
    b = np.zeros((task.H, 2, task.W))
    for h, r in enumerate(offsets):
        b[h, 0, r] = b[h, 1, r + 1] = strength
    return eqx.tree_at(lambda m: m.gate_biases, model, jnp.asarray(b))


def test_regrouped_phases_of_a_hand_made_model_against_the_closed_form():
    """A model whose per-phase accuracy at S = 8 is known in closed form (hard selections at
    offsets 0, 2, 5, 6: distinct heads answer exactly their phases), regrouped at strides 8, 4
    and 2: every phase of the coarser stride is the mean of the S = 8 phases congruent to it
    (each phase has L queries per context)."""
    task = quiet_task(**{**paper_task(8, 8).to_dict(), "H": 4})
    offsets = [0, 2, 5, 6]
    known = np.asarray(phase_accuracy(task, hard_selection(task.W, offsets)))
    assert known.tolist() == [1, 0, 1, 0, 0, 1, 1, 0]
    model = _hard_bias_model(task, offsets)
    contexts = sample_contexts(jax.random.key(3), task, 5)
    correct = np.asarray(model_correct(model, contexts))
    positions = query_positions(task.L, task.S, task.queries)
    assert correct.shape == (5, task.T)
    np.testing.assert_array_equal(
        phase_accuracy_by_position(correct, positions, 8), known
    )
    for S in (4, 2):
        want = known.reshape(8 // S, S).mean(axis=0)
        np.testing.assert_allclose(
            phase_accuracy_by_position(correct, positions, S), want
        )
