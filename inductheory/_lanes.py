"""Lanes: many validated configurations of one static shape, stacked along a leading axis.

A `Task` or `FlowConfig` is validated where its values are Python numbers; its scalars are 0-d
arrays, so configurations that share the static part (L, S, H, solver, budgets, ...) stack into one
pytree whose leaves have a leading axis, ready for `vmap`. Nothing is validated inside jit.
"""

from __future__ import annotations

import jax
import numpy as np


def broadcast_lanes(tree, n: int):
    """Every array leaf of `tree` repeated along a new leading axis of length n."""
    return jax.tree.map(lambda x: np.broadcast_to(np.asarray(x), (n,) + np.shape(x)), tree)


def stack_lanes(trees: list):
    """Validated configurations (same static part) stacked along a new leading axis.

    Raises `ValueError` if their static parts differ (they could not share a program).
    """
    treedefs = {jax.tree.structure(t) for t in trees}
    if len(treedefs) != 1:
        raise ValueError("configurations stacked together must share their static fields (shape, solver, ...)")
    return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def lane(tree, i: int):
    """The i-th configuration of a stacked pytree."""
    return jax.tree.map(lambda x: x[i], tree)


__all__ = ["broadcast_lanes", "lane", "stack_lanes"]
