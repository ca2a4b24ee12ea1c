"""The seeds of a `train` run as lanes: their initial models, stacked along a leading seed axis,
split into trainable and fixed parts, and one seed taken back out.

May import: `inductheory.flow` (the seeds' keys), `._config`, `._model`.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..flow._sample import seed_keys
from ._config import Embeddings
from ._model import init_model


def _stack(models: list):
    """Models stacked along a new leading axis (array leaves; the rest from the first)."""
    arrays = [eqx.filter(m, eqx.is_array) for m in models]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *arrays)
    return eqx.combine(stacked, eqx.filter(models[0], eqx.is_array, inverse=True))


def _map_arrays(fn, tree):
    """`fn` applied to every array leaf of `tree`; the other leaves kept."""
    return jax.tree.map(lambda x: fn(x) if eqx.is_array(x) else x, tree)


def seed_model(models, i: int):
    """Seed `i` of stacked models (every array leaf's lane i; the other leaves kept)."""
    return _map_arrays(lambda a: a[i], models)


def _lanes(tree, n: int):
    """The first n lanes of every array leaf."""
    return _map_arrays(lambda a: a[:n], tree)


def _partition(model):
    """`(params, fixed)`: the model's trainable floating-point arrays and everything else."""
    params, rest = eqx.partition(model, model.trainable())
    params, fixed = eqx.partition(params, eqx.is_inexact_array)
    return params, eqx.combine(fixed, rest)


def _split(models: list):
    """`(params, (per_seed, shared))` of the seeds' models: the trainable arrays and the fixed
    ones stacked along a leading seed axis, except the fixed arrays every seed holds the very
    same of (the task's numbers, the given geometry), kept once."""
    parts = [_partition(m) for m in models]
    fixed = [f for _, f in parts]
    same = jax.tree.map(
        lambda *xs: eqx.is_array(xs[0]) and all(x is xs[0] for x in xs), *fixed
    )
    per_seed = _stack([eqx.filter(f, same, inverse=True) for f in fixed])
    return _stack([p for p, _ in parts]), (per_seed, eqx.filter(fixed[0], same))


# how the vmaps of the seeds take `(per_seed, shared)`
_FIXED_AXES = (0, None)


def _initial_models(task, model_config, config, seeds: int, seed: int, geometry):
    """Seed i's model at step 0 (the full flow's key of seed i)."""
    return [
        init_model(
            task,
            model_config,
            jax.random.wrap_key_data(k),
            rho=config.rho,
            # learned embeddings bring their own; fixed ones are the flow's geometry
            geometry=None
            if model_config.embeddings is Embeddings.LEARNED
            else geometry,
        )
        for k in seed_keys(seed, np.arange(seeds))
    ]


__all__ = ["seed_model"]
