"""The two-head toy of docs/theory.md §8: why gradient flow sharpens heads fast but splits
them slowly.

S = 2, keys only, idealized value readout. Heads h = 1, 2 put key weight $p_h$ on offset 0 and
$1 - p_h$ on offset 1. A query at offset r gets the correct-answer margin
$m_0 = \\beta (A(p_1) + A(p_2))$, $m_1 = \\beta (A(1 - p_1) + A(1 - p_2))$, with
$A(w) = e^{\\gamma w} / (e^{\\gamma w} + L - 1)$, and logistic loss $\\ell(m) = \\log(1 + K
e^{-m})$.
The toy loss is $(\\ell(m_0) + \\ell(m_1)) / 2$. Every closed form here is derived and checked
symbolically in `proofs/toy.py` (derivation in `proofs/README.md`).
"""

from __future__ import annotations

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ..internal._warnings import warn_at_caller
from ..model._logits import attention_to_target
from ..model._task import TheoryAssumptionWarning, _require_int, _require_real


class ToyConfig(eqx.Module):
    """Parameters of the two-head toy (docs/theory.md §8).

    **Arguments:**
    - `beta`: unembedding scale, > 0.
    - `gamma`: attention inverse temperature, > 0 (<= 1 for the theorems).
    - `L`: number of blocks, an integer >= 2 (>= 4 for the theorems).
    - `K`: competing mass in $\\ell(m) = \\log(1 + K e^{-m})$, > 0.

    Raises `ValueError` naming the parameter for an ill-defined setting, and warns with
    `TheoryAssumptionWarning` for L < 4 or gamma > 1 (A need not be convex there).

    ```python
    cfg = ToyConfig(beta=4.0, gamma=1.0, L=8, K=100.0)
    split_advantage(cfg)  # > 0: the optimum splits the heads
    ```
    """

    beta: float = eqx.field(static=True, default=4.0)
    gamma: float = eqx.field(static=True, default=1.0)
    L: int = eqx.field(static=True, default=8)
    K: float = eqx.field(static=True, default=100.0)

    def __check_init__(self):
        for name in ("beta", "gamma", "K"):
            value = _require_real(name, getattr(self, name))
            if value <= 0:
                raise ValueError(f"{name} must be > 0, got {value}")
        _require_int("L", self.L, 2)
        if self.L < 4:
            warn_at_caller(
                f"outside the theorems' assumptions: L >= 4 (got L={self.L}; A(w) need "
                "not be convex)",
                TheoryAssumptionWarning,
            )
        if self.gamma > 1:
            warn_at_caller(
                "outside the theorems' assumptions: gamma <= 1 (got "
                f"gamma={self.gamma}; A(w) need not be convex)",
                TheoryAssumptionWarning,
            )

    def to_dict(self) -> dict:
        """Every parameter, for JSON summaries."""
        return {"beta": self.beta, "gamma": self.gamma, "L": self.L, "K": self.K}


# --- building blocks, written once; (beta, gamma, L, K) may be traced
# ------------------------------


def _A(w, gamma, L):
    return attention_to_target(w, gamma, L)


def _A1(w, gamma, L):
    a = _A(w, gamma, L)
    return gamma * a * (1 - a)


def _A2(w, gamma, L):
    a = _A(w, gamma, L)
    return (
        gamma * (gamma * a * (1 - a)) * (1 - 2 * a)
    )  # not gamma**2: no overflow for gamma > 1e154


def _ell(m, K):
    return jax.nn.softplus(jnp.log(K) - m)


def _ell1(m, K):
    return -jax.nn.sigmoid(jnp.log(K) - m)


def _log_ell2(m, K):
    # log l''(m) = log sigma(x) + log sigma(-x), x = log K - m: finite where l'' underflows to 0
    x = jnp.log(K) - m
    return -(jax.nn.softplus(x) + jax.nn.softplus(-x))


