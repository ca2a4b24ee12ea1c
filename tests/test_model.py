"""The exact-geometry path of docs/theory.md §4 against the literal dense model."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, strategies as st
from strategies import make_task, oracle_gates, seeds

import inductheory as it

# A few shapes (each shape compiles once); values vary freely.
TASKS = [
    make_task(L=4, S=3, H=1, N=12, gamma=1.0, beta=2.0, kappa=0.5),
    make_task(L=5, S=4, H=2, N=41, gamma=0.7, beta=5.0, kappa=1.3),
    make_task(
        L=2, S=2, H=3, N=9, gamma=2.5, beta=0.8, kappa=0.0
    ),  # outside the theorems: still exact
]
task_strategy = st.sampled_from(TASKS)


def _contexts(task, seed, M=3):
    return it.sample_contexts(jax.random.key(seed), task, M)


@given(st.data(), task_strategy, seeds)
def test_exact_path_equals_dense_path_for_oracle_gates(data, task, seed):
    ctx = _contexts(task, seed)
    gates = it.OracleGates(
        key=jnp.stack([data.draw(oracle_gates(task)).key for _ in range(3)]),
        value=jnp.stack([data.draw(oracle_gates(task)).value for _ in range(3)]),
    )
    geo = it.ExactGeometry(task.N, task.kappa)
    exact = it.query_losses(task, geo, gates, ctx)
    dense = it.query_losses(task, geo.dense(), gates, ctx)
    np.testing.assert_allclose(exact, dense, rtol=0, atol=1e-10)


@given(task_strategy, seeds, st.floats(0.05, 3.0))
def test_exact_path_equals_dense_path_for_linear_gates(task, seed, scale):
    ctx = _contexts(task, seed)
    geo = it.ExactGeometry(task.N, task.kappa)
    c = scale * jax.random.normal(
        jax.random.key(seed + 1), (task.H, 2, task.S, geo.dim)
    )
    gates = it.LinearGates(c)
    np.testing.assert_allclose(
        it.query_losses(task, geo, gates, ctx),
        it.query_losses(task, geo.dense(), gates, ctx),
        rtol=0,
        atol=1e-10,
    )
    np.testing.assert_array_equal(
        it.monte_carlo_phase_accuracy(task, geo, gates, ctx),
        it.monte_carlo_phase_accuracy(task, geo.dense(), gates, ctx),
    )


@given(st.data(), task_strategy, seeds)
def test_exact_logits_are_the_dense_logits_shifted_by_beta_h_kappa(data, task, seed):
    tokens = _contexts(task, seed, M=1)[0]
    gates = data.draw(oracle_gates(task))
    geo = it.ExactGeometry(task.N, task.kappa)
    exact, log_mult, target = it.model.exact_logits(task, gates)
    dense, _, dense_target = it.model.dense_logits(
        task, geo.embeddings(), tokens, gates
    )
    shift = task.beta * task.H * task.kappa
    flat_tokens = np.asarray(tokens).ravel()
    np.testing.assert_allclose(exact[:, :-1] + shift, dense[:, flat_tokens], atol=1e-10)
    outside = np.setdiff1d(np.arange(task.N), flat_tokens)
    if outside.size:
        np.testing.assert_allclose(dense[:, outside], shift, atol=1e-10)
    np.testing.assert_array_equal(flat_tokens[np.asarray(target)], dense_target)
    assert np.exp(log_mult[-1]) == pytest.approx(task.N - task.L * task.S)


@given(st.data(), seeds, st.floats(0.0, 5.0), st.floats(0.0, 5.0))
def test_kappa_cancels_from_the_loss(data, seed, kappa_a, kappa_b):
    base = TASKS[1]
    task_a = make_task(
        L=base.L,
        S=base.S,
        H=base.H,
        N=base.N,
        gamma=base.gamma,
        beta=base.beta,
        kappa=kappa_a,
    )
    gates = data.draw(oracle_gates(base))
    tokens = _contexts(base, seed, M=1)[0]
    losses = [
        it.model.cross_entropy(
            *it.model.dense_logits(
                task_a, it.ExactGeometry(base.N, k).embeddings(), tokens, gates
            )
        )
        for k in (kappa_a, kappa_b)
    ]
    np.testing.assert_allclose(losses[0], losses[1], rtol=0, atol=1e-10)


@given(st.data(), task_strategy, seeds)
def test_loss_is_invariant_to_relabeling_the_vocabulary(data, task, seed):
    ctx = _contexts(task, seed, M=2)
    gates = data.draw(oracle_gates(task))
    perm = np.asarray(jax.random.permutation(jax.random.key(seed + 7), task.N))
    geo = it.ExactGeometry(task.N, task.kappa).dense()
    np.testing.assert_allclose(
        it.query_losses(task, geo, gates, ctx),
        it.query_losses(task, geo, gates, perm[np.asarray(ctx)]),
        atol=1e-10,
    )
    # linear gates: relabel the token coordinates of c together with the tokens
    c = jax.random.normal(jax.random.key(seed), (task.H, 2, task.S, task.N + 1))
    c_relabeled = jnp.asarray(
        np.asarray(c)[..., np.concatenate([[0], 1 + np.argsort(perm)])]
    )
    np.testing.assert_allclose(
        it.query_losses(task, geo, it.LinearGates(c), ctx),
        it.query_losses(task, geo, it.LinearGates(c_relabeled), perm[np.asarray(ctx)]),
        atol=1e-10,
    )


@given(st.data(), task_strategy, seeds)
def test_loss_is_invariant_to_permuting_blocks(data, task, seed):
    tokens = _contexts(task, seed, M=1)
    gates = data.draw(oracle_gates(task))
    order = np.asarray(jax.random.permutation(jax.random.key(seed), task.L))
    permuted = it.OracleGates(key=gates.key[:, order], value=gates.value[:, order])
    geo = it.ExactGeometry(task.N, task.kappa).dense()
    a = it.monte_carlo_loss(task, geo, gates, tokens)
    b = it.monte_carlo_loss(task, geo, permuted, tokens[:, order])
    assert abs(float(a) - float(b)) < 1e-10


def test_attention_weights_match_a_softmax_over_blocks():
    for L, gamma in [(4, 1.0), (7, 0.3), (2, 3.0)]:
        for w in [0.0, 0.2, 1.0]:
            scores = gamma * np.array([1.0 + w] + [1.0] * (L - 1))  # kappa = 1
            soft = np.exp(scores - scores.max())
            soft /= soft.sum()
            a_t, a_o = it.model.block_attention(w, gamma, L)
            assert float(a_t) == pytest.approx(soft[0], abs=1e-15)
            assert float(a_o) == pytest.approx(soft[1], abs=1e-15)
            # A(w) = sigmoid(gamma w - log(L-1))
            assert float(it.model.attention_to_target(w, gamma, L)) == pytest.approx(
                1 / (1 + np.exp(-(gamma * w - np.log(L - 1)))), abs=1e-15
            )


def _second_derivative(gamma, L):
    return jax.vmap(
        jax.grad(jax.grad(lambda w: it.model.attention_to_target(w, gamma, L)))
    )


@pytest.mark.parametrize("L, gamma", [(4, 1.0), (4, 0.5), (10, 1.0), (100, 0.01)])
def test_attention_is_strictly_convex_on_the_unit_interval_in_the_regime(L, gamma):
    w = jnp.linspace(0, 1, 201)
    assert float(jnp.min(_second_derivative(gamma, L)(w))) > 0


@pytest.mark.parametrize("L, gamma", [(2, 1.0), (3, 1.5), (4, 3.0)])
def test_attention_is_not_convex_outside_the_regime(L, gamma):
    # A'' < 0 once gamma w > log(L-1): reachable on [0, 1] when gamma > log(L-1)
    w = jnp.linspace(0, 1, 201)
    assert float(jnp.min(_second_derivative(gamma, L)(w))) < 0


def test_top1_ties_count_as_wrong():
    logits = jnp.array([[1.0, 1.0, 0.0], [2.0, 1.0, 0.0], [1.0, 1.0 + 1e-13, 0.0]])
    correct = it.model.top1_correct(logits, jnp.zeros(3), jnp.array([0, 0, 1]))
    assert correct.tolist() == [False, True, False]
    # a column with zero multiplicity is no competitor
    assert it.model.top1_correct(
        jnp.array([[1.0, 3.0]]), jnp.array([0.0, -jnp.inf]), jnp.array([0])
    ).tolist() == [True]


@pytest.mark.parametrize("u", [0.0, 5.0, 29.0, 31.0, 100.0, 1e6])
def test_block_attention_both_branches_against_log_sum_exp(u):
    # a_target = e^u / (e^u + L - 1) and a_other = 1 / (e^u + L - 1), written with numpy's
    # logaddexp, on both sides of the switch to the shifted form (gamma * w = 30)
    L = 8
    log_z = np.logaddexp(u, np.log(L - 1))
    a_target, a_other = it.model.block_attention(jnp.asarray(1.0), u, L)
    np.testing.assert_allclose(float(a_target), np.exp(u - log_z), rtol=1e-14)
    np.testing.assert_allclose(float(a_other), np.exp(-log_z), rtol=1e-14, atol=1e-300)
    assert float(a_target) + (L - 1) * float(a_other) == pytest.approx(1.0, rel=1e-15)
