"""The gate-class contract: every class gives per-context gates; symmetric reductions match
the closed form."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inductheory as it

TASK = it.Task(L=4, S=3, H=2, N=48, beta=4.0)
GEO = it.ExactGeometry(48, 1.0)


def test_every_gate_class_is_an_abstract_gates():
    c = it.flow.initial_gate_vectors(jax.random.key(0), TASK, GEO, 0.1)
    for g in (
        it.hard_selection(3, [0, 1]),
        it.uniform_gates(2, 3),
        it.LinearGates(c),
        it.hard_selection(3, [0, 1]).for_blocks(4),
    ):
        assert isinstance(g, it.model.AbstractGates) and g.n_offsets == 3
    assert it.LinearGates(c).parameter_shape == (2, 2, 3, 49)
    with pytest.raises(TypeError):
        it.model.AbstractGates()


def test_linear_gates_in_span_m_reduce_to_shared_gates_with_the_same_loss():
    """Monte Carlo over contexts of the linear class vs the closed form of its reduction."""
    c = it.flow.project_to_mean(
        it.flow.initial_gate_vectors(jax.random.key(0), TASK, GEO, 3.0), GEO
    )
    shared = it.LinearGates(c).symmetric_reduction(GEO)
    ctx = it.sample_contexts(jax.random.key(1), TASK, 8)
    np.testing.assert_allclose(
        float(it.monte_carlo_loss(TASK, GEO, it.LinearGates(c), ctx)),
        float(it.population_loss(TASK, shared)),
        rtol=1e-12,
    )
    # a generic c has token-specific components: no reduction
    assert (
        it.LinearGates(
            it.flow.initial_gate_vectors(jax.random.key(0), TASK, GEO, 3.0)
        ).symmetric_reduction(GEO)
        is None
    )


class TiedSharedGates(it.model.AbstractGates):
    """A new gate class written against the contract alone: one simplex vector for key and value."""

    p: jax.Array

    def for_context(self, geometry, tokens):
        return it.SharedGates(key=self.p, value=self.p).for_context(geometry, tokens)

    @property
    def parameter_shape(self):
        return tuple(self.p.shape)

    @property
    def n_offsets(self):
        return self.p.shape[-1]

    def symmetric_reduction(self, geometry=None):
        return None


def test_a_new_gate_class_works_with_the_general_losses():
    p = jax.nn.softmax(jax.random.normal(jax.random.key(2), (2, 3)), axis=-1)
    ctx = it.sample_contexts(jax.random.key(3), TASK, 4)
    tied = TiedSharedGates(p)
    np.testing.assert_allclose(
        float(it.monte_carlo_loss(TASK, GEO, tied, ctx)),
        float(it.population_loss(TASK, it.SharedGates(key=p, value=p))),
        rtol=1e-12,
    )
    assert tied.n_offsets == 3 and tied.symmetric_reduction() is None
    assert jnp.all(it.monte_carlo_phase_accuracy(TASK, GEO, tied, ctx) >= 0)


def test_bad_gates_are_refused():
    with pytest.raises(ValueError, match="shape \\(H, W\\) = \\(2, 3\\)"):
        it.population_loss(TASK, it.hard_selection(3, [0]))
    with pytest.raises(ValueError, match="finite and >= 0"):
        it.SharedGates(key=jnp.full((2, 3), jnp.nan), value=jnp.full((2, 3), 1 / 3))
    with pytest.raises(ValueError, match="finite and >= 0"):
        it.OracleGates(key=-jnp.ones((2, 4, 3)), value=jnp.ones((2, 4, 3)) / 3)
    with pytest.raises(ValueError, match="N_grid must hold integers"):
        it.regime_map(it.Task(L=4, S=3, H=1, N=64), [16.5], [1.0])
