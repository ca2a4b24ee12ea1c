"""The coordination term of the paper's transformers (`TrainConfig.overlap_penalty`,
`key_gate_overlap`, `penalized_loss`): its value on hand-built gates against numpy loops over
the pairs of gates, its gradient on a tiny model, a zero weight as today's program, and the
refusals of bad values."""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inductheory  # noqa: F401
from inductheory.cli import main
from inductheory.experiments._paper_matrix import QUICK_SIZE
from inductheory.experiments._sweep._matrix import check_matrix_grid
from inductheory.internal._records import field_values
from inductheory.model._task import Task
from inductheory.trained import (
    Architecture,
    Gate,
    ModelConfig,
    RetrievalTask,
    TrainConfig,
    gate_offsets,
    init_transformer,
    key_gate_overlap,
    mean_gate_overlap,
    penalized_loss,
    sample_retrieval_contexts,
    train,
    train_transformer,
)
from inductheory.trained._mechanisms import compressed_blocks

TASK = RetrievalTask(T=16, N=24, period=8)
# 2 compressed layers x 2 KV heads: 4 key gates over W = 4 offsets
ARCH = Architecture(d=16, q_heads=2, kv_heads=2, head_dim=8, layers=2, W=4, S=4)


def _with_key_biases(model, biases):
    """`model` with zero gate maps and key-gate biases `biases` (layers, kv, W): each key
    gate is then softmax(bias) at every window, whatever the input."""
    for i, b in zip(compressed_blocks(model), biases):
        c = model.blocks[i].attention.compressor
        model = eqx.tree_at(
            lambda m, i=i: m.blocks[i].attention.compressor.gate_map,
            model,
            jnp.zeros_like(c.gate_map),
        )
        bias = c.gate_bias.at[0].set(jnp.asarray(b, c.gate_bias.dtype)[:, :, None])
        model = eqx.tree_at(
            lambda m, i=i: m.blocks[i].attention.compressor.gate_bias, model, bias
        )
    return model


def _pairs(gates):
    """sum over ordered pairs g != g' of <p_g, p_g'>, by loops (gates: (G, W))."""
    G = len(gates)
    return sum(
        float(np.dot(gates[a], gates[b])) for a in range(G) for b in range(G) if a != b
    )


def _softmax(b):
    e = np.exp(np.asarray(b, np.float64) - np.max(b))
    return e / e.sum()


@pytest.mark.parametrize(
    "peaks, want",
    [
        ([[0, 1], [2, 3]], 0.0),  # disjoint: every offset its own gate
        ([[1, 1], [1, 1]], 12.0),  # identical: G (G - 1) = 4 * 3
        ([[0, 1], [0, 1]], 4.0),  # two pairs on two offsets: 2 * (2 * 1)
    ],
)
def test_overlap_of_hand_built_gates(peaks, want):
    model = init_transformer(TASK, ARCH, jax.random.key(0))
    sharp = 40.0 * np.eye(4)[np.asarray(peaks)]  # (layers, kv, W): one-hot logits
    model = _with_key_biases(model, sharp)
    tokens = sample_retrieval_contexts(jax.random.key(1), TASK, 1)[0]
    value = float(key_gate_overlap(model, model.gate_probabilities(tokens)))
    brute = _pairs([_softmax(b) for layer in sharp for b in layer])
    assert value == pytest.approx(brute, abs=1e-6)
    assert value == pytest.approx(want, abs=1e-6)


def test_overlap_of_uniform_and_input_dependent_gates():
    model = init_transformer(TASK, ARCH, jax.random.key(0))
    tokens = sample_retrieval_contexts(jax.random.key(1), TASK, 1)[0]
    flat = _with_key_biases(model, np.zeros((2, 2, 4)))
    # uniform gates: G (G - 1) / W = 12 / 4
    assert float(key_gate_overlap(flat, flat.gate_probabilities(tokens))) == (
        pytest.approx(3.0, abs=1e-6)
    )
    # the model's own (input-dependent) gates: the mean over windows of the loops' sum
    gates = model.gate_probabilities(tokens)
    key = np.concatenate(
        [np.asarray(gates[i][0, :, :, :, 0]) for i in (0, 1)]
    )  # (G, L, W)
    brute = np.mean([_pairs(key[:, j]) for j in range(key.shape[1])])
    assert float(key_gate_overlap(model, gates)) == pytest.approx(brute, rel=1e-5)


def _descend(model, contexts, steps, lr=3.0):
    """`steps` of gradient descent on the overlap alone (every parameter)."""
    params, static = eqx.partition(model, eqx.is_inexact_array)
    grad = jax.jit(
        jax.grad(lambda p: mean_gate_overlap(eqx.combine(p, static), contexts))
    )
    for _ in range(steps):
        params = jax.tree.map(lambda p, d: p - lr * d, params, grad(params))
    return eqx.combine(params, static)


