"""Convergence rates of the reduced flow (docs/theory.md §6): escape from the uniform point,
then a 1/t tail.

**Escape.** At b = 0 (uniform gates) the vector field is not zero: key mass drifts off offset S-1
(no query has that phase) and value mass off offset 0 (never a target), the same for every head and
phase. Which offset a head selects is decided by the perturbations that break the symmetry between
the phases 0..S-2. On those directions (zero-sum logit vectors over the phases, key offset r paired
with value offset r+1) the Jacobian of $\\dot b = -(\\kappa + 1/N) \\nabla_b \\bar L$ at b = 0 is
$-(\\kappa + 1/N) M$ with two 2x2 blocks (head-symmetric and, for H >= 2, head-antisymmetric modes),
each of multiplicity S-2 (times H-1 for the antisymmetric one); `reduced_escape_rates` gives
them in closed
form (derivation and symbolic check: proofs/escape_rate.py, proofs/README.md §6).

**Tail.** Near a hard selection the other offsets' masses eps decay as
$\\dot\\varepsilon = -(\\kappa + 1/N)\\, \\Delta g\\, \\varepsilon^2$ with $\\Delta g$ the loss
gradient gap at the vertex, so $1 - p(t) \\sim C / t$: exponent -1, and the time to delta-selection
grows like $C/\\delta$. `fit_decay_exponent` measures the exponent on saved trajectories.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..internal._records import Record
from ..model._task import Task


@dataclasses.dataclass(frozen=True)
class EscapeBlocks(Record):
    """The 2x2 blocks of `escape_blocks`: `sym` (head-symmetric modes) and `anti`
    (head-antisymmetric modes; None for H = 1), numpy arrays, and how often each block repeats
    in the Jacobian, `sym_multiplicity` = S-2 and `anti_multiplicity` = (S-2)(H-1)."""

    sym: Any
    anti: Any | None
    sym_multiplicity: int
    anti_multiplicity: int


@dataclasses.dataclass(frozen=True)
class EscapeRates(Record):
    """The growth rates of `reduced_escape_rates`, in units of flow time: `sym` and `anti`
    (None for H = 1) of the head-symmetric and -antisymmetric modes, and `rate`, the larger."""

    sym: float
    anti: float | None
    rate: float


def _uniform_point_constants(task: Task) -> dict:
    """The numbers of the uniform point (u = 1/S): A(u), A', A'', the logit excesses and Z."""
    L, S, H, N = int(task.L), int(task.S), int(task.H), int(task.N)
    beta, gamma = float(task.beta), float(task.gamma)
    u, n = 1.0 / S, L - 1
    a = math.exp(gamma * u) / (math.exp(gamma * u) + n)
    abar = (1 - a) / n
    a1 = gamma * a * (1 - a)
    a2 = gamma**2 * a * (1 - a) * (1 - 2 * a)
    e1, e2 = math.exp(beta * H * a * u), math.exp(beta * H * abar * u)
    Z = (N - L * S) + S * e1 + n * S * e2
    D = (e1 - e2) / Z - u
    E = u * (e1 + e2 / n) / Z - ((e1 - e2) / Z) ** 2
    G = (a**2 * e1 + n * abar**2 * e2) / Z
    return dict(u=u, a=a, a1=a1, a2=a2, D=D, E=E, G=G)


