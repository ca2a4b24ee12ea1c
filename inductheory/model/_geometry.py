"""Embedding geometries of docs/theory.md §3: exact (structured) and approximate (dense).

`AbstractGeometry` is the contract the losses, the oracle and the flows program against;
`ExactGeometry` and `DenseGeometry` are its two final implementations (the equinox abstract/final
pattern: abstract classes hold only abstract members and shared concrete methods, final classes
implement them and are never subclassed). Where the code paths differ (structured gathers or an
explicit embedding matrix), the geometry's own method decides, not an `isinstance` check.

Equinox 0.13 accepts the class keyword `strict=True` only as a legacy no-op, so the pattern is not
enforced at class creation; tests/test_abstract_final.py checks it for every gate class, dynamics
and geometry of the package.
"""

# No `from __future__ import annotations` here: equinox reads the `AbstractVar` annotations when
# the class is created and does not accept them as strings.

import abc
import math
from typing import ClassVar, final

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ..internal._counts import dimension_for_eps as dimension_for_eps
from ._gates import OracleGates
from ._logits import _with_outside_column, dense_logits, exact_logits
from ._positions import target_positions
from ._task import Task, _require_int, _require_real, traced_value, welch_bound

# Largest N for which ExactGeometry.embeddings() builds the dense N x (N+1) realization.
DENSE_EXACT_MAX_N = 8192
# Largest N*d (float64 entries) an approximate geometry may hold: 800 MB.
DENSE_MAX_ENTRIES = 100_000_000


class AbstractGeometry(eqx.Module):
    """What a geometry of docs/theory.md §3 provides: N token embeddings in R^d with
    $\\langle x_i, x_j \\rangle \\approx \\kappa + 1\\{i = j\\}$ up to `eps`.

    - `N`, `dim`, `kappa`, `eps`: vocabulary size, embedding dimension d, shared component and
      realized error.
    - `exchangeable_tokens`: class-level; True when the geometry treats every token alike by
      construction (a context's loss is unchanged by relabelling its tokens).
    - `offset_scores(c, tokens)`, `mean_embedding()`: the inner products the gate classes need.
    - `query_logits(task, gates, tokens)`: one context's logits on the path this geometry allows.
    - `context_basis(tokens)`: the same per-context model in the smallest basis this geometry has.
    - `context_coordinates(tokens, c)`, `context_readout(task, outputs, tokens)`: one context's
      embeddings and vectors in the fewest coordinates that keep its inner products, and the
      logits of output vectors given in them (the trained model's general path).
    - `context_bases(contexts)`: `context_basis` of every context of a sample, or None.
    - `for_task(task)`: this geometry with the task's (possibly traced) scalars.
    - `dense()`: the geometry as an explicit embedding matrix.

    A new geometry subclasses this and implements every abstract member.

    ```python
    geo = make_geometry(Task(L=4, S=3, H=1, N=64))
    isinstance(geo, AbstractGeometry)  # True
    ```
    """

    N: eqx.AbstractVar[int]
    dim: eqx.AbstractVar[int]
    kappa: eqx.AbstractVar[Float[Array, ""]]
    eps: eqx.AbstractVar[float | Float[Array, ""]]
    exchangeable_tokens: eqx.AbstractClassVar[bool]

    @abc.abstractmethod
    def offset_scores(
        self,
        c: Float[Array, "*batch offsets dim"],
        tokens: Int[Array, "blocks offsets"],
    ) -> Float[Array, "*batch blocks offsets"]:
        """$\\langle c_r, x_{t_{l,r}} \\rangle$ for every block l and offset r of a context."""

    @abc.abstractmethod
    def mean_embedding(self) -> Float[Array, " dim"]:
        """$m = \\frac1N \\sum_i x_i$."""

    @abc.abstractmethod
    def query_logits(
        self, task: Task, gates: OracleGates, tokens: Int[Array, "blocks offsets"]
    ):
        """Logits of one context whose entries hold `tokens` under `gates` (`OracleGates`).

        **Returns:** `(logits, log_multiplicity, target)` as `exact_logits` / `dense_logits`.
        """

    @abc.abstractmethod
    def context_basis(self, tokens: Int[Array, "blocks offsets"]) -> "AbstractGeometry":
        """A geometry giving every logit of the context `tokens` exactly, at least as cheap."""

    @abc.abstractmethod
    def context_coordinates(
        self,
        tokens: Int[Array, " positions"],
        c: Float[Array, "*batch dim"] | None = None,
    ) -> tuple[Float[Array, "positions coords"], Float[Array, "*batch coords"] | None]:
        """`(X, c')`: the embeddings of the T tokens of one context (positions in order) and the
        vectors `c` in the fewest coordinates that keep every inner product
        $\\langle c, x_{t_u} \\rangle$ and $\\langle x_{t_u}, x_{t_v} \\rangle$ (c None: None)."""

    @abc.abstractmethod
    def context_readout(
        self,
        task: Task,
        outputs: Float[Array, "queries coords"],
        tokens: Int[Array, " positions"],
        unembedding: Float[Array, "vocab dim"] | None = None,
    ):
        """The logits of output vectors given in `context_coordinates`' coordinates, read out
        by the embeddings (tied) or by `unembedding`, one query per row of `outputs` in the
        order of `query_positions`.

        **Returns:** `(logits, log_multiplicity, target)` as `exact_logits` / `dense_logits`.
        """

    @abc.abstractmethod
    def context_bases(
        self, contexts: Int[Array, "contexts blocks offsets"]
    ) -> "AbstractGeometry | None":
        """`context_basis` of every context of a sample (leading context axis), or None when
        this geometry's own path is already as cheap."""

    @abc.abstractmethod
    def for_task(self, task: Task) -> "AbstractGeometry":
        """This geometry with the scalars of `task` (traced per lane in batched runs)."""

    @abc.abstractmethod
    def dense(self) -> "DenseGeometry":
        """The same geometry as an explicit embedding matrix."""


