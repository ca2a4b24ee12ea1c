"""FlowConfig validation and Theorem 2 assumption warnings."""

import warnings

import jax
import pytest

import inductheory as it


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(rho=0.0), "rho"),
        (dict(rho=-1.0), "rho"),
        (dict(delta=0.5), "delta"),
        (dict(delta=0.0), "delta"),
        (dict(t_max=0.0), "t_max"),
        (dict(solver="euler"), "solver"),
        (dict(rtol=0.0), "rtol"),
        (dict(atol=-1e-9), "atol"),
        (dict(max_steps=0), "max_steps"),
        (dict(M=0), "M"),
        (dict(dynamics="other"), "dynamics"),
        (dict(sample="stratified"), "sample"),
        (dict(init="zero"), "init"),
        (dict(batch_size=0), "batch_size"),
        (dict(n_save=0), "n_save"),
        (dict(t_save_min=2e6), "t_save_min"),
        (dict(rho=float("nan")), "rho"),
    ],
)
def test_invalid_settings_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        it.FlowConfig(**kwargs)


def test_large_rho_warns():
    with pytest.warns(it.TheoryAssumptionWarning, match="rho"):
        it.FlowConfig(rho=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        it.FlowConfig(rho=0.1)


def test_check_flow_geometry():
    approx = it.Task(L=4, S=3, H=1, N=64, eps=0.6)
    with pytest.raises(ValueError, match="exact geometry"):
        it.flow.check_flow(approx, it.FlowConfig(dynamics="reduced"))
    with pytest.warns(it.TheoryAssumptionWarning, match="eps = 0"):
        it.flow.check_flow(approx, it.FlowConfig(dynamics="full"))
    with pytest.warns(it.TheoryAssumptionWarning, match="log"):
        it.flow.check_flow(it.Task(L=4, S=3, H=1, N=12), it.FlowConfig(rho=1e-3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        it.flow.check_flow(it.Task(L=4, S=3, H=1, N=4096), it.FlowConfig(rho=1e-3))


def test_balanced_sample_size_rounds_up_to_whole_permutations():
    task = it.Task(L=8, S=4, H=2, N=10**5)
    assert (
        it.experiments.sample_size(task, it.FlowConfig(dynamics="full", M=16384))
        == 25000
    )  # two permutations of N/L = 12500
    assert (
        it.experiments.sample_size(task, it.FlowConfig(dynamics="full", M=12500))
        == 12500
    )
    assert (
        it.experiments.sample_size(
            task, it.FlowConfig(dynamics="full", M=16384, sample="iid")
        )
        == 16384
    )


def test_independent_baseline_by_hand():
    assert it.experiments.independent_distinct_baseline(1, 4) == 1.0
    assert it.experiments.independent_distinct_baseline(2, 4) == pytest.approx(2 / 3)
    assert it.experiments.independent_distinct_baseline(3, 5) == pytest.approx(
        1 * 3 / 4 * 2 / 4
    )


def test_distinct_fraction_and_histogram():
    selected = [[0, 1], [1, 1], [2, -1], [2, 0]]
    assert it.experiments.distinct_fraction(selected) == pytest.approx(0.5)
    hist = it.experiments.offset_histogram(selected, 3)  # S = 4: offsets 0..2
    assert hist.tolist() == [[1, 1, 2], [1, 2, 0]]


def test_bad_radius_and_chunk_are_errors():
    with pytest.raises(ValueError, match="rho must be > 0"):
        it.flow.ball_uniform(jax.random.key(0), (4,), 0.0)
    with pytest.raises(ValueError, match="rho must be > 0"):
        it.flow.ball_projection(jax.random.key(0), 2, 10, -1.0)
    task = it.Task(L=4, S=3, H=1, N=4096)
    with pytest.raises(ValueError, match="chunk must be >= 1"):
        it.run_flow(task, it.FlowConfig(), 2, chunk=0)
