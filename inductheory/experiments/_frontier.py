"""The price of phase-uniformity: mean loss vs worst-phase loss over block-shared gates.

Over shared gates $p = \\mathrm{softmax}(b)$, $b \\in \\mathbb R^{H \\times 2 \\times S}$,
with the exact
per-phase losses $\\ell_p(b)$ of docs/theory.md §4, the frontier is

$$
F(c) = \\min_b \\Big\\{ \\frac1P \\sum_p \\ell_p(b) \\;:\\; \\max_p \\ell_p(b) \\le c \\Big\\},
$$

non-increasing in c. It is computed by an augmented Lagrangian (one multiplier per phase) with BFGS
inner solves from many random starts, all vectorized, one compiled program for every kind of solve.
Its left end $\\min_b \\max_p \\ell_p(b)$ (`minimax_end`) is solved twice, by SLSQP on the
simplices (where gate entries can be exactly zero) and by the augmented Lagrangian of the epigraph,
polished by Newton on its KKT equations and checked by them (`kkt_check`); `simplex_frontier`
checks $F$ by SLSQP.
"""

from __future__ import annotations

import dataclasses
import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import threadpoolctl
from jaxtyping import Array, Float

from ..internal._records import Record
from ..model._gates import (
    SharedGates,
    selectable_offsets,
    selection_one_hots,
    shared_gates_from_logits,
)
from ..model._loss import phase_losses
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


def _phr(ell, c, lam, mu):
    """Powell-Hestenes-Rockafellar augmented-Lagrangian term of the constraints
    $\\ell_p \\le c$."""
    shifted = jnp.maximum(0.0, lam + mu * (ell - c))
    return jnp.sum(shifted**2 - lam**2) / (2 * mu)


def _objective(y, args):
    """$w_m \\bar\\ell + w_t t$ + the augmented Lagrangian term of $\\ell_p \\le t$ (epigraph)
    or $\\ell_p \\le c$: one program for the three kinds of solve (the best mean: c = +inf-like;
    the frontier at c; the least worst phase: $w_m = 0$, $w_t = 1$, epigraph)."""
    b, t = y
    task, w_mean, w_t, c, epigraph, lam, mu = args
    ell = _losses(task, b)
    bound = jnp.where(epigraph > 0, t, c)
    return w_mean * jnp.mean(ell) + w_t * t + _phr(ell, bound, lam, mu)


_CHUNK = (
    32  # lanes per call of the compiled AL program: every solve reuses one compilation
)


@eqx.filter_jit
def _al_program(task, y, args, max_steps):
    return jax.vmap(lambda y, a: _solve(_objective, y, (task, *a), max_steps))(y, args)


_ell_of = eqx.filter_jit(lambda task, b: jax.vmap(lambda x: _losses(task, x))(b))


def _al_solve(task, b, t, *, w_mean, w_t, c, epigraph, lam, mu, max_steps):
    """The AL stage for every start (b, t), in chunks of `_CHUNK` lanes (the last padded);
    scalars are broadcast to every lane. Returns (b, t)."""
    # lanes are broadcast, padded, cut and joined on the host: as jax operations each was a
    # program of its own (exact data movement either way)
    n, P = b.shape[0], np.shape(lam)[-1]
    full = lambda v, *tail: np.broadcast_to(np.asarray(v, np.float64), (n, *tail))
    y = (np.asarray(b), full(t))
    args = (full(w_mean), full(w_t), full(c), full(epigraph), full(lam, P), full(mu))
    pad = -n % _CHUNK
    padded = lambda v: np.concatenate([v, np.repeat(v[-1:], pad, axis=0)])
    y, args = jax.tree.map(padded, (y, args))
    outs = [
        jax.device_get(
            _al_program(
                task,
                *jax.tree.map(lambda v, i=i: v[i : i + _CHUNK], (y, args)),
                max_steps,
            )
        )
        for i in range(0, n + pad, _CHUNK)
    ]
    b, t = (np.concatenate(parts)[:n] for parts in zip(*outs))
    return b, t


def _unsaturate(b, floor=-10.0):
    """Logits shifted to max 0 and floored: near a vertex the softmax gradient vanishes (weights
    below $e^{-10}$), and a stage started there would not move."""
    return jnp.maximum(b - jnp.max(b, axis=-1, keepdims=True), floor)