@final
class ExactGeometry(AbstractGeometry):
    """Exact geometry, eps = 0: $x_i = \\sqrt{\\kappa} e_0 + e_{i+1} \\in R^{N+1}$ (0-based
    token i).

    Never materializes the N x (N+1) embedding: $\\langle c, x_i \\rangle = \\sqrt{\\kappa}
    c_0 + c_{i+1}$
    is a gather, O(1) per slot, and memory is O(N) per gate vector.

    **Arguments:**
    - `N`: vocabulary size.
    - `kappa`: shared component, so that $\\langle x_i, x_j \\rangle = \\kappa + 1\\{i = j\\}$.

    ```python
    geo = ExactGeometry(N=10**6, kappa=1.0)
    geo.dim  # 1000001
    ```
    """

    N: int = eqx.field(static=True)
    kappa: Float[Array, ""]
    # every pair of distinct tokens has the same inner product
    exchangeable_tokens: ClassVar[bool] = True

    def __init__(self, N: int, kappa: float):
        self.N = _require_int("N", N, 1)
        kappa = _require_real("kappa", kappa)
        if kappa < 0:
            raise ValueError(f"kappa must be a finite number >= 0, got {kappa}")
        self.kappa = traced_value(kappa)

    @property
    def dim(self) -> int:
        """Embedding dimension d = N + 1."""
        return self.N + 1

    @property
    def eps(self) -> float:
        """Realized error: 0 (the Gram matrix is exact)."""
        return 0.0

    def offset_scores(
        self,
        c: Float[Array, "*batch offsets dim"],
        tokens: Int[Array, "blocks offsets"],
    ) -> Float[Array, "*batch blocks offsets"]:
        """$\\langle c_r, x_{t_{l,r}} \\rangle$ for every block l and offset r of a context,
        by gather."""
        S = tokens.shape[-1]
        return (
            jnp.sqrt(self.kappa) * c[..., None, :, 0]
            + c[..., jnp.arange(S)[None, :], 1 + tokens]
        )

    def mean_embedding(self) -> Float[Array, " dim"]:
        """$m = \\frac1N \\sum_i x_i = (\\sqrt\\kappa, 1/N, \\dots, 1/N)$."""
        return jnp.concatenate(
            [jnp.sqrt(self.kappa)[None], jnp.full((self.N,), 1.0 / self.N)]
        )

    def embeddings(self) -> Float[Array, "vocab dim"]:
        """The dense N x (N+1) realization, for small N only (tests and the dense path)."""
        if self.N > DENSE_EXACT_MAX_N:
            raise ValueError(
                f"N = {self.N} is too large to materialize the N x (N+1) exact embedding "
                f"(limit {DENSE_EXACT_MAX_N}); use the structured exact path"
            )
        eye = jnp.eye(self.N)
        return jnp.concatenate(
            [jnp.full((self.N, 1), jnp.sqrt(self.kappa)), eye], axis=1
        )

    def query_logits(
        self, task: Task, gates: OracleGates, tokens: Int[Array, "blocks offsets"]
    ):
        """The structured path, `exact_logits`: one column per context token and one for the
        N - L*S tokens outside it (the logits do not depend on the tokens' identities)."""
        del tokens
        return exact_logits(task, gates)

    def context_basis(self, tokens: Int[Array, "blocks offsets"]) -> "ExactGeometry":
        """The structured path is already O(L S) per query: returned unchanged."""
        del tokens
        return self

    def context_coordinates(
        self,
        tokens: Int[Array, " positions"],
        c: Float[Array, "*batch dim"] | None = None,
    ) -> tuple[Float[Array, "positions coords"], Float[Array, "*batch coords"] | None]:
        """T + 1 coordinates, the basis $e_0, e_{1+t_0}, \\dots, e_{1+t_{T-1}}$ (orthonormal: the
        tokens are distinct), in which $x_{t_u} = \\sqrt{\\kappa} e_0 + e_{1+t_u}$; c gathered at
        them. Never the N + 1 coordinates."""
        T = tokens.shape[0]
        X = jnp.concatenate(
            [jnp.full((T, 1), jnp.sqrt(self.kappa)), jnp.eye(T)], axis=1
        )
        if c is not None:
            c = c[..., jnp.concatenate([jnp.zeros(1, tokens.dtype), 1 + tokens])]
        return X, c

    def context_readout(
        self,
        task: Task,
        outputs: Float[Array, "queries coords"],
        tokens: Int[Array, " positions"],
        unembedding: Float[Array, "vocab dim"] | None = None,
    ):
        """Context token u gets $\\sqrt{\\kappa} o_0 + o_{1+u}$, a token outside $\\sqrt{\\kappa}
        o_0$: the common shift is dropped, as `exact_logits` does (one outside column; targets
        are context positions). The exact geometry is always tied (`unembedding` None)."""
        del tokens, unembedding
        target = target_positions(task.L, task.S, task.queries)
        return _with_outside_column(task, outputs[:, 1:], jnp.asarray(target))

    def context_bases(self, contexts: Int[Array, "contexts blocks offsets"]) -> None:
        """None: the structured path needs no per-context basis."""
        del contexts
        return None

    def for_task(self, task: Task) -> "ExactGeometry":
        """The exact geometry is (N, kappa): it takes the task's kappa, traced per lane."""
        return eqx.tree_at(lambda g: g.kappa, self, task.kappa)

    def dense(self) -> "DenseGeometry":
        """The same geometry as an explicit embedding matrix (small N only)."""
        return DenseGeometry(embeddings=self.embeddings(), kappa=self.kappa, eps=0.0)


