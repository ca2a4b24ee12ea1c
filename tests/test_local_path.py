"""The boundary through a local path (inductheory.trained._local_path) and the boundary summary
of the open questions (figures/_open_questions.py), on hand-built models whose answer is known
(zeroed query maps: every score is a bias) and against the model without a local window."""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inductheory  # noqa: F401
from inductheory.figures._open_questions import boundary_answers
from inductheory.figures._stats import wilson_interval
from inductheory.trained import (
    answered_phases,
    boundary_gates,
    gate_offsets,
    previous_token_mass,
    without_local_window,
)
from inductheory.trained._architecture import Architecture, RetrievalTask
from inductheory.trained._modules import init_transformer
from inductheory.trained._transformer_train import sample_retrieval_contexts

TASK = RetrievalTask(T=16, N=24, period=8)
# 2 layers, 2 query heads over 2 KV heads, W = S = 4 (M = T / S = 4 entries), 2 local slots
ARCH = Architecture(
    d=16, q_heads=2, kv_heads=2, head_dim=8, layers=2, W=4, S=4, local_window=2
)


def _model(local_bias):
    """The first block with a zero query map (every score its bias) and local bias
    `local_bias` (Q, w)."""
    model = init_transformer(TASK, ARCH, jax.random.key(0))
    a = model.blocks[0].attention
    model = eqx.tree_at(
        lambda m: m.blocks[0].attention.query, model, jnp.zeros_like(a.query)
    )
    return eqx.tree_at(
        lambda m: m.blocks[0].attention.local_bias,
        model,
        jnp.asarray(local_bias, a.local_bias.dtype),
    )


def _contexts(n=3):
    return sample_retrieval_contexts(jax.random.key(1), TASK, n)


def test_previous_token_mass_of_hand_built_heads():
    # head 0: a huge bias on the position before; head 1: no bias, every slot equal
    model = _model([[50.0, 0.0], [0.0, 0.0]])
    mass = previous_token_mass(model, _contexts())
    assert mass.layers == (0,)  # the last block's context stream is read no further
    np.testing.assert_allclose(mass.previous[0], [1.0, 1 / 6], atol=1e-6)
    np.testing.assert_allclose(mass.local[0], [1.0, 2 / 6], atol=1e-6)


def test_closing_the_local_window_is_the_model_without_one():
    model = init_transformer(TASK, ARCH, jax.random.key(3))
    closed = without_local_window(model)
    mass = previous_token_mass(closed, _contexts())
    np.testing.assert_array_equal(mass.local, 0.0)
    # the same parameters without the local branch at all (read_context's other path)
    bare = eqx.tree_at(
        lambda m: (
            m.blocks[0].attention.local_key,
            m.blocks[0].attention.local_value,
            m.blocks[0].attention.local_bias,
        ),
        model,
        (None, None, None),
        is_leaf=lambda x: x is None,
    )
    for tokens in _contexts(2):
        np.testing.assert_allclose(
            closed.logits(tokens)[0], bare.logits(tokens)[0], rtol=1e-5, atol=1e-6
        )
    # one head closed: that head's local mass is 0, the other's unchanged
    one = previous_token_mass(
        without_local_window(model, np.array([True, False])), _contexts()
    )
    base = previous_token_mass(model, _contexts())
    assert float(one.local[0, 0]) == 0.0
    assert float(one.local[0, 1]) == pytest.approx(float(base.local[0, 1]), rel=1e-6)


def test_a_model_without_a_local_window_is_refused_and_kept():
    model = init_transformer(
        TASK, dataclasses.replace(ARCH, local_window=0), jax.random.key(0)
    )
    with pytest.raises(ValueError, match="local window"):
        previous_token_mass(model, _contexts())
    assert eqx.tree_equal(without_local_window(model), model)


def test_answered_phases_by_hand():
    S = 8
    key = np.array([0, 3, 6, 7, 0, 4, 2])
    value = np.array([1, 4, 7, 0, 0, 4, 6])
    # v = k + 1 -> k; v = k -> k - 1 (the previous-token path); else none
    want = [0, 3, 6, -1, 7, 3, -1]
    np.testing.assert_array_equal(answered_phases(key, value, S), want)


def test_boundary_gates_from_hand_built_peaks():
    arch = dataclasses.replace(ARCH, local_window=0)
    model = init_transformer(TASK, arch, jax.random.key(0))
    # KV head 0: key and value at offset 0 (the boundary through the path); KV head 1:
    # key 2, value 3 (phase 2); both layers alike
    bias = np.zeros((2, 2, 4, 1))
    bias[0, 0, 0] = bias[1, 0, 0] = 40.0
    bias[0, 1, 2] = bias[1, 1, 3] = 40.0
    for i in (0, 1):
        c = model.blocks[i].attention.compressor
        model = eqx.tree_at(
            lambda m, i=i: m.blocks[i].attention.compressor.gate_map,
            model,
            jnp.zeros_like(c.gate_map),
        )
        model = eqx.tree_at(
            lambda m, i=i: m.blocks[i].attention.compressor.gate_bias,
            model,
            jnp.asarray(bias, c.gate_bias.dtype),
        )
    b = boundary_gates(gate_offsets(model, _contexts()), S=4)
    np.testing.assert_array_equal(b.key_peak, [[0, 2], [0, 2]])
    np.testing.assert_array_equal(b.value_peak, [[0, 3], [0, 3]])
    np.testing.assert_array_equal(b.phase, [[3, 2], [3, 2]])
    np.testing.assert_array_equal(b.answers_boundary, [[True, False], [True, False]])
    assert np.all(b.concentrated)


def test_boundary_answers_counts_seeds_with_wilson_intervals():
    S, period = 4, 8
    acc = np.full((5, period), 0.8)
    acc[:, [3, 7]] = [[0.9, 0.7], [0.01, 0.03], [0.5, 0.4], [0.0, 0.0], [0.39, 0.39]]
    acc[0, 0] = 0.2  # seed 0's worst within-window offset
    r = boundary_answers(acc, S)
    np.testing.assert_allclose(r.boundary, [0.8, 0.02, 0.45, 0.0, 0.39])
    # the threshold is half the seed's within-window mean (0.8, or 0.7 for seed 0)
    assert r.answered.k == 2 and r.answered.n == 5
    assert r.answered.ci95 == pytest.approx(list(wilson_interval(2, 5)))
    assert r.worst_within[0] == pytest.approx(0.5) and r.worst_within[1] == 0.8
    with pytest.raises(ValueError, match="S must divide"):
        boundary_answers(acc, 3)


def test_a_seed_that_learned_nothing_does_not_answer_its_boundary():
    # every phase near chance: the boundary is as high as the rest, but nothing was learned
    flat = np.full((3, 8), 0.01)
    assert boundary_answers(flat, 4).answered.k == 0
    learned = flat.copy()
    learned[:, [0, 1, 2, 4, 5, 6]] = 0.4  # within-window phases learned, boundary not
    learned[0, [3, 7]] = 0.3  # seed 0 answers its boundary too
    assert boundary_answers(learned, 4).answered.k == 1
