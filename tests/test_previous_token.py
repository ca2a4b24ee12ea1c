"""The first layer's attention, the previous-token measure and the classes of effective offsets
(figures previous_token and trained_effective_offsets) against independent computations."""

import equinox as eqx
import jax
import numpy as np
import pytest

from inductheory.figures.previous_token import (
    PREVIOUS_TOKEN,
    ArmSummary,
    arm_data,
    lag_profile,
    previous_token_mass,
)
from inductheory.figures.trained_effective_offsets import (
    STATIC_CONCENTRATED,
    concentration,
)
from inductheory.model import sample_contexts
from inductheory.model._measures import effective_offsets
from inductheory.model._task import quiet_task
from inductheory.trained import ModelConfig, init_model

TASK = dict(L=4, S=3, H=2, N=48, gamma=0.8, beta=4.0, kappa=1.5)


def _softmax_causal(scores):
    """Row softmax over u <= t of a (T, T) score matrix, in float64 numpy."""
    T = scores.shape[0]
    out = np.zeros_like(scores)
    for t in range(T):
        s = scores[t, : t + 1]
        e = np.exp(s - s.max())
        out[t, : t + 1] = e / e.sum()
    return out


def _random_leaves(model, seed=3):
    keys = jax.random.split(jax.random.key(seed), 2)
    changes = [jax.random.normal(keys[0], model.position_bias.shape)]
    where = [lambda m: m.position_bias]
    if model.first_maps is not None:
        changes.append(
            model.first_maps + 0.5 * jax.random.normal(keys[1], model.first_maps.shape)
        )
        where.append(lambda m: m.first_maps)
    for w, c in zip(where, changes):
        model = eqx.tree_at(w, model, c)
    return model


def test_first_layer_attention_is_the_causal_softmax_of_learned_maps():
    task = quiet_task(**TASK)
    config = ModelConfig(
        embeddings="learned", d=6, maps="learned", unembedding="learned", layers=2
    )
    model = _random_leaves(init_model(task, config, jax.random.key(0)))
    tokens = sample_contexts(jax.random.key(1), task, 1)[0]
    a = np.asarray(model.first_layer_attention(tokens))
    T = task.T
    assert a.shape == (task.H, T, T)
    E = np.asarray(model.embeddings)[np.asarray(tokens).reshape(T)]
    Q, K = np.asarray(model.first_maps[0]), np.asarray(model.first_maps[1])
    pi = np.asarray(model.position_bias)
    for h in range(task.H):
        scores = np.zeros((T, T))
        for t in range(T):
            for u in range(t + 1):
                scores[t, u] = task.gamma * (Q[h] @ E[t]) @ (K[h] @ E[u]) + pi[h, t - u]
        np.testing.assert_allclose(
            a[h], _softmax_causal(scores), rtol=1e-10, atol=1e-14
        )
    np.testing.assert_allclose(a.sum(axis=-1), 1.0, rtol=1e-12)
    assert np.all(a[:, np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] == 0)


def test_first_layer_attention_on_the_exact_geometry():
    # <x_t, x_u> = kappa + [t = u] for distinct tokens
    task = quiet_task(**TASK)
    model = _random_leaves(init_model(task, ModelConfig(layers=2), jax.random.key(2)))
    tokens = sample_contexts(jax.random.key(4), task, 1)[0]
    a = np.asarray(model.first_layer_attention(tokens))
    T, pi = task.T, np.asarray(model.position_bias)
    for h in range(task.H):
        t, u = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
        scores = task.gamma * (task.kappa + (t == u)) + pi[h][(t - u) % T]
        np.testing.assert_allclose(
            a[h], _softmax_causal(scores), rtol=1e-10, atol=1e-14
        )


def test_first_layer_attention_needs_two_layers():
    task = quiet_task(**TASK)
    model = init_model(task, ModelConfig(), jax.random.key(0))
    with pytest.raises(ValueError, match="layers=2"):
        model.first_layer_attention(sample_contexts(jax.random.key(1), task, 1)[0])