@final
class DenseGeometry(AbstractGeometry):
    """Any geometry given by an explicit embedding matrix (one row per token).

    Approximate geometries (eps > 0) are dense: see `approximate_geometry`.

    **Arguments:**
    - `embeddings`: the N x d matrix of token embeddings.
    - `kappa`: the shared component the geometry is meant to have.
    - `eps`: its realized error $\\max |\\langle x, x' \\rangle - \\kappa - 1\\{x = x'\\}|$.
    """

    embeddings: Float[Array, "vocab dim"]
    kappa: Float[Array, ""]
    eps: Float[Array, ""]
    # a realization: nothing about its tokens is known beyond the measured eps
    exchangeable_tokens: ClassVar[bool] = False

    def __init__(self, embeddings, kappa, eps):
        # kappa and the measured eps are values, not part of the program: a new draw of the geometry
        # (another key or eps) with the same shape reuses compiled code
        self.embeddings = embeddings
        self.kappa = (
            kappa if isinstance(kappa, jax.core.Tracer) else traced_value(kappa)
        )
        self.eps = eps if isinstance(eps, jax.core.Tracer) else traced_value(eps)

    @property
    def N(self) -> int:
        """Vocabulary size: the rows of the embedding matrix."""
        return self.embeddings.shape[0]

    @property
    def dim(self) -> int:
        """Embedding dimension d: the columns of the embedding matrix."""
        return self.embeddings.shape[1]

    def offset_scores(
        self,
        c: Float[Array, "*batch offsets dim"],
        tokens: Int[Array, "blocks offsets"],
    ) -> Float[Array, "*batch blocks offsets"]:
        """$\\langle c_r, x_{t_{l,r}} \\rangle$ for every block l and offset r of a context."""
        return jnp.einsum("...rd,lrd->...lr", c, self.embeddings[tokens])

    def mean_embedding(self) -> Float[Array, " dim"]:
        """$m = \\frac1N \\sum_i x_i$, the mean of the rows."""
        return jnp.mean(self.embeddings, axis=0)

    def query_logits(
        self, task: Task, gates: OracleGates, tokens: Int[Array, "blocks offsets"]
    ):
        """The general path, `dense_logits`: one column per vocabulary token."""
        return dense_logits(task, self.embeddings, tokens, gates)

    def context_basis(self, tokens: Int[Array, "blocks offsets"]) -> "DenseGeometry":
        """The embeddings projected on the span of the context's L*S embeddings.

        Every vector the model forms for one context (query, keys, values, head outputs) lies in
        that span, and logits are inner products of vocabulary embeddings with such vectors. With
        U an orthonormal basis of the span, replacing every embedding x by $U^T x$ preserves all
        those inner products, hence every logit, exactly; the dense path then costs O(N L S) per
        query instead of O(N d).

        **Returns:** a `DenseGeometry` with N x (at most L*S) embeddings and the original eps.
        """
        X = self.embeddings[tokens.reshape(-1)]  # (LS, d)
        U, _ = jnp.linalg.qr(
            X.T
        )  # (d, min(d, LS)), orthonormal columns spanning the context
        return DenseGeometry(
            embeddings=self.embeddings @ U, kappa=self.kappa, eps=self.eps
        )

    def context_coordinates(
        self,
        tokens: Int[Array, " positions"],
        c: Float[Array, "*batch dim"] | None = None,
    ) -> tuple[Float[Array, "positions dim"], Float[Array, "*batch dim"] | None]:
        """The embedding space itself: the context's rows of the embedding matrix, c as it is."""
        return self.embeddings[tokens], c

    def context_readout(
        self,
        task: Task,
        outputs: Float[Array, "queries dim"],
        tokens: Int[Array, " positions"],
        unembedding: Float[Array, "vocab dim"] | None = None,
    ):
        """Every token's logit $\\langle u_x, o \\rangle$, u the embeddings (tied) or
        `unembedding`; targets are token ids."""
        U = self.embeddings if unembedding is None else unembedding
        target = tokens[target_positions(task.L, task.S, task.queries)]
        return outputs @ U.T, jnp.zeros(U.shape[0], outputs.dtype), target

    def context_bases(
        self, contexts: Int[Array, "contexts blocks offsets"]
    ) -> "DenseGeometry | None":
        """`context_basis` of every context of a sample, stacked: embeddings (M, N, r) with
        r = L*S; None when r > d/2 (batched per-context products then cost more than the
        projection saves).

        Computed once for a fixed sample, the bases make every dense logit cost O(r) instead of
        O(d) (the gates still need the embeddings themselves: their scores take c in R^d).

        ```python
        bases = geo.context_bases(contexts)  # then monte_carlo_loss(..., bases=bases)
        ```
        """
        if 2 * contexts[0].size > self.dim:
            return None
        return jax.vmap(self.context_basis)(contexts)

    def for_task(self, task: Task) -> "DenseGeometry":
        """A dense geometry is a fixed draw (its rows hold kappa): returned unchanged."""
        del task
        return self

    def dense(self) -> "DenseGeometry":
        """Already dense: itself."""
        return self