def escape_blocks(task: Task) -> EscapeBlocks:
    """The 2x2 blocks of the Hessian of $\\bar L(b)$ at b = 0 on the symmetry-breaking modes.

    With u = 1/S, $a = A(u)$, $\\bar a = (1-a)/(L-1)$, $A' = \\gamma a(1-a)$,
    $A'' = \\gamma^2 a(1-a)(1-2a)$, $e_1 = e^{\\beta H a u}$, $e_2 = e^{\\beta H \\bar a u}$,
    $Z = N - LS + S e_1 + (L-1) S e_2$, $D = (e_1 - e_2)/Z - u$,
    $E = u (e_1 + e_2/(L-1))/Z - ((e_1-e_2)/Z)^2$, $G = (a^2 e_1 + (L-1)\\bar a^2 e_2)/Z$ and
    $c = u^2/(S-1)$:

    $$M_{\\text{anti}} = c \\begin{pmatrix} \\beta(A'+A'')D & -\\beta A' \\\\ -\\beta A' &
    -\\beta a \\end{pmatrix},\\quad
    M_{\\text{sym}} = M_{\\text{anti}} + c \\begin{pmatrix} H\\beta^2 A'^2 E & 0 \\\\ 0 &
    H\\beta^2 (S-1) G \\end{pmatrix}$$

    in the basis (key logits x e, value logits y e') of one mode: e a unit zero-sum vector over
    the key offsets 0..S-2, e' the same vector on the value offsets 1..S-1, equal (sym) or
    zero-sum (anti) over heads.

    **Arguments:**
    - `task`: exact-geometry configuration (S >= 3).

    **Returns:** an `EscapeBlocks`: `sym` and `anti` (2x2 numpy arrays; `anti` is None for
    H = 1), and the multiplicities `sym_multiplicity` = S-2, `anti_multiplicity` = (S-2)(H-1).
    """
    task.require_exact("the escape rates of the reduced flow")
    if task.S < 3:
        raise ValueError(f"the symmetry-breaking modes need S >= 3, got S={task.S}")
    k = _uniform_point_constants(task)
    H, S, beta = int(task.H), int(task.S), float(task.beta)
    c = k["u"] ** 2 / (S - 1)
    anti = c * np.array(
        [
            [beta * (k["a1"] + k["a2"]) * k["D"], -beta * k["a1"]],
            [-beta * k["a1"], -beta * k["a"]],
        ]
    )
    sym = anti + c * np.diag(
        [H * beta**2 * k["a1"] ** 2 * k["E"], H * beta**2 * (S - 1) * k["G"]]
    )
    return EscapeBlocks(
        sym=sym,
        anti=anti if H >= 2 else None,
        sym_multiplicity=S - 2,
        anti_multiplicity=(S - 2) * (H - 1),
    )


def reduced_escape_rates(task: Task) -> EscapeRates:
    """Growth rates of the symmetry-breaking modes of the reduced flow at b = 0 (closed form).

    $\\lambda = -(\\kappa + 1/N) \\lambda_{\\min}(M)$ for each block M of `escape_blocks`; a
    positive rate is an unstable direction. `rate` is the largest.

    **Arguments:**
    - `task`: exact-geometry configuration (S >= 3).

    **Returns:** an `EscapeRates`: `sym`, `anti` (None for H = 1) and `rate` (floats, in
    units of flow time).
    """
    blocks = escape_blocks(task)
    scale = float(task.kappa) + 1.0 / int(task.N)

    def growth(block) -> float | None:
        return None if block is None else -scale * float(np.linalg.eigvalsh(block)[0])

    sym, anti = growth(blocks.sym), growth(blocks.anti)
    return EscapeRates(
        sym=sym, anti=anti, rate=max(r for r in (sym, anti) if r is not None)
    )


def escape_time(task: Task, rho_eff) -> np.ndarray:
    """Linearized time to leave the uniform point: $t = \\log(1/\\rho_{\\text{eff}}) / \\lambda$.

    The time at which a symmetry-breaking perturbation of size `rho_eff` grows to size 1 at the rate
    $\\lambda$ = `reduced_escape_rates(task).rate`.

    **Arguments:**
    - `task`: exact-geometry configuration.
    - `rho_eff`: size(s) of the initial symmetry-breaking part of b(0), > 0 (e.g. `breaking_norm`).

    **Returns:** the time(s), same shape as `rho_eff`.
    """
    rho_eff = np.asarray(rho_eff, float)
    if np.any(rho_eff <= 0):
        raise ValueError("rho_eff must be > 0")
    return np.log(1.0 / rho_eff) / reduced_escape_rates(task).rate


def breaking_norm(b) -> np.ndarray:
    """Size of the symmetry-breaking part of logits b (..., H, 2, S): the Euclidean norm of the key
    logits on offsets 0..S-2 and the value logits on 1..S-1, each centred over those S-1 offsets.

    Shifts of a (head, branch) logit vector, and the drift of b = 0 (which moves only key offset S-1
    and value offset 0), leave it unchanged. Computed from masses as `breaking_norm(log p)`.

    **Arguments:**
    - `b`: logits of shape (..., H, 2, S).

    **Returns:** the norms, shape (...).
    """
    b = np.asarray(b, float)
    parts = np.stack([b[..., 0, :-1], b[..., 1, 1:]], axis=-2)  # (..., H, 2, S-1)
    parts = parts - parts.mean(axis=-1, keepdims=True)
    return np.sqrt(np.sum(parts**2, axis=(-3, -2, -1)))


