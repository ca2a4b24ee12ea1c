"""Closed-form population loss and per-phase accuracy against the general paths and hand
formulas."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, strategies as st
from strategies import make_task, selections, shared_gates

import inductheory as it

TASKS = [
    make_task(L=4, S=3, H=1, N=12, gamma=1.0, beta=2.0, kappa=0.5),
    make_task(L=6, S=4, H=2, N=200, gamma=0.6, beta=4.0, kappa=1.0),
    make_task(L=3, S=5, H=5, N=40, gamma=2.0, beta=1.5, kappa=0.2),
]
task_strategy = st.sampled_from(TASKS)


@eqx.filter_jit
def _closed_form_and_general_paths(task, geo, gates, ctx):
    # every call of the property in one compiled program per task shape (not six programs and
    # op-by-op dispatch in every example); the same library calls as made one by one
    dense = geo.dense()
    return (
        it.population_loss(task, gates),
        it.monte_carlo_loss(task, geo, gates, ctx),
        it.monte_carlo_loss(task, dense, gates, ctx),
        it.phase_losses(task, gates),
        it.model.monte_carlo_phase_losses(task, dense, gates, ctx),
        it.phase_accuracy(task, gates),
        it.monte_carlo_phase_accuracy(task, dense, gates, ctx),
    )


@given(st.data(), task_strategy, st.integers(0, 1000))
def test_closed_form_equals_the_general_paths(data, task, seed):
    gates = data.draw(shared_gates(task))
    ctx = it.sample_contexts(jax.random.key(seed), task, 2)
    geo = it.ExactGeometry(task.N, task.kappa)
    closed, exact_mc, dense_mc, phase, dense_phase, accuracy, dense_accuracy = (
        _closed_form_and_general_paths(task, geo, gates, ctx)
    )
    closed = float(closed)
    # the block-enumerating exact path and the literal dense model, on arbitrary contexts
    assert abs(float(exact_mc) - closed) < 1e-10
    assert abs(float(dense_mc) - closed) < 1e-10
    np.testing.assert_allclose(phase, dense_phase, atol=1e-10)
    np.testing.assert_array_equal(accuracy, dense_accuracy)


@pytest.mark.parametrize(
    "L, S, N, gamma, beta",
    [(4, 3, 12, 1.0, 2.0), (8, 4, 4096, 1.0, 4.0), (5, 6, 31, 0.3, 9.0)],
)
@pytest.mark.parametrize("r", [0, 1])
def test_one_head_hard_selection_matches_the_hand_formula(L, S, N, gamma, beta, r):
    task = make_task(L=L, S=S, H=1, N=N, gamma=gamma, beta=beta)
    # Query at the selected phase r: attention A(1) on its block, 1/(e^gamma + L - 1) on each other;
    # the target carries beta*A(1), its L-1 twins beta*a_o, the other N - L tokens 0.
    e = np.exp(gamma)
    a_star, a_other = e / (e + L - 1), 1 / (e + L - 1)
    hit = (
        np.log(np.exp(beta * a_star) + (L - 1) * np.exp(beta * a_other) + (N - L))
        - beta * a_star
    )
    # Any other phase: uniform attention 1/L, the L value tokens at r+1 carry beta/L, the target 0.
    miss = np.log(L * np.exp(beta / L) + (N - L))
    expected = (hit + (S - 2) * miss) / (S - 1)
    assert float(it.population_loss(task, it.hard_selection(S, [r]))) == pytest.approx(
        expected, rel=1e-13
    )


def test_monte_carlo_is_exact_for_shared_gates_under_exact_geometry():
    task = TASKS[1]
    gates = it.hard_selection(task.S, [0, 2])
    # samples of M = 1, 7, 64 contexts: the first M of one i.i.d. sample of 64 (itself i.i.d.),
    # drawn and evaluated by one program each instead of three
    ctx = it.sample_contexts(jax.random.key(64), task, 64)
    losses, closed = _monte_carlo_at_sizes(
        task, it.ExactGeometry(task.N, task.kappa), gates, ctx, (1, 7, 64)
    )
    for mc in losses:
        assert abs(float(mc) - float(closed)) < 1e-10


@eqx.filter_jit
def _monte_carlo_at_sizes(task, geo, gates, ctx, sizes):
    dense = geo.dense()
    losses = [it.monte_carlo_loss(task, dense, gates, ctx[:M]) for M in sizes]
    return losses, it.population_loss(task, gates)


def test_monte_carlo_converges_to_the_closed_form_as_eps_vanishes():
    exact_task = make_task(L=4, S=3, H=2, N=256, beta=3.0)
    gates = it.hard_selection(3, [0, 1])
    closed = float(it.population_loss(exact_task, gates))
    errors, eps = [], []
    for d in (20, 320, 5120):
        task = make_task(L=4, S=3, H=2, N=256, beta=3.0, d=d)
        geo = it.make_geometry(task, jax.random.key(0))
        ctx = it.sample_contexts(jax.random.key(1), task, 256)
        errors.append(
            abs(
                float(it.monte_carlo_loss(task, geo, gates, ctx, batch_size=64))
                - closed
            )
        )
        eps.append(geo.eps)
    assert eps[0] > eps[1] > eps[2]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.01 < errors[0]


def test_monte_carlo_converges_over_random_contexts_with_context_dependent_gates():
    # Linear gates with token-specific components: each context has its own loss. The sample mean
    # must approach a large-sample reference at the 1/sqrt(M) rate (within 4 standard errors).
    task = make_task(L=4, S=3, H=1, N=60, beta=3.0)
    geo = it.ExactGeometry(task.N, task.kappa)
    gates = it.LinearGates(
        2.0 * jax.random.normal(jax.random.key(0), (1, 2, 3, geo.dim))
    )
    big = it.query_losses(
        task, geo, gates, it.sample_contexts(jax.random.key(1), task, 20000)
    ).mean(axis=1)
    reference, spread = float(big.mean()), float(big.std())
    assert spread > 1e-3  # contexts really differ
    for M in (64, 1024):
        small = it.monte_carlo_loss(
            task, geo, gates, it.sample_contexts(jax.random.key(M), task, M)
        )
        assert abs(float(small) - reference) < 4 * spread / np.sqrt(
            M
        ) + 4 * spread / np.sqrt(20000)


@given(st.data(), st.sampled_from(TASKS[:2]))
def test_distinct_selecting_heads_cover_exactly_their_phases(data, task):
    offsets = data.draw(selections(task))
    acc = np.asarray(it.phase_accuracy(task, it.hard_selection(task.S, offsets)))
    expected = np.isin(np.arange(task.S - 1), offsets).astype(float)
    np.testing.assert_array_equal(acc, expected)
    assert float(it.phase_gap(acc)) == (
        1.0 if 0 < len(set(offsets)) < task.S - 1 else 0.0
    )


def test_uniform_gates_tie_everywhere_and_score_zero():
    task = TASKS[1]
    np.testing.assert_array_equal(
        it.phase_accuracy(task, it.uniform_gates(task.H, task.S)), 0.0
    )


def test_batched_oracle_gates_must_match_the_number_of_contexts():
    task = TASKS[0]
    ctx = it.sample_contexts(jax.random.key(0), task, 3)
    p = jnp.full((2, task.H, task.L, task.S), 1 / task.S)
    with pytest.raises(ValueError, match="oracle gates for 2 contexts but 3 contexts"):
        it.monte_carlo_loss(
            task, it.ExactGeometry(task.N, task.kappa), it.OracleGates(p, p), ctx
        )


def test_batch_size_does_not_change_the_result():
    task = TASKS[1]
    geo = it.ExactGeometry(task.N, task.kappa)
    gates = it.LinearGates(
        jax.random.normal(jax.random.key(0), (task.H, 2, task.S, geo.dim))
    )
    ctx = it.sample_contexts(jax.random.key(1), task, 50)
    a = it.monte_carlo_loss(task, geo, gates, ctx)
    b = it.monte_carlo_loss(task, geo, gates, ctx, batch_size=8)
    assert abs(float(a) - float(b)) < 1e-12


def test_hard_selection_rejects_offsets_without_a_successor():
    with pytest.raises(ValueError, match="0..W-2"):
        it.hard_selection(4, [3])
    with pytest.raises(ValueError, match="0..W-2"):
        it.hard_selection(4, [-1])


def test_selected_offsets_classify_hard_and_soft_gates():
    g = it.hard_selection(4, [2, 0])
    np.testing.assert_array_equal(it.selected_offsets(g.key, g.value, 1e-3), [2, 0])
    u = it.uniform_gates(2, 4)
    np.testing.assert_array_equal(it.selected_offsets(u.key, u.value, 0.1), [-1, -1])
    # key at r without value at r+1 is not a selection
    np.testing.assert_array_equal(it.selected_offsets(g.key, g.key, 0.1), [-1, -1])
    with pytest.raises(ValueError, match="delta"):
        it.selected_offsets(g.key, g.value, 0.7)
    offs = jnp.array(
        [[[0, 1], [1, 0]], [[0, 1], [0, 2]]]
    )  # (batch=2, heads=2, blocks=2)
    assert it.model.distinct_within_blocks(offs).tolist() == [True, False]


def test_closed_forms_refuse_an_approximate_geometry():
    task = make_task(L=4, S=3, H=2, N=64, eps=0.3)
    gates = it.hard_selection(3, [0, 1])
    for closed_form in (it.population_loss, it.phase_accuracy, it.phase_losses):
        with pytest.raises(ValueError, match="needs exact geometry"):
            closed_form(task, gates)
    with pytest.raises(ValueError, match="needs exact geometry"):
        it.model.exact_logits(task, gates.for_blocks(task.L))


def test_hard_selection_rejects_fractional_offsets():
    with pytest.raises(ValueError, match="must be integers"):
        it.hard_selection(4, [0.7, 1])