def _starts(key, n, shape, scale):
    """n random logits: half at scale `scale`, half at scale/4 (near uniform gates)."""
    z = jax.random.normal(key, (n, *shape))
    scales = jnp.where(jnp.arange(n) % 2 == 0, scale, scale / 4)
    return z * scales[:, None, None, None]


def _flat_losses(task, x):
    """Per-phase losses of flat simplex gates x (the (H, 2, W) gates raveled): the second
    solver works on the simplices directly, where a vertex is reachable."""
    p = x.reshape(task.H, 2, task.W)
    return phase_losses(task, SharedGates(key=p[:, 0], value=p[:, 1]))


# compiled once per task shape, shared by the end, its KKT check and polish, and the SLSQP
# frontier
_ell = eqx.filter_jit(_flat_losses)
_jac = eqx.filter_jit(jax.jacobian(_flat_losses, argnums=1))
_hess = eqx.filter_jit(jax.hessian(_flat_losses, argnums=1))


def _rows(task):
    """The (2H, H*2*W) matrix of simplex row sums."""
    return np.kron(np.eye(2 * task.H), np.ones((1, task.W)))


def _project(x, W):
    """Clip SLSQP's iterate (bounds hold to its tolerance only) and renormalize each simplex."""
    p = np.clip(np.asarray(x, float).reshape(-1, W), 0.0, None)
    return (p / p.sum(-1, keepdims=True)).ravel()


def _one_blas_thread():
    """Run SLSQP's small LAPACK calls on one BLAS thread: waking the thread pool for 17x17
    systems costs far more than the work."""
    return threadpoolctl.threadpool_limits(limits=1, user_api="blas")


def _slsqp(task, x0, c, maxiter):
    """SLSQP on the simplices: the epigraph $\\min t$ s.t. $\\ell_p(x) \\le t$ (c None) or
    $\\min \\bar\\ell(x)$ s.t. $\\ell_p(x) \\le c$."""
    A = _rows(task)
    n = x0.size
    ell = lambda x: np.asarray(_ell(task, x))
    jac = lambda x: np.asarray(_jac(task, x))
    if c is None:
        y0 = np.append(x0, np.max(ell(x0)))
        e = np.eye(n + 1)[-1]
        ones = np.ones((len(ell(x0)), 1))
        fun, grad = (lambda y: y[-1]), (lambda y: e)
        ineq = dict(
            type="ineq",
            fun=lambda y: y[-1] - np.asarray(ell(y[:-1])),
            jac=lambda y: np.hstack([-np.asarray(jac(y[:-1])), ones]),
        )
        eq = dict(
            type="eq",
            fun=lambda y: A @ y[:-1] - 1,
            jac=lambda y: np.hstack([A, np.zeros((len(A), 1))]),
        )
        bounds = [(0.0, 1.0)] * n + [(-1e6, 1e6)]
    else:
        y0 = x0
        fun = lambda y: float(np.mean(ell(y)))
        grad = lambda y: np.asarray(jac(y)).mean(0)
        ineq = dict(
            type="ineq",
            fun=lambda y: c - np.asarray(ell(y)),
            jac=lambda y: -np.asarray(jac(y)),
        )
        eq = dict(type="eq", fun=lambda y: A @ y - 1, jac=lambda y: A)
        bounds = [(0.0, 1.0)] * n
    # imported here, not with the module: scipy.optimize adds 0.26 s to every process's start
    import scipy.optimize

    with _one_blas_thread():
        r = scipy.optimize.minimize(
            fun,
            y0,
            jac=grad,
            constraints=[ineq, eq],
            bounds=bounds,
            method="SLSQP",
            options=dict(maxiter=maxiter, ftol=1e-15),
        )
    return _project(r.x[:n], task.W)


