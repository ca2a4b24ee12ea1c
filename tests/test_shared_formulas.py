"""Formulas the trained compressed model and the paper family share, against loops."""

import jax.numpy as jnp
import numpy as np

import inductheory  # noqa: F401  (float64)
from inductheory.model._loss import per_phase_mean, phase_means
from inductheory.model._positions import previous_positions
from inductheory.model._task import quiet_task


def test_previous_positions_are_the_w_positions_before_on_the_cycle():
    T, w = 7, 3
    positions = np.array([0, 2, 6])
    want = [[(t - 1 - i) % T for i in range(w)] for t in positions]
    assert previous_positions(positions, w, T).tolist() == want


def test_phase_means_pool_contexts_and_repeats():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(4, 3 * 5))  # 4 contexts, 3 repeats of 5 phases
    want = [values[:, p::5].mean() for p in range(5)]
    np.testing.assert_allclose(phase_means(jnp.asarray(values), 5, 3), want, rtol=1e-14)
    got32 = phase_means(jnp.asarray(values), 5, 3, jnp.float32)
    assert got32.dtype == jnp.float32


def test_per_phase_mean_is_phase_means_of_the_task():
    task = quiet_task(L=4, S=3, H=1, N=16)
    values = jnp.asarray(np.random.default_rng(1).normal(size=(2, 4 * task.n_phases)))
    assert np.array_equal(
        per_phase_mean(task, values), phase_means(values, task.n_phases, task.L)
    )
