"""Gate classes of docs/theory.md §5: oracle (per-context), block-shared, linear; hard
selections."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, final

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

# written once below the model: the memory estimates count the oracle's vertices with it
from ..internal._counts import selectable_offsets as selectable_offsets

# annotations only: the geometries import the gates (their logits take `OracleGates`)
if TYPE_CHECKING:
    from ._geometry import AbstractGeometry


# How far a key gate's sum may be from one per offset (float32 softmax rounding, with slack).
KEY_MASS_TOLERANCE = 1e-5


def _check_gate_pair(key, value, trailing: str) -> None:
    if key.shape != value.shape:
        raise ValueError(
            f"key and value gates must have the same shape, got {key.shape} and {value.shape}"
        )
    need = len(trailing.split())
    if key.ndim < need:
        raise ValueError(
            f"gates must have shape (..., {', '.join(trailing.split())}), got {key.shape}"
        )
    for name, p in (("key", key), ("value", value)):
        if isinstance(p, jax.core.Tracer):
            continue  # built inside jit from validated inputs (e.g. a softmax)
        p = np.asarray(p)
        # (sums are not checked: a knocked-out head's value weights are zero on purpose)
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            raise ValueError(
                f"{name} gates must be finite and >= 0 (probability vectors)"
            )
    if isinstance(key, jax.core.Tracer) or np.size(key) == 0:
        return
    # the key weights are a softmax's: each sums to one (a mass of 5 would scale the logits)
    sums = np.asarray(key, np.float64).sum(axis=-1)
    tolerance = KEY_MASS_TOLERANCE * key.shape[-1]
    if np.any(np.abs(sums - 1) > tolerance):
        worst = float(sums.ravel()[np.argmax(np.abs(sums - 1).ravel())])
        raise ValueError(
            f"key gates must sum to one over the offsets (probability vectors), got a sum "
            f"of {worst:.6g}"
        )


class AbstractGates(eqx.Module):
    """What a gate class provides (docs/theory.md §5). Losses, measures and flows accept any
    subclass.

    - `for_context(geometry, tokens)`: the simplex weights $p^K_{h,l}, p^V_{h,l}$ this class gives
      one context whose entries hold `tokens` (L, W) (`window_tokens`), as `OracleGates` (H, L, W).
    - `n_offsets`: the number W of offsets a gate weighs (W = S unless windows are set).
    - `parameter_shape`: the shape of the class's free parameters.
    - `symmetric_reduction(geometry)`: the block-shared gates the class reduces to on the symmetric
      subspace (exact closed forms apply to them), or None where it has none.

    Abstract/final pattern: this class holds only abstract members; a new gate class subclasses
    it, implements all four and is itself final (never subclassed).

    ```python
    g = uniform_gates(2, 4)
    isinstance(g, AbstractGates), g.n_offsets  # (True, 4)
    ```
    """

    @abc.abstractmethod
    def for_context(
        self, geometry: AbstractGeometry, tokens: Int[Array, "blocks offsets"]
    ) -> OracleGates:
        """The gates of one context."""

    @property
    @abc.abstractmethod
    def parameter_shape(self) -> tuple[int, ...]:
        """Shape of the free parameters."""

    @property
    @abc.abstractmethod
    def n_offsets(self) -> int:
        """Offsets per entry, W (= S without windows)."""

    @abc.abstractmethod
    def symmetric_reduction(
        self, geometry: AbstractGeometry | None = None
    ) -> SharedGates | None:
        """Block-shared gates equal to this class's gates in every context, or None."""