def _log_sinh(x):
    # log sinh(x) for x > 0 without overflow (x ~ 1e154) or cancellation (x ~ 1e-300)
    return x + jnp.log(-jnp.expm1(-2 * x)) - jnp.log(2.0)


def _margins(p, beta, gamma, L):
    p = jnp.asarray(p)
    m0 = beta * (_A(p[..., 0], gamma, L) + _A(p[..., 1], gamma, L))
    m1 = beta * (_A(1 - p[..., 0], gamma, L) + _A(1 - p[..., 1], gamma, L))
    return jnp.stack([m0, m1], axis=-1)


def _loss(p, beta, gamma, L, K):
    return jnp.mean(_ell(_margins(p, beta, gamma, L), K), axis=-1)


def _gradient(p, beta, gamma, L, K):
    p = jnp.asarray(p)
    m = _margins(p, beta, gamma, L)
    d0, d1 = _ell1(m[..., 0:1], K), _ell1(m[..., 1:2], K)
    return beta / 2 * (d0 * _A1(p, gamma, L) - d1 * _A1(1 - p, gamma, L))


def _params(config: ToyConfig):
    return config.beta, config.gamma, config.L, config.K


# --- public API
# ------------------------------------------------------------------------------------


def logistic_loss(m: ArrayLike, K: float) -> Float[Array, ...]:
    """$\\ell(m) = \\log(1 + K e^{-m})$, computed as softplus(log K - m).

    **Arguments:**
    - `m`: margin(s), any shape.
    - `K`: competing mass, > 0.

    **Returns:** $\\ell(m)$, the shape of `m`.

    ```python
    logistic_loss(0.0, 1.0)  # log 2
    ```
    """
    return _ell(jnp.asarray(m), K)


def toy_margins(
    config: ToyConfig, p: Float[ArrayLike, "... 2"]
) -> Float[Array, "... 2"]:
    """Margins $(m_0, m_1) = (\\beta (A(p_1) + A(p_2)), \\beta (A(1-p_1) + A(1-p_2)))$.

    **Arguments:**
    - `config`: the toy's parameters.
    - `p`: key weights $(p_1, p_2)$ on offset 0, shape (..., 2).

    **Returns:** the margins of a query at offset 0 and at offset 1, shape (..., 2).

    ```python
    toy_margins(ToyConfig(), jnp.array([1.0, 0.0]))  # both beta (A(1) + A(0))
    ```
    """
    return _margins(p, *_params(config)[:3])


def toy_loss(config: ToyConfig, p: Float[ArrayLike, "... 2"]) -> Float[Array, ...]:
    """Toy loss $(\\ell(m_0) + \\ell(m_1)) / 2$.

    **Arguments:**
    - `config`: the toy's parameters.
    - `p`: key weights $(p_1, p_2)$, shape (..., 2).

    **Returns:** the loss, shape (...).

    ```python
    toy_loss(ToyConfig(beta=4.0, gamma=1.0, L=8, K=100.0), jnp.array([0.5, 0.5]))
    ```
    """
    return _loss(p, *_params(config))


def toy_gradient(
    config: ToyConfig, p: Float[ArrayLike, "... 2"]
) -> Float[Array, "... 2"]:
    """Closed-form gradient of the toy loss in p.

    $\\partial_{p_h} = \\frac{\\beta}{2} [\\ell'(m_0) A'(p_h) - \\ell'(m_1) A'(1 - p_h)]$ with
    $\\ell'(m) = -K e^{-m} / (1 + K e^{-m})$ and $A' = \\gamma A (1 - A)$.

    **Arguments:**
    - `config`: the toy's parameters.
    - `p`: key weights $(p_1, p_2)$, shape (..., 2).

    **Returns:** $\\nabla_p$ loss, shape (..., 2).

    ```python
    toy_gradient(ToyConfig(), jnp.array([0.5, 0.5]))  # [0, 0]: p = 1/2 is critical
    ```
    """
    return _gradient(p, *_params(config))