def _simplex_starts(task, rng, n):
    """n starting gates on the simplices, every head and branch drawn independently (no
    symmetry between heads): a quarter near hard selections, the rest Dirichlet draws at
    concentrations 1, 0.3 and 0.1 (interior to near-vertex)."""
    H, W = task.H, task.W
    hard = list(itertools.product(range(selectable_offsets(W)), repeat=H))
    out = []
    for i in range(n):
        if i < n // 4:
            offsets = np.asarray(hard[rng.integers(len(hard))])
            p = np.stack(selection_one_hots(W, offsets, xp=np), axis=1)
            p = 0.9 * p + 0.1 * rng.dirichlet(np.ones(W), size=(H, 2))
        else:
            p = rng.dirichlet(np.full(W, (1.0, 0.3, 0.1)[i % 3]), size=(H, 2))
        out.append(p.ravel())
    return out


@dataclasses.dataclass(frozen=True)
class KKTCheck(Record):
    """First-order optimality of simplex gates for $\\min_p \\max_q \\ell_q(p)$ (the epigraph
    $\\min t$ s.t. $\\ell_q(p) \\le t$, each gate on its simplex).

    The Lagrangian $t + \\sum_q \\lambda_q (\\ell_q - t) + \\sum_j \\nu_j (\\mathbf 1^\\top p_j - 1)
    - \\sum_{j,r} \\mu_{j,r} p_{j,r}$ is stationary when $\\sum_q \\lambda_q = 1$ and
    $\\sum_q \\lambda_q \\nabla \\ell_q + \\nu_j = \\mu_{j,r}$; multipliers are fitted by least
    squares on the support (phases within `active_tol` of the worst, entries above
    `support_tol`), and $\\mu$ is read off the zero entries.

    **Fields:**
    - `phase_multipliers` $\\lambda$ (P,), `simplex_multipliers` $\\nu$ (H, 2), `bound_multipliers`
      $\\mu$ (H, 2, W).
    - `active`: which phases attain the worst loss (P,).
    - `stationarity`: largest gradient residual of the Lagrangian (and $|1 - \\sum \\lambda|$).
    - `dual_feasibility`: largest negative part of $\\lambda$ and $\\mu$.
    - `complementarity`: largest $|\\lambda_q (\\max \\ell - \\ell_q)|$ or $|\\mu_{j,r} p_{j,r}|$.
    - `primal_feasibility`: largest simplex violation.
    - `residual`: the largest of the four.
    """

    phase_multipliers: np.ndarray
    simplex_multipliers: np.ndarray
    bound_multipliers: np.ndarray
    active: np.ndarray
    stationarity: float
    dual_feasibility: float
    complementarity: float
    primal_feasibility: float
    residual: float

    def to_dict(self) -> dict:
        """The fields as a dict of lists and floats."""
        return {
            k: (v.tolist() if isinstance(v, np.ndarray) else v)
            for k, v in dataclasses.asdict(self).items()
        }


def kkt_check(
    task: Task,
    gates: SharedGates,
    *,
    active_tol: float = 1e-9,
    support_tol: float = 1e-12,
) -> KKTCheck:
    """The KKT residuals of shared gates as a candidate minimizer of the worst-phase loss.

    **Arguments:**
    - `task`: configuration (exact geometry).
    - `gates`: `SharedGates` of shape (H, W).
    - `active_tol`: phases within this of the worst loss count as active.
    - `support_tol`: gate entries above this are free (the others sit on their bound 0).

    **Returns:** a `KKTCheck`; a minimizer has `residual` near 0 (a local one too: the check is
    first order).

    ```python
    task = Task(L=8, S=4, H=2, N=4096, beta=4.0)
    kkt_check(task, minimax_end(task).gates).residual  # near 0
    kkt_check(task, uniform_gates(2, 4)).residual  # large: not a minimizer
    ```
    """
    W, H = task.W, task.H
    x = np.stack([np.asarray(gates.key, float), np.asarray(gates.value, float)], axis=1)
    if x.shape != (H, 2, W):
        raise ValueError(f"gates must have shape (H, W) = {(H, W)}, got {x.shape[::2]}")
    x = x.ravel()
    losses = np.asarray(_ell(task, x), float)
    G = np.asarray(_jac(task, x), float)  # (P, n)
    worst = losses.max()
    active = losses >= worst - active_tol
    free = x > support_tol
    row = np.arange(x.size) // W
    A = np.zeros((free.sum() + 1, active.sum() + 2 * H))
    A[:-1, : active.sum()] = G[active][:, free].T
    A[np.arange(free.sum()), active.sum() + row[free]] = 1.0
    A[-1, : active.sum()] = 1.0
    rhs = np.zeros(len(A))
    rhs[-1] = 1.0
    u = np.linalg.lstsq(A, rhs, rcond=None)[0]
    lam = np.zeros(len(losses))
    lam[active] = u[: active.sum()]
    nu = u[active.sum() :]
    mu = G.T @ lam + nu[row]
    stationarity = float(max(np.abs(mu[free]).max(initial=0.0), abs(1.0 - lam.sum())))
    dual = float(max(0.0, -lam.min(), -mu[~free].min(initial=0.0)))
    comp = float(max(np.abs(lam * (worst - losses)).max(), np.abs(mu * x).max()))
    primal = float(max(np.abs(_rows(task) @ x - 1).max(), max(0.0, -x.min())))
    return KKTCheck(
        phase_multipliers=lam,
        simplex_multipliers=nu.reshape(H, 2),
        bound_multipliers=mu.reshape(H, 2, W),
        active=active,
        stationarity=stationarity,
        dual_feasibility=dual,
        complementarity=comp,
        primal_feasibility=primal,
        residual=max(stationarity, dual, comp, primal),
    )