def test_previous_token_share_of_a_perfect_previous_token_head():
    task = quiet_task(**TASK)
    model = init_model(task, ModelConfig(layers=2), jax.random.key(0))
    bias = np.zeros((task.H, task.T))
    bias[0, 1] = 80.0  # head 0 attends to t - 1; head 1 keeps the zero bias of init
    model = eqx.tree_at(lambda m: m.position_bias, model, jax.numpy.asarray(bias))
    contexts = sample_contexts(jax.random.key(5), task, 8)
    previous, pattern = previous_token_mass(model, contexts)
    previous = np.asarray(previous)
    np.testing.assert_allclose(previous[0], 1.0, atol=1e-12)
    # zero bias: weights exp(gamma (kappa + [t = u])) over u <= t, so t - 1 gets
    # 1 / (e^gamma + t)
    t = np.arange(1, task.T)
    np.testing.assert_allclose(
        previous[1], np.mean(1 / (np.exp(task.gamma) + t)), rtol=1e-12
    )
    assert pattern.shape == (task.H, task.T, task.T)
    lags = np.asarray(lag_profile(pattern))
    np.testing.assert_allclose(lags[:, 1], previous, rtol=1e-12)
    # head 1 on itself: e^gamma / (e^gamma + t) at every t = 0..T-1
    t0 = np.arange(task.T)
    np.testing.assert_allclose(
        lags[1, 0], np.mean(np.exp(task.gamma) / (np.exp(task.gamma) + t0)), rtol=1e-12
    )
    np.testing.assert_allclose(
        lags[0, 0], 1 / (task.T), rtol=1e-9
    )  # only t = 0 on itself
    # the share over heads x seeds: two seeds of this model
    W = task.W
    s = ArmSummary(
        layers=2,
        previous=np.stack([previous, previous]),
        pattern=np.asarray(pattern),
        pattern_seed=0,
        lags=np.stack([np.asarray(lag_profile(pattern))] * 2),
        key_offsets=np.array([[0, 1], [1, 1]]),
        value_offsets=np.array([[1, 1], [2, 0]]),
        argmax_mass=np.ones((2, task.H, 2)),
        mass=np.full((2, task.H, 2, W), 1 / W),
        phase_accuracy=np.array([[1.0, 1.0, 0.0], [1.0, 0.5, 0.5]]),
    )
    d = arm_data("x", "x", s)
    assert previous[1] < PREVIOUS_TOKEN
    assert (d["previous_heads"]["k"], d["previous_heads"]["n"]) == (2, 4)
    assert (d["seeds_with_previous_head"]["k"], d["seeds_with_previous_head"]["n"]) == (
        2,
        2,
    )
    assert (d["key_equals_value"]["k"], d["value_follows_key"]["k"]) == (1, 2)
    assert d["boundary_accuracy"]["mean"] == 0.25
    assert d["within_accuracy"]["mean"] == pytest.approx(0.875)
    assert d["top_lags"][:2] == [2, 2] and sum(d["top_lags"]) == 4


def _windows(offsets, W):
    """One-hot gates of windows on the given offsets, (windows, W)."""
    return np.eye(W)[np.asarray(offsets)]


def test_classes_of_hand_made_gates():
    W = 8
    gates = np.stack(
        [
            _windows([3] * 64, W),  # every window on offset 3: static
            _windows(np.arange(64) % W, W),  # each window one-hot, offsets vary
            np.full((64, W), 1 / W),  # uniform: diffuse
            0.9 * _windows([2] * 64, W) + 0.1 / W,  # mostly one offset
        ]
    )
    static, avg = (np.asarray(x) for x in effective_offsets(gates))
    np.testing.assert_allclose(static[:3], [1.0, W, W], rtol=1e-12)
    np.testing.assert_allclose(avg[:3], [1.0, 1.0, W], rtol=1e-12)
    kinds = concentration(static, avg)
    assert kinds[:3].tolist() == ["static", "input_dependent", "diffuse"]
    # 0.9 + 0.1/8 on one offset: exp(H) is about 1.6, above the threshold of 1.5
    assert static[3] > STATIC_CONCENTRATED and kinds[3] == "diffuse"
    with pytest.raises(ValueError, match="same shape"):
        concentration([1.0, 2.0], [1.0])
