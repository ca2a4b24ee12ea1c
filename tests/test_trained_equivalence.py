"""The equivalence rung (docs/theory.md §11): with every switch at the theorem's setting, plain
gradient descent of step eta on the full flow's sample, from the full flow's c(0), is the
explicit Euler scheme of the full flow. Its error at a fixed horizon t = k eta is O(eta): it
halves when eta halves; trained to selection, every seed selects the flow's offsets."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inductheory as it
from inductheory.flow import (
    flow_sample,
    head_selection,
    initial_gate_vectors,
    sample_gates,
    seed_keys,
    solve_full,
)
from inductheory.model._positions import window_tokens
from inductheory.trained import ModelConfig, TrainConfig

TASK = it.Task(L=4, S=3, H=2, N=48, beta=4.0)
M = 48
HORIZON = 10.0  # the gates move by about 0.9 (in max norm) from c(0) by then


def gate_vectors(models) -> np.ndarray:
    """The models' one trainable array at the theorem's setting: c, (seeds, H, 2, W, d)."""
    leaves = jax.tree.leaves(eqx.filter(models, models.trainable()))
    shape = (TASK.H, 2, TASK.W, TASK.N + 1)
    assert len(leaves) == 1 and leaves[0].shape[1:] == shape, [a.shape for a in leaves]
    return np.asarray(leaves[0])


def model_gates(models, contexts) -> np.ndarray:
    """Gate probabilities (seeds, M, H, 2, L, W) of every model in every context."""
    return np.asarray(
        eqx.filter_vmap(lambda m: jax.vmap(m.gate_probabilities)(contexts))(models)
    )


# One compiled full flow of many seeds (`solve_full`, as `run_flow` integrates each seed) for
# every test here: the flow's numbers (t_max, delta, tolerances) are traced.
_flows = jax.jit(jax.vmap(solve_full, in_axes=(None, None, None, None, 0)))


def flows(config: it.FlowConfig, seeds: int):
    """The full flow of `seeds` seeds from the c(0) and on the sample `run_flow` uses."""
    geometry, contexts = flow_sample(TASK, config, 0)
    c0 = jax.vmap(
        lambda k: initial_gate_vectors(jax.random.wrap_key_data(k), TASK, geometry, 0.1)
    )(seed_keys(0, np.arange(seeds)))
    return np.asarray(c0), _flows(TASK, config, geometry, contexts, c0), contexts


# the flow's settings, but for the numbers (traced) that each test sets
FLOW = it.FlowConfig(dynamics="full", M=M)


@pytest.fixture(scope="module")
def flow_at_horizon():
    """The full flow of 8 seeds at t = HORIZON, integrated with tight tolerances (no selection
    event can fire: delta is tiny)."""
    seeds = 8
    config = FLOW.replace(t_max=HORIZON, rtol=1e-12, atol=1e-13, delta=1e-6)
    c0, sol, contexts = flows(config, seeds)
    assert np.all(np.asarray(sol.status) == it.Status.T_MAX)
    np.testing.assert_array_equal(np.asarray(sol.t_final), HORIZON)
    return seeds, c0, np.asarray(sol.state), contexts


def test_gradient_descent_starts_from_the_flows_initial_gates(flow_at_horizon):
    seeds, c0, _, _ = flow_at_horizon
    run = it.train(
        TASK,
        ModelConfig(),
        TrainConfig(lr=0.1, steps=1, M=M, log_points=1, eval_contexts=4),
        seeds,
    )
    # one step from c(0): c(0) - eta * grad, so c(0) = c(1) + eta * grad
    geometry, contexts = flow_sample(TASK, it.FlowConfig(dynamics="full", M=M), 0)
    grad = jax.vmap(
        jax.grad(
            lambda c: it.monte_carlo_loss(TASK, geometry, it.LinearGates(c), contexts)
        )
    )(jnp.asarray(c0))
    np.testing.assert_allclose(
        gate_vectors(run.models), c0 - 0.1 * np.asarray(grad), rtol=0, atol=1e-15
    )
    assert run.M == M == contexts.shape[0]


def test_euler_error_halves_with_the_step_at_a_fixed_horizon(flow_at_horizon):
    seeds, c0, c_flow, contexts = flow_at_horizon
    assert np.max(np.abs(c_flow - c0)) > 0.5  # the flow has moved well beyond its start
    p_flow = np.asarray(
        jax.vmap(
            lambda c: sample_gates(_geometry(), window_tokens(contexts, TASK.W), c)
        )(jnp.asarray(c_flow))
    )
    errors, gate_errors = [], []
    for k in (20, 40, 80, 160):  # eta = 1/2, 1/4, 1/8, 1/16
        run = it.train(
            TASK,
            ModelConfig(),
            TrainConfig(
                lr=HORIZON / k, steps=k, M=M, chunk=k, log_points=2, eval_contexts=4
            ),
            seeds,
        )
        errors.append(np.max(np.abs(gate_vectors(run.models) - c_flow)))
        gate_errors.append(np.max(np.abs(model_gates(run.models, contexts) - p_flow)))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    gate_ratios = np.array(gate_errors[:-1]) / np.array(gate_errors[1:])
    assert errors[0] < 0.05  # small against the distance moved (> 0.5)
    assert np.all((ratios >= 1.8) & (ratios <= 2.2)), (errors, ratios)
    assert np.all((gate_ratios >= 1.8) & (gate_ratios <= 2.2)), (
        gate_errors,
        gate_ratios,
    )


def _geometry():
    return flow_sample(TASK, it.FlowConfig(dynamics="full", M=M), 0)[0]


def _selected_after_training(run, contexts, delta):
    """`head_selection` of each trained model's worst masses over the sample's windows."""
    p = model_gates(run.models, contexts)  # (seeds, M, H, 2, L, W)
    worst = np.min(p, axis=(1, 4))  # over contexts and blocks: (seeds, H, 2, W)
    return np.asarray(jax.vmap(lambda w: head_selection(w, delta))(jnp.asarray(worst)))


def _same_selection_as_the_flow(seeds):
    delta = 1e-2
    _, flow, contexts = flows(FLOW.replace(delta=delta), seeds)
    assert np.all(np.asarray(flow.status) == it.Status.SELECTED)
    flow_selected = np.asarray(flow.selected)
    eta = 0.5
    steps = int(np.ceil(1.25 * np.max(flow.t_final) / eta))
    run = it.train(
        TASK,
        ModelConfig(),
        TrainConfig(
            lr=eta, steps=steps, M=M, chunk=steps, log_points=4, eval_contexts=8
        ),
        seeds,
    )
    selected = _selected_after_training(run, contexts, delta)
    assert np.all(selected >= 0)
    np.testing.assert_array_equal(selected, flow_selected)
    # the held-out measures read the same offsets: key r, value r + 1
    np.testing.assert_array_equal(run.measures.key_offsets, flow_selected)
    np.testing.assert_array_equal(run.measures.value_offsets, flow_selected + 1)


def test_every_seed_selects_the_flows_offsets():
    _same_selection_as_the_flow(8)


@pytest.mark.slow
def test_every_seed_selects_the_flows_offsets_many_seeds():
    _same_selection_as_the_flow(32)