@final
class OracleGates(AbstractGates):
    """Compression weights of the oracle class: any probability vectors per context, head and block.

    $p^K_{h,l}, p^V_{h,l} \\in \\Delta^{W-1}$, free to depend on the context but never on the query.

    **Arguments:**
    - `key`: $p^K$, shape (..., H, L, W) (W = S without windows); leading axes index contexts.
    - `value`: $p^V$, same shape.
    """

    key: Float[Array, "*contexts heads blocks offsets"]
    value: Float[Array, "*contexts heads blocks offsets"]

    def __check_init__(self):
        _check_gate_pair(self.key, self.value, "heads blocks offsets")

    def for_context(
        self, geometry: AbstractGeometry, tokens: Int[Array, "blocks offsets"]
    ) -> OracleGates:
        del geometry, tokens
        return self

    @property
    def parameter_shape(self) -> tuple[int, ...]:
        """(2, ..., H, L, S): a key and a value simplex vector per head and block (per context)."""
        return (2,) + tuple(self.key.shape)

    @property
    def n_offsets(self) -> int:
        """Offsets per entry, W: the last axis of the gates."""
        return self.key.shape[-1]

    def symmetric_reduction(self, geometry: AbstractGeometry | None = None) -> None:
        """None: per-context gates are not shared by the blocks and contexts in general."""
        del geometry
        return None


@final
class SharedGates(AbstractGates):
    """Gates shared by every block and context: one (key, value) pair of simplex vectors per head.

    Under exact geometry the population loss of shared gates has the closed form of
    docs/theory.md §4
    (`population_loss`).

    **Arguments:**
    - `key`: $p^K_h$, shape (H, W) (W = S without windows).
    - `value`: $p^V_h$, same shape. Tied gates (one gate for both branches) have `key` = `value`.

    ```python
    g = hard_selection(4, [0, 2])  # head 0 selects offset 0, head 1 offset 2
    g.key.shape  # (2, 4)
    ```
    """

    key: Float[Array, "heads offsets"]
    value: Float[Array, "heads offsets"]

    def __check_init__(self):
        _check_gate_pair(self.key, self.value, "heads offsets")

    def for_blocks(self, L: int) -> OracleGates:
        """The same gates repeated for each of L blocks."""
        rep = lambda p: jnp.broadcast_to(
            p[..., None, :], p.shape[:-1] + (L, p.shape[-1])
        )
        return OracleGates(key=rep(self.key), value=rep(self.value))

    def for_context(
        self, geometry: AbstractGeometry, tokens: Int[Array, "blocks offsets"]
    ) -> OracleGates:
        del geometry
        return self.for_blocks(tokens.shape[0])

    @property
    def parameter_shape(self) -> tuple[int, ...]:
        """(2, H, S): a key and a value simplex vector per head."""
        return (2,) + tuple(self.key.shape)

    @property
    def n_offsets(self) -> int:
        """Offsets per entry, W: the last axis of the gates."""
        return self.key.shape[-1]

    def symmetric_reduction(
        self, geometry: AbstractGeometry | None = None
    ) -> SharedGates:
        """Shared gates are their own reduction."""
        del geometry
        return self


@final
class LinearGates(AbstractGates):
    """The linear gate class: $p^B_{h,l}(r) = \\mathrm{softmax}_r \\langle c^B_{h,r},
    x_{l,r} \\rangle$.

    One vector per head h, branch B in (K, V) and offset r, shared by all contexts and blocks.
    Under exact geometry `dim = N + 1` and inner products are gathers.

    **Arguments:**
    - `c`: shape (H, 2, W, d) (W = S without windows); `c[:, 0]` is the key branch, `c[:, 1]` the
      value branch.
    """

    c: Float[Array, "heads 2 offsets dim"]

    def __check_init__(self):
        if self.c.ndim != 4 or self.c.shape[1] != 2:
            raise ValueError(f"c must have shape (H, 2, S, d), got {self.c.shape}")

    def for_context(
        self, geometry: AbstractGeometry, tokens: Int[Array, "blocks offsets"]
    ) -> OracleGates:
        """The gates this class produces for one context."""
        p = jax.nn.softmax(geometry.offset_scores(self.c, tokens), axis=-1)
        return OracleGates(key=p[:, 0], value=p[:, 1])

    @property
    def parameter_shape(self) -> tuple[int, ...]:
        """(H, 2, S, d): one vector per head, branch and offset."""
        return tuple(self.c.shape)

    @property
    def n_offsets(self) -> int:
        """Offsets per entry, W: the third axis of c."""
        return self.c.shape[2]

    def symmetric_reduction(
        self, geometry: AbstractGeometry | None = None
    ) -> SharedGates | None:
        """On c in span(m) (exact geometry), every token scores $b = \\langle c, m
        \\rangle$: the gates are
        `shared_gates_from_logits(biases)`. None when c has components off span(m) (then the gates
        depend on the tokens)."""
        if geometry is None:
            raise ValueError(
                "the linear class's reduction needs the geometry (its mean embedding)"
            )
        m = geometry.mean_embedding()
        off = self.c - (self.c @ m / (m @ m))[..., None] * m
        if float(jnp.max(jnp.abs(off))) > 1e-12 * (
            1.0 + float(jnp.max(jnp.abs(self.c)))
        ):
            return None
        return shared_gates_from_logits(self.biases(geometry))

    def biases(self, geometry: AbstractGeometry) -> Float[Array, "heads 2 offsets"]:
        """$b_{h,B,r} = \\langle c^B_{h,r}, m \\rangle$, m the mean embedding (the static part)."""
        return self.c @ geometry.mean_embedding()

    def rotate(self, delta: int) -> LinearGates:
        """Gate rotation of docs/theory.md §9: $\\tilde c_{h,r} = c_{h,(r - \\delta) \\bmod W}$."""
        return LinearGates(c=rotate_offsets(self.c, delta, axis=2))