def _peaks(model, contexts):
    """Peak offsets of the mean key gates (layer-major, KV heads)."""
    return np.asarray(gate_offsets(model, contexts).peak)[:, 0, :, 0].ravel().tolist()


def test_the_penalty_gradient_pushes_peaks_apart():
    """Gradient descent on the overlap alone, from two key gates (one compressed layer, 2 KV
    heads) that both lean to offset 1 (a small asymmetry breaks the tie), ends with the peaks
    on two offsets and the overlap near its minimum 0. (With 4 gates, 2 layers x 2 KV heads,
    the same descent stalled at a mixed point: overlap 1.5-2.3 of 3.8, peaks on 3 offsets.)"""
    arch = dataclasses.replace(ARCH, first_layer_full=True)
    model = init_transformer(TASK, arch, jax.random.key(0))
    lean = np.zeros((1, 2, 4))
    lean[..., 1] = 1.0
    lean += 0.05 * np.arange(lean.size).reshape(lean.shape) / lean.size
    model = _with_key_biases(model, lean)
    contexts = sample_retrieval_contexts(jax.random.key(1), TASK, 2)
    assert _peaks(model, contexts) == [1, 1]
    before = float(mean_gate_overlap(model, contexts))
    model = _descend(model, contexts, 300)
    assert len(set(_peaks(model, contexts))) == 2
    assert float(mean_gate_overlap(model, contexts)) < 0.05 * before


def test_penalized_loss_is_the_loss_beside_the_overlap():
    model = init_transformer(TASK, ARCH, jax.random.key(0))
    contexts = sample_retrieval_contexts(jax.random.key(1), TASK, 3)
    loss, penalty = penalized_loss(model, contexts)
    assert float(loss) == pytest.approx(float(model.loss(contexts)), rel=1e-6)
    assert float(penalty) == pytest.approx(
        float(mean_gate_overlap(model, contexts)), rel=1e-6
    )


def test_zero_weight_is_todays_training_and_a_positive_one_moves_it():
    config = TrainConfig(
        optimizer="adamw", lr=3e-3, steps=6, batch=4, chunk=3, eval_contexts=8
    )
    # a zero weight leaves the cache keys as they were; a positive one is part of them
    assert "overlap_penalty" not in field_values(config)
    penalized = dataclasses.replace(config, overlap_penalty=0.5)
    assert field_values(penalized)["overlap_penalty"] == 0.5
    plain = train_transformer(TASK, ARCH, config, 2)
    again = train_transformer(
        TASK, ARCH, dataclasses.replace(config, overlap_penalty=0.0), 2
    )
    np.testing.assert_array_equal(plain.loss, again.loss)
    moved = train_transformer(TASK, ARCH, penalized, 2)
    # the first step's loss is the cross-entropy alone, before any update
    np.testing.assert_allclose(moved.loss[:, 0], plain.loss[:, 0], rtol=1e-6)
    assert not np.allclose(moved.loss[:, -1], plain.loss[:, -1])
    overlap = [
        float(
            mean_gate_overlap(
                jax.tree.map(lambda a: a[0] if eqx.is_array(a) else a, run.models),
                sample_retrieval_contexts(jax.random.key(9), TASK, 4),
            )
        )
        for run in (plain, moved)
    ]
    assert overlap[1] < overlap[0]


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "0.1", True])
def test_bad_weights_are_refused(bad):
    with pytest.raises(ValueError, match="overlap_penalty"):
        TrainConfig(overlap_penalty=bad)


@pytest.mark.parametrize(
    "arch",
    [
        dataclasses.replace(ARCH, gate=Gate.UNIFORM, position_bias=False),
        dataclasses.replace(ARCH, kv_heads=1, layers=1),
    ],
)
def test_a_penalty_with_nothing_to_act_on_is_refused(arch):
    config = TrainConfig(optimizer="adamw", steps=2, batch=2, overlap_penalty=0.1)
    with pytest.raises(ValueError, match="overlap_penalty needs learned gates"):
        train_transformer(TASK, arch, config, 1)


def test_the_idealized_trainer_refuses_a_penalty():
    task = Task(L=4, S=3, H=2, N=48, beta=4.0)
    with pytest.raises(ValueError, match="overlap_penalty applies"):
        train(task, ModelConfig(), TrainConfig(steps=2, M=48, overlap_penalty=0.1), 1)


def test_command_line_and_grid_refusals(capsys):
    assert main(["train", "paper", "--quick", "--overlap-penalty", "-1"]) == 2
    assert "overlap-penalty" in capsys.readouterr().err
    with pytest.raises(ValueError, match="overlap_penalty"):
        check_matrix_grid(QUICK_SIZE, {"overlap_penalty": ["a"]})
    grid = check_matrix_grid(QUICK_SIZE, {"overlap_penalty": [0, 0.5]})
    assert grid["overlap_penalty"] == [0.0, 0.5]
