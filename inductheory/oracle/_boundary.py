"""Where the hard vertex of Theorem 1 stops being a local minimum: closed forms
(docs/theory.md §4, §7).

The vertex: H heads with distinct offsets $r_0, \\dots, r_{H-1} \\in \\{0, \\dots, S-2\\}$,
head h selecting
$r_h$ in every block ($p^K_{h,l} = e_{r_h}$, $p^V_{h,l} = e_{r_h+1}$). Under exact geometry the
per-context loss $\\ell = \\frac{1}{L(S-1)} \\sum_{(l^*, r^*)} \\mathrm{CE}(l^*, r^*)$
(`context_loss`) at
and near that point is a closed form in L, S, H, $K = N - LS$, $\\gamma$, $\\beta$ (kappa cancels).

Notation: $A_1 = e^\\gamma/(e^\\gamma + L - 1)$, $\\bar A_1 = 1/(e^\\gamma + L - 1)$, $A_0 = 1/L$;
$E_1 = e^{\\beta A_1}$, $\\bar E_1 = e^{\\beta \\bar A_1}$, $E_0 = e^{\\beta/L}$; $U = S -
1 - H$ phases no head
covers, and the partition functions of a query at a covered phase and at an uncovered one,

$Z_c = K + L(S-H) + E_1 + (L-1)\\bar E_1 + (H-1) L E_0$, $\\quad Z_u = K + L(S-H) + H L E_0$.

The edges of the product of simplices at the vertex move mass of one simplex (head h, block l,
branch) from its vertex entry to another entry i; the edge derivative is the gradient gap
$g_i - g_{r}$. Scaled by $L(S-1)/\\beta$ for the value branch (derivation: proofs/README.md §6):

- value to the target $i+1$ of an uncovered phase i: $\\Phi = (A_1 - A_0) - P/Z_c - Q/Z_u$ with
  $P = A_1 E_1 + (L-1)\\bar A_1 \\bar E_1 + (H-1) E_0 - H$, $Q = U (E_0 - 1)$;
- value to offset 0 (the target of no query): $\\Phi + A_0$ (with the Q term, present or not);
- value to another head's target $r_{h'}+1$: $(A_1 - A_0)(1 - (E_1 - \\bar E_1)/Z_c)$;
- key, to any other offset (scaled by $L(S-1)/(\\gamma\\beta)$): $A_1 (1 - A_1)(1 - (E_1 -
  \\bar E_1)/Z_c)$.

All but the first are positive for every K >= 0. The first-order term of the loss along any feasible
direction is a nonnegative combination of edge derivatives, so the vertex is a strict local
minimum when all of them are > 0 and is not a local minimum when one is < 0: the local boundary is
$\\Phi(K) = 0$. $\\Phi$ increases in K, and $\\Phi \\, Z_c Z_u$ is a quadratic in K; its
larger root is
$K^*$ and $N^* = LS + K^*$.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float


def _check_shape(L: int, S: int, H: int, gamma) -> None:
    for name, v, low in (("L", L, 2), ("S", S, 2), ("H", H, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    if H > S - 1:
        raise ValueError(f"distinct heads need H <= S - 1, got H={H}, S={S}")
    if not float(gamma) > 0:
        raise ValueError(f"gamma must be > 0, got {gamma!r}")


def _constants(beta, L: int, S: int, H: int, gamma: float):
    """A_1, the terms of Z_c and Z_u that do not depend on K, and P, Q of the module docstring."""
    e = jnp.exp(jnp.asarray(gamma, jnp.float64))
    A1, Ab1, A0 = e / (e + L - 1), 1.0 / (e + L - 1), 1.0 / L
    E1, Eb1, E0 = jnp.exp(beta * A1), jnp.exp(beta * Ab1), jnp.exp(beta * A0)
    base = L * (S - H)
    zc0 = base + E1 + (L - 1) * Eb1 + (H - 1) * L * E0  # Z_c - K
    zu0 = base + H * L * E0  # Z_u - K
    P = A1 * E1 + (L - 1) * Ab1 * Eb1 + (H - 1) * E0 - H
    Q = (S - 1 - H) * (E0 - 1.0)
    return A1, A0, E1, Eb1, E0, zc0, zu0, P, Q


def hard_vertex_edges(
    beta: Float[ArrayLike, ...],
    N: Float[ArrayLike, ...],
    *,
    L: int,
    S: int,
    H: int,
    gamma: float = 1.0,
) -> dict[str, Float[Array, ...]]:
    """Edge derivatives (gradient gaps) of the per-context loss at the hard vertex with
    distinct heads.

    For one simplex (head h, block l, branch B) with vertex entry r (key: $r_h$, value: $r_h + 1$)
    and another entry i, the edge derivative is $\\partial \\ell / \\partial p^B_{h,l}(i) -
    \\partial
    \\ell / \\partial p^B_{h,l}(r)$ of $\\ell$ = `context_loss` (exact geometry): the rate
    at which the
    loss changes when mass moves from r to i. With the notation of the module docstring and
    $c = \\beta / (L(S-1))$:

    - `value_uncovered` $= c\\,[(A_1 - A_0) - P/Z_c - Q/Z_u]$ (NaN when H = S - 1: no such edge);
    - `value_zero` $= $ `value_uncovered` $+ c A_0$ (value mass to offset 0);
    - `value_other` $= c (A_1 - A_0)(1 - (E_1 - \\bar E_1)/Z_c)$ (NaN when H = 1);
    - `key` $= c \\gamma A_1 (1 - A_1)(1 - (E_1 - \\bar E_1)/Z_c)$ (the same for every other
      key entry);
    - `min`: the smallest of these (> 0: strict local minimum; < 0: not a local minimum);
    - `curvature`: $d^2 \\ell / dt^2$ along one `value_uncovered` edge (mass t moved, at t = 0),
      $\\frac{\\beta^2}{L(S-1)} \\sum_q a_q^2 [\\pi_1 + \\pi_2 - (\\pi_2 - \\pi_1)^2]$ over
      the queries q,
      with $a_q$ the head's attention on the block and $\\pi_1, \\pi_2$ the softmax probabilities of
      the two tokens the mass moves between; > 0 (NaN when H = S - 1).

    **Arguments:**
    - `beta`, `N`: scale(s) and vocabulary size(s) (N >= L*S), broadcast together.
    - `L`, `S`, `H`, `gamma`: blocks, offsets, heads (1 <= H <= S - 1), attention inverse
      temperature.

    **Returns:** a dict of arrays of the broadcast shape, keys as above.

    ```python
    hard_vertex_edges(8.0, 128, L=4, S=4, H=2)["value_uncovered"]  # > 0: above N*(8) ~ 84
    ```
    """
    _check_shape(L, S, H, gamma)
    beta, N = jnp.broadcast_arrays(
        jnp.asarray(beta, jnp.float64), jnp.asarray(N, jnp.float64)
    )
    A1, A0, E1, Eb1, E0, zc0, zu0, P, Q = _constants(beta, L, S, H, gamma)
    K = N - L * S
    Zc, Zu = K + zc0, K + zu0
    c = beta / (L * (S - 1))
    U = S - 1 - H
    nan = jnp.full(beta.shape, jnp.nan)
    tail = 1.0 - (E1 - Eb1) / Zc
    phi = (A1 - A0) - P / Zc - Q / Zu
    value_uncovered = c * phi if U > 0 else nan
    value_zero = c * (phi + A0)
    value_other = c * (A1 - A0) * tail if H > 1 else nan
    key = c * gamma * A1 * (1 - A1) * tail
    edges = (
        [value_zero, key]
        + ([value_uncovered] if U > 0 else [])
        + ([value_other] if H > 1 else [])
    )
    if U > 0:
        Ab1 = (1 - A1) / (L - 1)

        def var(a, p1, p2):
            return a**2 * (p1 + p2 - (p2 - p1) ** 2)

        s = (
            var(A1, E1 / Zc, 1 / Zc)
            + (L - 1) * var(Ab1, Eb1 / Zc, 1 / Zc)
            + (H - 1) * L * var(A0, E0 / Zc, 1 / Zc)
            + U * L * var(A0, E0 / Zu, 1 / Zu)
        )
        curvature = beta**2 / (L * (S - 1)) * s
    else:
        curvature = nan
    return {
        "value_uncovered": value_uncovered,
        "value_zero": value_zero,
        "value_other": value_other,
        "key": key,
        "min": jnp.min(jnp.stack(edges), axis=0),
        "curvature": curvature,
    }


def hard_vertex_boundary(
    beta: Float[ArrayLike, ...], *, L: int, S: int, H: int, gamma: float = 1.0
) -> Float[Array, ...]:
    """The vocabulary size $N^*(\\beta)$ below which the hard vertex with distinct heads is
    no local minimum.

    The only edge derivative of `hard_vertex_edges` that can change sign is `value_uncovered`,
    proportional to $\\Phi(K) = (A_1 - A_0) - P/(K + z_c) - Q/(K + z_u)$ ($z_c = Z_c - K$,
    $z_u = Z_u - K$),
    which increases in K from $-\\infty$ (as $K \\downarrow -\\min(z_c, z_u)$) to $A_1 -
    A_0 > 0$. So it has
    one root, the larger root of the quadratic $\\Phi Z_c Z_u$:

    $a K^2 + b K + c = 0$, $a = A_1 - A_0$, $b = a (z_c + z_u) - P - Q$, $c = a z_c z_u - P
    z_u - Q z_c$,

    and $N^* = LS + K^*$. Above $N^*$ the vertex is a strict local minimum, below it moving
    value mass
    of any head to the target of an uncovered phase lowers the loss. With H = S - 1 every phase is
    covered and the vertex is a strict local minimum at every N: the result is $-\\infty$. A result
    below $LS$ means: a strict local minimum at every admissible N.

    **Arguments:**
    - `beta`: scale(s), > 0, any shape.
    - `L`, `S`, `H`, `gamma`: as in `hard_vertex_edges`.

    **Returns:** $N^*(\\beta)$ (a real number, not rounded), the shape of `beta`.

    ```python
    hard_vertex_boundary(jnp.array([6.0, 8.0, 12.0]), L=4, S=4, H=2)  # ~ [36, 84, 454]
    ```
    """
    _check_shape(L, S, H, gamma)
    beta = jnp.asarray(beta, jnp.float64)
    if H == S - 1:
        return jnp.full(beta.shape, -jnp.inf)
    A1, A0, _, _, _, zc0, zu0, P, Q = _constants(beta, L, S, H, gamma)
    a = A1 - A0
    b = a * (zc0 + zu0) - P - Q
    c = a * zc0 * zu0 - P * zu0 - Q * zc0
    root = jnp.sqrt(b * b - 4 * a * c)
    # larger root without cancellation: (-b + root)/(2a) = -2c/(b + root) when b > 0
    K = jnp.where(b > 0, -2 * c / (b + root), (-b + root) / (2 * a))
    return L * S + K


__all__ = ["hard_vertex_boundary", "hard_vertex_edges"]
