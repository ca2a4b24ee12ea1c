import dataclasses
import warnings

import pytest
from hypothesis import given, strategies as st
from strategies import tasks

import inductheory as it


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(L=4, S=4, H=2, N=15), "N must be >= L*S = 16"),
        (dict(L=4, S=1, H=1, N=64), "S must be >= 2"),
        (dict(L=4, S=4, H=0, N=64), "H must be >= 1"),
        (dict(L=1, S=4, H=1, N=64), "L must be >= 2"),
        (dict(L=4, S=4, H=1, N=64, gamma=0.0), "gamma must be > 0"),
        (dict(L=4, S=4, H=1, N=64, gamma=-1.0), "gamma must be > 0"),
        (dict(L=4, S=4, H=1, N=64, beta=0.0), "beta must be > 0"),
        (dict(L=4, S=4, H=1, N=64, kappa=-0.1), "kappa must be >= 0"),
        (dict(L=4, S=4, H=1, N=64, eps=1.5), "eps must lie in"),
        (
            dict(L=4, S=4, H=1, N=4096, eps=0.01, d=10),
            "d = 10 is too small for eps = 0.01",
        ),
        (dict(L=4, S=4, H=1, N=64, d=1), "d must be >= 2"),
        (dict(L=4.5, S=4, H=1, N=64), "L must be an integer"),
        (dict(L=4, S=4, H=1, N=64, beta=float("nan")), "beta must be a finite real"),
    ],
)
def test_bad_settings_raise_naming_the_constraint(kwargs, message):
    with pytest.raises(
        ValueError, match=message.replace("*", r"\*").replace("(", r"\(")
    ):
        it.Task(**kwargs)


@pytest.mark.parametrize(
    "kwargs, assumption",
    [
        (dict(L=3, S=4, H=1, N=64), "L >= 4"),
        (dict(L=4, S=2, H=1, N=64), "S >= 3"),
        (dict(L=4, S=3, H=3, N=64), "H < S"),
        (dict(L=4, S=4, H=1, N=64, gamma=1.5), "gamma <= 1"),
        (dict(L=4, S=4, H=1, N=64, kappa=0.0), "kappa > 0"),
    ],
)
def test_outside_theorem_settings_run_with_a_warning(kwargs, assumption):
    with pytest.warns(it.TheoryAssumptionWarning, match=assumption):
        task = it.Task(**kwargs)
    assert task.N == kwargs["N"]


def test_theorem_regime_setting_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        task = it.Task(L=8, S=4, H=2, N=4096, gamma=1.0, beta=4.0)
    assert task.exact and task.n_queries == 24 and task.n_outside == 4096 - 32


def test_geometry_flags():
    assert it.Task(L=4, S=3, H=1, N=64, eps=0.0).exact
    assert not it.Task(L=4, S=3, H=1, N=64, d=16).exact
    assert not it.Task(L=4, S=3, H=1, N=64, eps=0.4).exact


def test_welch_bound_matches_the_formula_and_is_zero_when_orthonormal_fits():
    assert it.model.welch_bound(10, 10) == 0.0
    assert it.model.welch_bound(100, 10) == pytest.approx(
        ((100 - 10) / (10 * 99)) ** 0.5
    )


def test_config_is_immutable():
    task = it.Task(L=4, S=3, H=1, N=64)
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.N = 10


@given(tasks())
def test_strategy_tasks_are_valid(task):
    assert task.N >= task.L * task.S and task.gamma > 0 and task.beta > 0


@given(st.integers(2, 8), st.integers(2, 8), st.integers(0, 100))
def test_every_too_small_vocabulary_is_rejected(L, S, short):
    N = L * S - 1 - short
    if N < 1:
        return
    with pytest.raises(ValueError, match="N must be >= L\\*S"):
        it.Task(L=L, S=S, H=1, N=N)
