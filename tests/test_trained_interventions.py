"""Head knockout and gate rotation on the trained compressed model (trained/_interventions.py),
against the idealized model's closed forms and hand-made models."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inductheory.model import (
    SharedGates,
    knockout_phase_accuracy,
    phase_accuracy,
    sample_contexts,
)
from inductheory.model._logits import top1_correct
from inductheory.model._loss import per_phase_mean
from inductheory.model._task import quiet_task
from inductheory.trained import (
    ModelConfig,
    init_model,
    knockout,
    measure,
    rotate_model_gates,
    shift_correlation,
    shifted_curve,
)


def _static_theorem_model(task, b):
    """A theorem-setting model whose gate vectors lie along e_0: <c, x_i> = b for every token,
    so its gates are the shared softmax(b) (H, 2, S)."""
    model = init_model(task, ModelConfig(), jax.random.key(0))
    c = jnp.zeros_like(model.gate_vectors).at[..., 0].set(b / np.sqrt(task.kappa))
    return eqx.tree_at(lambda m: m.gate_vectors, model, c)


def test_knockout_on_theorem_setting_matches_idealized_closed_form():
    task = quiet_task(L=4, S=5, H=3, N=64, beta=6.0)
    rng = np.random.default_rng(3)
    b = jnp.asarray(rng.normal(0, 3.0, (3, 2, 5)))
    model = _static_theorem_model(task, b)
    k = knockout(model, sample_contexts(jax.random.key(1), task, 16))
    p = jax.nn.softmax(b, axis=-1)
    gates = SharedGates(key=p[:, 0], value=p[:, 1])
    assert k.layers == ("compressed",)
    for h in range(task.H):
        want = knockout_phase_accuracy(task, gates, [h])
        np.testing.assert_array_equal(np.asarray(k.phase_accuracy[0, h]), want)
    full = phase_accuracy(task, gates)
    np.testing.assert_array_equal(np.asarray(k.base_accuracy), full)


def test_knockout_of_hard_heads_removes_their_phase():
    task = quiet_task(L=4, S=4, H=2, N=64, beta=8.0)
    # head 0: key 0, value 1 (phase 0); head 1: key 2, value 3 (phase 2)
    b = 6.0 * jnp.asarray(
        [[[1, 0, 0, 0], [0, 1, 0, 0]], [[0, 0, 1, 0], [0, 0, 0, 1]]], float
    )
    k = knockout(
        _static_theorem_model(task, b), sample_contexts(jax.random.key(2), task, 8)
    )
    np.testing.assert_array_equal(np.asarray(k.base_accuracy), [1, 0, 1])
    np.testing.assert_array_equal(
        np.asarray(k.accuracy_change[0]), [[-1, 0, 0], [0, 0, -1]]
    )


def _learned(task, layers=1, key=0):
    config = ModelConfig(
        embeddings="learned", d=8, maps="learned", unembedding="learned", layers=layers
    )
    model = init_model(task, config, jax.random.key(key))
    # sharper than the initial gates, so that heads differ between contexts
    return eqx.tree_at(lambda m: m.gate_vectors, model, 20.0 * model.gate_vectors)


def test_knocking_out_every_head_leaves_input_independent_logits():
    task = quiet_task(L=4, S=4, H=2, N=32, beta=4.0, queries="all")
    model = _learned(task)
    contexts = sample_contexts(jax.random.key(5), task, 6)
    from inductheory.trained import mean_compressed_outputs

    mu = mean_compressed_outputs(model, contexts)
    logits = jax.vmap(lambda t: model.ablated_logits(t, jnp.ones(task.H, bool), mu)[0])(
        contexts
    )
    flat = np.asarray(logits).reshape(-1, logits.shape[-1])
    np.testing.assert_allclose(flat, np.broadcast_to(flat[0], flat.shape), atol=1e-12)
    # and not so for the unablated model
    free = np.asarray(jax.vmap(lambda t: model.logits(t)[0])(contexts))
    assert np.ptp(free.reshape(-1, free.shape[-1]), axis=0).max() > 1e-3


def test_unablated_path_is_the_models_logits_and_first_layer_knockout_runs():
    task = quiet_task(L=4, S=4, H=2, N=32, beta=4.0, queries="all")
    model = _learned(task, layers=2)
    contexts = sample_contexts(jax.random.key(6), task, 8)
    k = knockout(model, contexts)
    assert k.layers == ("first", "compressed")
    assert k.phase_accuracy.shape == (2, 2, 4)
    correct = jax.vmap(lambda t: top1_correct(*model.logits(t)))(contexts)
    np.testing.assert_array_equal(
        np.asarray(k.base_accuracy), per_phase_mean(task, correct)
    )
    # a first-layer head zeroed and its mean added back: the mean over prompts and positions
    # of the residual equals the unablated one (the head's mean is restored exactly)
    from inductheory.trained._interventions import (
        _residual,
        _without_first_heads,
        mean_first_outputs,
    )

    mu1 = mean_first_outputs(model, contexts)
    alone = _without_first_heads(model, jnp.arange(2) == 0)
    full = jax.vmap(lambda t: _residual(model, t))(contexts).mean(axis=(0, 1))
    knocked = jax.vmap(lambda t: _residual(alone, t) + mu1[0])(contexts).mean(
        axis=(0, 1)
    )
    np.testing.assert_allclose(knocked, full, atol=1e-12)


def test_rotation_inverse_and_full_turn_are_identity():
    task = quiet_task(L=4, S=4, W=6, H=2, N=32, beta=4.0)
    config = ModelConfig(embeddings="learned", d=8, bias=True)
    model = init_model(task, config, jax.random.key(1))
    model = eqx.tree_at(
        lambda m: m.gate_biases,
        model,
        jax.random.normal(jax.random.key(2), model.gate_biases.shape),
    )
    for delta in (1, -2, 3):
        back = rotate_model_gates(rotate_model_gates(model, delta), -delta)
        assert eqx.tree_equal(back, model)
        moved = rotate_model_gates(model, delta)
        assert not np.array_equal(moved.gate_vectors, model.gate_vectors)
        # the sign convention: offset o takes the parameters of offset o - delta
        np.testing.assert_array_equal(
            moved.gate_biases[..., (np.arange(6) + delta) % 6], model.gate_biases
        )
    assert eqx.tree_equal(rotate_model_gates(model, task.W), model)
    with pytest.raises(ValueError, match="delta must be an integer"):
        rotate_model_gates(model, 1.5)


def test_rotated_hard_selection_shifts_the_accuracy_curve():
    S = 6
    task = quiet_task(L=4, S=S, H=2, N=64, beta=8.0, queries="all")
    model = init_model(task, ModelConfig(gates="bias"), jax.random.key(0))
    # head 0 selects key 0 / value 1, head 1 key 3 / value 4: phases 0 and 3 answered
    b = np.zeros((2, 2, S))
    b[0, 0, 0] = b[0, 1, 1] = b[1, 0, 3] = b[1, 1, 4] = 30.0
    model = eqx.tree_at(lambda m: m.gate_biases, model, jnp.asarray(b))
    contexts = sample_contexts(jax.random.key(3), task, 8)
    base = np.asarray(measure(model, contexts).phase_accuracy)
    np.testing.assert_array_equal(base, [1, 0, 0, 1, 0, 0])
    for delta in (-3, -2, -1, 1, 2, 3):
        rotated = np.asarray(
            measure(rotate_model_gates(model, delta), contexts).phase_accuracy
        )
        want = np.zeros(S)
        for r in (0, 3):
            if (
                r + delta
            ) % S != S - 1:  # a head keyed at S-1 has its value wrap: boundary
                want[(r + delta) % S] = 1.0
        np.testing.assert_array_equal(rotated, want)
        np.testing.assert_array_equal(rotated[:-1], shifted_curve(base, delta)[:-1])
        assert shift_correlation(base, rotated, delta) == pytest.approx(1.0)
        assert rotated[-1] == 0.0


def test_shift_correlation_by_hand():
    base = np.array([1.0, 0.5, 0.0, 0.2])
    measured = np.array(
        [0.1, 0.9, 0.5, 0.7]
    )  # delta 1 predicts [0.2, 1, 0.5, 0] (last left out)
    # squared correlation from scipy's Pearson (an independent computation)
    from scipy.stats import pearsonr

    want = pearsonr(measured[:3], [0.2, 1.0, 0.5]).statistic ** 2
    assert shift_correlation(base, measured, 1) == pytest.approx(want)
    assert np.isnan(shift_correlation(base, np.ones(4), 1))
    # a shifted curve at a tenth of the level keeps r^2 = 1 (the statistic ignores the level)
    assert shift_correlation(base, 0.1 * np.roll(base, 2), 2) == pytest.approx(1.0)
    # per leading index, and a collapsed noisy curve lies in [0, 1]
    rng = np.random.default_rng(0)
    noise = 0.01 + 0.005 * rng.random((5, 4))
    r2 = shift_correlation(np.tile(base, (5, 1)), noise, 1)
    assert r2.shape == (5,) and np.all((r2 >= 0) & (r2 <= 1))