def fit_decay_exponent(
    t, y, *, y_max: float = 1e-2, y_min: float = 0.0
) -> tuple[float, float]:
    """Least-squares slope of $\\log y$ against $\\log t$ over the points with $y_{\\min} <
    y \\le y_{\\max}$.

    For $y = C t^{-a}$ the slope is $-a$ and the intercept $\\log C$. Non-finite points and t <= 0
    are ignored.

    **Arguments:**
    - `t`: times, shape (T,).
    - `y`: positive values, shape (T,), e.g. $1 - p(t)$.
    - `y_max`, `y_min`: the window fitted (the late-time tail by default).

    **Returns:** `(slope, log C)`; NaN when fewer than 3 points are in the window.
    """
    t, y = np.asarray(t, float), np.asarray(y, float)
    keep = np.isfinite(t) & np.isfinite(y) & (t > 0) & (y > y_min) & (y <= y_max)
    if np.sum(keep) < 3:
        return float("nan"), float("nan")
    slope, intercept = np.polyfit(np.log(t[keep]), np.log(y[keep]), 1)
    return float(slope), float(intercept)


def unselected_mass(mass, key_offsets) -> np.ndarray:
    """$1 - p(t)$: the largest mass off the selection, over heads and branches.

    $p(t) = \\min_h \\min(p^K_h(r_h), p^V_h(r_h + 1))$ with $r_h$ the offset head h selects; the
    flow delta-selects exactly when $1 - p \\le \\delta$.

    **Arguments:**
    - `mass`: gate masses (..., T, H, 2, S) of one or more trajectories.
    - `key_offsets`: selected key offsets (..., H) (value offsets are r_h + 1).

    **Returns:** $1 - p$ of shape (..., T).
    """
    mass = np.asarray(mass, float)
    r = np.asarray(key_offsets)[..., None, :, None]  # (..., 1, H, 1)
    S = mass.shape[-1]
    off_key = (
        np.arange(S) != r[..., None]
    )  # (..., 1, H, 1, S): masses off the selection, summed
    off_value = np.arange(S) != (r + 1)[..., None]
    key = np.sum(np.where(off_key[..., 0, :], mass[..., 0, :], 0.0), axis=-1)
    value = np.sum(np.where(off_value[..., 0, :], mass[..., 1, :], 0.0), axis=-1)
    return np.maximum(key, value).max(axis=-1)


def tail_coefficients(task: Task, key_offsets) -> np.ndarray:
    """Coefficients $C_{h,B}$ of the late-time tail $1 - p^B_h(t) \\approx C_{h,B}/t$ at a
    hard selection.

    Near the vertex (key $e_{r_h}$, value $e_{r_h+1}$) each other offset r' of a gate has mass
    $\\varepsilon_{r'}$ with $\\frac{d}{dt}\\log\\varepsilon_{r'} = -(\\kappa +
    1/N)(\\varepsilon_{r'}
    \\Delta g_{r'} + \\sum_s \\varepsilon_s \\Delta g_s)$ to leading order, $\\Delta g_{r'} =
    \\partial\\bar L/\\partial p(r') - \\partial\\bar L/\\partial p(\\text{sel}) > 0$ at the
    vertex, whose
    solution is $\\varepsilon_{r'} \\approx 1/((\\kappa + 1/N) S \\Delta g_{r'} t)$. Hence
    $C_{h,B} = \\frac{1}{(\\kappa + 1/N) S} \\sum_{r'} 1/\\Delta g_{r'}$, and the time to
    delta-selection is about $\\max_{h,B} C_{h,B}/\\delta$ for small delta.

    **Arguments:**
    - `task`: exact-geometry configuration.
    - `key_offsets`: the selected key offset of each head (H,), in 0..S-2.

    **Returns:** C of shape (H, 2) (key, value).
    """
    import jax

    from ..model._gates import hard_selection
    from ..model._loss import population_loss

    r = np.asarray(key_offsets, int)
    grads = jax.grad(lambda g: population_loss(task, g))(
        hard_selection(int(task.S), [int(x) for x in r])
    )
    scale = (float(task.kappa) + 1.0 / int(task.N)) * int(task.S)
    out = np.zeros((len(r), 2))
    for B, (g, sel) in enumerate(
        ((np.asarray(grads.key), r), (np.asarray(grads.value), r + 1))
    ):
        for h in range(len(r)):
            gap = np.delete(g[h] - g[h, sel[h]], sel[h])
            if np.any(gap <= 0):
                raise ValueError(
                    f"the vertex is not a strict local minimum on head {h}, branch {B}: gaps {gap}"
                )
            out[h, B] = np.sum(1.0 / gap) / scale
    return out


__all__ = [
    "EscapeBlocks",
    "EscapeRates",
    "breaking_norm",
    "escape_blocks",
    "reduced_escape_rates",
    "escape_time",
    "fit_decay_exponent",
    "tail_coefficients",
    "unselected_mass",
]
