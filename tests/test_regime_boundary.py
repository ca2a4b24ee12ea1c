"""The closed-form edge derivatives and local boundary of the hard vertex
(`_regime_boundary`), checked
against autodiff of the library's per-context loss and against the literal sympy loss of proofs/."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp

from inductheory import ExactGeometry, OracleGates
from inductheory.model import context_loss, quiet_task
from inductheory.oracle import hard_vertex_boundary, hard_vertex_edges

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from proofs import regime_boundary as proof  # noqa: E402


def vertex(L, S, offsets):
    """Key and value gates (H, L, S) of head h selecting offsets[h] in every block."""
    eye = np.eye(S)
    key = np.stack([np.tile(eye[r], (L, 1)) for r in offsets])
    value = np.stack([np.tile(eye[r + 1], (L, 1)) for r in offsets])
    return jnp.asarray(key), jnp.asarray(value)


def loss_fn(L, S, H, N, beta, gamma):
    task = quiet_task(L=L, S=S, H=H, N=N, beta=beta, gamma=gamma, kappa=0.7)
    geometry, tokens = (
        ExactGeometry(task.N, task.kappa),
        jnp.arange(L * S).reshape(L, S),
    )
    return lambda k, v: context_loss(
        task, geometry, OracleGates(key=k, value=v), tokens
    )


CASES = [  # (L, S, H, gamma, beta, N, offsets): offsets in any order, not only 0..H-1
    (4, 4, 2, 1.0, 8.0, 100, (2, 0)),
    (6, 4, 2, 0.5, 11.0, 70, (1, 2)),
    (4, 4, 1, 1.0, 7.0, 40, (1,)),
    (4, 4, 3, 1.0, 9.0, 20, (2, 0, 1)),
    (5, 6, 3, 0.8, 6.0, 300, (4, 1, 2)),
    (8, 4, 2, 1.0, 16.0, 64, (0, 2)),
]


@pytest.mark.parametrize("L,S,H,gamma,beta,N,offsets", CASES)
def test_edges_match_autodiff_of_context_loss(L, S, H, gamma, beta, N, offsets):
    key, value = vertex(L, S, offsets)
    gk, gv = map(
        np.asarray,
        jax.jit(jax.grad(loss_fn(L, S, H, N, beta, gamma), argnums=(0, 1)))(key, value),
    )
    edges = {
        k: float(v)
        for k, v in hard_vertex_edges(beta, N, L=L, S=S, H=H, gamma=gamma).items()
    }
    targets = {r + 1 for r in offsets}
    uncovered = [i + 1 for i in range(S - 1) if i not in offsets]
    seen = []
    for h, r in enumerate(offsets):
        for l in (0, L - 1):
            for i in range(S):
                if i != r:
                    seen.append(edges["key"])
                    np.testing.assert_allclose(
                        gk[h, l, i] - gk[h, l, r], edges["key"], rtol=1e-10
                    )
                if i == r + 1:
                    continue
                gap = gv[h, l, i] - gv[h, l, r + 1]
                name = (
                    "value_zero"
                    if i == 0
                    else "value_other"
                    if i in targets
                    else "value_uncovered"
                )
                np.testing.assert_allclose(gap, edges[name], rtol=1e-10, atol=1e-15)
                seen.append(edges[name])
    assert math.isclose(float(edges["min"]), min(seen), rel_tol=1e-12)
    assert np.isnan(edges["value_uncovered"]) == (not uncovered)
    assert np.isnan(edges["value_other"]) == (H == 1)


@pytest.mark.parametrize(
    "L,S,H,gamma,beta,N,offsets",
    [
        pytest.param(*c, marks=[pytest.mark.slow] if c[0] > 4 else [])
        for c in CASES
        if c[2] < c[1] - 1
    ],
)
def test_curvature_matches_autodiff(L, S, H, gamma, beta, N, offsets):
    key, value = vertex(L, S, offsets)
    f = loss_fn(L, S, H, N, beta, gamma)
    h, l = H - 1, 1
    i = next(i + 1 for i in range(S - 1) if i not in offsets)

    def along(t):
        return f(key, value.at[h, l, offsets[h] + 1].add(-t).at[h, l, i].add(t))

    expected = jax.grad(jax.grad(along))(0.0)
    np.testing.assert_allclose(
        hard_vertex_edges(beta, N, L=L, S=S, H=H, gamma=gamma)["curvature"],
        expected,
        rtol=1e-9,
    )


def test_boundary_is_the_root_of_the_literal_sympy_edge():
    # independent of the library: the edge derivative of the literal §4 loss (proofs/), root
    # in K by nsolve
    L, S, H, gamma, beta = 4, 4, 2, 1.0, 8.0
    pK, pV = proof.vertex_gates(L, S, H)
    loss = proof.literal_loss(
        L, S, H, pK, proof.moved(pV, 0, 0, 1, 3)
    )  # head 0: value 1 -> 3 (phase 2 uncovered)
    edge = sp.diff(loss, proof.t).subs(
        {proof.t: 0, proof.gamma: gamma, proof.beta: beta}
    )
    K_star = float(sp.nsolve(edge, proof.K, 60))
    assert math.isclose(
        float(hard_vertex_boundary(beta, L=L, S=S, H=H, gamma=gamma)),
        L * S + K_star,
        rel_tol=1e-9,
    )


@pytest.mark.parametrize(
    "L,S,H,gamma,beta",
    [
        (4, 4, 2, 1.0, 8.0),
        (6, 4, 2, 1.0, 14.0),
        (4, 4, 2, 0.5, 10.0),
        (4, 4, 1, 1.0, 10.0),
        (5, 6, 3, 0.7, 12.0),
    ],
)
def test_sign_of_the_autodiff_edge_flips_at_the_boundary(L, S, H, gamma, beta):
    n_star = float(hard_vertex_boundary(beta, L=L, S=S, H=H, gamma=gamma))
    assert n_star > L * S + 2
    offsets = tuple(range(H))
    key, value = vertex(L, S, offsets)
    for N, sign in ((math.floor(n_star), -1), (math.ceil(n_star), 1)):
        gv = np.asarray(
            jax.jit(jax.grad(loss_fn(L, S, H, N, beta, gamma), argnums=1))(key, value)
        )
        assert sign * (gv[0, 0, H + 1] - gv[0, 0, 1]) > 0, (N, n_star)


@pytest.mark.parametrize(
    "L,S,H,gamma,beta", [(4, 4, 2, 1.0, 8.0), (4, 4, 1, 1.0, 10.0), (4, 5, 2, 1.0, 9.0)]
)
def test_hessian_on_the_critical_cone_is_positive_at_the_boundary(L, S, H, gamma, beta):
    # second order at N just above N*: the loss restricted to all value-to-uncovered edges
    # (every head and
    # block at once, cross terms included) is strictly convex, so the transition is continuous
    N = math.ceil(float(hard_vertex_boundary(beta, L=L, S=S, H=H, gamma=gamma)))
    offsets = tuple(range(H))
    key, value = vertex(L, S, offsets)
    f = loss_fn(L, S, H, N, beta, gamma)
    dirs = []
    for h, r in enumerate(offsets):
        for l in range(L):
            for i in range(H + 1, S):
                d = np.zeros(value.shape)
                d[h, l, r + 1], d[h, l, i] = -1.0, 1.0
                dirs.append(d.ravel())
    D = jnp.asarray(np.stack(dirs, axis=1))  # (H L S, edges)
    g = lambda x: f(key, value + (D @ x).reshape(value.shape))  # noqa: E731
    hess = jax.jit(jax.hessian(g))(jnp.zeros(D.shape[1]))
    assert np.linalg.eigvalsh(np.asarray(hess)).min() > 0


def test_all_phases_covered_has_no_boundary_and_bad_shapes_raise():
    assert np.all(
        np.isneginf(hard_vertex_boundary(np.array([2.0, 20.0]), L=4, S=4, H=3))
    )
    assert (
        float(hard_vertex_edges(30.0, 12, L=4, S=4, H=3)["min"]) > 0
    )  # N = LS, large beta: still > 0
    with pytest.raises(ValueError, match="H <= S - 1"):
        hard_vertex_boundary(4.0, L=4, S=4, H=4)
    with pytest.raises(ValueError, match="gamma"):
        hard_vertex_edges(4.0, 64, L=4, S=4, H=2, gamma=0.0)


def test_boundary_grows_with_beta_and_is_vectorized():
    betas = np.linspace(4.0, 16.0, 7)
    n = np.asarray(hard_vertex_boundary(betas, L=4, S=4, H=2))
    assert n.shape == betas.shape and np.all(np.diff(n) > 0)
    assert np.allclose(
        n, [float(hard_vertex_boundary(b, L=4, S=4, H=2)) for b in betas], rtol=1e-12
    )
