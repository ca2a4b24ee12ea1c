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
    return jax.tree.map(
        lambda x: np.broadcast_to(np.asarray(x), (n,) + np.shape(x)), tree
    )


def stack_lanes(trees: list):
    """Validated configurations (same static part) stacked along a new leading axis.

    Raises `ValueError` if their static parts differ (they could not share a program).
    """
    treedefs = {jax.tree.structure(t) for t in trees}
    if len(treedefs) != 1:
        raise ValueError(
            "configurations stacked together must share their static fields (shape, solver, ...)"
        )
    return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def shard_lanes(tree, devices=None):
    """Place the leading (lane) axis of every array leaf across `devices` (default: all local ones).

    Computation follows data: a jitted, vmapped function of sharded lanes is split by XLA across the
    devices, each computing its own lanes. The lane count must be a multiple of the device count
    (pad first); with one device the tree is returned unchanged.
    """
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devices = list(jax.devices() if devices is None else devices)
    if len(devices) == 1:
        return tree
    sharding = NamedSharding(
        Mesh(np.asarray(devices), ("lanes",)), PartitionSpec("lanes")
    )
    return jax.device_put(tree, sharding)


def padded_size(n: int, devices=None) -> int:
    """n rounded up to a multiple of the number of devices."""
    k = len(jax.devices() if devices is None else devices)
    return k * -(-n // k)


def lane(tree, i: int):
    """The i-th configuration of a stacked pytree."""
    return jax.tree.map(lambda x: x[i], tree)


__all__ = ["broadcast_lanes", "lane", "padded_size", "shard_lanes", "stack_lanes"]
