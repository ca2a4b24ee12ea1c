"""Vertex (hard-selection) enumeration and the per-context loss of the oracle class.

Expected values come from independent computations: a NumPy transcription of docs/theory.md §4 for
vertex gates, the block-shared closed form, the dense path with explicit embeddings, and
exhaustive enumeration against the symmetry-reduced one.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from strategies import make_task, oracle_gates, seeds, tasks

import inductheory as it


def hand_vertex_loss(task, offsets):
    """docs/theory.md §4 for a vertex configuration, written out in NumPy (no library code)."""
    L, S, H, beta, gamma = task.L, task.S, task.H, task.beta, task.gamma
    A = lambda w: math.exp(gamma * w) / (math.exp(gamma * w) + L - 1)
    total = 0.0
    for lstar in range(L):
        for rstar in range(S - 1):
            s = np.zeros((L, S))
            for h in range(H):
                a_t = A(1.0) if offsets[h][lstar] == rstar else A(0.0)
                for l in range(L):
                    a = a_t if l == lstar else (1 - a_t) / (L - 1)
                    s[l, offsets[h][l] + 1] += beta * a
            total += math.log(task.N - L * S + np.exp(s).sum()) - s[lstar, rstar + 1]
    return total / (L * (S - 1))


@jax.jit
def _vertex_context_loss(task, geo, offsets, tokens):
    # the library calls of one example as one compiled program per task shape (not op-by-op
    # dispatch, which compiles every primitive of every new shape on its own)
    return it.model.context_loss(
        task, geo, it.oracle.vertex_gates(task.S, offsets), tokens
    )


@jax.jit
def _exact_and_dense_losses(task, geo, gates, contexts):
    # every context on both paths in one compiled program per task shape (was eight eager calls)
    loss = lambda g: jax.vmap(lambda t: it.model.context_loss(task, g, gates, t))
    return loss(geo)(contexts), loss(geo.dense())(contexts)


@jax.jit
def _context_and_population_loss(task, geo, vertex, shared, tokens):
    # a vertex's per-context loss and the closed form of its shared gates, one compiled program
    return it.model.context_loss(task, geo, vertex, tokens), it.population_loss(
        task, shared
    )


@jax.jit
def _context_losses(task, geo, gates, contexts):
    # the per-context losses of several contexts in one compiled program (was an eager call each)
    return jax.vmap(lambda t: it.model.context_loss(task, geo, gates, t))(contexts)


@jax.jit
def _dense_and_context_basis_losses(task, geo, gates, tokens):
    # the loss on the full dense geometry and on its per-context basis, one compiled program
    small = it.oracle.context_geometry(geo, tokens)
    return (
        small.embeddings,
        it.model.context_loss(task, geo, gates, tokens),
        it.model.context_loss(task, small, gates, tokens),
    )


@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_vertex_loss_matches_hand_formula(data):
    task = data.draw(tasks(min_L=2, max_L=5, min_S=2, max_S=4, max_H=3, max_N=200))
    offsets = np.array(
        data.draw(
            st.lists(
                st.integers(0, task.S - 2),
                min_size=task.H * task.L,
                max_size=task.H * task.L,
            )
        )
    )
    offsets = offsets.reshape(task.H, task.L)
    tokens = it.sample_contexts(jax.random.key(0), task, 1)[0]
    geo = it.ExactGeometry(task.N, task.kappa)
    got = float(_vertex_context_loss(task, geo, offsets, tokens))
    assert got == pytest.approx(hand_vertex_loss(task, offsets), rel=1e-12, abs=1e-12)


def test_block_shared_vertices_match_closed_form():
    task = make_task(L=5, S=4, H=2, N=300, beta=3.0, gamma=0.7)
    geo = it.ExactGeometry(task.N, task.kappa)
    tokens = it.sample_contexts(jax.random.key(1), task, 1)[0]
    for sel in itertools.product(range(task.S - 1), repeat=task.H):
        offsets = np.repeat(np.array(sel)[:, None], task.L, axis=1)
        general, closed = map(
            float,
            _context_and_population_loss(
                task,
                geo,
                it.oracle.vertex_gates(task.S, offsets),
                it.hard_selection(task.S, sel),
                tokens,
            ),
        )
        assert general == pytest.approx(closed, rel=1e-12)


@settings(max_examples=5, deadline=None)
@given(data=st.data(), seed=seeds)
def test_exact_geometry_all_contexts_equivalent(data, seed):
    """Arbitrary oracle gates have the same loss in every context, on the structured exact path
    and on the dense path with the explicit N x (N+1) embedding (small N)."""
    task = data.draw(tasks(min_L=2, max_L=5, min_S=2, max_S=4, max_H=3, max_N=64))
    gates = data.draw(oracle_gates(task))
    geo = it.ExactGeometry(task.N, task.kappa)
    ctx = it.sample_contexts(jax.random.key(seed), task, 4)
    exact, dense_losses = _exact_and_dense_losses(task, geo, gates, ctx)
    exact, dense_losses = np.asarray(exact).tolist(), np.asarray(dense_losses)
    assert len(exact) == 4
    assert len(set(map(lambda x: round(x, 12), exact))) == 1
    np.testing.assert_allclose(dense_losses, exact[0], rtol=1e-10)


def test_approximate_geometry_contexts_differ():
    """The equivalence is special to eps = 0: with eps > 0 the same gates cost differently
    per context
    (so the test above could fail)."""
    task = make_task(L=4, S=3, H=2, N=256, beta=4.0, d=40)
    geo = it.make_geometry(task, jax.random.key(0))
    gates = it.oracle.vertex_gates(task.S, np.zeros((task.H, task.L), int))
    ctx = it.sample_contexts(jax.random.key(1), task, 3)
    losses = np.asarray(_context_losses(task, geo, gates, ctx))
    assert losses.shape == (3,) and max(losses) - min(losses) > 1e-6


def test_context_geometry_preserves_dense_loss():
    task = make_task(L=4, S=3, H=2, N=300, beta=3.0, d=64)
    geo = it.make_geometry(task, jax.random.key(2))
    rng = np.random.default_rng(0)
    for tokens in it.sample_contexts(jax.random.key(3), task, 3):
        p = rng.dirichlet(np.ones(task.S), size=(2, task.H, task.L))
        gates = it.OracleGates(key=jnp.asarray(p[0]), value=jnp.asarray(p[1]))
        embeddings, full, small = _dense_and_context_basis_losses(
            task, geo, gates, tokens
        )
        assert embeddings.shape == (task.N, task.L * task.S)
        assert float(small) == pytest.approx(float(full), rel=1e-12)


def test_block_multisets_cover_every_configuration_class():
    H, L, S = 2, 4, 3
    every = it.oracle.all_vertex_configs(H, L, S)
    assert len(every) == (S - 1) ** (H * L)
    assert len({tuple(c.ravel()) for c in every}) == len(every)
    # multisets of block columns, computed independently from the exhaustive list
    classes = {tuple(sorted(tuple(c[:, l]) for l in range(L))) for c in every}
    reps = it.oracle.block_multiset_configs(H, L, S)
    assert len(reps) == len(classes) == it.oracle.n_block_multisets(H, L, S)
    assert {tuple(sorted(tuple(c[:, l]) for l in range(L))) for c in reps} == classes


def test_block_multiset_enumeration_finds_the_exhaustive_optimum():
    task = make_task(L=4, S=3, H=2, N=40, beta=6.0)
    geo = it.ExactGeometry(task.N, task.kappa)
    tokens = it.sample_contexts(jax.random.key(0), task, 1)[0]
    fast = it.best_vertex(task, geo, tokens)
    full = it.best_vertex(task, geo, tokens, exhaustive=True)
    assert fast.method == "block-multisets" and full.method == "exhaustive"
    assert fast.n_evaluated < full.n_evaluated
    assert fast.loss == pytest.approx(full.loss, rel=1e-13)
    losses = [
        hand_vertex_loss(task, c)
        for c in it.oracle.all_vertex_configs(task.H, task.L, task.S)
    ]
    assert full.loss == pytest.approx(min(losses), rel=1e-12)
    assert np.all(np.diff(fast.top_losses) >= 0)


def test_block_permutation_invariance_and_head_swaps():
    task = make_task(L=4, S=4, H=2, N=100, beta=5.0)
    geo = it.ExactGeometry(task.N, task.kappa)
    tokens = it.sample_contexts(jax.random.key(0), task, 1)[0]
    offsets = np.array([[0, 1, 2, 2], [1, 1, 0, 2]])
    perm = offsets[:, [2, 0, 3, 1]]
    losses = it.oracle.vertex_losses(task, geo, tokens, np.stack([offsets, perm]))
    assert float(losses[0]) == pytest.approx(float(losses[1]), rel=1e-13)
    # permuting the heads inside one block only is not a symmetry once H >= 3
    task3 = make_task(L=4, S=4, H=3, N=100, beta=5.0)
    offsets = np.array([[1, 0, 1, 2], [2, 2, 0, 1], [2, 2, 0, 1]])
    swapped = offsets.copy()
    swapped[:, 1] = swapped[::-1, 1]
    pair = it.oracle.vertex_losses(task3, geo, tokens, np.stack([offsets, swapped]))
    hand = [hand_vertex_loss(task3, offsets), hand_vertex_loss(task3, swapped)]
    np.testing.assert_allclose(np.asarray(pair), hand, rtol=1e-12)
    assert abs(hand[0] - hand[1]) > 1e-4