Gates = AbstractGates


def rotate_offsets(x: Array, delta: int, axis: int = -1) -> Array:
    """Gate rotation of docs/theory.md §9 along the offset `axis` of `x`: $\\tilde x_r =
    x_{(r - \\delta) \\bmod W}$, so what sat at offset r sits at (r + delta) mod W. Every gate
    rotation (`rotate_gates`, `LinearGates.rotate`, the trained model's `rotate_model_gates`)
    is this one. A concrete array is rolled on the host (exact; `jnp.roll` compiles a program for
    every shift), a traced one by `jnp.roll`."""
    if isinstance(x, jax.core.Tracer) or not isinstance(delta, (int, np.integer)):
        return jnp.roll(x, delta, axis=axis)
    return jax.device_put(np.roll(np.asarray(x), delta, axis=axis))


def hard_selection(W: int, offsets) -> SharedGates:
    """Shared gates where head h selects offset r_h: $p^K_h = e_{r_h}$, $p^V_h = e_{r_h + 1}$.

    **Arguments:**
    - `W`: offsets per gate (the window; S without windows).
    - `offsets`: one offset per head, each in 0..W-2.
    """
    raw = np.asarray(offsets).reshape(-1)
    if raw.size and not np.all(np.equal(np.mod(raw, 1), 0)):
        raise ValueError(f"selected offsets must be integers, got {raw.tolist()}")
    offsets = raw.astype(int)
    if offsets.size == 0:
        raise ValueError("offsets must name one offset per head (H >= 1)")
    bad = offsets[(offsets < 0) | (offsets > W - 2)]
    if bad.size:
        raise ValueError(
            f"selected offsets must lie in 0..W-2 = 0..{W - 2} (the value sits at "
            f"r+1), got {bad.tolist()}"
        )
    key, value = selection_one_hots(W, offsets)
    return SharedGates(key=key, value=value)


def value_offset(key_offset, tied: bool = False):
    """Where a hard selection reads its value when its key sits at offset r: r + 1 (the target
    is the token after the match), or r itself for a tied gate (one gate for both branches)."""
    return key_offset if tied else key_offset + 1


def selection_one_hots(W: int, offsets, tied: bool = False, xp=jnp):
    """The one-hot key and value gates of hard selections at `offsets` (an int array of any
    shape): $e_r$ and $e_{r+1}$ (`value_offset`), each of shape `offsets.shape + (W,)`, built with
    the array module `xp` (`jax.numpy` or `numpy`)."""
    eye = xp.eye(W)
    return eye[offsets], eye[value_offset(offsets, tied)]


def uniform_gates(H: int, W: int) -> SharedGates:
    """Shared gates averaging every offset: $p^K_h = p^V_h = 1/W$ (W = S without windows)."""
    p = jnp.full((H, W), 1.0 / W)
    return SharedGates(key=p, value=p)