def measure_eps(
    embeddings: Float[Array, "vocab dim"], kappa: float, *, chunk: int = 2048
) -> float:
    """Realized geometry error of any embedding matrix.

    $\\varepsilon = \\max_{x, x'} |\\langle x, x' \\rangle - \\kappa - 1\\{x = x'\\}|$,
    computed in row
    chunks so that the N x N Gram matrix is never held at once.

    **Arguments:**
    - `embeddings`: N x d matrix, one row per token.
    - `kappa`: the shared component to subtract.
    - `chunk`: rows per block of the Gram matrix.

    **Returns:** eps as a Python float.

    ```python
    measure_eps(ExactGeometry(N=16, kappa=1.0).embeddings(), 1.0)  # 0.0
    ```
    """
    E = jnp.asarray(embeddings)
    N = E.shape[0]
    worst = 0.0
    for start in range(0, N, chunk):
        rows = E[start : start + chunk]
        gram = rows @ E.T - kappa
        gram = gram.at[
            jnp.arange(rows.shape[0]), start + jnp.arange(rows.shape[0])
        ].add(-1.0)
        worst = max(worst, float(jnp.max(jnp.abs(gram))))
    return worst


def _random_directions(
    key: PRNGKeyArray, N: int, dim: int
) -> Float[Array, "vocab dim"]:
    v = jax.random.normal(key, (N, dim))
    return v / jnp.linalg.norm(v, axis=1, keepdims=True)


