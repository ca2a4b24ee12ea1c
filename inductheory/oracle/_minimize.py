"""Global minimization of one context's loss over the oracle class (docs/theory.md §5,
Theorem 1 of §7).

The oracle class lets every head h and block l of a context pick any $p^K_{h,l}, p^V_{h,l}$ in the
simplex $\\Delta^{S-1}$: the domain is a product of 2HL simplices and the per-context loss
(`context_loss`) is smooth but not convex on it, with many local minima (every hard selection
with a strictly positive gradient gap is one). `minimize_oracle` is a multi-start local method
with an honest boundary treatment; `best_vertex` (in `_vertices`) enumerates the hard selections.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ..model._gates import (
    OracleGates,
    distinct_within_blocks,
    selected_offsets,
)
from ..model._geometry import AbstractGeometry
from ..model._logits import cross_entropy, query_logits
from ..model._loss import context_loss, per_phase_mean
from ..model._objective import Objective
from ..model._task import Task, _require_int, _require_real
from ._vertices import vertex_gates

# The local methods of `OracleMinimizer`: active-set Newton in p (default), BFGS on logits + polish.
METHODS = ("newton", "bfgs")


class OracleMinimizer(eqx.Module):
    """Settings of the multi-start minimizer over the oracle class (immutable, validated).

    **Newton** (`method="newton"`, the default). The problem has a few dozen parameters, so each
    start runs an active-set Newton method in p directly: every iteration takes the exact Hessian,
    solves the Newton system on the tangent space of the current face (the support's simplices,
    shifted to positive definite where it is not) and tries, at once, that step at sizes 1, 1/2,
    ... and projected-gradient steps over a wide range of sizes (which reach faces exactly and
    reopen masses), keeping the lowest loss. Each start stops on its own at a KKT point
    (Frank-Wolfe gap <= `tol`) or when no candidate lowers the loss within the rounding floor
    of the gap (`kkt_floor`, which scales with the loss and the curvature; above it the gradient
    decides the last Newton steps); `steps` bounds its
    iterations, and `rounds`, `polish_steps` and `reopen` are not used. Quadratic convergence near
    a nondegenerate minimum and the exact snap of strict vertex minima reach each start's local
    minimum in a few iterations where BFGS spends its full budgets. Stationarity is measured by
    the Frank-Wolfe gap $\\sum_{h,l,B} (\\langle g, p \\rangle - \\min_r g_r)$, which is 0
    exactly at KKT points of the product of simplices (at a vertex $e_r$: $g_r \\le g_i$ for
    every i), and either method's end points carry a `local_certificate`.

    **BFGS** (`method="bfgs"`, the independent second method). Each simplex vector is
    parametrized by softmax logits, $p = \\mathrm{softmax}(z)$, which removes the constraints, and
    each start is minimized by BFGS (`optimistix.BFGS`, a quasi-Newton method: superlinear near
    interior minima, and near a vertex minimum with a positive gradient gap it drives the
    off-vertex masses to 0 geometrically, as Newton does on $e^{-z}$). All starts run at once
    under `vmap`, each for its full budget. Logits have two known defects at the boundary, where
    Theorem 1's optima sit: a vertex is only approached (the logits diverge), and a mass that
    collapsed early cannot come back (its logit gradient $p_i (g_i - \\langle g, p \\rangle)$
    vanishes) even where the gradient g asks for it, leaving non-KKT points. Hence each BFGS run
    is followed by `polish_steps` of projected gradient descent in p with an Armijo step
    (Euclidean projection onto the simplex: reaches faces exactly and reopens masses), repeated
    for `rounds` rounds (the next BFGS starts from the polished point with masses reopened by
    `reopen`). Finally every mass below `snap` is set to exactly 0 (renormalized) if that does
    not raise the loss, so a reported vertex is a vertex.

    **Starts.** `restarts` random starts with logits $z \\sim \\mathcal N(0,
    \\text{init\\_scale}^2)$,
    plus optional seeds (vertex configurations, e.g. the best enumerated ones) started at
    $(1 - \\eta) e + \\eta u$ with u a random point of the simplex and $\\eta$ = `vertex_jitter`, so
    that a local search from a good vertex may also leave it if a better non-vertex point is near.

    **Arguments:**
    - `method`: `"newton"` (active-set Newton in p) or `"bfgs"` (BFGS on logits +
      projected-gradient polish).
    - `restarts`: number of random starts, >= 1.
    - `steps`: Newton iterations per start (BFGS: steps per start and round), >= 1.
    - `polish_steps`: BFGS only: projected-gradient steps per round, >= 0.
    - `rounds`: BFGS only: BFGS + polish rounds, >= 1.
    - `reopen`: BFGS only: mass mixed in from the uniform distribution between rounds, in (0, 1).
    - `init_scale`: standard deviation of the random initial logits, > 0.
    - `vertex_jitter`: $\\eta$ in (0, 1) for seeded starts.
    - `snap`: masses below this are set to 0 by the polish, in [0, 1/2).
    - `delta`: hard-selection tolerance: key mass >= 1 - delta at r, value mass >= 1 - delta at r+1,
      in (0, 1/2).
    - `tol`: the Frank-Wolfe gap at which a Newton start stops (BFGS: its rtol = atol), > 0.
    - `tied`: one gate for both branches ($p^V_{h,l} = p^K_{h,l}$, kernels that share K and V);
      a tied gate "selects" the offset where its mass is >= 1 - delta.
    - `objective`, `tau`, `coordination`: minimize an `Objective` of the context's per-phase
      losses instead of its mean loss (`"worst-phase"` at temperature `tau`; overlap penalty of
      weight `coordination` averaged over entries; None: no penalty). Reported losses are then the
      objective's values.

    ```python
    config = OracleMinimizer(restarts=16)  # Newton
    check = OracleMinimizer(method="bfgs", restarts=16, steps=300)
    ```
    """

    method: str = eqx.field(static=True, default="newton")
    restarts: int = eqx.field(static=True, default=32)
    steps: int = eqx.field(static=True, default=300)
    polish_steps: int = eqx.field(static=True, default=300)
    rounds: int = eqx.field(static=True, default=2)
    reopen: float = eqx.field(static=True, default=1e-3)
    init_scale: float = eqx.field(static=True, default=2.0)
    vertex_jitter: float = eqx.field(static=True, default=0.1)
    snap: float = eqx.field(static=True, default=1e-6)
    delta: float = eqx.field(static=True, default=1e-3)
    tol: float = eqx.field(static=True, default=1e-12)
    tied: bool = eqx.field(static=True, default=False)
    objective: str = eqx.field(static=True, default="mean")
    tau: float = eqx.field(static=True, default=1.0)
    coordination: float | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        if self.method not in METHODS:
            raise ValueError(
                f"method must be one of {', '.join(map(repr, METHODS))}, got {self.method!r}"
            )
        for name, low in (
            ("restarts", 1),
            ("steps", 1),
            ("polish_steps", 0),
            ("rounds", 1),
        ):
            _require_int(name, getattr(self, name), low)
        if not 0 < _require_real("reopen", self.reopen) < 1:
            raise ValueError(f"reopen must lie in (0, 1), got {self.reopen!r}")
        if _require_real("init_scale", self.init_scale) <= 0:
            raise ValueError(f"init_scale must be > 0, got {self.init_scale!r}")
        if not 0 < _require_real("vertex_jitter", self.vertex_jitter) < 1:
            raise ValueError(
                f"vertex_jitter must lie in (0, 1), got {self.vertex_jitter!r}"
            )
        if not 0 <= _require_real("snap", self.snap) < 0.5:
            raise ValueError(f"snap must lie in [0, 1/2), got {self.snap!r}")
        if not 0 < _require_real("delta", self.delta) < 0.5:
            raise ValueError(f"delta must lie in (0, 1/2), got {self.delta!r}")
        if _require_real("tol", self.tol) <= 0:
            raise ValueError(f"tol must be > 0, got {self.tol!r}")
        if not isinstance(self.tied, (bool, np.bool_)):
            raise ValueError(f"tied must be True or False, got {self.tied!r}")
        Objective(self.objective, self.tau, self.coordination)  # validates

    def objective_function(self) -> Objective | None:
        """The `Objective` minimized, or None for the plain context loss."""
        goal = Objective(self.objective, self.tau, self.coordination)
        return None if goal.is_default else goal

    @property
    def branches(self) -> int:
        """Simplex vectors per head and entry: 2 (key, value), or 1 for tied gates."""
        return 1 if self.tied else 2


def context_geometry(
    geometry: AbstractGeometry, tokens: Int[Array, "blocks offsets"]
) -> AbstractGeometry:
    """The same per-context model in a smaller basis (`geometry.context_basis(tokens)`).

    Every vector the model forms for one context lies in the span of the context's L*S
    embeddings, so a dense geometry is projected on that span, which preserves every logit exactly
    and makes the dense path cost O(N L S) per query instead of O(N d). Exact geometry is returned
    unchanged.

    **Arguments:**
    - `geometry`: any geometry.
    - `tokens`: the context (L, S).

    **Returns:** the geometry itself (exact), or a `DenseGeometry` with N x (at most L*S)
    embeddings and the original eps.
    """
    return geometry.context_basis(tokens)


class OracleResult(eqx.Module):
    """The outcome of `minimize_oracle` for one context.

    **Fields:**
    - `loss`: the best per-context loss found (over all starts, after polish).
    - `gates`: its `OracleGates` (H, L, S).
    - `offsets`: `selected_offsets` of the best gates (H, L), -1 where not delta-hard.
    - `hard`: every head and block delta-selects some r.
    - `distinct`: hard, and the heads' offsets differ within every block.
    - `fw_gap`: Frank-Wolfe stationarity gap at the best gates (0 at KKT points).
    - `certified`: the best gates pass `local_certificate` (a strict local minimum).
    - `start_losses`, `start_hard`: loss and hardness of every start's end point (random starts
      first, then seeded ones).
    - `n_random`: how many of the starts were random.
    """

    loss: float
    gates: OracleGates
    offsets: np.ndarray
    hard: bool
    distinct: bool
    fw_gap: float
    certified: bool
    start_losses: np.ndarray
    start_hard: np.ndarray
    n_random: int = eqx.field(static=True)

    @property
    def best_random_loss(self) -> float:
        """The best loss reached from the random starts alone (no vertex seeds)."""
        return float(np.min(self.start_losses[: self.n_random]))


def _loss_of(task, geometry, tokens, objective: Objective | None = None):
    if objective is None:
        return lambda key, value: context_loss(
            task, geometry, OracleGates(key=key, value=value), tokens
        )

    def loss(key, value):
        per_query = cross_entropy(
            *query_logits(task, geometry, OracleGates(key=key, value=value), tokens)
        )
        return objective(
            per_phase_mean(task, per_query), jnp.moveaxis(key, -2, -3)
        )  # overlap averaged over entries

    return loss


def project_simplex(v: Float[Array, "*batch n"]) -> Float[Array, "*batch n"]:
    """Euclidean projection of each row onto the probability simplex.

    $\\Pi(v) = \\max(v - \\tau, 0)$ with $\\tau$ chosen so that the result sums to 1: with u the
    entries sorted decreasingly, $\\rho = \\max\\{j : u_j - (\\sum_{i \\le j} u_i - 1)/j > 0\\}$ and
    $\\tau = (\\sum_{i \\le \\rho} u_i - 1)/\\rho$.
    """
    u = _sorted_decreasing(v)
    css = jnp.cumsum(u, axis=-1) - 1.0
    j = jnp.arange(1, v.shape[-1] + 1)
    rho = jnp.sum(u - css / j > 0, axis=-1, keepdims=True)
    tau = jnp.take_along_axis(css, rho - 1, axis=-1) / rho
    return jnp.maximum(v - tau, 0.0)


# Rows up to this length are sorted by a compare-exchange network instead of `jnp.sort`.
_NETWORK_SORT_MAX = 16


def _sorted_decreasing(v: Float[Array, "*batch n"]) -> Float[Array, "*batch n"]:
    """The entries of each row in decreasing order: `-jnp.sort(-v)`, value for value.

    Short rows (the offsets of one gate) go through an odd-even transposition network of
    `jnp.maximum` / `jnp.minimum`, which XLA on CPU runs several times faster than its sort (a
    sort is a permutation: any correct one gives the same values).
    """
    n = v.shape[-1]
    if n > _NETWORK_SORT_MAX:
        return -jnp.sort(-v, axis=-1)
    rows = [v[..., i] for i in range(n)]
    for stage in range(n):
        for i in range(stage % 2, n - 1, 2):
            rows[i], rows[i + 1] = (
                jnp.maximum(rows[i], rows[i + 1]),
                jnp.minimum(rows[i], rows[i + 1]),
            )
    return jnp.stack(rows, axis=-1)


# Largest projected-gradient step: beyond it p - t g loses p to rounding (the projection subtracts
# a threshold of the size of t g).
_MAX_STEP = 1e4


def _projected_gradient(f, p, steps: int):
    """Projected gradient descent on the product of simplices with an adaptive Armijo step.

    Unlike logits, the projection reaches the boundary exactly and lets a zero mass come back
    when its gradient asks for it, so it finds the active set that BFGS on logits cannot.
    """
    value_and_grad = jax.value_and_grad(f)

    def step(_, carry):
        p, fp, g, t = carry
        c = project_simplex(p - t * g)
        fc = f(c)
        ok = fc <= fp + 1e-4 * jnp.sum(g * (c - p))
        _, g_new = value_and_grad(jnp.where(ok, c, p))
        return (
            jnp.where(ok, c, p),
            jnp.where(ok, fc, fp),
            jnp.where(ok, g_new, g),
            jnp.where(ok, jnp.minimum(1.5 * t, _MAX_STEP), 0.5 * t),
        )

    fp, g = value_and_grad(p)
    p, fp, _, _ = jax.lax.fori_loop(0, steps, step, (p, fp, g, jnp.asarray(1.0)))
    return p, fp


@eqx.filter_jit
def _descend(
    task: Task, geometry: AbstractGeometry, tokens, z0, config: OracleMinimizer
):
    return descend(task, geometry, tokens, z0, config)


# Step sizes tried at once in every Newton iteration: Newton steps t d (t = 1, 1/2, ...) and
# projected-gradient steps s g over a wide geometric range (s up to `_MAX_STEP`, which snaps a
# strict vertex minimum's face in one step), all projected back onto the simplices.
_NEWTON_STEPS = 2.0 ** -np.arange(10.0)  # numpy: importing must not start a JAX backend
_GRADIENT_STEPS = _MAX_STEP * 8.0 ** -np.arange(12.0)
# Shifts mu (relative to the Hessian's Gershgorin bound s) of the Newton systems (K + mu s) d = -g:
# the smallest one whose Cholesky factorization succeeds is used; the last is always positive
# definite. The first one's success is the certificate's margin of positive definiteness.
_SHIFTS = np.array([-1e-10, 0.0, 1e-6, 1e-2, 2.0])
# First-order tolerance of `local_certificate`.
_CERTIFICATE_TOL = 1e-9


def _face_system(hess, p):
    """The Hessian on the tangent space of p's face (support p > 0) as one positive-scaled
    system: `(P, M, s)` with P the projector on the face's tangent space (per simplex,
    directions on the free offsets summing to 0), $M = P H P + s (I - P)$ and s >= 1 the
    Gershgorin bound of $P H P$ (M is positive definite exactly when $P H P$ is on range(P))."""
    free = (p > 0).astype(p.dtype).reshape(-1, p.shape[-1])
    k = jnp.maximum(jnp.sum(free, axis=-1, keepdims=True), 1.0)
    block = (
        jax.vmap(jnp.diag)(free) - free[:, :, None] * free[:, None, :] / k[..., None]
    )
    n_s, W = free.shape
    eye_s = jnp.eye(n_s, dtype=block.dtype)
    P = (eye_s[:, None, :, None] * block[:, :, None, :]).reshape(n_s * W, n_s * W)
    K = P @ hess @ P
    s = jnp.maximum(1.0, jnp.max(jnp.sum(jnp.abs(K), axis=-1)))
    return P, K + s * (jnp.eye(n_s * W) - P), s


def kkt_floor(value, s, simplices: int, terms: int, dtype=jnp.float64):
    """The Frank-Wolfe gap down to which comparing computed losses can still see a descent.

    Let the computed loss be within $\\epsilon_f$ of the true one. `value` is a mean of `terms`
    per-query cross-entropies: summing them errs by at most (terms - 1) u |f| (u the unit
    roundoff), and each term's own log-sum-exp by a few u in units of max(|f|, 1), so
    $\\epsilon_f = (\\text{terms} + 1)\\, u \\max(|f|, 1)$ (measured: within 5 u |f| at L4 S4 H2).
    A Newton step $d = -A^{-1} P g$ with $A \\succeq P H P$ (the face system, shifted by at most
    2s, s the Gershgorin bound of P H P, so $\\lambda_{\\max}(A) \\le 3 s$) lowers the true loss
    by at least $\\tfrac12 g^T A^{-1} g \\ge |P g|^2 / (6 s)$ near a minimum; when the computed
    values show no decrease, $|P g|^2 / (6 s) \\le 2 \\epsilon_f$, i.e. $|P g|^2 \\le 12 s
    \\epsilon_f$. On one simplex with its gradient's minimum on the support, $\\langle g, p
    \\rangle - \\min_r g_r \\le \\max_{i,j} |g_i - g_j| \\le \\sqrt 2 |P_B g|$, and summed over the
    simplices (Cauchy-Schwarz) the Frank-Wolfe gap is $\\le \\sqrt{2 n} |P g|$. Hence a search
    that stops because no candidate lowers the computed loss has a gap
    $\\le \\sqrt{24\\, n\\, s\\, \\epsilon_f}$ (n simplices), which scales with the loss and the
    curvature (through s), as the rounding of the loss does: a fixed tolerance does not (an
    absolute 1e-7 held at L4 S4 H2 N16 beta10 on one x86 CPU and not on another, where the
    last bits of the loss differ with the instruction set XLA compiles for). A gap above this
    floor is a stop that rounding does not explain: `_newton_descent` then keeps polishing.

    **Arguments:** `value` the loss, `s` the Gershgorin bound (`_face_system`), `simplices` the
    number n of simplex vectors, `terms` the number of averaged per-query losses.

    **Returns:** the floor (a scalar).
    """
    return jnp.sqrt(24.0 * simplices * s * _loss_rounding(value, terms, dtype))


def _loss_rounding(value, terms: int, dtype):
    """$\\epsilon_f = (\\text{terms} + 1)\\, u \\max(|f|, 1)$, the rounding of a computed loss
    (`kkt_floor`)."""
    return (terms + 1) * (jnp.finfo(dtype).eps / 2) * jnp.maximum(jnp.abs(value), 1.0)


def _newton_descent(f, p0, steps: int, tol: float, snap: float, terms: int = 1):
    """Active-set Newton on the product of simplices from p0, until a KKT point or `steps`.

    Each iteration evaluates the exact Hessian (a few dozen parameters) and tries, at once, the
    Newton step on the face of the current support (shifted by the smallest of `_SHIFTS` that
    makes the system positive definite, so that the step descends) at step sizes 1, 1/2, ...,
    projected-gradient steps over a wide range of sizes (they reach faces exactly and reopen
    masses that the gradient asks for) and the point with masses below `snap` set to 0; the
    lowest loss among the candidates is kept. A start stops once its Frank-Wolfe gap is <= `tol`,
    or when no candidate lowers the loss and its gap is within `kkt_floor` (stationary to the
    rounding of the loss; `terms` is the number of per-query losses that the loss averages).
    Above that floor the loss comparison no longer decides: the full Newton step is then taken
    while its computed loss stays within the loss's rounding and it at least halves the gap (the
    gradient, computed to much better than the square root of the rounding, decides), so a stop
    does not depend on the last bits of the loss. Where the old rule's stop already met the floor
    the iterates are unchanged. Under `vmap` every start stops on its own.

    **Returns:** `(p, loss, certified)`, the last the `local_certificate` of p (from the Hessian
    the last iteration evaluated there; False if `steps` ran out while still moving).
    """
    shape = p0.shape
    value_and_grad = jax.value_and_grad(f)
    hessian = jax.hessian(lambda x: f(x.reshape(shape)))
    candidates = jax.vmap(lambda q: f(project_simplex(q)))
    eye = jnp.eye(p0.size)
    simplices = p0.size // shape[-1]

    def cond(carry):
        return (carry[2] < steps) & ~carry[3]

    def body(carry):
        p, fp, it, _, _ = carry
        _, g = value_and_grad(p)
        P, M, s = _face_system(hessian(p.reshape(-1)), p)
        factors = jax.vmap(jnp.linalg.cholesky)(M + (s * _SHIFTS)[:, None, None] * eye)
        ok = jnp.all(jnp.isfinite(factors), axis=(-2, -1))
        d = -jax.scipy.linalg.cho_solve(
            (factors[jnp.argmax(ok)], True), P @ g.reshape(-1)
        )
        moves = jnp.concatenate(
            [
                _NEWTON_STEPS[:, None] * d[None],
                -_GRADIENT_STEPS[:, None] * g.reshape(1, -1),
                (_snapped(p, snap) - p).reshape(1, -1),
            ]
        ).reshape((-1,) + shape)
        values = candidates(p[None] + moves)
        values = jnp.where(jnp.isfinite(values), values, jnp.inf)
        best = jnp.argmin(values)
        gap = _fw_gap(g, p)
        descent = (values[best] < fp) & (gap > tol)
        # stalled above the rounding floor: the full Newton step (candidate 0), if its loss is
        # equal to rounding and its gradient's gap at most half the current one
        newton = project_simplex(p + moves[0])
        within = values[0] <= fp + _loss_rounding(fp, terms, p.dtype)
        polish = (
            ~(values[best] < fp)
            & (gap > tol)
            & (gap > kkt_floor(fp, s, simplices, terms, p.dtype))
            & within
            & (_fw_gap(jax.grad(f)(newton), newton) <= gap / 2)
        )
        move = descent | polish
        q = jnp.where(polish, newton, project_simplex(p + moves[best]))
        return (
            jnp.where(move, q, p),
            jnp.where(polish, values[0], jnp.where(move, values[best], fp)),
            it + 1,
            ~move,
            _certified(g, p, ok[0]) & ~move,
        )

    p, fp, _, _, certified = jax.lax.while_loop(
        cond,
        body,
        (p0, f(p0), jnp.asarray(0), jnp.asarray(False), jnp.asarray(False)),
    )
    return p, fp, certified


def _snapped(p, snap: float):
    """p with every mass below `snap` set to 0, renormalized."""
    p = jnp.where(p < snap, 0.0, p)
    return p / jnp.sum(p, axis=-1, keepdims=True)


def _certified(g, p, curved):
    """KKT with strict complementarity at p (gradient g), and `curved`: the face Hessian is
    positive definite (`local_certificate`)."""
    multiplier = jnp.sum(g * p, axis=-1, keepdims=True)
    complementary = jnp.all((p > 0) | (g - multiplier > _CERTIFICATE_TOL))
    return (_fw_gap(g, p) <= _CERTIFICATE_TOL) & complementary & curved


def _fw_gap(g, p):
    """Frank-Wolfe gap $\\sum (\\langle g, p \\rangle - \\min_r g_r)$ over the simplices."""
    return jnp.sum(jnp.sum(g * p, axis=-1) - jnp.min(g, axis=-1))


def local_certificate(f, p):
    """Whether p is certified a strict local minimum of f on the product of simplices.

    Second-order sufficient conditions: KKT (Frank-Wolfe gap <= 1e-9), strict complementarity
    (every zero mass has a gradient above its simplex's multiplier $\\langle g, p \\rangle$ by
    more than 1e-9) and a positive-definite Hessian on the tangent space of p's face (with a
    relative margin of 1e-10). At a vertex the face is a point and the conditions reduce to a
    strictly positive gradient gap.

    **Arguments:**
    - `f`: the loss of stacked gates (B, H, L, W).
    - `p`: the point.

    **Returns:** a boolean scalar (jit-friendly).

    ```python
    local_certificate(f, p)  # True at a strict local minimum
    ```
    """
    _, M, s = _face_system(
        jax.hessian(lambda x: f(x.reshape(p.shape)))(p.reshape(-1)), p
    )
    factor = jnp.linalg.cholesky(M + _SHIFTS[0] * s * jnp.eye(p.size))
    return _certified(jax.grad(f)(p), p, jnp.all(jnp.isfinite(factor)))


class Descent(eqx.Module):
    """The end points of `descend`'s local searches, one row per start, classified.

    **Fields:**
    - `p`: the end points (starts, B, H, L, W), B = `config.branches` (key then value; tied gates
      have the key only).
    - `values`: their losses (starts,).
    - `fw`: their Frank-Wolfe gaps (starts,).
    - `certified`: their `local_certificate`s (starts,).
    - `offsets`: their `selected_offsets` (starts, H, L), -1 where not delta-hard.
    - `distinct`: hard with the heads' offsets distinct within every block (starts,).
    """

    p: Float[Array, "starts branches heads blocks offsets"]
    values: Float[Array, " starts"]
    fw: Float[Array, " starts"]
    certified: Array
    offsets: Int[Array, "starts heads blocks"]
    distinct: Array


def descend(
    task: Task,
    geometry: AbstractGeometry,
    tokens,
    z0: Float[Array, "starts branches H L W"],
    config: OracleMinimizer,
) -> Descent:
    """The local searches of `minimize_oracle` from every start (pure: jit and vmap it).

    The end points are classified here, inside the compiled program, so that reading the result
    runs no further JAX operations.

    **Returns:** a `Descent`.

    ```python
    z0 = starts(jax.random.key(0), task, config, seeds=None)
    end = descend(task, geometry, tokens, z0, config)
    end.values.min(), end.offsets
    ```
    """
    loss = _loss_of(task, geometry, tokens, config.objective_function())
    f = lambda p: loss(
        p[0], p[-1]
    )  # p[-1] is the value gate, or the key gate again when tied

    def one(z):
        if config.method == "newton":
            # the snap is one of Newton's candidates, and its certificate reuses its Hessian
            p, value, certified = _newton_descent(
                f,
                jax.nn.softmax(z, axis=-1),
                config.steps,
                config.tol,
                config.snap,
                task.L * (task.S - 1),
            )
            return p, value, _fw_gap(jax.grad(f)(p), p), certified
        p, value = _bfgs_rounds(task, f, z, config)
        snapped = _snapped(p, config.snap)
        snapped_value = f(snapped)
        keep = snapped_value <= value
        p = jnp.where(keep, snapped, p)
        value = jnp.where(keep, snapped_value, value)
        return p, value, _fw_gap(jax.grad(f)(p), p), local_certificate(f, p)

    p, values, fw, certified = jax.vmap(one)(z0)
    offsets = selected_offsets(p[:, 0], p[:, -1], config.delta, config.tied)
    return Descent(
        p=p,
        values=values,
        fw=fw,
        certified=certified,
        offsets=offsets,
        distinct=distinct_within_blocks(offsets),
    )


def _bfgs_rounds(task: Task, f, z, config: OracleMinimizer):
    """`config.rounds` rounds of BFGS on logits, each followed by the projected-gradient polish."""
    solver = optx.BFGS(rtol=config.tol, atol=config.tol)
    objective = lambda z, _: f(jax.nn.softmax(z, axis=-1))

    def round_(_, carry):
        z, _, _ = carry
        sol = optx.minimise(objective, solver, z, max_steps=config.steps, throw=False)
        p, value = _projected_gradient(
            f, jax.nn.softmax(sol.value, axis=-1), config.polish_steps
        )
        # a next round restarts BFGS from the polished point, every mass slightly reopened
        return jnp.log((1 - config.reopen) * p + config.reopen / task.W), p, value

    init = (z, jax.nn.softmax(z, axis=-1), f(jax.nn.softmax(z, axis=-1)))
    _, p, value = jax.lax.fori_loop(0, config.rounds, round_, init)
    return p, value


def _normal(key: PRNGKeyArray, shape: tuple[int, ...]) -> Float[Array, ...]:
    """`jax.random.normal(key, shape)`, bit for bit, drawn as one flat vector.

    Threefry's counters are the flat element index, so the values are the same; XLA on CPU
    compiles the flat draw several times faster than a draw of a 5-d shape.
    """
    return jax.random.normal(key, (int(np.prod(shape)),)).reshape(shape)


def starts(
    key: PRNGKeyArray, task: Task, config: OracleMinimizer, seeds
) -> Float[Array, "starts branches H L W"]:
    """Initial logits: `config.restarts` random starts, then one jittered start per seed vertex."""
    shape = (config.branches, task.H, task.L, task.W)
    k_random, k_seed = jax.random.split(key)
    z = config.init_scale * _normal(k_random, (config.restarts,) + shape)
    if seeds is None or len(seeds) == 0:
        return z
    seeds = jnp.asarray(seeds)
    g = vertex_gates(task.W, seeds, config.tied)
    vertex = jnp.stack([g.key, g.value][: config.branches], axis=1)  # (k, B, H, L, W)
    u = jax.nn.softmax(_normal(k_seed, vertex.shape), axis=-1)
    p = (1 - config.vertex_jitter) * vertex + config.vertex_jitter * u
    return jnp.concatenate([z, jnp.log(p)], axis=0)


def classify(
    gates: OracleGates, delta: float, tied: bool = False
) -> tuple[np.ndarray, bool, bool]:
    """Hard-selection classification of oracle gates of one context.

    **Arguments:**
    - `gates`: `OracleGates` (H, L, W).
    - `delta`: tolerance of `selected_offsets`.
    - `tied`: classify tied gates (`selected_offsets` with `tied`).

    **Returns:** `(offsets, hard, distinct)`: the selected offset per head and block (H, L; -1
    where none), whether every head and block selects, and whether moreover the heads' offsets
    are distinct within every block (`distinct_within_blocks`).
    """
    offsets = np.asarray(selected_offsets(gates.key, gates.value, delta, tied))
    hard = bool(np.all(offsets >= 0))
    return offsets, hard, bool(distinct_within_blocks(offsets))


def minimize_oracle(
    task: Task,
    geometry: AbstractGeometry,
    tokens: Int[Array, "blocks offsets"],
    key: PRNGKeyArray,
    config: OracleMinimizer = OracleMinimizer(),
    *,
    seeds: Int[Array, "seeds heads blocks"] | None = None,
) -> OracleResult:
    """Minimize one context's loss over the oracle class (multi-start local searches).

    Minimizes $\\ell_X(p) = \\frac{1}{L(S-1)} \\sum_{(l^*, r^*)} \\mathrm{CE}(l^*, r^*)$ over
    $p^K_{h,l}, p^V_{h,l} \\in \\Delta^{S-1}$ (see `OracleMinimizer` for the method). Under exact
    geometry every context gives the same function, so one context is the population problem.
    For a dense geometry pass `context_geometry(geometry, tokens)` to make it cheap.

    **Arguments:**
    - `task`, `geometry`, `tokens`: the context.
    - `key`: PRNG key of the random starts; the same key gives the same result.
    - `config`: an `OracleMinimizer`.
    - `seeds`: optional vertex configurations (k, H, L) to start from as well.

    **Returns:** an `OracleResult`.

    ```python
    task = Task(L=4, S=3, H=2, N=4096, beta=2.0)
    res = minimize_oracle(task, ExactGeometry(task.N, task.kappa), tokens, jax.random.key(0))
    res.hard, res.distinct
    ```
    """
    z0 = starts(key, task, config, seeds)
    return oracle_result(_descend(task, geometry, tokens, z0, config), config)


def oracle_result(end: Descent, config: OracleMinimizer) -> OracleResult:
    """The `OracleResult` of the local searches' end points (`descend`'s `Descent` for one
    context; numpy arrays or JAX arrays)."""
    end = jax.device_get(end)
    values = np.asarray(end.values)
    values = np.where(np.isfinite(values), values, np.inf)
    # Many starts reach the same optimum (up to symmetry) with losses equal to the last bits: the
    # first start within 1e-12 of the best is chosen, so the reported minimizer does not depend on
    # roundoff (batched and single-point runs report the same one).
    lowest = float(np.min(values))
    best = int(np.argmax(values <= lowest + 1e-12 * (1.0 + abs(lowest))))
    start_hard = np.all(end.offsets >= 0, axis=(-2, -1))
    return OracleResult(
        loss=float(values[best]),
        gates=OracleGates(key=end.p[best, 0], value=end.p[best, -1]),
        offsets=np.asarray(end.offsets[best]),
        hard=bool(start_hard[best]),
        distinct=bool(end.distinct[best]),
        fw_gap=float(end.fw[best]),
        certified=bool(end.certified[best]),
        start_losses=values,
        start_hard=start_hard,
        n_random=config.restarts,
    )
