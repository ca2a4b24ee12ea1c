"""The validated task configuration of docs/theory.md §2–§3."""

from __future__ import annotations

import contextlib
import math
import numbers
import warnings

import equinox as eqx
import jax
import numpy as np
from jaxtyping import Array, Float, Int

from ..internal._counts import is_exact_geometry
from ..internal._warnings import warn_at_caller

# The query sets of docs/theory.md §10.
QUERY_SETS = ("within", "all")
# Largest vocabulary: the closed forms compute with N in float64, exact for integers up to 2^53.
N_MAX = 2**53
# Seeds: counts index int32 lanes; a base seed is a 64-bit integer (jax.random.key).
SEEDS_MAX = 2**31 - 1
SEED_MIN, SEED_MAX = -(2**63), 2**63 - 1


class TheoryAssumptionWarning(UserWarning):
    """A legal setting that lies outside an assumption of the paper's theorems."""


def _concrete(name: str, value):
    """A Python/NumPy scalar from `value`; 0-d arrays are unwrapped, tracers refused."""
    if isinstance(value, jax.core.Tracer):
        raise ValueError(
            f"{name} must be a concrete number: configurations are validated outside jit "
            "(to vary it under jit or vmap, build one configuration per value and "
            "stack them, see `sweep`)"
        )
    if isinstance(value, (np.ndarray, jax.Array)) and value.ndim == 0:
        return value.item()
    return value


def _require_int(name: str, value, minimum: int, maximum: int | None = None) -> int:
    value = _concrete(name, value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return int(value)


def _require_real(name: str, value) -> float:
    value = _concrete(name, value)
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
    ):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return float(value) + 0.0  # -0.0 is 0.0 (in JSON and in cache keys)


def traced_value(value, dtype=np.float64) -> np.ndarray:
    """A validated scalar stored as a 0-d array: a traced leaf under `eqx.filter_jit` and `vmap`."""
    return np.asarray(value, dtype=dtype)


def n_query_phases(S: int, queries: str = "within") -> int:
    """How many query phases a stride of S has: S-1 for `within` (phases 0..S-2, the successor
    in the same stride), S for `all` (the boundary phase S-1 too)."""
    if queries not in QUERY_SETS:
        raise ValueError(
            f"queries must be one of {', '.join(QUERY_SETS)}, got {queries!r}"
        )
    return S - 1 if queries == "within" else S


def welch_bound(N: int, dim: int) -> float:
    """Smallest possible coherence of `N` unit vectors in `R^dim`.

    $\\max_{i \\ne j} |\\langle v_i, v_j \\rangle| \\ge \\sqrt{(N - d) / (d (N - 1))}$ for
    $N > d$, and 0
    otherwise (orthonormal vectors exist).

    **Arguments:**
    - `N`: number of unit vectors.
    - `dim`: their dimension.

    **Returns:** the Welch lower bound on the realized eps.

    ```python
    welch_bound(4096, 255)  # ~0.06
    ```
    """
    if N <= dim:
        return 0.0
    return math.sqrt((N - dim) / (dim * (N - 1)))


