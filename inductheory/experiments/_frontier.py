"""The price of phase-uniformity: mean loss vs worst-phase loss over block-shared gates.

Over shared gates $p = \\mathrm{softmax}(b)$, $b \\in \\mathbb R^{H \\times 2 \\times S}$,
with the exact
per-phase losses $\\ell_p(b)$ of docs/theory.md §4, the frontier is

$$
F(c) = \\min_b \\Big\\{ \\frac1P \\sum_p \\ell_p(b) \\;:\\; \\max_p \\ell_p(b) \\le c \\Big\\},
$$

non-increasing in c. It is computed by an augmented Lagrangian (one multiplier per phase) with BFGS
inner solves from many random starts, all vectorized.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, Float

from ..model._gates import SharedGates, shared_gates_from_logits
from ..model._loss import phase_losses
from ..model._objective import soft_maximum
from ..model._task import Task


def mean_and_worst(task: Task, gates: SharedGates) -> tuple[float, float]:
    """Mean and largest exact per-phase loss of shared gates, $(\\frac1P \\sum_p \\ell_p,
    \\max_p \\ell_p)$.

    **Arguments:**
    - `task`: configuration (exact geometry).
    - `gates`: `SharedGates` of shape (H, S).

    **Returns:** `(mean, worst)` as floats.

    ```python
    # uniform gates answer every phase alike: mean and worst are equal
    mean_and_worst(Task(L=8, S=4, H=2, N=4096, beta=4.0), uniform_gates(2, 4))
    ```
    """
    losses = np.asarray(phase_losses(task, gates), float)
    return float(losses.mean()), float(losses.max())


def _losses(task, b):
    return phase_losses(task, shared_gates_from_logits(b))


def _solve(fn, y0, args, max_steps):
    solver = optx.BFGS(rtol=1e-10, atol=1e-10)
    return optx.minimise(fn, solver, y0, args, max_steps=max_steps, throw=False).value


def _objective(b, args):
    """$w_m \\bar\\ell + w_s \\mathrm{softmax}_\\tau(\\ell)$ + the augmented Lagrangian term
    of $\\ell_p \\le c$:
    one program for the three kinds of solve (c = +inf-like switches the constraint off)."""
    task, w_mean, w_soft, tau, c, lam, mu = args
    ell = _losses(task, b)
    # Powell-Hestenes-Rockafellar form for ell_p <= c
    shifted = jnp.maximum(0.0, lam + mu * (ell - c))
    return (
        w_mean * jnp.mean(ell)
        + w_soft * soft_maximum(ell, tau)
        + jnp.sum(shifted**2 - lam**2) / (2 * mu)
    )


def _unsaturate(b, floor=-10.0):
    """Logits shifted to max 0 and floored: near a vertex the softmax gradient vanishes (weights
    below $e^{-10}$), and a stage started there would not move."""
    return jnp.maximum(b - jnp.max(b, axis=-1, keepdims=True), floor)


def _starts(key, n, shape, scale):
    """n random logits: half at scale `scale`, half at scale/4 (near uniform gates)."""
    z = jax.random.normal(key, (n, *shape))
    scales = jnp.where(jnp.arange(n) % 2 == 0, scale, scale / 4)
    return z * scales[:, None, None, None]


def uniformity_frontier(
    task: Task,
    bounds: Float[Array, " bounds"] | None = None,
    *,
    n_bounds: int = 16,
    upper: float | None = None,
    extra_bounds=(),
    starts: int = 32,
    seed: int = 0,
    scale: float = 4.0,
    mus=(1e3, 1e4, 1e4, 1e4, 1e4, 1e4),
    max_steps: int = 2000,
    feasibility_tol: float = 1e-6,
) -> dict:
    """Lower-left frontier of (worst-phase loss, mean loss) over block-shared gates.

    For each bound c, minimizes $\\bar\\ell(b) = \\frac1P \\sum_p \\ell_p(b)$ subject to
    $\\ell_p(b) \\le c$ for every phase p, by the augmented Lagrangian
    $\\bar\\ell + \\frac{1}{2\\mu} \\sum_p (\\max(0, \\lambda_p + \\mu(\\ell_p - c))^2 -
    \\lambda_p^2)$,
    multipliers updated $\\lambda_p \\leftarrow \\max(0, \\lambda_p + \\mu(\\ell_p - c))$ after each
    stage (`mus`), each stage a BFGS solve warm-started from the last (logits floored at -10 below
    their maximum, so that no stage starts with vanishing gradients), from `starts` logits
    per bound:
    the solutions of smallest worst phase and of best mean (below), then random ones. The
    best start whose worst phase is within `feasibility_tol` of c gives $F(c)$.

    Default bounds: `n_bounds` values from the smallest worst-phase loss found (soft maximum
    $\\tau \\log \\frac1P \\sum_p e^{\\ell_p/\\tau}$ minimized at $\\tau = 0.3, 0.03, 0.003,
    3 \\cdot 10^{-4}$)
    to the worst phase of the best unconstrained mean, or to `upper` if larger (a linear grid).

    **Arguments:**
    - `task`: configuration (exact geometry, W = S).
    - `bounds`: the bounds c, or None for the default grid.
    - `upper`: extend the default grid up to this worst-phase loss.
    - `extra_bounds`: bounds added to the default grid (e.g. the worst phases of points to place on
      the frontier); those below the smallest worst phase found are dropped.
    - `n_bounds`, `starts`, `seed`, `scale`: default grid size, starts per bound (>= 2), PRNG seed,
      standard deviation of the starting logits (half the starts use scale/4).
    - `mus`, `max_steps`, `feasibility_tol`: penalty weights of the stages, BFGS steps per stage,
      tolerance on $\\max_p \\ell_p - c$.

    **Returns:** dict of numpy arrays: `bounds` (B,), `mean` and `worst` (B,) of the chosen point
    (NaN where no start was feasible), `logits` (B, H, 2, S) of the chosen points, `all_mean`,
    `all_worst` (B, starts) of every start, `min_worst` (the smallest worst-phase loss found, with
    `min_worst_mean` its mean), `unconstrained_mean` and `unconstrained_worst` (best plain mean).

    ```python
    fr = uniformity_frontier(Task(L=8, S=4, H=2, N=4096, beta=4.0), starts=16)
    fr["bounds"], fr["mean"]
    ```
    """
    if starts < 2:
        raise ValueError(
            f"starts must be >= 2 (the two end solutions start every bound), got {starts}"
        )
    shape = (task.H, 2, task.W)
    key_min, key_free, key_c = jax.random.split(jax.random.key(seed), 3)

    P = task.S - 1
    solve = jax.jit(
        jax.vmap(
            lambda b, w_mean, w_soft, tau, c, lam, mu: _solve(
                _objective, b, (task, w_mean, w_soft, tau, c, lam, mu), max_steps
            )
        )
    )
    ell_of = jax.jit(jax.vmap(lambda b: _losses(task, b)))

    def run(b, w_mean, w_soft, tau, c, lam, mu):
        n = b.shape[0]
        full = lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float64), (n,))
        return solve(
            b,
            full(w_mean),
            full(w_soft),
            full(tau),
            full(c),
            jnp.broadcast_to(lam, (n, P)),
            full(mu),
        )

    off = 1e6  # a bound no loss reaches: no constraint
    # smallest worst phase: soft maximum, annealed
    b = _starts(key_min, starts, shape, scale)
    for tau in (0.3, 0.03, 3e-3, 3e-4):
        b = run(b, 0.0, 1.0, tau, off, 0.0, 1.0)
    ell = np.asarray(ell_of(b), float)
    i = int(np.nanargmin(ell.max(-1)))
    min_worst, min_worst_mean = float(ell[i].max()), float(ell[i].mean())
    b_min = b[i]

    # best unconstrained mean
    b = run(_starts(key_free, starts, shape, scale), 1.0, 0.0, 1.0, off, 0.0, 1.0)
    ell = np.asarray(ell_of(b), float)
    j = int(np.nanargmin(ell.mean(-1)))
    free_mean, free_worst = float(ell[j].mean()), float(ell[j].max())
    b_free = b[j]

    if bounds is None:
        bounds = np.linspace(
            min_worst, max(free_worst, -np.inf if upper is None else upper), n_bounds
        )
        extra = np.asarray(extra_bounds, float)
        bounds = np.unique(np.concatenate([bounds, extra[extra >= min_worst]]))
    bounds = np.asarray(bounds, float)
    B = len(bounds)
    c = jnp.repeat(jnp.asarray(bounds), starts)
    # per bound: the two end solutions, then random starts
    ends = jnp.stack([b_min, b_free])
    b = _starts(key_c, B * starts, shape, scale).reshape(B, starts, *shape)
    b = (
        b.at[:, :2]
        .set(jnp.broadcast_to(ends, (B, 2, *shape)))
        .reshape(B * starts, *shape)
    )
    lam = jnp.zeros((B * starts, P))
    for mu in mus:
        b = _unsaturate(b)
        b = solve(
            b,
            jnp.ones(B * starts),
            jnp.zeros(B * starts),
            jnp.ones(B * starts),
            c,
            lam,
            jnp.full(B * starts, mu),
        )
        lam = jnp.maximum(0.0, lam + mu * (ell_of(b) - c[:, None]))
    ell = np.asarray(ell_of(b), float).reshape(B, starts, -1)
    all_mean, all_worst = ell.mean(-1), ell.max(-1)
    feasible = all_worst <= bounds[:, None] + feasibility_tol
    masked = np.where(feasible, all_mean, np.inf)
    best = np.argmin(masked, axis=1)
    ok = np.isfinite(masked[np.arange(B), best])
    logits = np.asarray(b, float).reshape(B, starts, *shape)[np.arange(B), best]
    return {
        "bounds": bounds,
        "mean": np.where(ok, all_mean[np.arange(B), best], np.nan),
        "worst": np.where(ok, all_worst[np.arange(B), best], np.nan),
        "logits": logits,
        "all_mean": all_mean,
        "all_worst": all_worst,
        "min_worst": min_worst,
        "min_worst_mean": min_worst_mean,
        "unconstrained_mean": free_mean,
        "unconstrained_worst": free_worst,
    }


def frontier_mean_at(frontier: dict, worst) -> np.ndarray:
    """$F(c)$ read off a computed frontier: the smallest frontier mean among bounds $c_i \\le c$.

    Since F is non-increasing, the value at the largest computed bound not above c is an upper bound
    on the true $F(c)$; below the smallest bound it is +inf (no point known).

    **Arguments:**
    - `frontier`: the dict of `uniformity_frontier`.
    - `worst`: worst-phase losses c (array-like).

    **Returns:** an array of the shape of `worst`.
    """
    bounds, mean = (
        np.asarray(frontier["bounds"], float),
        np.asarray(frontier["mean"], float),
    )
    c = np.asarray(worst, float)
    below = bounds[None, :] <= c.reshape(-1, 1)
    vals = np.where(below & np.isfinite(mean)[None, :], mean[None, :], np.inf)
    return vals.min(axis=1).reshape(c.shape)


__all__ = ["frontier_mean_at", "mean_and_worst", "uniformity_frontier"]