def corner_losses(config: ToyConfig) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Loss with both heads on the same offset and with the heads split.

    Same corner, p = (1, 1) or (0, 0): $(\\ell(2\\beta A_1) + \\ell(2\\beta A_0)) / 2$.
    Opposite corners, p = (1, 0) or (0, 1): $\\ell(\\beta (A_1 + A_0))$. Here $A_1 = A(1)$,
    $A_0 = A(0) = 1/L$.

    **Arguments:**
    - `config`: the toy's parameters.

    **Returns:** `(same, opposite)`.

    ```python
    same, opposite = corner_losses(ToyConfig())
    ```
    """
    beta, gamma, L, K = _params(config)
    A1, A0 = _A(1.0, gamma, L), _A(0.0, gamma, L)
    same = (_ell(2 * beta * A1, K) + _ell(2 * beta * A0, K)) / 2
    return same, _ell(beta * (A1 + A0), K)


def split_advantage(config: ToyConfig) -> Float[Array, ""]:
    """Closed-form loss(same corner) - loss(opposite corners), > 0 for all beta, gamma, K >
    0, L >= 2.

    $D = \\frac{1}{2} \\log\\big(1 + \\frac{K (e^{-\\beta A_1} - e^{-\\beta A_0})^2}
    {(1 + K e^{-\\beta (A_1 + A_0)})^2}\\big) = \\frac{1}{2} \\log\\big(1 + 4 \\ell''(\\bar m)
    \\sinh^2(\\beta (A_1 - A_0)/2)\\big)$, $\\bar m = \\beta (A_1 + A_0)$ (the second form is
    evaluated: no cancellation). As $K \\to \\infty$, $D = (e^{\\beta A_1} - e^{\\beta
    A_0})^2/(2K) + O(1/K^2)$.

    **Arguments:**
    - `config`: the toy's parameters.

    **Returns:** the split advantage D.

    ```python
    split_advantage(ToyConfig(beta=4.0, gamma=1.0, L=8, K=100.0))  # ~0.00896
    ```
    """
    beta, gamma, L, K = _params(config)
    A1, A0 = _A(1.0, gamma, L), _A(0.0, gamma, L)
    # log1p(4 l'' sinh^2) = softplus(log 4 + log l'' + 2 log sinh): no overflow at beta ~ 1e154
    log_term = (
        jnp.log(4.0)
        + _log_ell2(beta * (A1 + A0), K)
        + 2 * _log_sinh(beta * (A1 - A0) / 2)
    )
    return 0.5 * jax.nn.softplus(log_term)


def escape_rates(config: ToyConfig) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Growth rates of the logit flow $d\\theta/dt = -\\nabla_\\theta$ loss at $p = (1/2, 1/2)$.

    With $p_h = \\sigma(\\theta_h)$, the Jacobian of the flow at $\\theta = 0$ has eigenvectors
    (1, 1) (both heads toward the same offset) and (1, -1) (heads splitting). With $a = A(1/2)$,
    $m = 2\\beta a$:
    antisymmetric $= -\\ell'(m) \\beta A''(1/2) / 16$,
    symmetric $=$ antisymmetric $- \\ell''(m) \\beta^2 A'(1/2)^2 / 8$.
    Positive means unstable. The antisymmetric rate is > 0 iff $e^{\\gamma/2} < L - 1$; the
    symmetric
    rate is > 0 iff moreover $K > K^*(\\beta)$ (`symmetric_stability_boundary`), so the symmetric
    direction is stable for small K or large beta (e.g. beta 16, K 100, L 8). For large K
    the two differ
    by $O(1/K)$ while each is $O(1)$ (sharpening fast, splitting slow).

    **Arguments:**
    - `config`: the toy's parameters.

    **Returns:** `(symmetric, antisymmetric)`.

    ```python
    sym, anti = escape_rates(ToyConfig())
    ```
    """
    return _escape_rates(*_params(config))


