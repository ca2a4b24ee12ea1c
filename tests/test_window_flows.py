"""Theorem 2 with windows (docs/theory.md §10), measured: what reduced flows select for W > S with
every query phase, and the exact-loss facts that explain it.

Measured with 256 seeds per setting (L=8, S=4, N=4096, beta=4, rho=0.1, delta=1e-3, H = 1, 2, 3):
every seed delta-selects, always value = key + 1; W=S+1 keys in {1, 2} only (boundary accuracy 0),
W=S+S/2 key 2 only, W=2S key S-1 = 3 only (value 4, across the stride: the boundary phase and no
other). The tests below check these with a few seeds, plus the loss facts behind them.
"""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import inductheory as it
from inductheory.model._gates import (
    SharedGates,
    hard_selection,
    shared_gates_from_logits,
    uniform_gates,
)
from inductheory.model._loss import phase_accuracy, phase_losses, population_loss


def _task(W, H=1, L=8, S=4, queries="all"):
    return it.model.quiet_task(
        L=L, S=S, H=H, N=4096, gamma=1.0, beta=4.0, kappa=1.0, W=W, queries=queries
    )


@settings(max_examples=12, deadline=None)
@given(
    S=st.integers(3, 5), extra=st.integers(0, 5), L=st.integers(3, 6), data=st.data()
)
def test_a_hard_head_answers_exactly_the_phase_of_its_key(S, extra, L, data):
    """One head with key r, value r+1 (all queries) answers phase r mod S and no other: the query at
    t = lS + r mod S sits at offset r in one entry, whose offset r+1 holds the target t+1."""
    W = min(S + extra, L * S - 1)
    r = data.draw(st.integers(0, W - 2))
    acc = np.asarray(phase_accuracy(_task(W, L=L, S=S), hard_selection(W, [r])))
    np.testing.assert_array_equal(acc, np.arange(S) == r % S)


@settings(max_examples=10, deadline=None)
@given(S=st.integers(3, 5), extra=st.integers(1, 5), data=st.data())
def test_selections_a_stride_apart_are_the_same_model(S, extra, data):
    """Key r+S, value r+S+1 reads entry l-1 at the positions key r, value r+1 reads in entry l:
    identical logits, so every hard endpoint r and r+S ties (the loss cannot tell them apart)."""
    W = S + extra
    r = data.draw(st.integers(0, W - 2 - S)) if W - 2 - S >= 0 else None
    task = _task(W, S=S)
    if r is None:  # W = S+1: no such pair; the boundary head r = S-1 exists instead
        assert phase_accuracy(task, hard_selection(W, [S - 1]))[S - 1] == 1.0
        return
    np.testing.assert_allclose(
        phase_losses(task, hard_selection(W, [r])),
        phase_losses(task, hard_selection(W, [r + S])),
        rtol=0,
        atol=1e-12,
    )


@pytest.mark.parametrize("W", [4, 5, 6, 8])
def test_every_hard_selection_of_one_head_has_the_same_loss(W):
    """The cycle makes every phase alike for one hard head: the endpoints r = 0..W-2 all tie, so
    the loss at the end does not decide what a flow selects (below: the slope near uniform does)."""
    task = _task(W)
    losses = np.array(
        [float(population_loss(task, hard_selection(W, [r]))) for r in range(W - 1)]
    )
    assert np.ptp(losses) < 1e-12


def _initial_slopes(W, s=0.01):
    """Loss change from uniform gates a step s toward each hard selection r (key e_r, value
    e_{r+1})."""
    task = _task(W)
    u = uniform_gates(1, W)
    base = float(population_loss(task, u))
    eye = np.eye(W)
    out = []
    for r in range(W - 1):
        g = SharedGates(
            key=(1 - s) * u.key + s * eye[r][None],
            value=(1 - s) * u.value + s * eye[r + 1][None],
        )
        out.append(float(population_loss(task, g)) - base)
    return np.array(out)


@pytest.mark.parametrize("W, steepest", [(5, {1, 2}), (6, {2}), (8, {3})])
def test_the_selections_flows_make_are_the_steepest_descent_from_uniform(W, steepest):
    """Measured: flows from small init select exactly the offsets whose direction from uniform gates
    descends fastest (W=5: 1, 2; W=6: 2; W=8: 3 = S-1, where the boundary phase is the worst-served
    phase at uniform gates: its query sits in two entries but only one holds its target)."""
    slopes = _initial_slopes(W)
    best = np.flatnonzero(slopes <= slopes.min() + 1e-12 * abs(slopes.min()))
    assert set(best.tolist()) == steepest
    others = [r for r in range(W - 1) if r not in steepest]
    assert slopes[others].min() > slopes.min() + 1e-3 * abs(
        slopes.min()
    )  # a real gap, not rounding


def test_at_window_2s_the_boundary_phase_is_worst_at_uniform_gates():
    losses = np.asarray(phase_losses(_task(8), uniform_gates(1, 8)))
    assert np.argmax(losses) == 3 and losses[3] > np.max(losses[:3]) + 1e-4


def _flow(W, H, seeds, tied=False):
    task = _task(W, H=H)
    config = it.FlowConfig(
        dynamics="reduced",
        rho=0.1,
        delta=1e-3,
        t_max=1e7,
        n_save=8,
        max_steps=200_000,
        tied=tied,
    )
    return task, it.run_flow(task, config, seeds)


@pytest.mark.slow
@pytest.mark.parametrize("W, allowed", [(5, {1, 2}), (8, {3})])
def test_reduced_flows_with_windows_select_key_and_value_plus_one(W, allowed):
    """W = S+1: keys in {1, 2} only, so the boundary phase stays unanswered although key 3 would
    answer it; W = 2S: key S-1, value S (across the stride), the boundary phase and no other."""
    task, out = _flow(W, H=2, seeds=8)
    ps = out.per_seed
    assert out.summary.status_counts["selected"] == 8
    keys, values = np.asarray(ps.key_offsets), np.asarray(ps.value_offsets)
    np.testing.assert_array_equal(values, keys + 1)
    assert set(keys.ravel().tolist()) <= allowed
    for b, k in zip(np.asarray(ps.final["biases"]), keys):
        acc = np.asarray(phase_accuracy(task, shared_gates_from_logits(b)))
        np.testing.assert_array_equal(acc, np.isin(np.arange(4), k % 4))


@pytest.mark.parametrize("tied", [False, True])
def test_the_final_selection_follows_the_tied_rule(tied):
    """A flow's reported selection reads the final state by the rule of its dynamics: a
    tied gate concentrated on offset 1 selects 1, an untied pair needs its value at 2."""
    task = it.Task(L=4, S=3, H=2, N=64, beta=4.0)
    b0 = np.zeros((task.H, 2, task.W))
    b0[:, :, 1] = 12.0  # key and value gates both on offset 1: p(1) = 1 - 2e-6 / 1
    config = it.FlowConfig(tied=tied, t_max=1e-9, t_save_min=1e-10, n_save=2)
    dynamics = it.flow.ReducedDynamics(task, tied=tied)
    sol = it.flow.integrate(dynamics, jnp.asarray(b0), config)
    expected = [1, 1] if tied else [-1, -1]
    np.testing.assert_array_equal(np.asarray(sol.selected), expected)
    np.testing.assert_array_equal(
        np.asarray(sol.selected), np.asarray(dynamics.selected(sol.state, config.delta))
    )