def shared_gates_from_logits(logits: Float[Array, "heads 2 offsets"]) -> SharedGates:
    """Static gates $p = \\mathrm{softmax}(b)$ from biases b of shape (H, 2, S)."""
    p = jax.nn.softmax(logits, axis=-1)
    return SharedGates(key=p[:, 0], value=p[:, 1])


def selected_offsets(
    key: Float[Array, "*batch offsets"],
    value: Float[Array, "*batch offsets"],
    delta: float,
    tied: bool = False,
) -> Int[Array, "*batch"]:
    """The offset r a gate pair delta-selects, or -1: the one selection rule.

    A pair selects r when $p^K(r) \\ge 1 - \\delta$ and $p^V(r+1) \\ge 1 - \\delta$ (r <= W-2).
    A tied gate ($p^K = p^V$: key at r with value at r + 1 is impossible) selects the offset r
    where $p^K(r) \\ge 1 - \\delta$ (`concentrated_offsets` of the key). For delta < 1/2 at most
    one r qualifies.

    **Arguments:**
    - `key`, `value`: gate probabilities, any leading shape.
    - `delta`: tolerance in (0, 1/2).
    - `tied`: read the gates as tied (`value` is then not used).

    **Returns:** int array of the leading shape, -1 where no offset is selected.

    ```python
    g = hard_selection(4, [2, 0])
    selected_offsets(g.key, g.value, 1e-3)  # [2, 0]
    selected_offsets(g.key, g.key, 1e-3, tied=True)  # [2, 0]
    ```
    """
    if (
        not isinstance(delta, jax.core.Tracer) and not 0 < float(delta) < 0.5
    ):  # traced: validated upstream
        raise ValueError(f"delta must lie in (0, 1/2), got {delta}")
    if tied:
        return concentrated_offsets(key, delta)
    return first_offset((key[..., :-1] >= 1 - delta) & (value[..., 1:] >= 1 - delta))


def concentrated_offsets(
    p: Float[Array, "*batch offsets"], delta
) -> Int[Array, "*batch"]:
    """The first offset where one gate holds mass >= 1 - delta, or -1 (one branch read alone).

    **Example:** `concentrated_offsets(jnp.eye(3), 0.1)` is `[0, 1, 2]`.
    """
    return first_offset(p >= 1 - delta)


def first_offset(ok: Bool[Array, "*batch offsets"]) -> Int[Array, "*batch"]:
    """The first offset where `ok` holds, or -1 where it holds nowhere."""
    return jnp.where(jnp.any(ok, axis=-1), jnp.argmax(ok, axis=-1), -1)


def value_follows_key(
    key_offsets: Int[ArrayLike, "*batch heads"],
    value_offsets: Int[ArrayLike, "*batch heads"],
) -> Bool[np.ndarray, "*batch"]:
    """Whether every head selected a key offset r with its value at r + 1.

    **Arguments:**
    - `key_offsets`, `value_offsets`: selected offsets per head (-1: none), heads last.

    **Returns:** a boolean array over the leading axes.
    """
    key_offsets, value_offsets = np.asarray(key_offsets), np.asarray(value_offsets)
    return np.all(
        (key_offsets >= 0) & (value_offsets == value_offset(key_offsets)), axis=-1
    )


def distinct_within_blocks(
    offsets: Int[Array, "*batch heads blocks"],
) -> Bool[Array, "*batch"]:
    """Whether, in every block, the heads' selected offsets are pairwise distinct (and all >= 0).

    Traced under jit; a concrete array is compared with numpy (exact integer comparisons, and
    no compiled program per shape as jax's operations would need one by one)."""
    xp = jnp if isinstance(offsets, jax.core.Tracer) else np
    offsets = xp.asarray(offsets)
    same = offsets[..., :, None, :] == offsets[..., None, :, :]
    H = offsets.shape[-2]
    off_diag = ~xp.eye(H, dtype=bool)[:, :, None]
    return xp.all(offsets >= 0, axis=(-2, -1)) & ~xp.any(
        same & off_diag, axis=(-3, -2, -1)
    )