def approximate_geometry(
    task: Task, key: PRNGKeyArray, *, max_tries: int = 20
) -> DenseGeometry:
    """Approximate geometry $x_i = \\sqrt\\kappa\\, u + v_i$ with random unit $v_i \\perp u$.

    With `task.d` given, draws the directions in R^{d-1} and reports the realized eps. With only
    `task.eps`, starts from `dimension_for_eps` and enlarges d by 25% until the realized eps is at
    most the target (deterministic for a given key).

    **Arguments:**
    - `task`: the configuration; must have `d` or `eps > 0`.
    - `key`: PRNG key for the random directions.

    **Returns:** a `DenseGeometry` whose `eps` is the measured value.
    """
    if task.exact:
        raise ValueError(
            "task has exact geometry (eps = 0, no d); use ExactGeometry or make_geometry"
        )
    N, kappa = task.vocabulary, float(task.kappa)
    d = task.d if task.d is not None else dimension_for_eps(N, task.eps)
    for attempt in range(max_tries):
        if N * d > DENSE_MAX_ENTRIES:
            raise ValueError(
                f"approximate geometry with N = {N} needs d = {d} for eps = {task.eps}: "
                f"N*d = {N * d} entries exceeds {DENSE_MAX_ENTRIES}; lower N or raise eps"
            )
        v = _random_directions(jax.random.fold_in(key, attempt), N, d - 1)
        E = jnp.concatenate([jnp.full((N, 1), math.sqrt(kappa)), v], axis=1)
        eps = measure_eps(E, kappa)
        if task.d is not None and task.eps and eps > task.eps:
            raise ValueError(
                f"d = {task.d} realizes eps = {eps:.4g} > the requested eps = {task.eps} "
                f"(Welch bound {welch_bound(N, task.d - 1):.3g}); raise d, or give only eps"
            )
        if task.d is not None or eps <= task.eps:
            return DenseGeometry(embeddings=E, kappa=kappa, eps=eps)
        d = math.ceil(1.25 * d)
    raise ValueError(
        f"could not reach eps <= {task.eps} within {max_tries} enlargements of d"
    )


def make_geometry(task: Task, key: PRNGKeyArray | None = None) -> AbstractGeometry:
    """The geometry a task asks for: `ExactGeometry` when exact, else `approximate_geometry`.

    ```python
    geo = make_geometry(Task(L=4, S=3, H=1, N=64, eps=0.3), jax.random.key(0))
    geo.eps <= 0.3  # True
    ```
    """
    if task.exact:
        return ExactGeometry(N=task.vocabulary, kappa=task.kappa)
    if key is None:
        raise ValueError(
            "an approximate geometry (eps > 0 or d given) needs a PRNG key"
        )
    return approximate_geometry(task, key)
