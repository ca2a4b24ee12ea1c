"""The approximate-geometry figure's helpers: coherence of a geometry and Wilson intervals
of shares."""

import math

import jax
import numpy as np
import pytest

from inductheory import Task
from inductheory.figures._stats import wilson_interval
from inductheory.figures.approximate_geometry import coherence
from inductheory.model import approximate_geometry, measure_eps


def loop_coherence(E, kappa):
    n = len(E)
    values = [
        abs(float(np.dot(E[i], E[j])) - kappa)
        for i in range(n)
        for j in range(n)
        if i != j
    ]
    return max(values), sum(values) / len(values)


def test_coherence_matches_a_double_loop_on_a_random_matrix():
    E = np.random.default_rng(0).normal(size=(7, 5))
    assert coherence(E, 0.3) == pytest.approx(loop_coherence(E, 0.3), rel=1e-12)


def test_coherence_of_an_approximate_geometry_is_the_coherence_of_its_directions():
    geo = approximate_geometry(Task(L=4, S=3, H=1, N=20, d=8), jax.random.key(1))
    E = np.asarray(geo.embeddings, dtype=np.float64)
    v = E[:, 1:]  # x_i = sqrt(kappa) u + v_i with u the first axis
    high, mean = coherence(E, 1.0)
    assert (high, mean) == pytest.approx(loop_coherence(v, 0.0), rel=1e-5)
    assert (
        high
        == pytest.approx(measure_eps(geo.embeddings, 1.0), rel=1e-5)
        == pytest.approx(geo.eps, rel=1e-5)
    )
    assert 0 < mean < high


def test_wilson_interval_against_the_closed_form_and_scipy():
    z = 1.959963984540054
    lo, hi = wilson_interval(0, 20)
    assert lo == 0.0 and hi == pytest.approx(
        z * z / (20 + z * z), rel=1e-12
    )  # k = 0: upper end z^2/(n + z^2)
    stats = pytest.importorskip("scipy.stats")
    for k, n in [(0, 20), (7, 24), (20, 20), (1, 2), (13, 20)]:
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)
        assert wilson_interval(k, n)[0] <= k / n <= wilson_interval(k, n)[1]
    assert math.isclose(
        sum(wilson_interval(5, 10)), 1.0
    )  # symmetric about 1/2 at k = n/2
