"""`run_lanes` in two passes (a short step budget, then the lanes that ran out of it with
the full one)
gives the numbers of a single pass."""

import dataclasses

import jax
import numpy as np

import inductheory as it
from inductheory.experiments import _flows as _flow_run
from inductheory.internal._lanes import broadcast_lanes


def _lanes_of(task, config, seeds):
    keys = np.asarray(_flow_run.seed_keys(0, seeds))
    n = len(seeds)
    return _flow_run.run_lanes(
        broadcast_lanes(task, n), broadcast_lanes(config, n), keys, (None, None)
    )


def _lanes(task, config, n):
    return _lanes_of(task, config, np.arange(n))


def test_two_passes_give_the_numbers_of_one(monkeypatch):
    task = it.Task(L=4, S=3, H=2, N=1000, beta=4.0)
    config = it.FlowConfig(rho=0.1, t_max=1e6, n_save=6)
    n = 16
    # one pass, in the batch size of the second pass's reruns (8 lanes: one program fewer to
    # compile)
    monkeypatch.setattr(_flow_run, "ONE_PASS_LANES", n)
    halves = [_lanes_of(task, config, np.arange(i, i + 8)) for i in (0, 8)]
    one = jax.tree.map(lambda a, b: np.concatenate([a, b]), *halves)
    steps = one["num_steps"]
    assert np.all(one["status"] == it.Status.SELECTED)
    # a first-pass budget that a few lanes exceed (they rerun in a batch of 8), and where
    # those lanes
    # end "selected", not "max_steps": the first pass's budget is not the flow's
    cap = int(np.sort(steps)[-4]) - 1
    monkeypatch.setattr(_flow_run, "ONE_PASS_LANES", n - 1)
    monkeypatch.setattr(_flow_run, "FIRST_PASS_STEPS", cap)
    two = _lanes(task, config, n)
    assert 4 <= np.sum(steps > cap) <= 8
    for (path, a), b in zip(
        jax.tree_util.tree_leaves_with_path(one), jax.tree.leaves(two)
    ):
        name = jax.tree_util.keystr(path)
        if a.dtype.kind in "iub":
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:  # bit for bit on the machine it was written on; a margin for other CPUs' vector code
            np.testing.assert_allclose(
                a, b, rtol=1e-10, atol=1e-300, equal_nan=True, err_msg=name
            )


def _assert_same_runs(a, b):
    a, b = ({f.name: getattr(r, f.name) for f in dataclasses.fields(r)} for r in (a, b))
    for (path, x), y in zip(jax.tree_util.tree_leaves_with_path(a), jax.tree.leaves(b)):
        name = jax.tree_util.keystr(path)
        if x.dtype.kind in "iub":
            np.testing.assert_array_equal(x, y, err_msg=name)
        else:  # bit for bit on the machine it was written on; a margin for other CPUs' vector code
            np.testing.assert_allclose(
                x, y, rtol=1e-10, atol=1e-300, equal_nan=True, err_msg=name
            )


def test_flow_variants_give_the_runs_of_run_flow():
    """Variants of one family in one batch (the unpenalized one at weight 0 among penalized
    ones) and a family of their own each equal `run_flow` of each configuration alone."""
    task = it.Task(L=4, S=3, H=2, N=1000, beta=4.0)
    base = it.FlowConfig(rho=0.1, t_max=1e6, n_save=6)
    configs = [
        base,
        base.replace(coordination=0.3),
        base.replace(rho=0.05),
        base.replace(objective="worst-phase", tau=0.5, max_steps=3000),
    ]
    together = _flow_run.run_flow_variants(task, configs, 2)
    for config, run in zip(configs, together):
        alone = _flow_run.run_flow(task, config, 2)
        assert run.config is config
        _assert_same_runs(alone.per_seed, run.per_seed)
        assert run.summary.distinct_fraction == alone.summary.distinct_fraction
    # the penalty does move the flow: weight 0 is not a no-op by accident of the test
    assert not np.allclose(together[0].per_seed.t_final, together[1].per_seed.t_final)


def test_flow_variants_refuse_bad_input():
    task = it.Task(L=4, S=3, H=2, N=1000, beta=4.0)
    base = it.FlowConfig(rho=0.1, t_max=1e6, n_save=6)
    import pytest

    with pytest.raises(ValueError, match="configs must hold"):
        _flow_run.run_flow_variants(task, [], 2)
    with pytest.raises(ValueError, match="one per configuration"):
        _flow_run.run_flow_variants(task, [base, base], [2, 2, 2])
    with pytest.raises(ValueError, match="dynamics='reduced'"):
        _flow_run.run_flow_variants(task, [base.replace(dynamics="full")], 2)


def test_flows_run_together_are_cached_as_flow_runs(tmp_path, monkeypatch):
    """`flow_runs_together` stores each configuration under its own `flow_runs` key: a later
    `flow_runs` of one of them computes nothing and reads the same numbers."""
    from inductheory.figures import _runs

    task = it.Task(L=4, S=3, H=2, N=1000, beta=4.0)
    base = it.FlowConfig(rho=0.1, t_max=1e6, n_save=6)
    configs = [base, base.replace(coordination=0.3)]
    # 4 + 2 seeds: the penalized family's 6 lanes and the 2-seed run alone are the programs of
    # test_flow_variants_give_the_runs_of_run_flow (compiled once per run); still two counts
    counts = [4, 2]
    together = _runs.flow_runs_together(task, configs, counts, tmp_path)
    alone = _flow_run.run_flow(task, configs[1], 2)
    np.testing.assert_array_equal(together[1].selected, alone.per_seed.selected)
    np.testing.assert_allclose(
        together[1].final_loss, alone.per_seed.final["loss"], rtol=1e-10
    )

    def refuse(*a, **k):
        raise AssertionError("computed again")

    monkeypatch.setattr(_runs, "run_flow", refuse)
    monkeypatch.setattr(_runs, "run_flow_variants", refuse)
    for config, n, stored in zip(configs, counts, together):
        assert _runs.flow_runs(task, config, n, tmp_path) == stored
    assert _runs.flow_runs_together(task, configs, counts, tmp_path) == together


def test_lanes_mapped_a_group_at_a_time_give_a_python_loop_of_lanes():
    """`map_lanes` against a Python loop over the lanes, for every group size (one vmap, groups
    that divide the lanes, a group that leaves a remainder): a non-array leaf reaches each lane
    as it is, and an array closed over is shared by every lane."""
    import equinox as eqx
    import jax.numpy as jnp

    from inductheory.internal._lanes import map_lanes

    rng = np.random.default_rng(0)
    weights, offsets = rng.normal(size=(5, 3, 3)), rng.normal(size=(5, 3))
    shared = jnp.asarray(rng.normal(size=3))

    def fn(lane):
        w, b, power = lane
        return jnp.tanh(w @ shared + b) ** power, jnp.sum(w, axis=0)

    expected = [fn((w, b, 3)) for w, b in zip(weights, offsets)]
    for group in (None, 1, 2, 5):
        got = eqx.filter_jit(map_lanes)(fn, (weights, offsets, 3), group)
        for i, (first, second) in enumerate(expected):
            np.testing.assert_allclose(got[0][i], first, rtol=1e-14, err_msg=str(group))
            np.testing.assert_allclose(
                got[1][i], second, rtol=1e-14, err_msg=str(group)
            )
