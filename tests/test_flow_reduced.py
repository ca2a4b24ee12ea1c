"""The reduced flow: its vector field against the general code path, monotone loss,
statuses, Theorem 2."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import inductheory as it
from inductheory.flow import STATUSES

_task = it.model.quiet_task


def _sample_gradient(task, contexts, b):
    """jax.grad of monte_carlo_loss of LinearGates with c in span(m) and <c, m> = b."""
    geo = it.ExactGeometry(N=task.N, kappa=task.kappa)
    m = geo.mean_embedding()
    c = b[..., None] * m / (m @ m)
    # jitted: one compiled program per shape instead of one per primitive of the eager gradient
    G = jax.jit(
        jax.grad(lambda x: it.monte_carlo_loss(task, geo, it.LinearGates(x), contexts))
    )(c)
    return G, geo, m


@jax.jit
def _projection_residual_and_fields(task, geo, contexts, b):
    """One compiled program per shape for one example's library calls (the sample gradient,
    its projection on span(m) and the reduced vector field; eager, the last is an op-by-op
    gradient): `G - project_to_mean(G)`, `max |G|`, `-<G, m>` and `reduced_vector_field`."""
    m = geo.mean_embedding()
    c = b[..., None] * m / (m @ m)
    G = jax.grad(lambda x: it.monte_carlo_loss(task, geo, it.LinearGates(x), contexts))(
        c
    )
    return (
        G - it.flow.project_to_mean(G, geo),
        jnp.max(jnp.abs(G)),
        -(G @ m),
        it.flow.reduced_vector_field(task, b),
    )


@settings(max_examples=3, deadline=None)
@given(
    L=st.integers(4, 5),
    S=st.integers(3, 4),
    H=st.integers(1, 2),
    k=st.integers(1, 2),
    gamma=st.floats(0.2, 1.0),
    beta=st.floats(0.5, 6.0),
    kappa=st.floats(0.1, 2.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_reduced_field_is_the_projected_sample_gradient(
    L, S, H, k, gamma, beta, kappa, seed
):
    task = _task(L=L, S=S, H=H, N=L * S * k, gamma=gamma, beta=beta, kappa=kappa)
    key = jax.random.key(seed)
    b = 2.0 * jax.random.normal(key, (H, 2, S))
    contexts = it.balanced_contexts(jax.random.fold_in(key, 1), task, 1)
    geo = it.ExactGeometry(N=task.N, kappa=task.kappa)
    residual, G_max, G_m, reduced = _projection_residual_and_fields(
        task, geo, contexts, b
    )
    # invariance: on a balanced sample the gradient stays in span(m)
    np.testing.assert_allclose(residual, 0.0, atol=1e-13 * (1 + float(G_max)))
    # d<c, m>/dt = -<G, m> equals (kappa + 1/N) times -grad Lbar
    np.testing.assert_allclose(G_m, reduced, rtol=1e-9, atol=1e-14)


def test_iid_sample_breaks_the_invariance():
    task = _task(L=4, S=3, H=1, N=24, beta=4.0)
    b = jax.random.normal(jax.random.key(0), (1, 2, 3))
    contexts = it.sample_contexts(jax.random.key(1), task, 8)
    G, geo, m = _sample_gradient(task, contexts, b)
    off = jnp.linalg.norm(G - it.flow.project_to_mean(G, geo))
    assert float(off) > 1e-3 * float(jnp.linalg.norm(G))


@pytest.fixture(scope="module")
def reduced_run():
    task = it.Task(L=8, S=4, H=2, N=10**5, beta=4.0)
    return task, it.run_flow(task, it.FlowConfig(rho=0.1, t_max=1e6), 16)


def test_loss_never_increases(reduced_run):
    _, out = reduced_run
    loss = out.per_seed.loss
    for row in loss:
        row = row[np.isfinite(row)]
        assert len(row) > 10
        assert np.all(np.diff(row) <= 1e-12 * np.abs(row[:-1]))
        assert row[-1] < row[0] - 0.1


def test_event_stops_at_first_selection(reduced_run):
    task, out = reduced_run
    ps = out.per_seed
    delta = out.config.delta
    assert np.all(ps.status == STATUSES.index("selected"))
    for i in range(len(ps.status)):
        p = jax.nn.softmax(ps.state[i], axis=-1)
        # at the end every head selects r (key) and r + 1 (value), by the library's rule
        # (the event time is a root of the selection margin, found to the root finder's tolerance)
        sel = np.asarray(it.selected_offsets(p[:, 0], p[:, 1], delta * (1 + 1e-6)))
        assert abs(float(it.flow.selection_margin(p, delta))) < 1e-8
        assert np.all(sel >= 0) and np.all(sel == ps.selected[i])
        # ... and at every saved time before the end some head had not selected yet
        before = np.isfinite(ps.t[i]) & (ps.t[i] < ps.t_final[i])
        m = ps.mass[i][before]
        assert not np.any(
            np.all(
                np.asarray(it.selected_offsets(m[:, :, 0], m[:, :, 1], delta)) >= 0,
                axis=1,
            )
        )
        # statistics at the end are those of the final state
        np.testing.assert_allclose(ps.final["mass"][i], p, rtol=1e-12)
        assert np.all(ps.final["static_offsets"][i] < 1.01)


def test_same_seed_same_numbers(reduced_run):
    task, out = reduced_run
    again = it.run_flow(task, it.FlowConfig(rho=0.1, t_max=1e6), 16)
    np.testing.assert_array_equal(again.per_seed.t_final, out.per_seed.t_final)
    np.testing.assert_array_equal(again.per_seed.state, out.per_seed.state)
    # a seed's numbers do not depend on the chunking (up to the vectorized arithmetic): 8 seeds
    # in two chunks of 4 lanes, with 4 save times (save times leave the steps unchanged), which
    # is the program of the Newton runs of test_bisection_root_finder_selects_at_tiny_delta
    chunked = it.run_flow(task, it.FlowConfig(rho=0.1, t_max=1e6, n_save=4), 8, chunk=4)
    np.testing.assert_array_equal(chunked.per_seed.selected, out.per_seed.selected[:8])
    np.testing.assert_allclose(
        chunked.per_seed.t_final, out.per_seed.t_final[:8], rtol=1e-8
    )
    np.testing.assert_allclose(
        chunked.per_seed.state, out.per_seed.state[:8], rtol=1e-8
    )


class _NaNField(it.flow.AbstractDynamics):
    """The reduced dynamics with a vector field that is NaN everywhere (wrapped: the concrete
    dynamics are final)."""

    reduced: it.flow.ReducedDynamics
    tied = False  # class attributes: constants here, not fields
    objective = None

    def __init__(self, task):
        self.reduced = it.flow.ReducedDynamics(task)

    def vector_field(self, b):
        return b * jnp.nan

    def statistics(self, b):
        return self.reduced.statistics(b)

    def worst_masses(self, b):
        return self.reduced.worst_masses(b)

    def error_norm(self, error):
        return self.reduced.error_norm(error)


def _statuses(task, config, b0, dynamics=it.flow.ReducedDynamics):
    return jax.jit(it.flow.integrate)(dynamics(task), b0, config).to_dict()


def test_failures_are_explicit_statuses():
    task = it.Task(L=4, S=3, H=1, N=1000, beta=4.0)
    b0 = it.flow.initial_biases(jax.random.key(0), task, 0.1)
    short = _statuses(task, it.FlowConfig(t_max=1.0, t_save_min=1e-3), b0)
    assert STATUSES[int(short["status"])] == "t_max" and int(short["selected"][0]) == -1
    few = _statuses(task, it.FlowConfig(max_steps=3), b0)
    assert STATUSES[int(few["status"])] == "max_steps"
    nan = _statuses(task, it.FlowConfig(), b0, dynamics=_NaNField)
    assert STATUSES[int(nan["status"])] == "nonfinite"


@settings(max_examples=2, deadline=None)
@given(
    L=st.integers(4, 8),
    S=st.integers(3, 5),
    h=st.floats(0, 1),
    logN=st.floats(4, 6),
    betas=st.lists(st.floats(0.5, 4.0), min_size=2, max_size=2),
    gamma=st.floats(0.5, 1.0),
    kappa=st.floats(0.5, 2.0),
    logrhos=st.lists(st.floats(-2, math.log10(0.5)), min_size=2, max_size=2),
    seed=st.integers(0, 1000),
)
def test_theorem2_reduced_every_seed_selects(
    L, S, h, logN, betas, gamma, kappa, logrhos, seed
):
    """Theorem 2 (reduced): eps = 0, small rho, large N: every head of every seed selects
    key r, value r+1.

    Each example is a shape and a 2 x 2 grid of (beta, rho) with 8 seeds per point: one compiled
    program (the scalars are traced), 32 flows."""
    H = 1 + int(h * (S - 2))
    task = it.Task(
        L=L, S=S, H=H, N=int(10**logN), beta=betas[0], gamma=gamma, kappa=kappa
    )
    grid = {"beta": sorted(set(betas)), "rho": sorted(set(10**r for r in logrhos))}
    ds = it.sweep(
        "flow", task, grid, config=it.FlowConfig(t_max=1e7), seeds=8, seed=seed
    )
    assert np.all(ds.status.values == "selected"), ds.status.values
    key, value, selected = (
        ds.key_offsets.values,
        ds.value_offsets.values,
        ds.selected.values,
    )
    assert np.all(key >= 0)
    np.testing.assert_array_equal(value, key + 1)
    np.testing.assert_array_equal(selected, key)


def test_bisection_root_finder_selects_at_tiny_delta(capsys):
    """Newton's root find of the selection time can stall in rounding noise at small delta (a
    solver error); bisection finds it, and t_delta approaches Theorem 2's tail law C/delta
    (`tail_coefficients`, an independent closed form) as delta -> 0. The first run goes through the
    command line (the option reaches the config), the others reuse its compiled program."""
    import json

    from inductheory.cli import main
    from inductheory.flow._rates import tail_coefficients

    task = it.Task(L=8, S=4, H=2, N=4096, beta=4.0)
    assert (
        main(
            [
                "flow",
                "--L",
                "8",
                "--S",
                "4",
                "--H",
                "2",
                "--N",
                "4096",
                "--beta",
                "4",
                "--delta",
                "1e-7",
                "--t-max",
                "1e12",
                "--n-save",
                "4",
                "--seeds",
                "4",
                "--root-finder",
                "bisection",
                "--json",
                "--per-seed",
                "--quiet",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["flow"]["root_finder"] == "bisection"
    cli = {
        "status": [s["status"] for s in report["seeds"]],
        "key_offsets": [s["key_offsets"] for s in report["seeds"]],
        "t_final": np.array([s["t_selection"] for s in report["seeds"]]),
    }
    config = it.FlowConfig(delta=1e-9, t_max=1e12, n_save=4, root_finder="bisection")
    assert it.FlowConfig(**config.to_dict()) == config
    ps = it.run_flow(task, config, 4).per_seed
    ps = {**ps.to_dict(), "status": [STATUSES[int(s)] for s in ps.status]}
    errors = []
    for delta, run, bound in ((1e-7, cli, 0.02), (1e-9, ps, 0.007)):
        assert run["status"] == ["selected"] * 4
        C = np.array([tail_coefficients(task, k).max() for k in run["key_offsets"]])
        err = np.asarray(run["t_final"]) * delta / C - 1
        assert np.all((err > 0) & (err < bound)), err
        errors.append(err)
    assert np.all(errors[1] < errors[0])
    # where both select, the two root finders agree (same lanes, same program shapes)
    runs = [
        it.run_flow(task, config.replace(delta=1e-3, root_finder=rf), 4).per_seed
        for rf in ("newton", "bisection")
    ]
    assert all(STATUSES[int(s)] == "selected" for r in runs for s in r.status)
    np.testing.assert_array_equal(runs[0].selected, runs[1].selected)
    np.testing.assert_allclose(runs[0].t_final, runs[1].t_final, rtol=1e-9)
    assert (
        "root_finder" not in it.FlowConfig().to_dict()
    )  # plain runs keep their parameters (cache keys)
    with pytest.raises(ValueError, match="root_finder must be one of"):
        it.FlowConfig(root_finder="secant")


# where Newton stalls on every seed, run_flow says that no seed selected
@pytest.mark.filterwarnings("ignore::inductheory.experiments.NoSelectionWarning")
def test_bisection_locates_the_selection_newton_misses_on_the_tail_seeds():
    """The tail seeds of the convergence_rates figure (rho = 0.01, its first 4 seeds: the same
    initial gates). At the figure's delta = 1e-6 the margin's slope at the selection is near its
    rounding noise, so Newton's root find stalls on some seeds (which ones depends on the
    compiler's rounding) and bisection selects every one, at the time Newton finds where it
    converges. At delta = 1e-7 the slope is well below the noise: Newton stalls on every seed,
    and bisection still locates the crossing, where the unselected mass 1 - p (computed here
    from the final logits, independently of the event's margin) equals delta. Save times and
    the step budget leave the steps unchanged, so the small program of
    `test_bisection_root_finder_selects_at_tiny_delta` serves."""
    from scipy.special import softmax

    from inductheory.figures import convergence_rates
    from inductheory.flow._rates import unselected_mass

    task = it.Task(**convergence_rates.SHAPE)
    config = it.FlowConfig(rho=0.01, delta=1e-6, t_max=1e12, n_save=4)
    assert float(config.delta) == convergence_rates.TAIL_DELTA
    for delta in (convergence_rates.TAIL_DELTA, 1e-7):
        runs = {
            rf: it.run_flow(
                task, config.replace(delta=delta, root_finder=rf), 4
            ).per_seed
            for rf in ("newton", "bisection")
        }
        status = {rf: [STATUSES[int(s)] for s in r.status] for rf, r in runs.items()}
        assert status["bisection"] == ["selected"] * 4, status
        assert set(status["newton"]) <= {"selected", "solver_error"}, status
        bis = runs["bisection"]
        one_minus_p = unselected_mass(
            softmax(np.asarray(bis.state), axis=-1)[:, None], bis.key_offsets
        )[:, 0]
        np.testing.assert_allclose(one_minus_p, delta, rtol=1e-6)
        both = np.array(status["newton"]) == "selected"
        if delta < convergence_rates.TAIL_DELTA:
            assert not both.any(), status["newton"]
        np.testing.assert_array_equal(
            runs["newton"].key_offsets[both], bis.key_offsets[both]
        )
        np.testing.assert_allclose(
            runs["newton"].t_final[both], bis.t_final[both], rtol=1e-9
        )


@pytest.mark.parametrize("dynamics", ["reduced", "full"])
def test_integrate_traces_each_function_of_the_dynamics_once(dynamics, monkeypatch):
    """The solver calls the vector field, margin, statistics and error norm at several places;
    each is traced once per integration (a jitted call), not once per place."""
    from inductheory.flow import _dynamics

    cls = {"reduced": _dynamics.ReducedDynamics, "full": _dynamics.FullDynamics}[
        dynamics
    ]
    traces = {}
    for name in ("vector_field", "margin", "statistics", "error_norm"):
        method = getattr(cls, name)

        def counted(self, *args, _method=method, _name=name):
            traces[_name] = traces.get(_name, 0) + 1
            return _method(self, *args)

        monkeypatch.setattr(cls, name, counted)
    task = _task(L=4, S=3, H=2, N=32, beta=4.0)
    config = it.FlowConfig(dynamics=dynamics, n_save=4)
    key = jax.random.key(0)
    if dynamics == "reduced":
        dyn, y0 = cls(task), it.flow.initial_biases(key, task, 0.1)
    else:
        geometry = it.ExactGeometry(N=task.N, kappa=task.kappa)
        contexts = it.model.sample_contexts(key, task, 4)
        dyn = cls(task, geometry, contexts)
        y0 = it.flow.initial_gate_vectors(key, task, geometry, 0.1)
    jax.clear_caches()  # a program traced earlier in this process would not be traced again
    jax.eval_shape(lambda: it.flow.integrate(dyn, y0, config).status)
    assert traces == dict.fromkeys(traces, 1) and len(traces) == 4, traces
