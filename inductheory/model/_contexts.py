"""Contexts (L x S distinct token ids), balanced samples and the enumerated query slots."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Int, PRNGKeyArray

from ._task import Task, _require_int


def _distinct_tokens(key: PRNGKeyArray, N: int, k: int) -> Int[Array, " k"]:
    # Floyd's algorithm: k uniform distinct draws from range(N) in O(k^2), never O(N); then a
    # uniform shuffle so that the order is uniform too.
    def step(i, carry):
        chosen, key = carry
        key, sub = jax.random.split(key)
        j = N - k + i
        t = jax.random.randint(sub, (), 0, j + 1)
        taken = jnp.any(chosen == t)
        return chosen.at[i].set(jnp.where(taken, j, t).astype(jnp.int32)), key

    key, shuffle_key = jax.random.split(key)
    chosen, _ = jax.lax.fori_loop(
        0, k, step, (jnp.full((k,), -1, dtype=jnp.int32), key)
    )
    return jax.random.permutation(shuffle_key, chosen)


def sample_contexts(
    key: PRNGKeyArray, task: Task, M: int
) -> Int[Array, "contexts blocks offsets"]:
    """M i.i.d. contexts, each L*S distinct tokens drawn uniformly without replacement from N.

    Jittable (`task` and `M` static); cost O(M (L S)^2), independent of N, so N = 10^6 is cheap.

    **Arguments:**
    - `key`: PRNG key; the same key gives the same contexts.
    - `task`: supplies L, S and N.
    - `M`: number of contexts.

    **Returns:** int32 token ids of shape (M, L, S); token (l, r) of context m is `out[m, l, r]`.

    ```python
    ctx = sample_contexts(jax.random.key(0), Task(L=4, S=3, H=1, N=100), 8)
    ctx.shape  # (8, 4, 3)
    ```
    """
    M = _require_int("M", M, 1)
    return _sample_contexts(key, task.L, task.S, task.vocabulary, M)


@partial(jax.jit, static_argnums=(1, 2, 3, 4))
def _sample_contexts(key, L: int, S: int, N: int, M: int):
    flat = jax.vmap(lambda k: _distinct_tokens(k, N, L * S))(jax.random.split(key, M))
    return flat.reshape(M, L, S)


def balanced_contexts(
    key: PRNGKeyArray, task: Task, permutations: int
) -> Int[Array, "contexts blocks offsets"]:
    """A balanced sample: every token appears equally often at every offset (docs/theory.md §6).

    Each random permutation of the vocabulary is cut into N/(L*S) contexts, and each context is
    added with its S cyclic rotations of the offsets (token (l, r) moves to offset (r + s) mod S).
    Each token then appears exactly `permutations` times at every offset. Needs L*S to divide N.

    **Arguments:**
    - `key`: PRNG key.
    - `task`: supplies L, S and N.
    - `permutations`: number of vocabulary permutations P.

    **Returns:** int32 ids of shape (P * N / L, L, S) (that is P * (N / (L*S)) * S contexts).
    """
    L, S, N = task.L, task.S, task.vocabulary
    if N % (L * S):
        raise ValueError(f"balanced samples need L*S = {L * S} to divide N = {N}")
    _require_int("permutations", permutations, 1)
    return _balanced_contexts(key, L, S, N, permutations)


# one compiled program per shape (op by op, each vmapped operation and each roll was one)
@partial(jax.jit, static_argnums=(1, 2, 3, 4))
def _balanced_contexts(key, L: int, S: int, N: int, permutations: int):
    perms = jax.vmap(lambda k: jax.random.permutation(k, N))(
        jax.random.split(key, permutations)
    )
    base = perms.reshape(-1, L, S).astype(jnp.int32)
    rotations = jnp.stack([jnp.roll(base, s, axis=2) for s in range(S)], axis=1)
    return rotations.reshape(-1, L, S)


def query_slots(L: int, S: int) -> tuple[np.ndarray, np.ndarray]:
    """All L*(S-1) query slots (l*, r*), r* <= S-2, block-major.

    **Returns:** two int arrays `(blocks, offsets)` of length L*(S-1).
    """
    blocks, offsets = np.meshgrid(np.arange(L), np.arange(S - 1), indexing="ij")
    return blocks.ravel(), offsets.ravel()
