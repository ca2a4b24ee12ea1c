"""Theorem 1 (docs/theory.md §7): the global minimizer over the oracle class, in and out of
its regime.

The minimizer is checked against the enumeration of hard selections (an independent method): in
the regime it must not beat the best vertex and must itself be a hard selection (with distinct
heads at eps = 0); outside it (large beta, small N) the classification must report a non-hard
minimizer whose loss, recomputed from its gates, is below every vertex.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from kkt_floor import rounding_floor
from strategies import make_task, seeds

import inductheory as it

FAST = it.OracleMinimizer(restarts=12, steps=150, polish_steps=150)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"restarts": 0}, "restarts"),
        ({"steps": 0}, "steps"),
        ({"polish_steps": -1}, "polish_steps"),
        ({"rounds": 0}, "rounds"),
        ({"init_scale": 0.0}, "init_scale"),
        ({"vertex_jitter": 1.0}, "vertex_jitter"),
        ({"snap": 0.5}, "snap"),
        ({"delta": 0.5}, "delta"),
        ({"tol": 0.0}, "tol"),
        ({"reopen": 0.0}, "reopen"),
    ],
)
def test_minimizer_config_validation(kwargs, name):
    with pytest.raises(ValueError, match=name):
        it.OracleMinimizer(**kwargs)


@settings(max_examples=25, deadline=None)
@given(v=st.lists(st.floats(-5, 5), min_size=2, max_size=6))
def test_project_simplex_against_bisection(v):
    v = np.array(v)
    lo, hi = v.min() - 1, v.max()
    for _ in range(200):  # tau with sum(max(v - tau, 0)) = 1, by bisection
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.maximum(v - mid, 0).sum() > 1 else (lo, mid)
    np.testing.assert_allclose(
        np.asarray(jax.jit(it.oracle.project_simplex)(jnp.asarray(v))),
        np.maximum(v - lo, 0),
        atol=1e-9,
    )


def test_classify_by_hand():
    S = 4
    offsets = np.array([[0, 2, 1], [1, 0, 1]])
    g = it.oracle.vertex_gates(S, offsets)
    got, hard, distinct = it.oracle.classify(g, 1e-3)
    np.testing.assert_array_equal(got, offsets)
    assert hard and not distinct  # block 2: both heads select offset 1
    blurred = it.OracleGates(key=0.99 * g.key + 0.01 / S, value=g.value)
    got, hard, distinct = it.oracle.classify(blurred, 1e-3)
    assert not hard and not distinct and np.all(got == -1)


def _check_minimizer_in_regime(task, seed, contexts=1, distinct=True):
    point = it.oracle_point(
        task, jax.random.key(seed), FAST, contexts=contexts, seeds=4
    )
    for c in point.contexts:
        # the numerical optimum does not beat the best vertex (beyond rounding) ...
        assert c.gap <= 1e-9 * (1 + abs(c.best_vertex_loss))
        assert c.best_loss <= c.best_vertex_loss + 1e-9
        # the local search itself reached the best vertex's loss (no fallback to the vertex)
        assert not c.minimizer_failed and c.minimizer_loss <= c.best_vertex_loss + 1e-9
        # ... and is itself a hard selection, with distinct heads at eps = 0
        assert c.hard_selection, c.offsets
        if distinct:
            assert c.distinct_heads, c.offsets
        # random starts alone never beat the best vertex either
        assert c.best_random_loss >= c.best_vertex_loss - 1e-9 * (
            1 + abs(c.best_vertex_loss)
        )


@settings(max_examples=2, deadline=None)
@given(
    L=st.integers(4, 5),
    S=st.integers(3, 4),
    H=st.integers(1, 2),
    log2N=st.integers(12, 24),
    gamma=st.floats(0.5, 1.0),
    beta=st.floats(0.5, 3.0),
    seed=seeds,
)
def test_theorem1_exact_minimizers_are_distinct_hard_selections(
    L, S, H, log2N, gamma, beta, seed
):
    task = make_task(L=L, S=S, H=H, N=2**log2N, gamma=gamma, beta=beta)
    _check_minimizer_in_regime(task, seed)


@settings(max_examples=2, deadline=None)
@given(beta=st.floats(0.5, 2.0), seed=seeds)
def test_theorem1_small_eps_minimizers_are_hard_selections(beta, seed):
    task = make_task(L=4, S=3, H=2, N=512, beta=beta, d=1500)  # realized eps ~ 0.13
    _check_minimizer_in_regime(task, seed, contexts=2, distinct=False)


def test_outside_regime_minimizer_is_not_hard():
    """Large beta, N = L*S (nothing outside the context), H < S-1: the optimum spreads value
    mass."""
    task = make_task(L=4, S=4, H=2, N=16, beta=8.0)
    geo = it.ExactGeometry(task.N, task.kappa)
    tokens = it.sample_contexts(jax.random.key(0), task, 1)[0]
    vertex = it.best_vertex(task, geo, tokens, exhaustive=True)
    res = it.minimize_oracle(task, geo, tokens, jax.random.key(1), FAST)
    assert not res.hard and not res.distinct
    assert np.any(res.offsets == -1)
    # the reported gates are in the simplex and their loss, recomputed, is below every vertex
    for p in (res.gates.key, res.gates.value):
        assert np.all(np.asarray(p) >= 0)
        np.testing.assert_allclose(np.asarray(p).sum(-1), 1.0, rtol=1e-12)
    # one compiled program, not the exact path op by op
    recomputed = float(
        eqx.filter_jit(it.model.context_loss)(task, geo, res.gates, tokens)
    )
    assert recomputed == pytest.approx(res.loss, rel=1e-12)
    assert recomputed < vertex.loss - 1e-3
    # a KKT point to the rounding of the loss (`kkt_floor`: a fixed bound depends on the CPU),
    # not a stalled one (1e-3 and above)
    f = lambda p: it.model.context_loss(
        task, geo, it.OracleGates(key=p[0], value=p[1]), tokens
    )
    floor = rounding_floor(f, np.stack([res.gates.key, res.gates.value]), 4 * 3)
    assert floor < 1e-4 and res.fw_gap <= floor


def test_same_seed_same_numbers():
    # the shape of test_outside_regime_minimizer_is_not_hard (beta is traced), so the minimizer
    # compiles once for both; determinism does not depend on the task
    task = make_task(L=4, S=4, H=2, N=16, beta=3.0)
    geo = it.ExactGeometry(task.N, task.kappa)
    tokens = it.sample_contexts(jax.random.key(0), task, 1)[0]
    a = it.minimize_oracle(task, geo, tokens, jax.random.key(5), FAST)
    b = it.minimize_oracle(task, geo, tokens, jax.random.key(5), FAST)
    np.testing.assert_array_equal(a.start_losses, b.start_losses)
    np.testing.assert_array_equal(np.asarray(a.gates.key), np.asarray(b.gates.key))


@pytest.mark.slow
def test_random_starts_alone_find_distinct_hard_optimum():
    task = make_task(L=4, S=3, H=2, N=2**20, beta=2.0)
    geo = it.ExactGeometry(task.N, task.kappa)
    tokens = it.sample_contexts(jax.random.key(0), task, 1)[0]
    vertex = it.best_vertex(task, geo, tokens)
    res = it.minimize_oracle(
        task, geo, tokens, jax.random.key(1), it.OracleMinimizer(restarts=64)
    )
    assert res.hard and res.distinct
    assert res.loss == pytest.approx(vertex.loss, rel=1e-12)


@pytest.mark.slow
def test_regime_boundary_grows_with_beta():
    task = make_task(L=4, S=4, H=2, N=16, beta=1.0)
    result = it.regime_map(
        task, [16, 64, 256, 1024, 4096, 16384], [6.0, 8.0, 10.0], config=FAST
    )
    stars = [b.N_star for b in result.boundary]
    assert all(s is not None for s in stars)
    assert stars == sorted(stars) and stars[-1] > stars[0]
