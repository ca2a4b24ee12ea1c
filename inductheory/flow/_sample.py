"""The full flow's sample and the per-seed keys of many-seed runs (docs/theory.md §6).

Seed i of base seed s starts from the key `fold_in(fold_in(key(s), 1), i)`, so its numbers do not
depend on how seeds are chunked or sharded. The sample of contexts uses `fold_in(key(s), 2)` and an
approximate geometry `fold_in(key(s), 3)`. The flows of many seeds (`inductheory.experiments`) and
the trained model (`inductheory.trained`) both start from them.
"""

from __future__ import annotations

import math

import jax
import numpy as np

from ..model._contexts import balanced_contexts, sample_contexts
from ..model._geometry import make_geometry
from ..model._task import Task
from ._config import FlowConfig, Sample


def sample_size(task: Task, config: FlowConfig) -> int:
    """Contexts actually used: M, rounded up to a multiple of N/L for balanced samples."""
    if config.sample is Sample.IID:
        return config.M
    per_permutation = task.vocabulary // task.L
    return per_permutation * max(1, math.ceil(config.M / per_permutation))


def flow_sample(task: Task, config: FlowConfig, seed: int = 0):
    """Geometry and fixed sample of contexts of the full dynamics for base seed `seed`.

    Balanced (default): `balanced_contexts` with ceil(M / (N/L)) permutations; i.i.d.:
    `sample_contexts` with M contexts.

    **Returns:** `(geometry, contexts)`.
    """
    base = jax.random.key(seed)
    geometry = make_geometry(task, jax.random.fold_in(base, 3))
    ckey = jax.random.fold_in(base, 2)
    if config.sample is Sample.IID:
        contexts = sample_contexts(ckey, task, config.M)
    else:
        contexts = balanced_contexts(
            ckey, task, sample_size(task, config) // (task.vocabulary // task.L)
        )
    return geometry, contexts


def seed_keys(seed: int, indices) -> jax.Array:
    """Raw key data (n, 2) of the seeds `indices` under base seed `seed`."""
    return _seed_keys(seed, np.asarray(indices))


# one compiled program per count of seeds (op by op, each vmapped operation was one)
@jax.jit
def _seed_keys(seed, indices):
    flow = jax.random.fold_in(jax.random.key(seed), 1)
    return jax.vmap(lambda i: jax.random.key_data(jax.random.fold_in(flow, i)))(indices)


__all__ = ["flow_sample", "sample_size", "seed_keys"]
