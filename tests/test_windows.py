"""Windows W >= S and the boundary phase (docs/theory.md §10): positions, the structured exact path
against the block form and the dense path, the boundary claim, tied gates, vertices and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import inductheory as it
from inductheory.model._logits import windowed_logits

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the proof scripts are importable as `proofs`
    sys.path.insert(0, str(ROOT))

FAST = settings(max_examples=8, deadline=None)

# Cost: run op by op, each test's few library calls dispatch and compile hundreds of small XLA
# programs (a new set for every shape); the checks below run them inside one `eqx.filter_jit`
# program per test and shape instead (the task's shape fields are static, its values and the
# gates traced). The library functions and the assertions are the same as run eagerly.


def quiet(**kw):
    return it.model.quiet_task(**kw)


@eqx.filter_jit
def random_oracle(key, H, L, W):
    k1, k2 = jax.random.split(key)
    return it.OracleGates(
        key=jax.nn.softmax(2 * jax.random.normal(k1, (H, L, W)), -1),
        value=jax.nn.softmax(2 * jax.random.normal(k2, (H, L, W)), -1),
    )


def random_shared(key, H, W, scale=2.0):
    # the scale is traced (a 0-d array), so gates of one shape share one program
    return _random_shared(key, H, W, np.asarray(scale, np.float64))


@eqx.filter_jit
def _random_shared(key, H, W, scale):
    k1, k2 = jax.random.split(key)
    return it.SharedGates(
        key=jax.nn.softmax(scale * jax.random.normal(k1, (H, W)), -1),
        value=jax.nn.softmax(scale * jax.random.normal(k2, (H, W)), -1),
    )


# --- configuration and positions ---------------------------------------------------------------


def test_window_validation_names_the_parameter():
    with pytest.raises(ValueError, match="W must lie in S..L\\*S = 4..32"):
        it.Task(L=8, S=4, H=2, N=4096, W=3)
    with pytest.raises(ValueError, match="W must lie in S..L\\*S"):
        it.Task(L=8, S=4, H=2, N=4096, W=33)
    with pytest.raises(ValueError, match="queries must be one of within, all"):
        it.Task(L=8, S=4, H=2, N=4096, queries="boundary")


def test_windows_warn_which_assumption_is_broken():
    with pytest.warns(it.TheoryAssumptionWarning, match="W = S \\(got W=5"):
        it.Task(L=8, S=4, H=2, N=4096, W=5)
    with pytest.warns(it.TheoryAssumptionWarning, match="queries='all'"):
        it.Task(L=8, S=4, H=2, N=4096, queries="all")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        it.Task(
            L=8, S=4, H=2, N=4096, W=4, queries="within"
        )  # the theorems' task: silent


def test_default_window_keeps_the_old_parameters():
    task = it.Task(L=8, S=4, H=2, N=4096)
    assert task.W == 4 and task.queries == "within" and not task.windowed
    assert set(task.to_dict()) == {
        "L",
        "S",
        "H",
        "N",
        "gamma",
        "beta",
        "kappa",
        "eps",
        "d",
    }
    wide = quiet(L=8, S=4, H=2, N=4096, W=6, queries="all")
    assert wide.to_dict()["W"] == 6 and wide.to_dict()["queries"] == "all"
    assert wide.replace(beta=2.0).W == 6 and wide.n_phases == 4 and wide.n_queries == 32


def test_positions_follow_the_definition():
    L, S, W = 3, 2, 5
    T = L * S
    expected = [[(l * S + o) % T for o in range(W)] for l in range(L)]
    np.testing.assert_array_equal(it.model.entry_positions(L, S, W), expected)
    np.testing.assert_array_equal(it.model.query_positions(L, S, "all"), np.arange(T))
    np.testing.assert_array_equal(it.model.query_positions(L, S, "within"), [0, 2, 4])
    np.testing.assert_array_equal(
        it.model.target_positions(L, S, "all"), [1, 2, 3, 4, 5, 0]
    )
    tokens = jnp.arange(100, 100 + T).reshape(L, S)
    np.testing.assert_array_equal(
        it.model.window_tokens(tokens, W), np.asarray(expected) + 100
    )
    assert it.model.window_tokens(tokens, S) is tokens


# --- the structured exact path ------------------------------------------------------------------


@eqx.filter_jit
def _block_and_windowed(task, gates, shared):
    block = it.model.exact_logits(task, gates)
    windowed = windowed_logits(task, gates, it.model.query_positions(task.L, task.S))
    shared_windowed = windowed_logits(
        task, shared.for_blocks(task.L), np.arange(task.S - 1)
    )
    return (
        block[2],
        windowed[2],
        it.model.cross_entropy(*windowed),
        it.model.cross_entropy(*block),
        it.model.cross_entropy(*shared_windowed),
        it.phase_losses(task, shared),
    )


def test_windowed_path_equals_the_block_form_at_w_equals_s():
    task = it.Task(L=6, S=4, H=3, N=500, gamma=0.7, beta=5.0)
    gates = random_oracle(jax.random.key(0), 3, 6, 4)
    shared = random_shared(jax.random.key(1), 3, 4)
    (
        block_target,
        windowed_target,
        windowed_loss,
        block_loss,
        shared_windowed_loss,
        shared_loss,
    ) = _block_and_windowed(task, gates, shared)
    np.testing.assert_array_equal(block_target, windowed_target)
    np.testing.assert_allclose(windowed_loss, block_loss, rtol=1e-13, atol=0)
    np.testing.assert_allclose(shared_windowed_loss, shared_loss, rtol=1e-13, atol=0)


@eqx.filter_jit
def _structured_and_dense(task, geo, gates, ctx, linear):
    exact = it.model.cross_entropy(*it.model.exact_logits(task, gates))
    dense = jax.vmap(  # each context on its own, as a loop over `ctx` would
        lambda tokens: it.model.cross_entropy(
            *it.model.dense_logits(task, geo.embeddings(), tokens, gates)
        )
    )(ctx)
    structured = it.model.monte_carlo_phase_losses(task, geo, linear, ctx)
    dense_mc = it.model.monte_carlo_phase_losses(task, geo.dense(), linear, ctx)
    return exact, dense, structured, dense_mc


@pytest.mark.parametrize("W,queries", [(4, "all"), (5, "within"), (12, "all")])
def test_structured_exact_path_equals_the_dense_model(W, queries):
    """The O(H L W) exact logits against the literal model on explicit embeddings (kappa = 0.6)."""
    task = quiet(
        L=3, S=4, H=2, N=20, gamma=0.8, beta=3.0, kappa=0.6, W=W, queries=queries
    )
    geo = it.ExactGeometry(task.N, task.kappa)
    ctx = it.sample_contexts(jax.random.key(2), task, 3)
    gates = random_oracle(jax.random.key(3), 2, 3, W)
    c = 0.7 * jax.random.normal(jax.random.key(4), (2, 2, W, geo.dim))
    linear = it.LinearGates(c)
    exact, dense_per_context, structured, dense = _structured_and_dense(
        task, geo, gates, ctx, linear
    )
    assert dense_per_context.shape[0] == len(ctx) == 3
    for dense_one in dense_per_context:
        np.testing.assert_allclose(exact, dense_one, rtol=1e-11)
    np.testing.assert_allclose(structured, dense, rtol=1e-11)


@pytest.mark.parametrize("W,queries", [(5, "all"), (8, "within"), (6, "all")])
def test_shared_population_loss_equals_monte_carlo(W, queries):
    """Every context is equivalent under exact geometry: the per-phase closed form (queries of the
    first stride only) equals the average over sampled contexts and every entry."""
    task = quiet(L=4, S=4, H=2, N=64, gamma=1.0, beta=4.0, W=W, queries=queries)
    gates = random_shared(jax.random.key(5), 2, W)
    ctx = it.sample_contexts(jax.random.key(6), task, 8)
    geo = it.ExactGeometry(task.N, task.kappa)
    losses, mc_losses, accuracy, mc_accuracy, probability = _population_and_mc(
        task, geo, gates, ctx
    )
    np.testing.assert_allclose(losses, mc_losses, rtol=1e-12)
    np.testing.assert_allclose(accuracy, mc_accuracy)
    np.testing.assert_allclose(probability, np.exp(-losses))


@eqx.filter_jit
def _population_and_mc(task, geo, gates, ctx):
    return (
        it.phase_losses(task, gates),
        it.model.monte_carlo_phase_losses(task, geo, gates, ctx),
        it.phase_accuracy(task, gates),
        it.monte_carlo_phase_accuracy(task, geo, gates, ctx),
        it.model.phase_target_probability(task, gates),
    )


@pytest.mark.parametrize(
    "L,S,W,H,queries",
    [
        (2, 2, 2, 1, "all"),
        (3, 3, 5, 2, "within"),
        (4, 4, 8, 3, "all"),
        (8, 4, 5, 2, "all"),
        (2, 3, 6, 2, "all"),
        (5, 2, 7, 1, "within"),
    ],
)
def test_collapsed_closed_form_equals_every_position(L, S, W, H, queries):
    """The collapsed per-phase form (S phase classes + the holding entries' windows) against the
    uncollapsed logits of all T positions (W = S, S < W < 2S, W = 2S, W = T among the shapes)."""
    task = quiet(L=L, S=S, H=H, N=L * S + 5, gamma=0.7, beta=4.0, W=W, queries=queries)
    gates = random_shared(jax.random.key(L * W + H), H, W, 3.0)
    losses, full_losses, accuracy, full_correct = _collapsed_and_full(task, gates)
    np.testing.assert_allclose(losses, full_losses, rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(accuracy, full_correct.astype(float))


@eqx.filter_jit
def _collapsed_and_full(task, gates):
    full = windowed_logits(
        task, gates.for_blocks(task.L), it.model.query_phases(task.S, task.queries)
    )
    return (
        it.phase_losses(task, gates),
        it.model.cross_entropy(*full),
        it.phase_accuracy(task, gates),
        it.model.top1_correct(*full),
    )


# --- the boundary claim of §10 ------------------------------------------------------------------


@FAST
@given(
    L=st.integers(2, 6),
    S=st.integers(2, 5),
    H=st.integers(1, 3),
    seed=st.integers(0, 2**31 - 1),
    gamma=st.floats(0.05, 3.0),
    beta=st.floats(0.1, 30.0),
    scale=st.floats(0.0, 8.0),
    delta=st.integers(0, 4),
)
def test_boundary_target_is_never_top1_at_w_equals_s(
    L, S, H, seed, gamma, beta, scale, delta
):
    """W = S: for every shared gate and every rotation, the boundary target's logit is at
    most that of
    the token at offset 0 of the query's own entry, and equals that of offset 0 of any other
    entry."""
    task = quiet(L=L, S=S, H=H, N=L * S + 7, gamma=gamma, beta=beta, queries="all")
    # one compiled program per shape (L, S, H); seed, scale, delta and the task's values are traced
    target, logits, accuracy = _boundary_query(
        task, jax.random.key(seed), np.asarray(scale, np.float64), np.asarray(delta)
    )
    row = S - 1  # the boundary query: position S-1, target S (entry 1, offset 0)
    assert int(target[row]) == S
    z = np.asarray(logits[row])
    assert z[S] <= z[0] + 1e-12 * (1 + abs(z[0]))
    if L >= 3:
        np.testing.assert_allclose(z[S], z[2 * S], rtol=1e-12, atol=1e-15)
    assert float(accuracy[S - 1]) == 0.0


@eqx.filter_jit
def _boundary_query(task, key, scale, delta):
    gates = it.model.rotate_gates(_random_shared(key, task.H, task.S, scale), delta)
    logits, _, target = windowed_logits(
        task, gates.for_blocks(task.L), it.model.query_phases(task.S, "all")
    )  # one column per position
    return target, logits, it.phase_accuracy(task, gates)


@FAST
@given(
    L=st.integers(2, 6),
    S=st.integers(2, 5),
    H=st.integers(1, 3),
    extra=st.integers(1, 6),
    gamma=st.floats(0.05, 3.0),
    beta=st.floats(0.1, 30.0),
)
def test_a_wider_window_recovers_the_boundary(L, S, H, extra, gamma, beta):
    """W >= S+1: heads with key at offset S-1 and value at offset S answer the boundary phase."""
    W = min(S + extra, L * S)
    task = quiet(L=L, S=S, H=H, N=L * S + 7, gamma=gamma, beta=beta, W=W, queries="all")
    assert float(_selection_accuracy(task, [S - 1] * H)[S - 1]) == 1.0


@eqx.filter_jit
def _selection_accuracy(task, offsets):
    # the offsets (a list of ints) are static: one program per shape and selection
    return it.phase_accuracy(task, it.hard_selection(task.W, offsets))


def test_tied_hard_gates_answer_no_phase():
    """A tied gate e_r keys and reads the same offset: it copies the query token, never its
    successor."""
    for W in (4, 5, 8):
        task = quiet(L=4, S=4, H=2, N=64, W=W, queries="all")
        for r in range(W):
            eye = np.eye(W)[np.array([r, (r + 1) % W])]
            acc = it.phase_accuracy(task, it.SharedGates(key=eye, value=eye))
            assert float(np.max(acc)) == 0.0, (W, r)


# --- gates, vertices and the oracle over W offsets --------------------------------------------


def test_windowed_vertices_are_enumerated_exhaustively_and_checked_densely():
    task = quiet(L=3, S=3, H=1, N=24, beta=4.0, W=4, queries="all")
    geo = it.ExactGeometry(task.N, task.kappa)
    tokens = it.sample_contexts(jax.random.key(7), task, 1)[0]
    configs, method = it.oracle._vertices.vertex_configs(task, geo)
    assert method == "exhaustive" and len(configs) == 3**3
    best = it.best_vertex(task, geo, tokens, k=3)
    dense_geo = geo.dense()
    # every configuration through one compiled program (its offsets traced)
    dense = [float(_dense_vertex_loss(task, dense_geo, c, tokens)) for c in configs]
    assert best.loss == pytest.approx(min(dense), rel=1e-12)
    tied = it.best_vertex(task, geo, tokens, k=1, tied=True)
    assert tied.n_evaluated == 4**3 and tied.loss > best.loss


@eqx.filter_jit
def _dense_vertex_loss(task, geo, offsets, tokens):
    return it.model.context_loss(
        task, geo, it.oracle.vertex_gates(task.W, offsets), tokens
    )


@pytest.mark.slow
def test_tied_oracle_never_selects_key_and_value_apart():
    task = quiet(L=3, S=3, H=1, N=96, beta=4.0)
    res = it.minimize_oracle(
        task,
        it.ExactGeometry(task.N, task.kappa),
        jnp.zeros((3, 3), int),
        jax.random.key(0),
        it.OracleMinimizer(restarts=2, steps=60, polish_steps=60, rounds=1, tied=True),
    )
    np.testing.assert_array_equal(res.gates.key, res.gates.value)
    untied = it.minimize_oracle(
        task,
        it.ExactGeometry(task.N, task.kappa),
        jnp.zeros((3, 3), int),
        jax.random.key(0),
        it.OracleMinimizer(restarts=2, steps=60, polish_steps=60, rounds=1),
    )
    assert res.loss > untied.loss


def test_tied_reduced_flow_stays_tied():
    task = it.Task(L=8, S=4, H=2, N=4096, beta=4.0)
    b0 = it.flow.initial_biases(jax.random.key(1), task, 0.1, tied=True)
    np.testing.assert_array_equal(b0[:, 0], b0[:, 1])
    dyn = it.flow.ReducedDynamics(task, tied=True)
    vf, grad = _tied_field_and_gradient(dyn, task, b0)
    np.testing.assert_array_equal(vf[:, 0], vf[:, 1])
    # the tied field is the gradient of the loss of gates (p, p): the chain rule through
    # both branches
    np.testing.assert_allclose(vf[:, 0], -(1.0 + 1.0 / 4096) * grad, rtol=1e-12)


@eqx.filter_jit
def _tied_field_and_gradient(dyn, task, b0):
    p_loss = lambda k: it.population_loss(
        task, it.model.shared_gates_from_logits(jnp.stack([k, k], axis=1))
    )
    return dyn.vector_field(b0), jax.grad(p_loss)(b0[:, 0])


# --- command line -----------------------------------------------------------------------------


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "inductheory", *args], capture_output=True, text=True
    )


def test_cli_loss_with_windows_answers_the_boundary():
    out = cli(
        "loss",
        "--L",
        "8",
        "--S",
        "4",
        "--H",
        "2",
        "--W",
        "5",
        "--queries",
        "all",
        "--select",
        "3,0",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["phases"] == [0, 1, 2, 3] and res["phase_accuracy"] == [
        1.0,
        0.0,
        0.0,
        1.0,
    ]
    assert res["task"]["W"] == 5 and res["task"]["queries"] == "all"


@pytest.mark.parametrize(
    "args,message",
    [
        (["--W", "3"], "W must lie in S..L*S = 4..32"),
        (["--W", "33"], "W must lie in S..L*S = 4..32"),
        (["--W", "5", "--select", "4,0"], "0..W-2"),
        (["--tied", "--select", "4,0"], "0..W-1"),
    ],
)
def test_cli_bad_windows_are_one_line_errors(args, message, capsys):
    # in this process (the entry point runs the same `main`; the real process is tested above)
    from inductheory.cli import main

    base = ["loss", "--L", "8", "--S", "4", "--H", "2"]
    if "--select" not in args:
        args = args + ["--select", "0,1"]
    code = main([*base, *args])
    err = capsys.readouterr().err
    assert code != 0 and message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2


def test_windowed_logits_match_the_symbolic_model_of_the_proof():
    """The library's O(H L W) path against the literal Gram-matrix model of proofs/boundary.py."""
    import sympy as sp

    from proofs import boundary

    L, S, W, H = 3, 3, 5, 2
    task = quiet(
        L=L, S=S, H=H, N=40, gamma=0.9, beta=2.5, kappa=0.4, W=W, queries="all"
    )
    gates = random_shared(jax.random.key(8), H, W)
    logits = _logits_of_first_stride(task, gates)
    subs = {boundary.gamma: 0.9, boundary.beta: 2.5, boundary.kappa: 0.4}
    for t in range(S):
        z = boundary.logits(
            L, S, W, np.asarray(gates.key).tolist(), np.asarray(gates.value).tolist(), t
        )
        z = (
            np.array([float(sp.N(e.subs(subs))) for e in z]) - 2.5 * H * 0.4
        )  # the common shift beta H kappa
        np.testing.assert_allclose(
            np.asarray(logits[t, : L * S]), z, rtol=1e-12, atol=1e-12
        )


@eqx.filter_jit
def _logits_of_first_stride(task, gates):
    # the query positions are static (numpy) inside `windowed_logits`: made here from the task
    logits, _, _ = windowed_logits(
        task, gates.for_blocks(task.L), it.model.query_phases(task.S, "all")
    )
    return logits


def test_dense_path_with_windows_is_the_literal_model():
    """Approximate geometry, W > S, all queries: `dense_logits` against a plain numpy loop over the
    positions of the cycle (keys, values, softmax over entries, tied unembedding)."""
    task = quiet(L=3, S=3, H=2, N=30, gamma=0.9, beta=3.0, d=12, W=5, queries="all")
    geo = it.model.approximate_geometry(task, jax.random.key(9))
    tokens = np.asarray(it.sample_contexts(jax.random.key(10), task, 1)[0])
    gates = random_oracle(jax.random.key(11), 2, 3, 5)
    E, pK, pV = (
        np.asarray(geo.embeddings),
        np.asarray(gates.key),
        np.asarray(gates.value),
    )
    flat, T = tokens.reshape(-1), 9
    expected = []
    for t in range(T):
        out = np.zeros(E.shape[1])
        for h in range(2):
            keys = [
                sum(pK[h, l, o] * E[flat[(3 * l + o) % T]] for o in range(5))
                for l in range(3)
            ]
            vals = [
                sum(pV[h, l, o] * E[flat[(3 * l + o) % T]] for o in range(5))
                for l in range(3)
            ]
            s = np.array([0.9 * E[flat[t]] @ k for k in keys])
            a = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
            out += sum(a[l] * vals[l] for l in range(3))
        z = 3.0 * E @ out
        expected.append(
            np.log(np.exp(z - z.max()).sum()) + z.max() - z[flat[(t + 1) % T]]
        )
    got = _dense_losses(task, geo.embeddings, jnp.asarray(tokens), gates)
    np.testing.assert_allclose(got, expected, rtol=1e-10)


@eqx.filter_jit
def _dense_losses(task, embeddings, tokens, gates):
    return it.model.cross_entropy(
        *it.model.dense_logits(task, embeddings, tokens, gates)
    )


def test_an_oracle_gate_answers_one_boundary_query_in_l_at_w_equals_s():
    """H = 1, W = S: keys away from the boundary offset give every entry the same attention for a
    boundary query; entry 1 reading offset 0 while the others spread their values answers
    the boundary
    query of entry 0 and no other: boundary accuracy exactly 1/L (the most one head can get, see
    docs/theory.md §10), which no vertex reaches (one-hot values of other entries tie with
    the target)."""
    L, S = 4, 4
    task = quiet(L=L, S=S, H=1, N=64, beta=4.0, queries="all")
    key = jnp.broadcast_to(jnp.eye(S)[0], (1, L, S))
    value = jnp.full((1, L, S), 1.0 / S).at[0, 1].set(jnp.eye(S)[0])
    correct = np.asarray(_exact_top1(task, it.OracleGates(key=key, value=value)))
    boundary = correct.reshape(L, S)[:, S - 1]
    np.testing.assert_array_equal(boundary, [True, False, False, False])
    vertex = it.oracle.vertex_gates(S, jnp.zeros((1, L), int))
    vertex = it.OracleGates(key=key, value=vertex.value.at[0, 1].set(jnp.eye(S)[0]))
    assert not np.asarray(_exact_top1(task, vertex)).reshape(L, S)[:, S - 1].any()


@eqx.filter_jit
def _exact_top1(task, gates):
    return it.model.top1_correct(*it.model.exact_logits(task, gates))
