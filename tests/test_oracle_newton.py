"""The active-set Newton minimizer against the BFGS-on-logits one, and its local certificate."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inductheory as it
from inductheory.model._gates import OracleGates
from inductheory.model._loss import context_loss
from inductheory.oracle import OracleMinimizer, best_vertex, oracle_point, vertex_gates
from inductheory.oracle._minimize import local_certificate, starts

# inside the hard-selection regime, outside it, and near its boundary (both verdicts occur)
POINTS = [(16, 4.0), (16, 10.0), (64, 8.0), (256, 12.0), (4096, 12.0)]


@pytest.mark.parametrize("N, beta", POINTS)
def test_default_newton_matches_bfgs(N, beta):
    """The default method (Newton) against BFGS, the independent second method: same verdicts,
    best losses within 1e-9 relative, at L4 S4 H2 exact geometry."""
    assert OracleMinimizer().method == "newton"
    task = it.Task(L=4, S=4, H=2, N=N, beta=beta)
    new = oracle_point(task, jax.random.key(0), OracleMinimizer(restarts=4))
    old = oracle_point(task, jax.random.key(0), OracleMinimizer(method="bfgs"))
    assert (new.hard_selection, new.distinct_heads) == (
        old.hard_selection,
        old.distinct_heads,
    )
    assert abs(new.best_loss - old.best_loss) <= 1e-9 * abs(old.best_loss)
    assert new.max_fw_gap < 1e-7  # KKT to rounding (a stalled search stays far above)


def test_verdicts_differ_across_the_points():
    """The comparison above covers both verdicts (it could not pass by one constant answer):
    the same calls as its Newton side (restarts=4, so the compiled programs are shared)."""
    verdicts = {
        oracle_point(
            it.Task(L=4, S=4, H=2, N=N, beta=beta),
            jax.random.key(0),
            OracleMinimizer(method="newton", restarts=4),
        ).distinct_heads
        for N, beta in POINTS
    }
    assert verdicts == {True, False}


def _loss(task):
    tokens = jnp.arange(task.L * task.S).reshape(task.L, task.S)
    geometry = it.ExactGeometry(task.N, task.kappa)
    return lambda p: context_loss(
        task, geometry, OracleGates(key=p[0], value=p[1]), tokens
    )


def test_certificate_vertex_and_not():
    """A vertex with a positive gradient gap is certified, the uniform point is not (its
    Frank-Wolfe gap is positive), nor a non-optimal vertex whose gradient asks to move."""
    task = it.Task(L=4, S=3, H=1, N=4096, beta=2.0)
    f = _loss(task)
    # the gradient and the certificate (a Hessian and its Cholesky factor) of a point as one
    # compiled program for all the points below, instead of op-by-op dispatch at each of them
    grad_and_certificate = jax.jit(lambda q: (jax.grad(f)(q), local_certificate(f, q)))
    certified = lambda q: bool(grad_and_certificate(q)[1])
    best = best_vertex(
        task,
        it.ExactGeometry(task.N, task.kappa),
        jnp.arange(12).reshape(4, 3),
        k=64,
    )
    gates = vertex_gates(task.W, jnp.asarray(best.offsets))
    p = jnp.stack([gates.key, gates.value])
    assert certified(p)
    uniform = jnp.full_like(p, 1.0 / task.W)
    assert not certified(uniform)
    # an independent check of the first-order condition at every vertex: certified vertices are
    # exactly those where each simplex's selected coordinate has the smallest gradient
    for offsets in best.top_offsets:
        gates = vertex_gates(task.W, jnp.asarray(offsets))
        q = jnp.stack([gates.key, gates.value])
        g, certificate = grad_and_certificate(q)
        g = np.asarray(g)
        sel = np.asarray(q) > 0.5
        others = np.where(sel, np.inf, g)
        kkt_strict = bool(
            np.all(np.min(others, axis=-1) > g[sel].reshape(g.shape[:-1]))
        )
        assert bool(certificate) == kkt_strict


@pytest.mark.parametrize("partitionable", [True, False])
def test_starts_draw_the_shaped_normals(partitionable):
    """The random starts are drawn as one flat vector (cheaper to compile): the same numbers as
    `jax.random.normal` of the 5-d shape under either threefry layout."""
    task = it.Task(L=4, S=4, H=2, N=64)
    config = OracleMinimizer(restarts=3)
    seeds = jnp.zeros((2, task.H, task.L), dtype=jnp.int32)
    with jax.threefry_partitionable(partitionable):
        z = starts(jax.random.key(7), task, config, seeds)
        k_random, k_seed = jax.random.split(jax.random.key(7))
        random = config.init_scale * jax.random.normal(k_random, (3, 2, 2, 4, 4))
        u = jax.nn.softmax(jax.random.normal(k_seed, (2, 2, 2, 4, 4)), axis=-1)
    np.testing.assert_array_equal(np.asarray(z[:3]), np.asarray(random))
    vertex = np.zeros((2, 2, 2, 4, 4))
    vertex[:, 0, :, :, 0] = 1.0  # key gates at offset 0, value gates at offset 1
    vertex[:, 1, :, :, 1] = 1.0
    expected = np.log((1 - config.vertex_jitter) * vertex + config.vertex_jitter * u)
    np.testing.assert_allclose(np.asarray(z[3:]), expected, rtol=1e-14)
