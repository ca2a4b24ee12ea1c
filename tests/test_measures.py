"""Effective number of offsets (docs/theory.md §9): values computed by hand."""

import math

import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings, strategies as st

import inductheory as it


def test_entropy_of_uniform_and_one_hot():
    assert math.isclose(
        float(it.model.entropy(jnp.full(5, 0.2))), math.log(5), rel_tol=1e-12
    )
    assert float(it.model.entropy(jnp.array([0.0, 1.0, 0.0]))) == 0.0
    # H(1/2, 1/4, 1/4) = 1.5 log 2
    assert math.isclose(
        float(it.model.entropy(jnp.array([0.5, 0.25, 0.25]))),
        1.5 * math.log(2),
        rel_tol=1e-12,
    )


def test_effective_number_counts_equal_masses():
    assert math.isclose(
        float(it.model.effective_number(jnp.array([0.5, 0.5, 0.0, 0.0]))),
        2.0,
        rel_tol=1e-12,
    )
    assert math.isclose(
        float(it.model.effective_number(jnp.full(4, 0.25))), 4.0, rel_tol=1e-12
    )


def test_static_versus_input_dependent_concentration():
    # every window one-hot on a different offset: input-dependent concentration
    static, avg = it.effective_offsets(jnp.eye(4))
    assert math.isclose(float(static), 4.0, rel_tol=1e-12) and math.isclose(
        float(avg), 1.0, rel_tol=1e-12
    )
    # every window one-hot on the same offset: static concentration
    same = jnp.tile(jnp.array([0.0, 1.0, 0.0]), (5, 1))
    static, avg = it.effective_offsets(same)
    assert float(static) == 1.0 and float(avg) == 1.0


def test_leading_axes_are_kept():
    alpha = jnp.stack(
        [jnp.eye(3), jnp.full((3, 3), 1 / 3)]
    )  # (2 heads, 3 windows, 3 offsets)
    static, avg = it.effective_offsets(alpha)
    np.testing.assert_allclose(static, [3.0, 3.0], rtol=1e-12)
    np.testing.assert_allclose(avg, [1.0, 3.0], rtol=1e-12)


@settings(max_examples=8, deadline=None)
@given(st.integers(1, 4), st.integers(2, 4), st.integers(0, 2**31 - 1))
def test_bounds_and_window_order(windows, S, seed):
    rng = np.random.default_rng(seed)
    alpha = rng.dirichlet(np.full(S, 0.5), size=windows)
    static, avg = it.effective_offsets(jnp.asarray(alpha))
    assert (
        1 - 1e-12 <= float(avg) <= S + 1e-12 and 1 - 1e-12 <= float(static) <= S + 1e-12
    )
    static2, avg2 = it.effective_offsets(jnp.asarray(alpha[rng.permutation(windows)]))
    assert math.isclose(float(static), float(static2), rel_tol=1e-12)
    assert math.isclose(float(avg), float(avg2), rel_tol=1e-12)
    # the average over windows of exp(H) is a plain mean of per-window values
    direct = np.mean([np.exp(-np.sum(a * np.log(a))) for a in alpha])
    assert math.isclose(float(avg), direct, rel_tol=1e-10)
