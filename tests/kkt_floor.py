"""The rounding floor of a Frank-Wolfe gap, computed in numpy for the tests (the minimizer's
`kkt_floor` derives it; here it is recomputed from the loss and its Hessian at a point)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def rounding_floor(f, p, terms: int) -> float:
    """sqrt(24 n s eps_f) at p (stacked simplex vectors, slots last) for the loss f: n simplices,
    s the Gershgorin bound (>= 1) of the Hessian on the tangent space of p's face, eps_f =
    (terms + 1) u max(|f|, 1) the rounding of a mean of `terms` cross-entropies."""
    p = np.asarray(p)
    value = float(f(jnp.asarray(p)))
    hess = np.asarray(
        jax.hessian(lambda x: f(x.reshape(p.shape)))(jnp.asarray(p).reshape(-1))
    )
    rows = p.reshape(-1, p.shape[-1])
    W = p.shape[-1]
    P = np.zeros((p.size, p.size))
    for i, row in enumerate(rows):
        free = (row > 0).astype(float)
        block = np.diag(free) - np.outer(free, free) / max(free.sum(), 1.0)
        P[i * W : (i + 1) * W, i * W : (i + 1) * W] = block
    s = max(1.0, np.abs(P @ hess @ P).sum(axis=1).max())
    eps_f = (terms + 1) * np.finfo(float).eps / 2 * max(abs(value), 1.0)
    return float(np.sqrt(24 * len(rows) * s * eps_f))