def _polish(task, x, kkt, steps=12):
    """Newton on the KKT equations of the active set (active phases equal to t, zero entries
    fixed, stationarity on the support): quadratic convergence from a nearby solver point."""
    act = np.flatnonzero(kkt.active)
    free = np.flatnonzero(x > 1e-12)
    k, a, rows = len(free), len(act), _rows(task)[:, free]

    def split(z):
        return z[:k], z[k], z[k + 1 : k + 1 + a], z[k + 1 + a :]

    def full(xs):
        out = np.zeros(x.size)
        out[free] = xs
        return out

    def residual(z):
        xs, t, lam, nu = split(z)
        g = np.asarray(_jac(task, full(xs)))[act][:, free]
        ell = np.asarray(_ell(task, full(xs)))[act]
        return np.concatenate(
            [g.T @ lam + rows.T @ nu, [1 - lam.sum()], ell - t, rows @ xs - 1]
        )

    def jacobian(z):
        xs, t, lam, nu = split(z)
        g = np.asarray(_jac(task, full(xs)))[act][:, free]
        hess = np.asarray(_hess(task, full(xs)))[act][:, free][:, :, free]
        n = len(z)
        J = np.zeros((n, n))
        J[:k, :k] = np.tensordot(lam, hess, axes=1)
        J[:k, k + 1 : k + 1 + a] = g.T
        J[:k, k + 1 + a :] = rows.T
        J[k, k + 1 : k + 1 + a] = -1.0
        J[k + 1 : k + 1 + a, :k] = g
        J[k + 1 : k + 1 + a, k] = -1.0
        J[k + 1 + a :, :k] = rows
        return J

    z = np.concatenate(
        [
            x[free],
            [np.max(np.asarray(_ell(task, x)))],
            kkt.phase_multipliers[act],
            kkt.simplex_multipliers.ravel(),
        ]
    )
    best, best_norm = z, np.abs(residual(z)).max()
    for _ in range(steps):
        z = z - np.linalg.lstsq(jacobian(z), residual(z), rcond=None)[0]
        norm = np.abs(residual(z)).max()
        if not np.isfinite(norm) or z[:k].min() < 0 or norm >= best_norm:
            break
        best, best_norm = z, norm
    return _project(full(best[:k]), task.W)


def _al_minimax(task, key, starts, scale, mus, max_steps):
    """The library's augmented Lagrangian on the epigraph, in logits (softmax gates), BFGS inner
    solves vmapped over random starts; returns the gates (starts, H, 2, W)."""
    b = _starts(key, starts, (task.H, 2, task.W), scale)
    ell = _ell_of(task, b)
    t = jnp.max(ell, axis=-1)
    lam = jnp.full(ell.shape, 1.0 / ell.shape[-1])
    for mu in mus:
        b, t = _al_solve(
            task,
            b,
            t,
            w_mean=0.0,
            w_t=1.0,
            c=0.0,
            epigraph=1.0,
            lam=lam,
            mu=mu,
            max_steps=max_steps,
        )
        lam = jnp.maximum(0.0, lam + mu * (_ell_of(task, b) - t[:, None]))
    return np.asarray(jax.nn.softmax(b, axis=-1), float)


