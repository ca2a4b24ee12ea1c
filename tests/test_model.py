"""The exact-geometry path of docs/theory.md §4 against the literal dense model."""

import equinox as eqx
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


# Cost: each property's library calls (context sampling included, the keys traced) run as one
# `eqx.filter_jit` program per task shape, compiled once for the three TASKS, instead of several
# programs per shape and op-by-op dispatch in every example. Same calls, same assertions.


@eqx.filter_jit
def _oracle_losses_both_paths(task, geo, ctx, gates):
    return (
        it.query_losses(task, geo, gates, ctx),
        it.query_losses(task, geo.dense(), gates, ctx),
    )


@given(st.data(), task_strategy, seeds)
def test_exact_path_equals_dense_path_for_oracle_gates(data, task, seed):
    gates = it.OracleGates(
        key=np.stack([data.draw(oracle_gates(task)).key for _ in range(3)]),
        value=np.stack([data.draw(oracle_gates(task)).value for _ in range(3)]),
    )
    geo = it.ExactGeometry(task.N, task.kappa)
    ctx = it.sample_contexts(jax.random.key(seed), task, 3)
    exact, dense = _oracle_losses_both_paths(task, geo, ctx, gates)
    np.testing.assert_allclose(exact, dense, rtol=0, atol=1e-10)


@eqx.filter_jit
def _linear_both_paths(task, geo, ctx, c_key, scale):
    c = scale * jax.random.normal(c_key, (task.H, 2, task.S, geo.dim))
    gates = it.LinearGates(c)
    return (
        it.query_losses(task, geo, gates, ctx),
        it.query_losses(task, geo.dense(), gates, ctx),
        it.monte_carlo_phase_accuracy(task, geo, gates, ctx),
        it.monte_carlo_phase_accuracy(task, geo.dense(), gates, ctx),
    )


@given(task_strategy, seeds, st.floats(0.05, 3.0))
def test_exact_path_equals_dense_path_for_linear_gates(task, seed, scale):
    geo = it.ExactGeometry(task.N, task.kappa)
    exact, dense, exact_accuracy, dense_accuracy = _linear_both_paths(
        task,
        geo,
        it.sample_contexts(jax.random.key(seed), task, 3),
        jax.random.key(seed + 1),
        np.asarray(scale, np.float64),
    )
    np.testing.assert_allclose(exact, dense, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(exact_accuracy, dense_accuracy)


@eqx.filter_jit
def _exact_and_dense_logits(task, geo, tokens, gates):
    return (
        it.model.exact_logits(task, gates),
        it.model.dense_logits(task, geo.embeddings(), tokens, gates),
    )


@given(st.data(), task_strategy, seeds)
def test_exact_logits_are_the_dense_logits_shifted_by_beta_h_kappa(data, task, seed):
    gates = data.draw(oracle_gates(task))
    geo = it.ExactGeometry(task.N, task.kappa)
    tokens = it.sample_contexts(jax.random.key(seed), task, 1)[0]
    (exact, log_mult, target), (dense, _, dense_target) = _exact_and_dense_logits(
        task, geo, tokens, gates
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
    losses = _dense_losses_at_two_kappas(
        task_a,
        it.ExactGeometry(base.N, kappa_a),
        it.ExactGeometry(base.N, kappa_b),
        it.sample_contexts(jax.random.key(seed), base, 1)[0],
        gates,
    )
    np.testing.assert_allclose(losses[0], losses[1], rtol=0, atol=1e-10)


@eqx.filter_jit
def _dense_losses_at_two_kappas(task, geo_a, geo_b, tokens, gates):
    return [
        it.model.cross_entropy(
            *it.model.dense_logits(task, geo.embeddings(), tokens, gates)
        )
        for geo in (geo_a, geo_b)
    ]


@eqx.filter_jit
def _losses_before_and_after_relabeling(task, geo, ctx, perm_key, c_key, gates):
    perm = jax.random.permutation(perm_key, geo.N)  # geo.N: the static vocabulary size
    relabeled = perm[ctx]
    # linear gates: relabel the token coordinates of c together with the tokens
    c = jax.random.normal(c_key, (task.H, 2, task.S, geo.N + 1))
    c_relabeled = c[..., jnp.concatenate([jnp.zeros(1, int), 1 + jnp.argsort(perm)])]
    return (
        it.query_losses(task, geo, gates, ctx),
        it.query_losses(task, geo, gates, relabeled),
        it.query_losses(task, geo, it.LinearGates(c), ctx),
        it.query_losses(task, geo, it.LinearGates(c_relabeled), relabeled),
    )


@given(st.data(), task_strategy, seeds)
def test_loss_is_invariant_to_relabeling_the_vocabulary(data, task, seed):
    gates = data.draw(oracle_gates(task))
    geo = it.ExactGeometry(task.N, task.kappa).dense()
    oracle, oracle_relabeled, linear, linear_relabeled = (
        _losses_before_and_after_relabeling(
            task,
            geo,
            it.sample_contexts(jax.random.key(seed), task, 2),
            jax.random.key(seed + 7),
            jax.random.key(seed),
            gates,
        )
    )
    np.testing.assert_allclose(oracle, oracle_relabeled, atol=1e-10)
    np.testing.assert_allclose(linear, linear_relabeled, atol=1e-10)


@eqx.filter_jit
def _losses_before_and_after_permuting_blocks(task, geo, tokens, order_key, gates):
    order = jax.random.permutation(order_key, task.L)
    permuted = it.OracleGates(key=gates.key[:, order], value=gates.value[:, order])
    return (
        it.monte_carlo_loss(task, geo, gates, tokens),
        it.monte_carlo_loss(task, geo, permuted, tokens[:, order]),
    )


@given(st.data(), task_strategy, seeds)
def test_loss_is_invariant_to_permuting_blocks(data, task, seed):
    gates = data.draw(oracle_gates(task))
    geo = it.ExactGeometry(task.N, task.kappa).dense()
    a, b = _losses_before_and_after_permuting_blocks(
        task,
        geo,
        it.sample_contexts(jax.random.key(seed), task, 1),
        jax.random.key(seed),
        gates,
    )
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
