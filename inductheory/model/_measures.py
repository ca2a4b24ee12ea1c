"""Effective number of offsets of gate score vectors (docs/theory.md §9)."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float


def entropy(alpha: Float[Array, "*batch offsets"]) -> Float[Array, "*batch"]:
    """Shannon entropy $H(\\alpha) = -\\sum_r \\alpha_r \\log \\alpha_r$ (natural log, $0
    \\log 0 = 0$).

    **Arguments:**
    - `alpha`: probability vectors along the last axis, any leading shape.

    **Returns:** the entropies, of the leading shape.

    ```python
    entropy(jnp.full(4, 0.25))  # log 4
    ```
    """
    alpha = jnp.asarray(alpha)
    safe = jnp.where(alpha > 0, alpha, 1.0)
    return -jnp.sum(jnp.where(alpha > 0, alpha * jnp.log(safe), 0.0), axis=-1)


def effective_number(alpha: Float[Array, "*batch offsets"]) -> Float[Array, "*batch"]:
    """Effective number of offsets $\\exp(H(\\alpha))$: 1 for a one-hot vector, S for the
    uniform one.

    ```python
    effective_number(jnp.array([0.5, 0.5, 0.0]))  # 2.0
    ```
    """
    return jnp.exp(entropy(alpha))


def effective_offsets(
    alpha: Float[Array, "*batch windows offsets"],
) -> tuple[Float[Array, "*batch"], Float[Array, "*batch"]]:
    """Static and average effective number of offsets over a set of windows (docs/theory.md §9).

    With $\\alpha_j$ the gate scores of window j (axis -2),
    static $= \\exp(H(\\mathbb{E}_j \\alpha_j))$ and avg $= \\mathbb{E}_j \\exp(H(\\alpha_j))$.
    Both lie in [1, S]. Static concentration: both near 1 (every window picks the same offsets);
    input-dependent concentration: static near S, avg near 1.

    **Arguments:**
    - `alpha`: gate scores, windows on axis -2 and offsets on axis -1; leading axes are kept
      (e.g. heads and branches).

    **Returns:** `(static, avg)`, each of the leading shape.

    ```python
    alpha = jnp.eye(3)  # three windows, each one-hot on a different offset
    effective_offsets(alpha)  # (3.0, 1.0): input-dependent concentration
    ```
    """
    alpha = jnp.asarray(alpha)
    static = effective_number(jnp.mean(alpha, axis=-2))
    avg = jnp.mean(effective_number(alpha), axis=-1)
    return static, avg


__all__ = ["effective_number", "effective_offsets", "entropy"]
