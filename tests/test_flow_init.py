"""The ball-uniform initialization and the exact law of its projection (docs/theory.md §6)."""

import math

import jax
import numpy as np
import pytest
from scipy import stats

import inductheory as it


def test_ball_uniform_radius_law():
    # |c| / rho has P(<= r) = r^D, so (|c|/rho)^D is U(0, 1)
    shape, rho = (3, 4), 0.3
    c = jax.vmap(lambda k: it.flow.ball_uniform(k, shape, rho))(
        jax.random.split(jax.random.key(1), 2000)
    )
    r = np.linalg.norm(np.asarray(c).reshape(2000, -1), axis=1) / rho
    assert r.max() <= 1.0
    assert stats.kstest(r**12, "uniform").pvalue > 1e-3


def test_projection_matches_materialized_ball():
    # reduced b(0) sampled without materializing c(0) has the law of <c(0), m> for materialized c(0)
    task = it.Task(L=4, S=3, H=1, N=12, kappa=0.7)
    geo = it.ExactGeometry(N=task.N, kappa=task.kappa)
    rho, n = 0.5, 4000
    keys = jax.random.split(jax.random.key(2), 2 * n)
    c = jax.vmap(lambda k: it.flow.initial_gate_vectors(k, task, geo, rho))(keys[:n])
    b_full = np.asarray(jax.vmap(lambda x: it.LinearGates(x).biases(geo))(c)).reshape(
        n, -1
    )
    b_red = np.asarray(
        jax.vmap(lambda k: it.flow.initial_biases(k, task, rho))(keys[n:])
    ).reshape(n, -1)
    for j in range(b_full.shape[1]):
        assert stats.ks_2samp(b_full[:, j], b_red[:, j]).pvalue > 1e-3
    assert (
        stats.ks_2samp(
            np.linalg.norm(b_full, axis=1), np.linalg.norm(b_red, axis=1)
        ).pvalue
        > 1e-3
    )
    # second moment by hand: E x_1^2 = rho^2 / (D + 2) for the ball in R^D, times |m|^2
    D = 2 * task.H * task.S * (task.N + 1)
    expect = rho**2 / (D + 2) * (task.kappa + 1 / task.N)
    assert math.isclose(np.mean(b_red**2), expect, rel_tol=0.05)


def test_projection_at_large_N_has_the_exact_second_moment():
    task = it.Task(L=8, S=4, H=2, N=10**6)
    b = np.asarray(
        jax.vmap(lambda k: it.flow.initial_biases(k, task, 0.1))(
            jax.random.split(jax.random.key(3), 4000)
        )
    )
    D = 2 * task.H * task.S * (task.N + 1)
    assert math.isclose(
        np.mean(b**2), 0.01 / (D + 2) * (task.kappa + 1 / task.N), rel_tol=0.05
    )
    assert np.all(
        np.linalg.norm(b.reshape(4000, -1), axis=1)
        <= 0.1 * math.sqrt(task.kappa + 1 / task.N)
    )


def test_ball_projection_full_dimension_is_the_ball():
    x = np.asarray(
        jax.vmap(lambda k: it.flow.ball_projection(k, 3, 3, 2.0))(
            jax.random.split(jax.random.key(4), 3000)
        )
    )
    assert np.all(np.linalg.norm(x, axis=1) <= 2.0)
    assert stats.kstest((np.linalg.norm(x, axis=1) / 2.0) ** 3, "uniform").pvalue > 1e-3
    with pytest.raises(ValueError):
        it.flow.ball_projection(jax.random.key(0), 4, 3, 1.0)


def test_project_to_mean_keeps_biases_and_zeroes_the_rest():
    geo = it.ExactGeometry(N=20, kappa=1.3)
    c = jax.random.normal(jax.random.key(5), (2, 2, 3, geo.dim))
    p = it.flow.project_to_mean(c, geo)
    m = geo.mean_embedding()
    np.testing.assert_allclose(p @ m, c @ m, rtol=1e-12)
    np.testing.assert_allclose((c - p) @ m, 0.0, atol=1e-12)
    # p is parallel to m
    np.testing.assert_allclose(p - (p[..., :1] / m[0]) * m, 0.0, atol=1e-12)


def test_reduced_init_needs_exact_geometry():
    task = it.Task(L=4, S=3, H=1, N=64, eps=0.5)
    with pytest.raises(ValueError, match="exact geometry"):
        it.flow.initial_biases(jax.random.key(0), task, 0.1)