def _escape_rates(beta, gamma, L, K):
    m = 2 * beta * _A(0.5, gamma, L)
    anti = -_ell1(m, K) * beta * _A2(0.5, gamma, L) / 16
    # l''(m) beta^2 A'(1/2)^2 in log space: beta**2 overflows for beta > 1e154 while l'' underflows
    sym = (
        anti
        - jnp.exp(_log_ell2(m, K) + 2 * (jnp.log(beta) + jnp.log(_A1(0.5, gamma, L))))
        / 8
    )
    return sym, anti


def escape_rate_grid(
    beta: Float[ArrayLike, ...],
    K: Float[ArrayLike, ...],
    *,
    gamma: float = 1.0,
    L: int = 8,
) -> tuple[Float[Array, ...], Float[Array, ...]]:
    """The closed-form escape rates of `escape_rates`, vectorized over arrays of beta and K.

    The same formulas as `escape_rates` (bit-equal at every point), broadcast over `beta` and `K`,
    so that a stability diagram over (beta, K) is one array computation instead of one
    `ToyConfig` per point. No validation beyond broadcasting: pass beta, K > 0.

    **Arguments:**
    - `beta`, `K`: arrays (broadcast against each other) of unembedding scales and competing masses.
    - `gamma`, `L`: attention inverse temperature and number of blocks.

    **Returns:** `(symmetric, antisymmetric)` rates, the broadcast shape; > 0 means unstable.

    ```python
    sym, anti = escape_rate_grid(jnp.array([4.0, 16.0]), 100.0)  # sym[1] < 0: stable at beta 16
    ```
    """
    beta, K = jnp.broadcast_arrays(
        jnp.asarray(beta, dtype=jnp.float64), jnp.asarray(K, dtype=jnp.float64)
    )
    return _escape_rates(beta, gamma, L, K)


def symmetric_stability_boundary(
    beta: Float[ArrayLike, ...], *, gamma: float = 1.0, L: int = 8
) -> Float[Array, ...]:
    """The competing mass K*(beta) above which the symmetric direction (1, 1) at p = (1/2,
    1/2) is unstable.

    With $a = A(1/2)$, $m = 2\\beta a$ and $\\ell''(m) = s (1 - s)$, $s = -\\ell'(m)$, the
    symmetric rate of
    `escape_rates` factors as (positive) $\\cdot [(1 - 2a)(1 + K e^{-m}) - 2\\beta a (1 - a)]$
    (checked in `proofs/toy.py`). Hence, when $1 - 2a > 0$ (that is $e^{\\gamma/2} < L - 1$, where
    the antisymmetric direction is unstable), the symmetric rate is > 0 exactly for

    $K > K^*(\\beta) = e^{2\\beta a} \\big(2\\beta a (1 - a) / (1 - 2a) - 1\\big)$,

    and $K^* \\le 0$ (unstable for every K > 0) for $\\beta \\le \\beta_0 = (1 - 2a) /
    (2a(1 - a))$; when
    $e^{\\gamma/2} \\ge L - 1$ the symmetric direction is stable for every K.

    **Arguments:**
    - `beta`: unembedding scale(s), > 0, any shape.
    - `gamma`, `L`: attention inverse temperature and number of blocks.

    **Returns:** $K^*(\\beta)$, the shape of `beta`: 0 where every K > 0 is unstable, `inf`
    where no K is.

    ```python
    symmetric_stability_boundary(4.0, gamma=1.0, L=8)  # ~4.6: stable at K = 1, unstable at K = 100
    ```
    """
    beta = jnp.asarray(beta, dtype=jnp.float64)
    a = _A(0.5, gamma, L)
    one_minus_2a = (L - 1 - jnp.exp(gamma / 2)) / (
        L - 1 + jnp.exp(gamma / 2)
    )  # exact sign, no cancellation
    if not one_minus_2a > 0:
        return jnp.full(beta.shape, jnp.inf)
    k_star = jnp.exp(2 * beta * a) * (2 * beta * a * (1 - a) / one_minus_2a - 1)
    return jnp.maximum(k_star, 0.0)