@dataclasses.dataclass(frozen=True)
class FrontierEnd(Record):
    """The left end of the frontier: shared gates of least worst-phase loss, by two solvers.

    **Fields:**
    - `key`, `value`: the polished gates, (H, W) each (`gates` gives them as `SharedGates`).
    - `losses`: their per-phase losses (P,); `worst`, `mean`: max and mean.
    - `kkt`: the `KKTCheck` of the polished gates.
    - `slsqp_worst`, `al_worst`: the best worst-phase loss of each solver before polishing
      (SLSQP on the simplices; the augmented Lagrangian in logits).
    - `slsqp_hits`, `al_hits`: how many of the `starts` starts of each solver ended within `tol`
      of `worst`.
    - `agreed`: the solvers whose best is within `tol` of `worst`.
    - `starts`, `tol`: starts per solver, agreement tolerance.

    Read back by `from_dict`, the arrays are lists.
    """

    key: np.ndarray
    value: np.ndarray
    losses: np.ndarray
    worst: float
    mean: float
    kkt: KKTCheck
    slsqp_worst: float
    al_worst: float
    slsqp_hits: int
    al_hits: int
    agreed: tuple[str, ...]
    starts: int
    tol: float

    @property
    def gates(self) -> SharedGates:
        """The polished gates."""
        return SharedGates(key=jnp.asarray(self.key), value=jnp.asarray(self.value))

    def to_dict(self) -> dict:
        """The fields as a dict of lists and floats (`kkt` as its dict)."""
        out = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "kkt"
        }
        out = {
            k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in out.items()
        }
        out["agreed"] = list(self.agreed)
        out["kkt"] = self.kkt.to_dict()
        return out


