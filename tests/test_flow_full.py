"""The full d-dimensional flow on a fixed sample: geometry paths, agreement with the reduced flow,
monotone loss, uniform selection, Theorem 2."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import inductheory as it
from inductheory.flow import STATUSES


def test_structured_and_dense_exact_fields_agree():
    task = it.Task(L=4, S=3, H=2, N=48, beta=3.0, kappa=0.8)
    exact = it.ExactGeometry(N=task.N, kappa=task.kappa)
    contexts = it.sample_contexts(jax.random.key(0), task, 6)
    c = 3.0 * jax.random.normal(jax.random.key(1), (task.H, 2, task.S, exact.dim))
    # both paths in one compiled program (eager, every primitive compiles on its own)
    structured, dense = jax.jit(
        lambda exact, c: (
            it.flow.full_vector_field(task, exact, contexts, c, None),
            it.flow.full_vector_field(task, exact.dense(), contexts, c, 2),
        )
    )(exact, c)
    np.testing.assert_allclose(structured, dense, rtol=1e-10, atol=1e-15)


def test_full_flow_in_span_m_follows_the_reduced_flow():
    """Balanced sample, token-specific components zero at t = 0: the symmetric component is
    the reduced flow."""
    task = it.Task(L=4, S=3, H=2, N=96, beta=4.0)
    cfg = it.FlowConfig(
        dynamics="full",
        M=1,
        rtol=1e-11,
        atol=1e-13,
        t_max=1e5,
        n_save=24,
        t_save_min=1.0,
    )
    geo, contexts = it.experiments.flow_sample(task, cfg, seed=3)
    c0 = it.flow.project_to_mean(
        it.flow.initial_gate_vectors(jax.random.key(7), task, geo, 0.1), geo
    )
    full = jax.jit(it.flow.solve_full)(task, cfg, geo, contexts, c0).to_dict()
    red = jax.jit(it.flow.solve_reduced)(
        task, cfg, it.LinearGates(c0).biases(geo)
    ).to_dict()
    for out in (full, red):
        assert STATUSES[int(out["status"])] == "selected"
    both = np.isfinite(full["t"]) & np.isfinite(red["t"])
    assert both.sum() > 15
    np.testing.assert_allclose(
        full["biases"][both], red["biases"][both], rtol=1e-6, atol=1e-9
    )
    np.testing.assert_allclose(
        full["mass"][both], red["mass"][both], rtol=1e-6, atol=1e-9
    )
    np.testing.assert_allclose(full["loss"][both], red["loss"][both], rtol=1e-9)
    np.testing.assert_array_equal(full["selected"], red["selected"])
    assert abs(float(full["t_final"]) - float(red["t_final"])) < 1e-5 * float(
        red["t_final"]
    )
    # the state never left span(m)
    c = full["state"]
    assert float(jnp.linalg.norm(c - it.flow.project_to_mean(c, geo))) < 1e-9 * float(
        jnp.linalg.norm(c)
    )
    # on span(m) the gates are static: average and static effective offsets coincide
    np.testing.assert_allclose(
        full["static_offsets"][both], full["avg_offsets"][both], rtol=1e-9
    )


def test_full_flow_from_generic_init():
    """Ball init, balanced sample: loss decreases, selection is uniform and matches the
    reduced flow."""
    task = it.Task(L=4, S=4, H=2, N=256, beta=4.0)
    out = it.run_flow(task, it.FlowConfig(dynamics="full", M=256, t_max=1e6), 4, seed=0)
    ps = out.per_seed
    assert np.all(ps.status == STATUSES.index("selected"))
    np.testing.assert_array_equal(ps.value_offsets, ps.key_offsets + 1)
    # docs/theory.md §6: from a generic small init the full flow ends in the reduced flow's
    # selection
    np.testing.assert_array_equal(ps.selected, ps.reduced_selected)
    # uniform over windows: the minimum masses over every context and block select
    assert out.sample.M == 256
    worst = ps.final["worst"]
    for h in range(task.H):
        r = ps.selected[:, h]
        assert np.all(worst[np.arange(4), h, 0, r] >= 1 - 1e-3 * (1 + 1e-6))
        assert np.all(worst[np.arange(4), h, 1, r + 1] >= 1 - 1e-3 * (1 + 1e-6))
    # the token-specific part makes gates input dependent before selection: avg < static somewhere
    assert np.nanmax(ps.static_offsets - ps.avg_offsets) > 0
    # the loss never increases along a trajectory
    for row in ps.loss:
        row = row[np.isfinite(row)]
        assert len(row) > 10 and np.all(np.diff(row) <= 1e-12 * np.abs(row[:-1]))


# Approximate-geometry flows of two d: `run_flow` of each alone, and `run_flows` of both in one
# padded program (one module-wide set of compiled programs for the two tests below).
PADDED_TASKS = [it.Task(L=4, S=3, H=2, N=48, d=d, beta=4.0) for d in (10, 24)]
PADDED_CONFIG = it.FlowConfig(dynamics="full", M=1, t_max=1e6, n_save=4)


@pytest.fixture(scope="module")
def approximate_flows():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", it.TheoryAssumptionWarning)
        alone = [it.run_flow(t, PADDED_CONFIG, 2, seed=3) for t in PADDED_TASKS]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", it.TheoryAssumptionWarning)
        padded = it.experiments.run_flows(PADDED_TASKS, PADDED_CONFIG, 2, seed=3)
    return alone, padded, [str(w.message) for w in caught]


def test_approximate_geometry_runs_with_explicit_status(approximate_flows):
    alone, _, messages = approximate_flows
    assert any("eps = 0" in m for m in messages), messages
    for out in alone:
        assert (
            out.sample.geometry == "DenseGeometry" and 0 < out.sample.eps_realized < 1
        )
        assert set(out.per_seed.status.tolist()) <= set(range(len(STATUSES)))
        assert out.per_seed.reduced_selected is None


def _theorem2_full(S, H, k, beta, logrho, seed):
    H = min(H, S - 1)
    task = it.Task(L=4, S=S, H=H, N=4 * S * k, beta=beta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", it.TheoryAssumptionWarning)
        out = it.run_flow(
            task,
            it.FlowConfig(dynamics="full", M=task.N // 4, rho=10**logrho, t_max=1e7),
            2,
            seed=seed,
        )
    ps = out.per_seed
    assert np.all(ps.status == STATUSES.index("selected")), ps.status
    np.testing.assert_array_equal(ps.value_offsets, ps.key_offsets + 1)
    assert np.all(ps.key_offsets >= 0)


_full_args = dict(
    S=st.integers(3, 4),
    H=st.integers(1, 2),
    k=st.sampled_from([16, 24]),
    beta=st.floats(1.0, 4.0),
    logrho=st.floats(-2, -0.5),
    seed=st.integers(0, 100),
)


@settings(max_examples=1, deadline=None)
@given(**_full_args)
def test_theorem2_full_every_seed_selects(S, H, k, beta, logrho, seed):
    """Theorem 2 (full, balanced sample): every head selects key r, value r + 1, uniformly
    over the sample."""
    _theorem2_full(S, H, k, beta, logrho, seed)


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(**_full_args)
def test_theorem2_full_every_seed_selects_more_examples(S, H, k, beta, logrho, seed):
    _theorem2_full(S, H, k, beta, logrho, seed)


@pytest.mark.parametrize(
    "shape",
    [
        dict(L=4, S=3, H=2, N=60, d=40),
        dict(L=3, S=3, H=2, N=45, d=30, W=5, queries="all"),
    ],
)
def test_dense_context_bases_give_the_plain_dense_field(shape):
    """Per-context bases (the dense flow's default) against the plain dense path on the same
    geometry: loss, vector field and worst-phase objective agree to rounding."""
    task = it.Task(beta=3.0, kappa=0.7, **shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", it.TheoryAssumptionWarning)
        geo = it.make_geometry(task, jax.random.key(2))
    contexts = it.sample_contexts(jax.random.key(0), task, 7)
    c = 2.0 * jax.random.normal(jax.random.key(1), (task.H, 2, task.W, geo.dim))
    # one compiled program per path (op-by-op dispatch compiles every primitive on its own)
    evaluate = jax.jit(
        lambda dyn, c: (dyn.loss(c), dyn.training_loss(c), dyn.vector_field(c))
    )
    for objective in (None, it.model.Objective("worst-phase", 0.5, 0.2)):
        fast = it.flow.FullDynamics(task, geo, contexts, objective=objective)
        plain = it.flow.FullDynamics(
            task, geo, contexts, objective=objective, context_bases=False
        )
        assert fast.bases.embeddings.shape == (7, task.N, task.L * task.S)
        assert plain.bases is None
        (f_loss, f_train, f_field), (p_loss, p_train, p_field) = (
            evaluate(fast, c),
            evaluate(plain, c),
        )
        np.testing.assert_allclose(f_loss, p_loss, rtol=1e-13)
        np.testing.assert_allclose(f_train, p_train, rtol=1e-13)
        scale = float(jnp.max(jnp.abs(p_field)))
        np.testing.assert_allclose(f_field, p_field, rtol=0, atol=1e-12 * scale)


def test_dense_context_bases_only_where_they_save_work():
    """No bases under exact geometry, when a context's L*S embeddings span more than half of
    R^d, or with a batch_size."""
    task = it.Task(L=4, S=3, H=1, N=40, d=12, beta=3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", it.TheoryAssumptionWarning)
        geo = it.make_geometry(task, jax.random.key(0))
        narrow = it.make_geometry(task.replace(d=23), jax.random.key(0))
        wide = it.make_geometry(task.replace(d=24), jax.random.key(0))
    contexts = it.sample_contexts(jax.random.key(1), task, 3)
    exact = it.ExactGeometry(N=task.N, kappa=task.kappa)
    assert it.flow.FullDynamics(task, exact, contexts).bases is None
    assert it.flow.FullDynamics(task, geo, contexts).bases is None
    assert it.flow.FullDynamics(task, narrow, contexts).bases is None
    assert it.flow.FullDynamics(task, wide, contexts).bases is not None
    assert it.flow.FullDynamics(task, wide, contexts, batch_size=2).bases is None


def test_dense_flow_with_context_bases_ends_as_the_plain_dense_flow():
    """A whole approximate-geometry flow on both paths: the same status and offsets, selection
    time and final loss within the solver tolerance."""
    task = it.Task(L=4, S=3, H=2, N=48, d=64, beta=4.0)
    cfg = it.FlowConfig(dynamics="full", M=1, t_max=1e6, n_save=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", it.TheoryAssumptionWarning)
        geo, contexts = it.experiments.flow_sample(task, cfg, seed=1)
    c0 = it.flow.initial_gate_vectors(jax.random.key(5), task, geo, 0.1)

    def solve(context_bases):
        dyn = it.flow.FullDynamics(task, geo, contexts, context_bases=context_bases)
        return jax.jit(it.flow.integrate)(dyn, c0, cfg).to_dict(state=False)

    fast, plain = solve(True), solve(False)
    assert STATUSES[int(fast["status"])] == "selected"
    for name in ("status", "key_offsets", "value_offsets", "selected"):
        np.testing.assert_array_equal(fast[name], plain[name])
    np.testing.assert_allclose(fast["t_final"], plain["t_final"], rtol=1e-6)
    np.testing.assert_allclose(fast["final"]["loss"], plain["final"]["loss"], rtol=1e-9)


def test_padded_flows_of_several_d_equal_one_run_flow_each(approximate_flows):
    """`run_flows` (one program, geometries padded with zero columns to the largest d) against
    `run_flow` of each task alone: the same statuses, offsets and step counts; times and losses
    to rounding."""
    alone, padded, _ = approximate_flows
    for a, b in zip(alone, padded):
        a, b = a.per_seed, b.per_seed
        for name in ("status", "selected", "key_offsets", "value_offsets", "num_steps"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        np.testing.assert_allclose(b.t_final, a.t_final, rtol=1e-9)
        np.testing.assert_allclose(b.final["loss"], a.final["loss"], rtol=1e-12)
    assert [r.sample.dim for r in padded] == [10, 24]


def test_padded_flows_refuse_tasks_that_differ_beyond_d():
    cfg = it.FlowConfig(dynamics="full", M=1)
    tasks = [it.Task(L=4, S=3, H=2, N=48, d=10), it.Task(L=4, S=3, H=2, N=60, d=10)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", it.TheoryAssumptionWarning)
        with pytest.raises(ValueError, match="differ only in d"):
            it.experiments.run_flows(tasks, cfg, 2)
        with pytest.raises(ValueError, match="approximate geometry given by d"):
            it.experiments.run_flows([it.Task(L=4, S=3, H=2, N=48)], cfg, 2)
