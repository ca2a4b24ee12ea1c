"""Convergence rates (inductheory.flow._rates): closed-form escape rates against autodiff,
the exponent fit,
the tail coefficient against an integration of the reduced flow near a vertex."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from inductheory import Task
from inductheory.flow import (
    EscapeRates,
    ReducedDynamics,
    breaking_norm,
    escape_blocks,
    escape_time,
    fit_decay_exponent,
    reduced_escape_rates,
    tail_coefficients,
    unselected_mass,
)

TASKS = [
    dict(L=8, S=4, H=2, N=4096, beta=4.0),
    dict(L=5, S=3, H=2, N=40, beta=2.0, gamma=0.5, kappa=0.3),
    pytest.param(
        dict(L=6, S=5, H=3, N=100, beta=6.0, gamma=0.8, kappa=2.0),
        marks=pytest.mark.slow,
    ),
    pytest.param(dict(L=4, S=4, H=1, N=64, beta=3.0), marks=pytest.mark.slow),
]


def _jacobian(task):
    H, S = task.H, task.S
    J = jax.jacfwd(ReducedDynamics(task).vector_field)(jnp.zeros((H, 2, S)))
    return np.asarray(J).reshape(2 * H * S, 2 * H * S)


def _mode_basis(H, S, heads):
    """Orthonormal basis of the symmetry-breaking modes with head pattern `heads` (H,)."""
    w = np.asarray(heads, float) / np.linalg.norm(heads)
    vectors = []
    for k in range(S - 2):  # zero-sum vectors on S-1 phases
        e = np.zeros(S - 1)
        e[k], e[k + 1] = 1.0, -1.0
        for branch in range(2):
            z = np.zeros((H, 2, S))
            if branch == 0:
                z[:, 0, : S - 1] = w[:, None] * e
            else:
                z[:, 1, 1:] = w[:, None] * e
            vectors.append(z.ravel())
    q, _ = np.linalg.qr(np.array(vectors).T)
    return q


@pytest.mark.parametrize("kw", TASKS)
def test_closed_form_blocks_match_the_autodiff_jacobian(kw):
    task = Task(**kw)
    J = _jacobian(task)
    blocks = escape_blocks(task)
    scale = task.kappa + 1 / task.N
    patterns = {"sym": np.ones(task.H)}
    if task.H >= 2:
        patterns["anti"] = np.r_[1.0, -1.0, np.zeros(task.H - 2)]
    full = np.sort(np.linalg.eigvals(J).real)
    for name, heads in patterns.items():
        Q = _mode_basis(task.H, task.S, heads)
        # the mode space is invariant under J
        np.testing.assert_allclose(J @ Q - Q @ (Q.T @ J @ Q), 0, atol=1e-12)
        expected = np.sort(
            np.repeat(-scale * np.linalg.eigvalsh(getattr(blocks, name)), task.S - 2)
        )
        np.testing.assert_allclose(
            np.sort(np.linalg.eigvalsh(Q.T @ J @ Q)), expected, rtol=1e-9, atol=1e-14
        )
        for lam in expected:  # and they are eigenvalues of the whole Jacobian
            assert np.min(np.abs(full - lam)) < 1e-9
    rates = reduced_escape_rates(task)
    assert rates.rate > 0
    # the largest growth rate of the whole Jacobian is the symmetry-breaking one in these settings
    np.testing.assert_allclose(full[-1], rates.rate, rtol=1e-9)


def test_one_head_has_no_antisymmetric_mode():
    task = Task(L=4, S=4, H=1, N=64, beta=3.0)
    blocks, rates = escape_blocks(task), reduced_escape_rates(task)
    assert blocks.anti is None and blocks.anti_multiplicity == 0
    assert rates.anti is None and rates.rate == rates.sym
    assert rates.to_dict() == {"sym": rates.sym, "anti": None, "rate": rates.rate}
    assert EscapeRates.from_dict(rates.to_dict()) == rates


def test_uniform_point_is_not_a_fixed_point_but_the_drift_breaks_no_symmetry():
    task = Task(**TASKS[0])
    v = np.asarray(ReducedDynamics(task).vector_field(jnp.zeros((2, 2, 4))))
    assert np.abs(v).max() > 1e-3
    assert breaking_norm(v) < 1e-14  # equal over phases 0..S-2 (key) and 1..S-1 (value)


def test_escape_time_is_log_over_rate():
    task = Task(**TASKS[0])
    np.testing.assert_allclose(
        escape_time(task, [np.exp(-2.0)]), 2.0 / reduced_escape_rates(task).rate
    )
    with pytest.raises(ValueError):
        escape_time(task, 0.0)


@pytest.mark.parametrize("a", [0.5, 1.0, 2.0])
def test_fit_recovers_a_known_exponent(a):
    t = np.geomspace(1.0, 1e8, 200)
    rng = np.random.default_rng(0)
    y = 3.0 * t**-a * np.exp(0.01 * rng.standard_normal(t.size))
    y[:5] = np.nan
    slope, logc = fit_decay_exponent(t, y, y_max=1.0, y_min=1e-12)
    assert abs(slope + a) < 0.01 and abs(logc - np.log(3.0)) < 0.1
    assert np.isnan(fit_decay_exponent(t[:2], y[:2])[0])


def test_unselected_mass_is_the_largest_mass_off_the_selection():
    mass = np.zeros((1, 2, 2, 4))
    mass[0, 0] = [
        [0.9, 0.05, 0.05, 0.0],
        [0.0, 0.8, 0.1, 0.1],
    ]  # head 0 selects 0: off masses 0.1, 0.2
    mass[0, 1] = [
        [0.0, 0.0, 0.97, 0.03],
        [0.01, 0.0, 0.0, 0.99],
    ]  # head 1 selects 2: 0.03, 0.01
    np.testing.assert_allclose(unselected_mass(mass, [0, 2]), [0.2])


def test_tail_coefficient_matches_an_integration_near_a_vertex():
    task = Task(L=4, S=3, H=1, N=64, beta=3.0)
    dyn = ReducedDynamics(task)
    f = jax.jit(lambda y: dyn.vector_field(y))
    b0 = np.zeros((1, 2, 3))
    b0[0, 0] = [6.0, 0.0, 0.0]  # head selects 0: key e_0, value e_1
    b0[0, 1] = [0.0, 6.0, 0.0]
    T = 1e6
    sol = solve_ivp(
        lambda t, y: np.asarray(f(jnp.asarray(y.reshape(1, 2, 3)))).ravel(),
        (0, T),
        b0.ravel(),
        method="LSODA",
        rtol=1e-10,
        atol=1e-12,
    )
    p = np.asarray(jax.nn.softmax(sol.y[:, -1].reshape(1, 2, 3), axis=-1))
    measured = np.array([1 - p[0, 0, 0], 1 - p[0, 1, 1]]) * T
    # asymptotic: corrections of relative size ~1e-2 remain at t = 1e6 (value branch)
    np.testing.assert_allclose(measured, tail_coefficients(task, [0])[0], rtol=0.03)