def minimax_end(
    task: Task,
    *,
    starts: int = 24,
    seed: int = 0,
    scale: float = 4.0,
    mus=(1e2, 1e3, 1e4),
    max_steps: int = 2000,
    maxiter: int = 500,
    tol: float = 1e-6,
) -> FrontierEnd:
    """Shared gates of least worst-phase loss, $\\min_p \\max_q \\ell_q(p)$, by two solvers.

    (a) SLSQP on the simplices (the epigraph form $\\min t$ s.t. $\\ell_q(p) \\le t$, exact float64
    Jacobians) from `starts` starts drawn independently per head and branch (near hard
    selections and Dirichlet draws); (b) the augmented Lagrangian of the same epigraph in
    logits, BFGS inner solves (stages `mus`), from `starts` random logits. The better point of
    the two is polished by Newton on its active-set KKT equations and checked by `kkt_check`.

    **Arguments:**
    - `task`: configuration (exact geometry).
    - `starts`: starts per solver (>= 1).
    - `seed`: seed of both solvers' starts.
    - `scale`: standard deviation of the AL's starting logits (half the starts use scale/4).
    - `mus`, `max_steps`: the AL's penalty weights per stage and BFGS steps per stage.
    - `maxiter`: SLSQP iterations per start.
    - `tol`: agreement tolerance on the worst-phase loss (solvers and hits).

    **Returns:** a `FrontierEnd`.

    ```python
    end = minimax_end(Task(L=8, S=4, H=2, N=4096, beta=4.0))
    end.worst, end.mean, end.agreed, end.kkt.residual
    ```
    """
    if starts < 1:
        raise ValueError(f"starts must be >= 1, got {starts}")
    ell = lambda x: np.asarray(_ell(task, x))
    rng = np.random.default_rng(seed)
    xs = [_slsqp(task, x0, None, maxiter) for x0 in _simplex_starts(task, rng, starts)]
    al = _al_minimax(task, jax.random.key(seed), starts, scale, mus, max_steps)
    al = [g.ravel() for g in al]
    worst = lambda x: float(np.max(ell(x)))
    w_slsqp = np.array([worst(x) for x in xs])
    w_al = np.array([worst(x) for x in al])
    candidates = xs + al
    x = candidates[int(np.argmin(np.concatenate([w_slsqp, w_al])))]
    shape = (task.H, 2, task.W)
    as_gates = lambda x: SharedGates(
        key=jnp.asarray(x.reshape(shape)[:, 0]),
        value=jnp.asarray(x.reshape(shape)[:, 1]),
    )
    polished = _polish(task, x, kkt_check(task, as_gates(x), active_tol=1e-6))
    if worst(polished) <= worst(x) + 1e-12:
        x = polished
    kkt = kkt_check(task, as_gates(x))
    losses = np.asarray(ell(x), float)
    w = float(losses.max())
    best = {"SLSQP": float(w_slsqp.min()), "augmented Lagrangian": float(w_al.min())}
    p = x.reshape(shape)
    return FrontierEnd(
        key=p[:, 0],
        value=p[:, 1],
        losses=losses,
        worst=w,
        mean=float(losses.mean()),
        kkt=kkt,
        slsqp_worst=best["SLSQP"],
        al_worst=best["augmented Lagrangian"],
        slsqp_hits=int((w_slsqp <= w + tol).sum()),
        al_hits=int((w_al <= w + tol).sum()),
        agreed=tuple(k for k, v in best.items() if v <= w + tol),
        starts=starts,
        tol=tol,
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class UniformityFrontier(Record):
    """The frontier of `uniformity_frontier`: F at every bound, with the left end and the best
    mean.

    **Fields:**
    - `bounds` (B,): the bounds c; `mean`, `worst` (B,): the chosen point's mean and worst
      phase (NaN where no start was feasible); `gates` (B, H, 2, W): its gates (key, value).
    - `all_mean`, `all_worst` (B, starts): every augmented-Lagrangian start's end.
    - `end`: the left end (`FrontierEnd`); `min_worst`, `min_worst_mean`: its worst phase and
      mean.
    - `unconstrained_mean`, `unconstrained_worst`: the best plain mean and its worst phase.
    """

    bounds: np.ndarray
    mean: np.ndarray
    worst: np.ndarray
    gates: np.ndarray
    all_mean: np.ndarray
    all_worst: np.ndarray
    end: FrontierEnd
    min_worst: float
    min_worst_mean: float
    unconstrained_mean: float
    unconstrained_worst: float


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
    end: FrontierEnd | None = None,
) -> UniformityFrontier:
    """Lower-left frontier of (worst-phase loss, mean loss) over block-shared gates.

    For each bound c, minimizes $\\bar\\ell(b) = \\frac1P \\sum_p \\ell_p(b)$ subject to
    $\\ell_p(b) \\le c$ for every phase p, by the augmented Lagrangian
    $\\bar\\ell + \\frac{1}{2\\mu} \\sum_p (\\max(0, \\lambda_p + \\mu(\\ell_p - c))^2 -
    \\lambda_p^2)$,
    multipliers updated $\\lambda_p \\leftarrow \\max(0, \\lambda_p + \\mu(\\ell_p - c))$ after each
    stage (`mus`), each stage a BFGS solve warm-started from the last (logits floored at -10 below
    their maximum, so that no stage starts with vanishing gradients), from `starts` logits
    per bound:
    the left end (`minimax_end`) and the solution of best mean (below), then random ones. The
    best start whose worst phase is within `feasibility_tol` of c gives $F(c)$; the end itself,
    feasible for every $c \\ge$ its worst phase, is a candidate too (it is the frontier at the
    left end, where gates have exact zeros that logits only approach).

    Default bounds: `n_bounds` values from the end's worst phase (the least achievable, checked by
    two solvers and its KKT conditions) to the worst phase of the best unconstrained mean, or to
    `upper` if larger (a linear grid).

    **Arguments:**
    - `task`: configuration (exact geometry, W = S).
    - `bounds`: the bounds c, or None for the default grid.
    - `upper`: extend the default grid up to this worst-phase loss.
    - `extra_bounds`: bounds added to the default grid (e.g. the worst phases of points to place on
      the frontier); those below the smallest worst phase are dropped.
    - `n_bounds`, `starts`, `seed`, `scale`: default grid size, starts per bound (>= 2), PRNG seed,
      standard deviation of the starting logits (half the starts use scale/4).
    - `mus`, `max_steps`, `feasibility_tol`: penalty weights of the stages, BFGS steps per stage,
      tolerance on $\\max_p \\ell_p - c$.
    - `end`: the left end if already computed (`minimax_end(task, seed=seed)` otherwise).

    **Returns:** a `UniformityFrontier` (numpy arrays): `bounds` (B,), `mean` and `worst` (B,)
    of the chosen point (NaN where no start was feasible), `gates` (B, H, 2, W) of the chosen
    points (key, value), `all_mean`, `all_worst` (B, starts) of every AL start, `end` (the
    `FrontierEnd`), `min_worst` (its worst phase, with `min_worst_mean` its mean),
    `unconstrained_mean` and `unconstrained_worst` (best plain mean).

    ```python
    fr = uniformity_frontier(Task(L=8, S=4, H=2, N=4096, beta=4.0), starts=16)
    fr.bounds, fr.mean
    ```
    """
    if starts < 2:
        raise ValueError(
            f"starts must be >= 2 (the two end solutions start every bound), got {starts}"
        )
    shape = (task.H, 2, task.W)
    _, key_free, key_c = jax.random.split(jax.random.key(seed), 3)
    if end is None:
        end = minimax_end(task, seed=seed)

    P = len(end.losses)
    off = 1e6  # a bound no loss reaches: no constraint
    # the end's gates as logits; its exact zeros become very negative logits (floored at 1e-300
    # before the log), which `_unsaturate` lifts before each stage so their gradients live
    b_min = jnp.log(jnp.maximum(jnp.stack([end.key, end.value], axis=1), 1e-300))
    stage = lambda b, c, lam, mu: _al_solve(
        task,
        b,
        0.0,
        w_mean=1.0,
        w_t=0.0,
        c=c,
        epigraph=0.0,
        lam=lam,
        mu=mu,
        max_steps=max_steps,
    )[0]

    # best unconstrained mean: the right end of the default grid, and a start for every bound
    # (near the right end the constrained optimum is close to it)
    b = stage(_starts(key_free, starts, shape, scale), off, jnp.zeros(P), 1.0)
    ell = np.asarray(_ell_of(task, b), float)
    j = int(np.nanargmin(ell.mean(-1)))
    free_mean, free_worst = float(ell[j].mean()), float(ell[j].max())
    b_free = b[j]

    if bounds is None:
        bounds = np.linspace(
            end.worst, max(free_worst, -np.inf if upper is None else upper), n_bounds
        )
        extra = np.asarray(extra_bounds, float)
        bounds = np.unique(np.concatenate([bounds, extra[extra >= end.worst]]))
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
    # every (bound, start) pair is one lane of a single batched solve. The multipliers start at
    # 0; each stage raises them on phases above the bound and lowers them (not below 0) on the
    # others, the augmented-Lagrangian step that makes the bound hold without taking mu to
    # infinity (a stiff penalty alone would stall BFGS)
    lam = jnp.zeros((B * starts, P))
    for mu in mus:
        b = stage(_unsaturate(b), c, lam, mu)
        lam = jnp.maximum(0.0, lam + mu * (_ell_of(task, b) - c[:, None]))
    ell = np.asarray(_ell_of(task, b), float).reshape(B, starts, -1)
    all_mean, all_worst = ell.mean(-1), ell.max(-1)
    # the frontier at c is the best mean among the starts that actually meet the bound: an
    # infeasible start with a lower mean says nothing about F(c)
    feasible = all_worst <= bounds[:, None] + feasibility_tol
    masked = np.where(feasible, all_mean, np.inf)
    best = np.argmin(masked, axis=1)
    gates = np.asarray(jax.nn.softmax(b, axis=-1), float).reshape(B, starts, *shape)
    gates = gates[np.arange(B), best]
    mean = masked[np.arange(B), best]
    worst = all_worst[np.arange(B), best]
    # the end where it is feasible and no AL start did better
    use_end = (end.worst <= bounds + feasibility_tol) & (end.mean < mean)
    p_end = np.stack([end.key, end.value], axis=1)
    gates = np.where(use_end[:, None, None, None], p_end, gates)
    mean = np.where(use_end, end.mean, mean)
    worst = np.where(use_end, end.worst, worst)
    ok = np.isfinite(mean)
    return UniformityFrontier(
        bounds=bounds,
        mean=np.where(ok, mean, np.nan),
        worst=np.where(ok, worst, np.nan),
        gates=gates,
        all_mean=all_mean,
        all_worst=all_worst,
        end=end,
        min_worst=end.worst,
        min_worst_mean=end.mean,
        unconstrained_mean=free_mean,
        unconstrained_worst=free_worst,
    )


