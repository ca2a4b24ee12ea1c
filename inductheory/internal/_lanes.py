"""Lanes: many validated configurations of one static shape, stacked along a leading axis.

A `Task` or `FlowConfig` is validated where its values are Python numbers; its scalars are 0-d
arrays, so configurations that share the static part (L, S, H, solver, budgets, ...) stack into one
pytree whose leaves have a leading axis, ready for `vmap`. Nothing is validated inside jit.
"""

from __future__ import annotations

import equinox as eqx
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


def map_lanes(fn, lanes, group: int | None):
    """`fn(lane)` for every lane of `lanes`, stacked: a pytree whose array leaves hold the lanes
    along their leading axis (every other leaf goes to each lane as it is; arrays shared by
    every lane are closed over by `fn`).

    `group` lanes are vmapped at a time and the groups run one after another in the same program
    (`jax.lax.map` with `batch_size=group`); `group=None` vmaps every lane at once. Inside jit
    the numbers are those of one vmap, up to the rounding of the emitted code: a smaller group
    keeps a wide step's intermediates in the CPU caches.

    **Example:** `map_lanes(lambda x: x @ x, jnp.ones((8, 3, 3)), 2)` is eight 3 x 3 products,
    two vmapped at a time.
    """
    arrays, rest = eqx.partition(lanes, eqx.is_array)

    def one(lane_arrays):
        return fn(eqx.combine(lane_arrays, rest))

    if group is None:
        return jax.vmap(one)(arrays)
    return jax.lax.map(one, arrays, batch_size=group)


# The one name of the lane axis of every device mesh (sweeps, regime maps, flows).
LANE_AXIS = "lanes"


def lane_mesh(devices=None):
    """The 1-d device `Mesh` whose axis `LANE_AXIS` lanes are split along (default: all local
    devices).

    **Example:** `NamedSharding(lane_mesh(), PartitionSpec(LANE_AXIS))` splits the leading axis.
    """
    from jax.sharding import Mesh

    devices = list(jax.devices() if devices is None else devices)
    return Mesh(np.asarray(devices), (LANE_AXIS,))


def shard_lanes(tree, devices=None):
    """Place the leading (lane) axis of every array leaf across `devices` (default: all local ones).

    Computation follows data: a jitted, vmapped function of sharded lanes is split by XLA across the
    devices, each computing its own lanes. The lane count must be a multiple of the device count
    (pad first, `padded_size`); with one device the tree is returned unchanged.
    """
    from jax.sharding import NamedSharding, PartitionSpec

    devices = list(jax.devices() if devices is None else devices)
    if len(devices) == 1:
        return tree
    sharding = NamedSharding(lane_mesh(devices), PartitionSpec(LANE_AXIS))
    return jax.device_put(tree, sharding)


def padded_size(n: int, devices=None) -> int:
    """n rounded up to a multiple of the number of devices (default: all local devices).

    **Example:** with 4 devices `padded_size(5) == 8`; with one, `padded_size(5) == 5`.
    """
    k = len(jax.devices() if devices is None else devices)
    return k * -(-n // k)


def pad_lanes(tree, size: int):
    """Every array leaf of `tree` padded along its leading (lane) axis to `size` lanes by
    repeating its last lane (the padding's results are dropped; see `padded_size`).

    **Example:** `pad_lanes(np.arange(3), 4)` is `[0, 1, 2, 2]`.
    """
    return jax.tree.map(
        lambda x: (
            np.concatenate([x, np.repeat(x[-1:], size - x.shape[0], 0)])
            if size > x.shape[0]
            else x
        ),
        tree,
    )


def pad_items(items: list, size: int) -> list:
    """A list of configurations padded to `size` with copies of its last one (before
    `stack_lanes`).

    **Example:** `pad_items([a, b], 4) == [a, b, b, b]`.
    """
    return items + [items[-1]] * (size - len(items))


def lane(tree, i: int):
    """The i-th configuration of a stacked pytree."""
    return jax.tree.map(lambda x: x[i], tree)


__all__ = [
    "LANE_AXIS",
    "broadcast_lanes",
    "lane",
    "lane_mesh",
    "pad_items",
    "pad_lanes",
    "padded_size",
    "shard_lanes",
    "stack_lanes",
]
