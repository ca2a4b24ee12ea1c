"""Coordination's threshold lambda*: closed-form edge derivatives of the overlap-penalized loss at
hard selections against autodiff, and reduced flows on both sides of lambda*."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inductheory.experiments._flows import run_flow
from inductheory.experiments._mitigations import (
    coordination_threshold,
    mitigation_task,
    overlapped_selections,
    selection_edges,
)
from inductheory.flow._config import FlowConfig
from inductheory.flow._integrate import solve_reduced
from inductheory.flow._solution import Status
from inductheory.model._gates import SharedGates
from inductheory.model._loss import phase_losses
from inductheory.model._objective import Objective
from inductheory.model._task import assumptions_silenced, quiet_task


def autodiff_edges(task, offsets, lam):
    """Edge derivatives g_o - g_r from jax.grad of the library's penalized objective."""
    r = np.asarray(offsets)
    eye = np.eye(task.W)
    rows = np.arange(task.H)

    def J(k, v):
        return Objective("mean", coordination=lam)(
            phase_losses(task, SharedGates(key=k, value=v)), k
        )

    gk, gv = map(
        np.asarray,
        jax.grad(J, argnums=(0, 1))(jnp.asarray(eye[r]), jnp.asarray(eye[r + 1])),
    )
    key = gk - gk[rows, r][:, None]
    value = gv - gv[rows, r + 1][:, None]
    key[rows, r] = np.nan
    value[rows, r + 1] = np.nan
    return key, value


@pytest.mark.parametrize(
    "params,offsets,lam",
    [
        (dict(L=12, S=4, H=3, N=4096, beta=4.0, queries="within"), (0, 0, 1), 0.1),
        (dict(L=12, S=4, H=3, N=4096, beta=4.0, queries="all"), (2, 2, 2), 0.03),
        (dict(L=8, S=5, H=3, N=300, beta=7.0, gamma=0.6), (3, 1, 3), 0.5),
        (
            dict(L=4, S=6, H=4, N=40, beta=2.5, gamma=0.4, queries="all"),
            (0, 4, 0, 4),
            1.3,
        ),
    ],
)
def test_closed_form_edges_equal_autodiff(params, offsets, lam):
    task = quiet_task(**params)
    edges = selection_edges(task, offsets, lam)
    key, value = autodiff_edges(task, offsets, lam)
    np.testing.assert_allclose(edges.key, key, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(edges.value, value, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("queries", ["within", "all"])
@pytest.mark.parametrize("H", [2, 3])
def test_threshold_is_where_autodiff_edges_change_sign(H, queries):
    task = mitigation_task(4, 4, H=H, queries=queries)
    ct = coordination_threshold(task)
    for c, lam_c in ct.thresholds.items():
        assert (
            lam_c is not None
        )  # at this setting every overlapped selection has value edges > 0
        below, _ = autodiff_edges(task, c, 0.999 * lam_c)
        above, _ = autodiff_edges(task, c, 1.001 * lam_c)
        assert np.nanmin(below) > 0 > np.nanmin(above), c
        assert np.nanmin(autodiff_edges(task, c, 0.0)[1]) > 0
    assert ct.threshold == max(ct.thresholds.values())


def test_threshold_tends_to_its_large_vocabulary_limit():
    # lambda* -> gamma beta A1 (1 - A1) / (2 P (n - 1)) for a pair (n = 2) as N -> infinity
    for L, beta, gamma in ((12, 4.0, 1.0), (8, 4.0, 1.0), (6, 9.0, 0.5)):
        task = quiet_task(L=L, S=4, H=2, N=10**12, beta=beta, gamma=gamma)
        A1 = math.exp(gamma) / (math.exp(gamma) + L - 1)
        limit = gamma * beta * A1 * (1 - A1) / (2 * 3)
        assert coordination_threshold(task).threshold == pytest.approx(limit, rel=1e-8)


def test_bad_selections_are_refused():
    task = mitigation_task(4, 4, H=3, queries="within")
    with pytest.raises(ValueError, match="offsets must lie in 0..S-2"):
        selection_edges(task, (0, 3, 1))
    with pytest.raises(ValueError, match="offsets must be 3 integers"):
        selection_edges(task, (0, 1))
    with pytest.raises(ValueError, match="coordination must be >= 0"):
        selection_edges(task, (0, 0, 1), -1.0)
    with pytest.raises(ValueError, match="needs W = S"):
        selection_edges(mitigation_task(4, 8, H=3), (0, 0, 1))
    assert overlapped_selections(task)[0] == (0, 0, 0)


def _config(lam):
    return FlowConfig(
        dynamics="reduced",
        rho=0.1,
        delta=1e-3,
        t_max=1e7,
        n_save=8,
        max_steps=200_000,
        coordination=lam,
    )


def _near_vertex_starts(task, offsets, n, seed=7):
    """Biases with mass 0.99 on the selection's key and value entries, the rest random."""
    r = jnp.asarray(offsets)
    hot = jnp.stack([jax.nn.one_hot(r, task.W), jax.nn.one_hot(r + 1, task.W)], axis=1)
    noise = 0.5 * jax.random.normal(jax.random.key(seed), (n, task.H, 2, task.W))
    return noise + hot * jnp.log(0.99 / 0.01 * (task.W - 1))


def _check_both_sides(task, seeds, starts):
    ct = coordination_threshold(task)
    lam_star = ct.threshold
    # above: no overlapped selection is a local minimum, and no flow ends on one
    above = 1.2 * lam_star
    for c in ct.thresholds:
        assert selection_edges(task, c, above).minimum < 0
    with assumptions_silenced():
        ps = run_flow(task, _config(above), seeds).per_seed
    selected = np.asarray(ps.selected)
    assert np.all(np.asarray(ps.status) == Status.SELECTED)
    assert all(len(set(s.tolist())) == task.H for s in selected)
    # below: the selection with the largest threshold is a strict local minimum and flows started
    # near it stay there
    below = 0.8 * lam_star
    assert selection_edges(task, ct.selection, below).minimum > 0
    cfg = _config(below)
    with assumptions_silenced():
        sols = jax.jit(jax.vmap(lambda b: solve_reduced(task, cfg, b)))(
            _near_vertex_starts(task, ct.selection, starts)
        )
    assert np.all(np.asarray(sols.status) == Status.SELECTED)
    for s in np.asarray(sols.selected):
        assert tuple(sorted(s.tolist())) == ct.selection


def test_flows_on_both_sides_of_the_threshold():
    _check_both_sides(mitigation_task(4, 4, H=3, queries="within"), 32, 8)


@pytest.mark.slow
@pytest.mark.parametrize("L", [8, 12])
def test_flows_on_both_sides_of_the_threshold_256_seeds(L):
    task = quiet_task(L=L, S=4, H=3, N=4096, beta=4.0, gamma=1.0, kappa=1.0)
    _check_both_sides(task, 256, 64)