@dataclasses.dataclass(frozen=True)
class SimplexFrontier(Record):
    """The frontier of `simplex_frontier`: the `bounds` c (B,) and the best feasible point's
    `mean` and `worst` phase at each (B,), NaN where nothing was feasible."""

    bounds: np.ndarray
    mean: np.ndarray
    worst: np.ndarray


def simplex_frontier(
    task: Task,
    bounds,
    *,
    warm=(),
    starts: int = 2,
    seed: int = 0,
    maxiter: int = 500,
    feasibility_tol: float = 1e-9,
) -> SimplexFrontier:
    """The frontier $F(c)$ by a second solver: SLSQP on the simplices, continued along the bounds.

    Each bound (in increasing order) starts from the previous bound's solution, the `warm` gates
    and `starts` random draws (as in `minimax_end`); a start is kept if its worst phase is within
    `feasibility_tol` of c. Independent of the augmented Lagrangian of `uniformity_frontier`
    (other parametrization, other algorithm): use it to check that frontier.

    **Arguments:**
    - `task`: configuration (exact geometry).
    - `bounds`: the bounds c.
    - `warm`: `SharedGates` to start every bound from (e.g. the left end).
    - `starts`, `seed`, `maxiter`: random starts per bound, their seed, SLSQP iterations.
    - `feasibility_tol`: tolerance on $\\max_p \\ell_p - c$.

    **Returns:** a `SimplexFrontier` of numpy arrays `bounds`, `mean`, `worst` (B,) (NaN where
    nothing was feasible), in the order given.

    ```python
    task = Task(L=8, S=4, H=2, N=4096, beta=4.0)
    end = minimax_end(task)
    simplex_frontier(task, [end.worst + 0.01, 8.0], warm=[end.gates]).mean
    ```
    """
    rng = np.random.default_rng(seed)
    warm = [
        np.stack([np.asarray(g.key), np.asarray(g.value)], axis=1).ravel() for g in warm
    ]
    bounds = np.asarray(bounds, float)
    mean = np.full(len(bounds), np.nan)
    worst = np.full(len(bounds), np.nan)
    previous = []
    for i in np.argsort(bounds):
        best = None
        for x0 in previous + warm + _simplex_starts(task, rng, starts):
            x = _slsqp(task, x0, bounds[i], maxiter)
            losses = np.asarray(_ell(task, x), float)
            if losses.max() <= bounds[i] + feasibility_tol and (
                best is None or losses.mean() < best[1].mean()
            ):
                best = (x, losses)
        if best is not None:
            previous = [best[0]]
            mean[i], worst[i] = best[1].mean(), best[1].max()
    return SimplexFrontier(bounds=bounds, mean=mean, worst=worst)


def frontier_mean_at(frontier: UniformityFrontier, worst) -> np.ndarray:
    """$F(c)$ read off a computed frontier: the smallest frontier mean among bounds $c_i \\le c$.

    Since F is non-increasing, the value at the largest computed bound not above c is an upper bound
    on the true $F(c)$; below the smallest bound it is +inf (no point known).

    **Arguments:**
    - `frontier`: the `UniformityFrontier` (or any record with its `bounds` and `mean`).
    - `worst`: worst-phase losses c (array-like).

    **Returns:** an array of the shape of `worst`.
    """
    bounds, mean = (
        np.asarray(frontier.bounds, float),
        np.asarray(frontier.mean, float),
    )
    c = np.asarray(worst, float)
    below = bounds[None, :] <= c.reshape(-1, 1)
    vals = np.where(below & np.isfinite(mean)[None, :], mean[None, :], np.inf)
    return vals.min(axis=1).reshape(c.shape)


__all__ = [
    "FrontierEnd",
    "KKTCheck",
    "SimplexFrontier",
    "UniformityFrontier",
    "frontier_mean_at",
    "kkt_check",
    "mean_and_worst",
    "minimax_end",
    "simplex_frontier",
    "uniformity_frontier",
]
