"""Gate rotation and head knockout: closed forms against the literal dense intervention."""

import jax
import numpy as np
import pytest
from strategies import make_task

import inductheory as it

TASK = make_task(L=4, S=5, H=2, N=40, gamma=1.0, beta=4.0, kappa=0.8)


@pytest.mark.parametrize("offsets, delta", [([0, 2], 1), ([1, 0], 2), ([0, 1], 1)])
def test_rotation_shifts_the_phase_accuracy_curve(offsets, delta):
    gates = it.hard_selection(TASK.S, offsets)
    before = np.asarray(it.phase_accuracy(TASK, gates))
    after = np.asarray(it.phase_accuracy(TASK, it.model.rotate_gates(gates, delta)))
    np.testing.assert_array_equal(after[delta:], before[: TASK.S - 1 - delta])
    assert after.sum() == before.sum()


@pytest.mark.parametrize("axis", [0, -1, -2])
def test_rotate_offsets_rolls_concrete_and_traced_arrays_alike(axis):
    from inductheory.internal._compiles import CompileCount
    from inductheory.model._gates import rotate_offsets

    x = jax.random.normal(jax.random.key(1), (3, 4, 5))
    counter = CompileCount()
    concrete = [rotate_offsets(x, d, axis=axis) for d in range(-6, 7)]
    assert counter.count().compiles == 0  # rolled on the host: no program per shift
    for d, got in zip(range(-6, 7), concrete):
        assert isinstance(got, jax.Array) and got.dtype == x.dtype
        np.testing.assert_array_equal(got, np.roll(np.asarray(x), d, axis=axis))
        traced = jax.jit(lambda x, d=d: rotate_offsets(x, d, axis=axis))(x)
        np.testing.assert_array_equal(traced, got)


def test_rotating_linear_gates_rotates_their_static_gates():
    geo = it.ExactGeometry(TASK.N, TASK.kappa)
    c = jax.random.normal(jax.random.key(0), (TASK.H, 2, TASK.S, geo.dim))
    b = it.LinearGates(c).biases(geo)
    np.testing.assert_allclose(
        it.model.rotate_gates(it.LinearGates(c), 2).biases(geo),
        np.roll(b, 2, axis=-1),
        atol=1e-12,
    )


def test_closed_form_knockout_equals_the_literal_mean_ablation():
    gates = it.hard_selection(TASK.S, [0, 2])
    geo = it.ExactGeometry(TASK.N, TASK.kappa).dense()
    prompts = it.balanced_contexts(
        jax.random.key(0), TASK, 4
    )  # every token equally often per slot
    mean = it.model.mean_head_outputs(TASK, geo, gates, prompts)
    np.testing.assert_allclose(
        mean, np.broadcast_to(geo.mean_embedding(), mean.shape), atol=1e-12
    )
    ctx = it.sample_contexts(jax.random.key(1), TASK, 8)
    for heads in ([0], [1], [0, 1]):
        losses, acc = it.model.monte_carlo_knockout(TASK, geo, gates, ctx, mean, heads)
        np.testing.assert_allclose(
            losses, it.model.knockout_phase_losses(TASK, gates, heads), atol=1e-10
        )
        np.testing.assert_array_equal(
            acc, it.model.knockout_phase_accuracy(TASK, gates, heads)
        )


def test_knocking_out_a_selecting_head_removes_exactly_its_phase():
    gates = it.hard_selection(TASK.S, [0, 2])
    np.testing.assert_array_equal(it.phase_accuracy(TASK, gates), [1, 0, 1, 0])
    np.testing.assert_array_equal(
        it.model.knockout_phase_accuracy(TASK, gates, [0]), [0, 0, 1, 0]
    )
    np.testing.assert_array_equal(
        it.model.knockout_phase_accuracy(TASK, gates, [1]), [1, 0, 0, 0]
    )
    base = np.asarray(it.phase_losses(TASK, gates))
    ko = np.asarray(it.model.knockout_phase_losses(TASK, gates, [0]))
    # with head 0 gone, phase 0 is uncovered like phases 1 and 3: one head (head 1) attends
    # uniformly and puts beta/L on the L value tokens at offset 3, the target gets 0 (hand formula)
    L, N, beta = TASK.L, TASK.N, TASK.beta
    uncovered_one_head = np.log(L * np.exp(beta / L) + (N - L))
    np.testing.assert_allclose(ko[[0, 1, 3]], uncovered_one_head, rtol=1e-13)
    assert (
        ko[0] > base[0] and ko[1] < base[1] and ko[2] < base[2]
    )  # a distractor is gone for the others
