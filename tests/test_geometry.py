import math

import jax
import numpy as np
import pytest
from hypothesis import given, strategies as st
from strategies import make_task

import inductheory as it


@given(st.sampled_from([12, 45]), st.floats(0.0, 4.0), st.integers(0, 1000))
def test_structured_scores_equal_dense_scores(N, kappa, seed):
    geo = it.ExactGeometry(N=N, kappa=kappa)
    key_c, key_t = jax.random.split(jax.random.key(seed))
    c = jax.random.normal(key_c, (2, 2, 3, N + 1))
    tokens = jax.random.permutation(key_t, N)[:12].reshape(4, 3)
    E = geo.embeddings()
    by_hand = np.einsum(
        "hbrd,lrd->hblr", np.asarray(c), np.asarray(E)[np.asarray(tokens)]
    )
    np.testing.assert_allclose(
        geo.offset_scores(c, tokens), by_hand, rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(
        geo.dense().offset_scores(c, tokens), by_hand, rtol=0, atol=1e-12
    )


def test_exact_embeddings_have_the_exact_gram_and_mean():
    geo = it.ExactGeometry(N=20, kappa=0.6)
    E = np.asarray(geo.embeddings())
    np.testing.assert_allclose(E @ E.T, 0.6 + np.eye(20), atol=1e-14)
    np.testing.assert_allclose(geo.mean_embedding(), E.mean(axis=0), atol=1e-15)
    # <m, x_i> = kappa + 1/N for every token (docs/theory.md §6)
    np.testing.assert_allclose(
        E @ np.asarray(geo.mean_embedding()), 0.6 + 1 / 20, atol=1e-14
    )
    assert it.model.measure_eps(E, 0.6) < 1e-14


def test_exact_geometry_never_materializes_large_vocabularies():
    geo = it.ExactGeometry(N=10**6, kappa=1.0)
    with pytest.raises(ValueError, match="too large to materialize"):
        geo.embeddings()
    task = it.Task(L=4, S=3, H=1, N=10**6, beta=2.0)
    ctx = it.sample_contexts(jax.random.key(0), task, 8)
    c = 0.1 * jax.random.normal(jax.random.key(1), (1, 2, 3, geo.dim))
    loss, grad = jax.jit(
        jax.value_and_grad(
            lambda c: it.monte_carlo_loss(task, geo, it.LinearGates(c), ctx)
        )
    )(c)
    assert np.isfinite(float(loss)) and grad.shape == c.shape
    # only the shared coordinate and the 8*12 coordinates of context tokens receive gradient
    touched = np.count_nonzero(np.any(np.asarray(grad) != 0, axis=(0, 1, 2)))
    assert touched <= 1 + 8 * 12


def test_measure_eps_agrees_with_a_direct_gram_computation():
    rng = np.random.default_rng(0)
    E = rng.normal(size=(300, 40)) / 7
    direct = np.max(np.abs(E @ E.T - 0.3 - np.eye(300)))
    assert it.model.measure_eps(E, 0.3, chunk=64) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("d", [8, 64, 512])
def test_approximate_geometry_reports_its_realized_eps(d):
    task = make_task(L=4, S=3, H=1, N=256, kappa=0.5, d=d)
    geo = it.make_geometry(task, jax.random.key(3))
    E = np.asarray(geo.embeddings)
    assert E.shape == (256, d)
    gram = E @ E.T
    np.testing.assert_allclose(np.diag(gram), 1.5, atol=1e-12)  # unit v_i plus kappa
    assert geo.eps == pytest.approx(np.max(np.abs(gram - 0.5 - np.eye(256))), rel=1e-12)
    assert geo.eps >= it.model.welch_bound(256, d - 1)


@pytest.mark.parametrize("eps", [0.5, 0.25])
def test_target_eps_is_reached(eps):
    task = make_task(L=4, S=3, H=1, N=200, eps=eps)
    geo = it.make_geometry(task, jax.random.key(0))
    assert geo.eps <= eps
    assert it.model.measure_eps(geo.embeddings, task.kappa) == pytest.approx(geo.eps)


def test_approximate_geometry_is_reproducible_and_needs_a_key():
    task = make_task(L=4, S=3, H=1, N=100, d=20)
    a = it.make_geometry(task, jax.random.key(5)).embeddings
    b = it.make_geometry(task, jax.random.key(5)).embeddings
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="needs a PRNG key"):
        it.make_geometry(task)


def test_eps_that_needs_too_much_memory_is_refused():
    task = make_task(L=4, S=3, H=1, N=100_000, eps=0.01)
    with pytest.raises(ValueError, match="exceeds"):
        it.make_geometry(task, jax.random.key(0))


def test_dimension_for_eps_grows_like_log_n_over_eps_squared():
    assert (
        it.model.dimension_for_eps(4096, 0.1)
        == math.ceil(4 * math.log(4096) / 0.01) + 1
    )


def test_a_dimension_that_misses_the_requested_eps_is_an_error():
    task = make_task(
        L=4, S=3, H=1, N=256, eps=0.3, d=64
    )  # passes the Welch bound, misses in practice
    with pytest.raises(ValueError, match="realizes eps"):
        it.make_geometry(task, jax.random.key(0))


def test_exact_geometry_rejects_a_nan_kappa():
    with pytest.raises(ValueError, match="kappa"):
        it.ExactGeometry(N=10, kappa=float("nan"))
