"""Initial conditions of the gradient flow (docs/theory.md §6): the ball-uniform c(0) and
its projection.

c(0) is uniform in the Euclidean ball of radius rho in $R^D$, $D = H \\cdot 2 \\cdot S
\\cdot d$. The
reduced flow starts from the exact projection of c(0) on the symmetric subspace,
$b_{h,B,r} = \\langle c^B_{h,r}(0), m \\rangle$, whose law is sampled here in O(H S) per
seed without
materializing the D coordinates (`ball_projection`).

Derivation. Write $\\hat m = m / |m|$ and $e_k$ for $\\hat m$ placed in block k = (h, B, r) of
$R^D$; the 2HS vectors $e_k$ are orthonormal, and $b_k = |m| \\langle c(0), e_k \\rangle$.
The uniform
law on the ball is rotation invariant, so $(\\langle c(0), e_k \\rangle)_k$ has the law of the first
n = 2HS coordinates of a ball-uniform vector. That vector is $\\rho U^{1/D} Z / |Z|$ with
$Z \\sim N(0, I_D)$, $U \\sim U(0, 1)$ independent; its first n coordinates are
$\\rho U^{1/D} Z_{1:n} / \\sqrt{|Z_{1:n}|^2 + W}$ with $W = |Z_{n+1:D}|^2 \\sim \\chi^2_{D-n}$
independent of $Z_{1:n}$: three draws (n normals, one chi-square, one uniform) give the exact law.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ..model._geometry import AbstractGeometry
from ..model._task import Task


def _check_radius(rho) -> None:
    # traced radii are the caller's business; concrete ones must be finite and > 0 (not bool)
    if isinstance(rho, bool) or (
        isinstance(rho, (int, float)) and not 0 < rho < math.inf
    ):
        raise ValueError(f"rho must be > 0 and finite, got {rho!r}")


def ball_uniform(
    key: PRNGKeyArray, shape: tuple[int, ...], rho: float
) -> Float[Array, ...]:
    """A vector uniform in the Euclidean ball of radius `rho` in $R^{\\prod shape}$ (materialized).

    $c = \\rho U^{1/D} Z / |Z|$, $Z \\sim N(0, I_D)$, $U \\sim U(0,1)$.

    **Arguments:**
    - `key`: PRNG key.
    - `shape`: shape of the returned array; D is the product of its entries.
    - `rho`: radius, > 0.

    **Returns:** float64 array of `shape`.

    ```python
    c0 = ball_uniform(jax.random.key(0), (2, 2, 4, 101), 0.1)
    ```
    """
    _check_radius(rho)
    kz, ku = jax.random.split(key)
    z = jax.random.normal(kz, shape)
    D = math.prod(shape)
    u = jax.random.uniform(ku, ())
    return rho * u ** (1.0 / D) * z / jnp.linalg.norm(z)


def ball_projection(
    key: PRNGKeyArray, n: int, D: int, rho: float
) -> Float[Array, " n"]:
    """The first `n` coordinates of a vector uniform in the ball of radius `rho` in $R^D$, exactly.

    $x = \\rho U^{1/D} Z_{1:n} / \\sqrt{|Z_{1:n}|^2 + W}$, $W \\sim \\chi^2_{D-n} =
    2\\,\\Gamma((D-n)/2)$:
    O(n) work for any D (D = 2HS(N+1) ~ 10^7 at N = 10^6 costs nothing).

    **Arguments:**
    - `key`: PRNG key.
    - `n`: number of coordinates, 1 <= n <= D.
    - `D`: dimension of the ball.
    - `rho`: radius.

    **Returns:** float64 array of shape (n,).
    """
    _check_radius(rho)
    if not isinstance(D, jax.core.Tracer) and not 1 <= n <= D:
        raise ValueError(f"need 1 <= n <= D, got n={n}, D={D}")
    kz, kw, ku = jax.random.split(key, 3)
    z = jax.random.normal(kz, (n,))
    # chi-square of the remaining D - n coordinates (none when D = n); D may be traced
    w = jnp.where(
        D > n, 2.0 * jax.random.gamma(kw, jnp.maximum((D - n) / 2.0, 0.5)), 0.0
    )
    u = jax.random.uniform(ku, ())
    return rho * u ** (1.0 / D) * z / jnp.sqrt(jnp.sum(z**2) + w)


def mean_norm_squared(task: Task) -> Float[Array, ""]:
    """$|m|^2 = \\kappa + 1/N$ under exact geometry: the rate factor of the reduced flow."""
    return task.kappa + 1.0 / task.N


def initial_biases(
    key: PRNGKeyArray, task: Task, rho: float, tied: bool = False
) -> Float[Array, "heads 2 offsets"]:
    """Reduced initial state $b_{h,B,r} = \\langle c^B_{h,r}(0), m \\rangle$ of a ball-uniform c(0).

    Exact geometry: d = N + 1, $D = 2 H W d$ (W = S without windows), $|m| = \\sqrt{\\kappa + 1/N}$;
    sampled in its exact law by `ball_projection` (module docstring), never materializing c(0).
    Tied gates have one branch, D = H W d, and the value half repeats the key half.

    **Arguments:**
    - `key`: PRNG key.
    - `task`: the configuration (exact geometry).
    - `rho`: radius of the initial ball.
    - `tied`: one gate per head for both branches.

    **Returns:** b of shape (H, 2, W).

    ```python
    b0 = initial_biases(jax.random.key(0), Task(L=8, S=4, H=2, N=10**6), 0.1)
    ```
    """
    task.require_exact("the reduced flow")
    branches = 1 if tied else 2
    n = branches * task.H * task.W
    D = n * (
        jnp.asarray(task.N, jnp.float64) + 1
    )  # traced with N (float: D can exceed int32)
    x = ball_projection(key, n, D, rho)
    b = jnp.sqrt(mean_norm_squared(task)) * x.reshape(task.H, branches, task.W)
    return jnp.broadcast_to(b, (task.H, 2, task.W))


def initial_gate_vectors(
    key: PRNGKeyArray,
    task: Task,
    geometry: AbstractGeometry,
    rho: float,
    tied: bool = False,
) -> Float[Array, "heads 2 offsets dim"]:
    """The ball-uniform c(0) of the linear class, shape (H, 2, W, d) with d = `geometry.dim` (tied:
    uniform in the ball of the key half, the value half a copy)."""
    c = ball_uniform(key, (task.H, 1 if tied else 2, task.W, geometry.dim), rho)
    return jnp.broadcast_to(c, (task.H, 2) + c.shape[2:])


def project_to_mean(
    c: Float[Array, "*batch dim"], geometry: AbstractGeometry
) -> Float[Array, "*batch dim"]:
    """Orthogonal projection of each vector $c^B_{h,r}$ on span(m): $(\\langle c, m \\rangle
    / |m|^2) m$.

    Keeps the biases $\\langle c, m \\rangle$ and sets the token-specific components to zero.
    """
    m = geometry.mean_embedding()
    return (c @ m / (m @ m))[..., None] * m


__all__ = [
    "ball_projection",
    "ball_uniform",
    "initial_biases",
    "initial_gate_vectors",
    "mean_norm_squared",
    "project_to_mean",
]
