"""Formulas written once: what the memory estimates count is what the model and the oracle build.

The estimates (`internal/_memory.py`) run before anything is allocated, so they cannot ask the
model; they call the same functions (`internal/_counts.py`) instead. These tests compare each
estimate with the thing itself: the oracle's own enumeration, the geometry's own dimension.
"""

import jax
import numpy as np
import pytest

import inductheory as it
from inductheory.internal import _counts, _memory
from inductheory.oracle._vertices import vertex_configs

# (L, S, W, H, tied, queries, exact geometry): windows, the boundary phase, tied gates, and a
# dense geometry each change which configurations the oracle enumerates
VERTEX_SETTINGS = [
    (4, 3, 3, 2, False, "within", True),
    (4, 3, 3, 2, True, "within", True),
    (3, 4, 4, 2, True, "within", True),
    (3, 3, 4, 2, False, "within", True),
    (3, 3, 5, 1, True, "within", True),
    (3, 3, 3, 2, False, "all", True),
    (3, 3, 3, 2, True, "all", True),
    (2, 4, 4, 1, True, "within", False),
    (3, 3, 3, 2, False, "within", False),
]


def _task(L, S, W, H, queries, exact):
    with it.model.assumptions_silenced():
        return it.Task(
            L=L,
            S=S,
            H=H,
            N=max(64, L * W),
            W=W,
            queries=queries,
            eps=None if exact else 0.9,
        )


@pytest.mark.parametrize("L, S, W, H, tied, queries, exact", VERTEX_SETTINGS)
def test_the_memory_estimate_counts_the_vertices_the_oracle_enumerates(
    monkeypatch, L, S, W, H, tied, queries, exact
):
    task = _task(L, S, W, H, queries, exact)
    geometry = it.model.make_geometry(task, jax.random.key(0))
    enumerated = len(vertex_configs(task, geometry, tied=tied)[0])
    # uncapped, the estimate's count is the enumeration's length
    count = _memory.vertex_configurations(
        task.W,
        H,
        L,
        exact=task.exact,
        windowed=task.windowed,
        tied=tied,
        cap=10**9,
    )
    assert count == enumerated
    # and `oracle_bytes`, called as the command line and the sweep call it, counts that many
    # (capped at one batch)
    seen, original = [], _memory.vertex_count

    def spy(*args, **kwargs):
        seen.append(original(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(_memory, "vertex_count", spy)
    _memory.oracle_bytes(
        N=int(task.N),
        L=L,
        S=task.W,
        H=H,
        restarts=1,
        vertex_starts=1,
        contexts=1,
        eps=task.eps,
        d=task.d,
        windowed=task.windowed,
        tied=tied,
    )
    assert seen == [min(enumerated, _memory.VERTEX_BATCH)]


@pytest.mark.parametrize("eps, d", [(None, None), (0.0, None), (None, 16), (0.9, None)])
def test_the_estimated_dimension_is_the_geometry_s_own(eps, d):
    task = it.Task(L=4, S=3, H=1, N=64, eps=eps, d=d)
    geometry = it.model.make_geometry(task, jax.random.key(0))
    assert _counts.embedding_dimension(64, eps, d) == geometry.dim
    assert _counts.is_exact_geometry(eps, d) == task.exact == (geometry.eps == 0)


def test_the_model_and_the_trained_model_name_different_functions_differently():
    """`it.model.rotate_gates` rotates gates, the trained model's rotation rotates a model: one
    name must not stand for both."""
    clash = [
        name
        for name in dir(it.trained)
        if not name.startswith("_")
        and hasattr(it.model, name)
        and getattr(it.trained, name) is not getattr(it.model, name)
    ]
    assert clash == []


def test_shared_and_linear_gates_rotate_alike():
    """Both gate classes of the idealized model rotate along their offsets alike: what sat at
    offset r sits at (r + delta) mod W (the trained model's: tests/test_trained_interventions)."""
    W, delta = 5, 2
    p = np.arange(2 * W, dtype=float).reshape(2, W)
    p /= p.sum(axis=1, keepdims=True)  # key gates are probability vectors
    shared = it.model.rotate_gates(it.SharedGates(key=p, value=p[::-1]), delta)
    assert np.array_equal(shared.key[:, (np.arange(W) + delta) % W], p)
    c = np.arange(2 * 2 * W * 3, dtype=float).reshape(1, 2, W, 6)
    linear = it.model.rotate_gates(it.LinearGates(c), delta)
    assert np.array_equal(np.asarray(linear.c)[:, :, (np.arange(W) + delta) % W], c)
