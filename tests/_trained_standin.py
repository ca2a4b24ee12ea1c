"""A private stand-in for the trained compressed model (`inductheory.trained._model`) at the
theorem's setting only, for the training tests until the model itself is in the package.

It satisfies the model's interface (`logits`, `gate_probabilities`, `loss`, `population_loss`,
`trainable`, `init_model`, `measure`) with the theorem's parts: fixed geometry, `LinearGates(c)`,
loss = `monte_carlo_loss`. `model_api` is the fixture the training tests use: the package's own
model where it exists, this stand-in otherwise.
"""

from __future__ import annotations

import importlib.util
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

from inductheory.flow import initial_gate_vectors
from inductheory.model._gates import LinearGates, value_follows_key
from inductheory.model._logits import cross_entropy, query_logits, top1_correct
from inductheory.model._loss import monte_carlo_loss, per_phase_mean
from inductheory.model._measures import effective_offsets
from inductheory.model._positions import window_tokens

# The package's model, once it is there; the stand-in until then.
HAS_MODEL = (
    importlib.util.find_spec("inductheory.trained._model") is not None
    and importlib.util.find_spec("inductheory.trained._measures") is not None
)


class StandinModel(eqx.Module):
    c: jax.Array
    task: object
    geometry: object
    tied: bool = eqx.field(static=True, default=False)

    def gates(self):
        c = jnp.broadcast_to(self.c[:, :1], self.c.shape) if self.tied else self.c
        return LinearGates(c)

    def logits(self, tokens):
        g = self.gates().for_context(self.geometry, window_tokens(tokens, self.task.W))
        return query_logits(self.task, self.geometry, g, tokens)

    def gate_probabilities(self, tokens):
        g = self.gates().for_context(self.geometry, window_tokens(tokens, self.task.W))
        return jnp.stack([g.key, g.value], axis=1)

    def loss(self, contexts):
        return monte_carlo_loss(self.task, self.geometry, self.gates(), contexts)

    def population_loss(self):
        raise ValueError(
            "population_loss has no closed form for token-dependent linear gates; "
            "use batch='full' or a number of contexts"
        )

    def trainable(self):
        # the gate vectors learn; the task's numbers and the geometry are fixed
        fixed = jax.tree.map(lambda _: False, self)
        return eqx.tree_at(lambda m: m.c, fixed, True)


def standin_init_model(task, config, key, *, rho=0.1, geometry=None):
    if not config.theorem_setting:
        raise ValueError("the stand-in model has the theorem's setting only")
    c = initial_gate_vectors(key, task, geometry, rho, config.tied)
    return StandinModel(c, task, geometry, config.tied)


class StandinMeasures(NamedTuple):
    key_offsets: jax.Array
    value_offsets: jax.Array
    argmax_mass: jax.Array
    value_follows_key: jax.Array
    static_offsets: jax.Array
    avg_offsets: jax.Array
    phase_accuracy: jax.Array
    phase_gap: jax.Array
    mean_accuracy: jax.Array
    loss: jax.Array


def standin_measure(model, contexts):
    m = _measure_arrays(model, contexts)
    follows = value_follows_key(m.key_offsets, m.value_offsets)
    return m._replace(value_follows_key=jnp.asarray(follows))


@eqx.filter_jit
def _measure_arrays(model, contexts):
    p = jax.vmap(model.gate_probabilities)(contexts)  # (M, H, 2, L, W)
    M, H, _, L, W = p.shape
    windows = jnp.moveaxis(p, 0, 2).reshape(H, 2, M * L, W)
    mean = jnp.mean(windows, axis=2)
    static, avg = effective_offsets(windows)
    offsets = jnp.argmax(mean, axis=-1)
    correct = jax.vmap(lambda t: top1_correct(*model.logits(t)))(contexts)
    accuracy = per_phase_mean(model.task, correct)
    losses = jax.vmap(lambda t: cross_entropy(*model.logits(t)))(contexts)
    return StandinMeasures(
        key_offsets=offsets[:, 0],
        value_offsets=offsets[:, 1],
        argmax_mass=jnp.max(mean, axis=-1),
        value_follows_key=jnp.zeros((), bool),  # filled in outside jit
        static_offsets=static,
        avg_offsets=avg,
        phase_accuracy=accuracy,
        phase_gap=jnp.max(accuracy) - jnp.min(accuracy),
        mean_accuracy=jnp.mean(accuracy),
        loss=jnp.mean(losses),
    )


@pytest.fixture(autouse=True)
def model_api(monkeypatch):
    """The model `train` builds: the package's, or this stand-in where it is not there yet."""
    from inductheory.trained import _train

    if not HAS_MODEL:
        monkeypatch.setattr(
            _train, "_model_api", lambda: (standin_init_model, standin_measure)
        )
    return _train._model_api()


def init_model(*args, **kwargs):
    """`init_model` of the model the tests train (the package's or the stand-in's)."""
    from inductheory.trained import _train

    return _train._model_api()[0](*args, **kwargs)