class Task(eqx.Module):
    """The idealized induction task and its embedding geometry.

    L blocks of S offsets hold L*S distinct tokens out of a vocabulary of N; H heads each compress a
    block into one key and one value before the query is known; attention over blocks has inverse
    temperature `gamma`, the tied unembedding has scale `beta`; embeddings satisfy
    $|\\langle x, x' \\rangle - \\kappa - 1\\{x = x'\\}| \\le \\varepsilon$.

    Geometry: exact (`eps = 0`, the default) or approximate, given the dimension `d` of the
    embedding space, a target `eps`, or both (then `d` must be large enough for `eps`).

    Windows (docs/theory.md §10): the T = L*S context positions lie on a cycle; entry l = 0..L-1
    (one every S tokens, the stride) summarizes the W >= S positions l*S + o (mod T), o = 0..W-1,
    so gates weigh W offsets. Queries sit at positions t with target the token at t + 1 (mod T);
    the query's phase is t mod S. `queries="within"` asks at phases 0..S-2 (the successor lies in
    the same stride), `queries="all"` at every phase, including the boundary phase S-1. W = S with
    `within` is the task of the theorems, and reproduces §2–§9 exactly.

    **Arguments:**
    - `L`, `S`, `H`, `N`: blocks, offsets per block, heads, vocabulary size (L*S <= N <= 2^53).
    - `gamma`: attention inverse temperature, in (0, 1] for the theorems.
    - `beta`: unembedding scale, > 0.
    - `kappa`: shared component of the embeddings, >= 0 (> 0 for the theorems).
    - `eps`: target geometry error; `None` or 0 with `d=None` means exact geometry.
    - `d`: embedding dimension of the approximate geometry.
    - `W`: window, the positions each entry summarizes; S <= W <= L*S (default S).
    - `queries`: `"within"` (phases 0..S-2, the default) or `"all"` (phases 0..S-1).

    Raises `ValueError` for ill-defined settings and warns with `TheoryAssumptionWarning` for legal
    settings outside the theorems' assumptions (L < 4, S < 3, H >= S, gamma > 1, kappa = 0,
    W > S, queries = "all").

    ```python
    task = Task(L=8, S=4, H=2, N=4096, gamma=1.0, beta=4.0)
    task.n_queries  # 24
    ```
    """

    L: int = eqx.field(static=True)
    S: int = eqx.field(static=True)
    H: int = eqx.field(static=True)
    N: Int[Array, ""]
    gamma: Float[Array, ""]
    beta: Float[Array, ""]
    kappa: Float[Array, ""]
    eps: float | None = eqx.field(static=True)
    d: int | None = eqx.field(static=True)
    W: int = eqx.field(static=True)
    queries: str = eqx.field(static=True)

    def __init__(
        self,
        L: int,
        S: int,
        H: int,
        N: int,
        gamma: float = 1.0,
        beta: float = 1.0,
        kappa: float = 1.0,
        eps: float | None = None,
        d: int | None = None,
        W: int | None = None,
        queries: str = "within",
    ):
        self.L = _require_int("L", L, 2)
        self.S = _require_int("S", S, 2)
        self.H = _require_int("H", H, 1)
        W = self.S if W is None else _require_int("W", W, 1)
        if not self.S <= W <= self.L * self.S:
            raise ValueError(
                f"W must lie in S..L*S = {self.S}..{self.L * self.S} (a window covers "
                "its stride and "
                f"at most the whole cycle), got W={W}"
            )
        if queries not in QUERY_SETS:
            raise ValueError(
                f"queries must be one of {', '.join(QUERY_SETS)}, got {queries!r}"
            )
        self.W, self.queries = W, queries
        N = _require_int("N", N, 1, N_MAX)
        if N < self.L * self.S:
            raise ValueError(
                f"N must be >= L*S = {self.L * self.S} (contexts hold L*S distinct "
                f"tokens), got N={N}"
            )
        gamma = _require_real("gamma", gamma)
        if gamma <= 0:
            raise ValueError(f"gamma must be > 0, got {gamma}")
        beta = _require_real("beta", beta)
        if beta <= 0:
            raise ValueError(f"beta must be > 0, got {beta}")
        kappa = _require_real("kappa", kappa)
        if kappa < 0:
            raise ValueError(f"kappa must be >= 0, got {kappa}")
        if eps is not None:
            eps = _require_real("eps", eps)
            if not 0 <= eps < 1:
                raise ValueError(f"eps must lie in [0, 1), got {eps}")
            if eps == 0 and d is not None:
                raise ValueError(
                    "eps = 0 is the exact geometry, which has no dimension d; drop d "
                    "or give eps > 0"
                )
        if d is not None:
            d = _require_int("d", d, 2)
            if eps is not None and eps > 0:
                bound = welch_bound(N, d - 1)
                if bound > eps:
                    raise ValueError(
                        f"d = {d} is too small for eps = {eps}: N = {N} unit vectors in "
                        f"R^{d - 1} have coherence >= {bound:.4g} (Welch bound)"
                    )
        # Scalars are 0-d arrays: changing them reuses compiled programs (shape fields are static).
        self.N = traced_value(N, np.int64)
        self.gamma, self.beta, self.kappa = (
            traced_value(gamma),
            traced_value(beta),
            traced_value(kappa),
        )
        self.eps, self.d = eps, d
        self._warn_outside_theorems()

    def _warn_outside_theorems(self) -> None:
        broken = []
        if self.L < 4:
            broken.append(f"L >= 4 (got L={self.L}; A(w) need not be convex)")
        if self.S < 3:
            broken.append(f"S >= 3 (got S={self.S})")
        if self.H >= self.S:
            broken.append(f"H < S (got H={self.H}, S={self.S})")
        if float(self.gamma) > 1:
            broken.append(
                f"gamma <= 1 (got gamma={float(self.gamma)}; A(w) need not be convex)"
            )
        if float(self.kappa) == 0:
            broken.append("kappa > 0 (got kappa=0)")
        if self.W > self.S:
            broken.append(
                f"W = S (got W={self.W} > S={self.S}: overlapping windows, docs/theory.md §10)"
            )
        if self.queries == "all":
            broken.append(
                "queries within a stride (got queries='all': the boundary phase S-1, "
                "docs/theory.md §10)"
            )
        for assumption in broken:
            warn_at_caller(
                f"outside the theorems' assumptions: {assumption}",
                TheoryAssumptionWarning,
            )

    @property
    def exact(self) -> bool:
        """Whether the geometry is exact (eps = 0)."""
        return is_exact_geometry(self.eps, self.d)

    @property
    def T(self) -> int:
        """Context length L*S (positions on a cycle)."""
        return self.L * self.S

    @property
    def windowed(self) -> bool:
        """Whether the task leaves §2's block form (W > S or the boundary phase is queried)."""
        return self.W > self.S or self.queries == "all"

    @property
    def n_phases(self) -> int:
        """Number of query phases: S-1 (`within`) or S (`all`) (`n_query_phases`)."""
        return n_query_phases(self.S, self.queries)

    @property
    def n_queries(self) -> int:
        """Number of query slots per context, L*(S-1) (`within`) or L*S (`all`)."""
        return self.L * self.n_phases

    @property
    def n_outside(self) -> Int[Array, ""]:
        """Number of vocabulary tokens outside any one context, N - L*S (traced with N)."""
        return self.N - self.L * self.S

    @property
    def vocabulary(self) -> int:
        """N as a Python int, for the paths where N sets a shape (sampling, full flows, dense
        geometries); raises inside jit, where N is traced."""
        return int(self.N)

    def to_dict(self) -> dict:
        """Every parameter as a Python number, for JSON summaries and cache keys."""
        out = {
            "L": self.L,
            "S": self.S,
            "H": self.H,
            "N": int(self.N),
            "gamma": float(self.gamma),
            "beta": float(self.beta),
            "kappa": float(self.kappa),
            "eps": self.eps,
            "d": self.d,
        }
        # the window fields appear only when they leave the defaults, so the parameters (and cache
        # keys, stored figure data) of every W = S, `within` task are those of before
        # windows existed
        if self.W != self.S:
            out["W"] = self.W
        if self.queries != "within":
            out["queries"] = self.queries
        return out

    def replace(self, **changes) -> Task:
        """A new, validated task with some parameters changed."""
        return Task(**{**self.to_dict(), **changes})

    def require_exact(self, what: str) -> None:
        """Raise `ValueError` unless the geometry is exact: `what` relies on docs/theory.md §4."""
        if not self.exact:
            raise ValueError(
                f"{what} needs exact geometry (eps = 0); this task is approximate "
                f"(eps={self.eps}, d={self.d})"
            )


@contextlib.contextmanager
def assumptions_silenced():
    """A block in which `TheoryAssumptionWarning` is ignored (runs that leave the theorems'
    assumptions on purpose); every other warning is kept. Invalid settings still raise.

    ```python
    with assumptions_silenced():
        task = Task(L=8, S=4, H=2, N=4096, beta=4.0, queries="all")
    ```
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TheoryAssumptionWarning)
        yield


def quiet_task(**params) -> Task:
    """A `Task` built with `TheoryAssumptionWarning` silenced (sweeps that leave the regime
    on purpose).

    Invalid settings still raise `ValueError`.
    """
    with assumptions_silenced():
        return Task(**params)


def task_with(task: Task, **changes) -> Task:
    """`task` with some parameters changed (`Task.replace`), assumption warnings silenced (the
    caller chose them).

    **Example:** `task_with(Task(N=64), N=128, beta=2.0)`.
    """
    with assumptions_silenced():
        return task.replace(**changes)