def _logit_vector_field(t, theta, params):
    beta, gamma, L, K = params
    p = jax.nn.sigmoid(theta)
    return -_gradient(p, beta, gamma, L, K) * p * (1 - p)


@eqx.filter_jit
def _solve_flow(params, theta0, ts, rtol, atol, max_steps):
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(_logit_vector_field),
        diffrax.Tsit5(),
        t0=0.0,
        t1=ts[-1],
        dt0=None,
        y0=theta0,
        args=params,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
        max_steps=max_steps,
    )
    return jax.nn.sigmoid(sol.ys)


def toy_flow(
    config: ToyConfig,
    p0: Float[ArrayLike, " 2"],
    ts: Float[ArrayLike, " times"],
    *,
    rtol: float = 1e-9,
    atol: float = 1e-9,
    max_steps: int = 100_000,
) -> Float[Array, "times 2"]:
    """Gradient flow of the toy loss in the logit parametrization, solved with diffrax.

    $p_h = \\sigma(\\theta_h)$, $d\\theta_h/dt = -\\partial_{\\theta_h}$ loss
    $= -\\partial_{p_h}$ loss $\\cdot p_h (1 - p_h)$, from $\\theta(0) =
    \\mathrm{logit}(p_0)$; Tsit5 with a
    PID step-size controller. Near p = (1/2, 1/2) the flow leaves along the escape directions of
    `escape_rates` and goes to corners (sharpening).

    **Arguments:**
    - `config`: the toy's parameters.
    - `p0`: initial key weights, shape (2,), each strictly inside (0, 1).
    - `ts`: non-decreasing save times >= 0 (the flow starts at t = 0).
    - `rtol`, `atol`: tolerances of the step-size controller (on theta).
    - `max_steps`: solver step budget.

    **Returns:** $(p_1, p_2)$ at each time of `ts`, shape (len(ts), 2).

    ```python
    traj = toy_flow(ToyConfig(beta=8.0), jnp.array([0.51, 0.49]), jnp.array([0.0, 100.0, 1000.0]))
    ```
    """
    p0 = jnp.asarray(p0, dtype=jnp.float64)
    ts = jnp.asarray(ts, dtype=jnp.float64)
    if p0.shape != (2,):
        raise ValueError(f"p0 must have shape (2,), got {p0.shape}")
    if ts.ndim != 1 or ts.shape[0] == 0:
        raise ValueError(
            f"ts must be a non-empty 1-d array of times, got shape {ts.shape}"
        )
    if not isinstance(p0, jax.core.Tracer):
        p0_np = np.asarray(p0)
        if not np.all((p0_np > 0) & (p0_np < 1)):
            raise ValueError(
                f"p0 must lie strictly inside (0, 1) (the logit parametrization), got {p0_np}"
            )
    if not isinstance(ts, jax.core.Tracer):
        ts_np = np.asarray(ts)
        if ts_np[0] < 0 or np.any(np.diff(ts_np) < 0):
            raise ValueError("ts must be non-decreasing and >= 0")
    params = jnp.asarray(_params(config), dtype=jnp.float64)
    theta0 = jnp.log(p0) - jnp.log1p(-p0)
    return _solve_flow(params, theta0, ts, rtol, atol, max_steps)


__all__ = [
    "ToyConfig",
    "corner_losses",
    "escape_rate_grid",
    "escape_rates",
    "logistic_loss",
    "split_advantage",
    "symmetric_stability_boundary",
    "toy_flow",
    "toy_gradient",
    "toy_loss",
    "toy_margins",
]
