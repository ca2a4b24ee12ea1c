"""Hypothesis strategies for valid configurations and gates, shared by the property tests."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

import inductheory as it

make_task = it.model.quiet_task  # strategies may leave the theorems' regime on purpose


@st.composite
def tasks(
    draw,
    *,
    min_L=2,
    max_L=6,
    min_S=2,
    max_S=5,
    max_H=None,
    max_N=96,
    regime=False,
    exact=True,
):
    """Valid exact-geometry tasks; with `regime=True` only the theorems' regime (L>=4, S>=3,
    H<S, gamma<=1)."""
    L = draw(st.integers(4 if regime else min_L, max(max_L, 4 if regime else min_L)))
    S = draw(st.integers(3 if regime else min_S, max(max_S, 3 if regime else min_S)))
    H_hi = S - 1 if regime else S + 1
    if max_H is not None:
        H_hi = min(H_hi, max_H)
    H = draw(st.integers(1, max(H_hi, 1)))
    N = draw(st.integers(L * S, max(L * S, max_N)))
    gamma = draw(st.floats(0.1, 1.0) if regime else st.floats(0.1, 3.0))
    beta = draw(st.floats(0.1, 8.0))
    kappa = draw(st.floats(0.05, 3.0))
    return make_task(L=L, S=S, H=H, N=N, gamma=gamma, beta=beta, kappa=kappa)


def _simplex(draw, shape, sharp):
    logits = np.asarray(
        draw(
            st.lists(
                st.floats(-sharp, sharp),
                min_size=int(np.prod(shape)),
                max_size=int(np.prod(shape)),
            )
        )
    )
    logits = logits.reshape(shape)
    p = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return jnp.asarray(p / p.sum(axis=-1, keepdims=True))


@st.composite
def shared_gates(draw, task: it.Task, sharp: float = 6.0) -> it.SharedGates:
    """Block-shared gates, shape (H, S), from bounded logits (so strictly inside the simplex)."""
    return it.SharedGates(
        key=_simplex(draw, (task.H, task.S), sharp),
        value=_simplex(draw, (task.H, task.S), sharp),
    )


@st.composite
def oracle_gates(draw, task: it.Task, sharp: float = 6.0) -> it.OracleGates:
    """Per-context oracle gates, shape (H, L, S)."""
    shape = (task.H, task.L, task.S)
    return it.OracleGates(
        key=_simplex(draw, shape, sharp), value=_simplex(draw, shape, sharp)
    )


@st.composite
def selections(draw, task: it.Task) -> list[int]:
    """One selected offset per head, each in 0..S-2."""
    return draw(st.lists(st.integers(0, task.S - 2), min_size=task.H, max_size=task.H))


seeds = st.integers(0, 2**31 - 1)
