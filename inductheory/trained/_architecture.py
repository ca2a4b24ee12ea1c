"""The paper's compressor family as switches (docs/trained.md, "The paper's compressor family").

`Architecture` describes one transformer of the retrieval task of `RetrievalTask`: its width,
heads, layers and, per layer, full attention or chunked KV compression with the compressor's
parts (payload maps, gate maps, position bias, K/V tying, window and stride). Every mode that
selects behaviour is an enum (`Attention`, `Gate`, `Payload`); the modules of
`trained/_modules.py` are built from it by `init_transformer`.

May import: `inductheory.model` (validation helpers).
"""

from __future__ import annotations

import enum

import equinox as eqx

from ..internal._modes import _mode
from ..model._task import _require_int


class Attention(enum.StrEnum):
    """What every layer's attention reads: the compressed cache or every position exactly."""

    COMPRESSED = "compressed"
    FULL = "full"


class Gate(enum.StrEnum):
    """How a compressor weights the W offsets of a window.

    - `SCALAR`: one softmax over the offsets per entry ($d_g = 1$).
    - `VECTOR`: one softmax per payload channel ($d_g = d_h$): each channel may prefer another
      offset.
    - `UNIFORM`: $\\alpha = 1/W$ (averaging, nothing to learn in the gates).
    """

    SCALAR = "scalar"
    VECTOR = "vector"
    UNIFORM = "uniform"


class Payload(enum.StrEnum):
    """Payload maps $C_i$: one per window offset, or one shared across offsets."""

    PER_OFFSET = "per-offset"
    SHARED = "shared"


class RetrievalTask(eqx.Module):
    """The retrieval task of the paper matrix: a context of T distinct tokens of a vocabulary of
    N on a cycle; the query is the token at position t (every t), the target its successor at
    t + 1 mod T; the phase of a query is t mod `period`.

    **Arguments** (keyword):
    - `T`: positions per context, >= 2.
    - `N`: vocabulary size, >= T (tokens of a context are distinct).
    - `period`: phases are positions mod `period` (the least common multiple of the strides
      compared, as the paper groups mod 24); a divisor of T.

    ```python
    RetrievalTask(T=96, N=128, period=24)
    ```
    """

    T: int = eqx.field(static=True, kw_only=True)
    N: int = eqx.field(static=True, kw_only=True)
    period: int = eqx.field(static=True, kw_only=True)

    def __check_init__(self):
        _require_int("T", self.T, 2)
        _require_int("N", self.N, self.T)
        _require_int("period", self.period, 1, self.T)
        if self.T % self.period:
            raise ValueError(f"period must divide T = {self.T}, got {self.period}")


class Architecture(eqx.Module):
    """One transformer of the paper's family (every field static: a distinct value is a distinct
    array shape or program).

    **Arguments** (keyword):
    - `d`: residual width.
    - `q_heads`, `kv_heads`: query heads grouped over KV heads (`q_heads` a multiple of
      `kv_heads`); `head_dim` $d_h$ per head.
    - `layers`: transformer blocks, >= 1.
    - `attention`: `Attention.COMPRESSED` (every layer reads the compressed cache) or
      `Attention.FULL` (the baseline: every layer attends to every position).
    - `first_layer_full`: with compressed attention, the first layer attends exactly instead
      (the uncompressed first layer of the relaxation ladder).
    - `W`, `S`: window and stride of the compressor (S <= W; S divides the task's T).
    - `gate`: `Gate.SCALAR`, `VECTOR` or `UNIFORM`.
    - `payload`: `Payload.PER_OFFSET` ($C_i$) or `SHARED` (one C).
    - `position_bias`: the per-offset gate bias $b_i$.
    - `tied`: keys and values stored once (one payload and one gate for both).
    - `local_window`: positions before each context position attended exactly beside the
      cache (0: none; the query, far from its source, never has one).
    - `norm`: pre-norm RMSNorm in every block and before the unembedding.
    - `mlp`: a GELU MLP of width 4d after the attention of every block.

    ```python
    Architecture(W=8, S=8)  # the paper's W8/S8 reference: 1 KV head, scalar gates
    Architecture(W=8, S=4, gate="vector", tied=True)  # the DeepSeek-style kernel
    ```
    """

    d: int = eqx.field(default=32, static=True, kw_only=True)
    q_heads: int = eqx.field(default=8, static=True, kw_only=True)
    kv_heads: int = eqx.field(default=1, static=True, kw_only=True)
    head_dim: int = eqx.field(default=8, static=True, kw_only=True)
    layers: int = eqx.field(default=2, static=True, kw_only=True)
    attention: Attention = _mode(Attention, "attention", Attention.COMPRESSED)
    first_layer_full: bool = eqx.field(default=False, static=True, kw_only=True)
    W: int = eqx.field(default=8, static=True, kw_only=True)
    S: int = eqx.field(default=8, static=True, kw_only=True)
    gate: Gate = _mode(Gate, "gate", Gate.SCALAR)
    payload: Payload = _mode(Payload, "payload", Payload.PER_OFFSET)
    position_bias: bool = eqx.field(default=True, static=True, kw_only=True)
    tied: bool = eqx.field(default=False, static=True, kw_only=True)
    local_window: int = eqx.field(default=0, static=True, kw_only=True)
    norm: bool = eqx.field(default=True, static=True, kw_only=True)
    mlp: bool = eqx.field(default=False, static=True, kw_only=True)

    def __check_init__(self):
        for name in ("d", "q_heads", "kv_heads", "head_dim", "layers", "W", "S"):
            _require_int(name, getattr(self, name), 1)
        _require_int("local_window", self.local_window, 0)
        if self.q_heads % self.kv_heads:
            raise ValueError(
                f"q_heads must be a multiple of kv_heads = {self.kv_heads}, "
                f"got {self.q_heads}"
            )
        if self.S > self.W:
            raise ValueError(f"S must be <= W = {self.W}, got {self.S}")
        for name in ("first_layer_full", "position_bias", "tied", "norm", "mlp"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.first_layer_full and self.attention is Attention.FULL:
            raise ValueError(
                "first_layer_full makes the first layer of a compressed model exact; "
                "attention='full' has every layer exact already"
            )
        if self.gate is Gate.UNIFORM and self.position_bias:
            raise ValueError(
                "position_bias biases the gate logits; gate='uniform' has none "
                "(set position_bias=False)"
            )

    @property
    def compressed_layers(self) -> tuple[bool, ...]:
        """Per layer, whether it reads the compressed cache."""
        compressed = self.attention is Attention.COMPRESSED
        return tuple(
            compressed and not (i == 0 and self.first_layer_full)
            for i in range(self.layers)
        )

    @property
    def learned_gates(self) -> bool:
        """Whether some layer's compressor has learned gates (what the gate measures need)."""
        return self.attention is Attention.COMPRESSED and self.gate is not Gate.UNIFORM

    def check_task(self, task: RetrievalTask) -> None:
        """A one-line `ValueError` where the compressor does not tile the task's cycle or its
        stride does not divide the phase period (with S = 16, phase 15 mod 24 would hold
        position 15, a block's boundary offset, and position 39, offset 7 of its block)."""
        if self.attention is Attention.COMPRESSED:
            if task.T % self.S:
                raise ValueError(f"S must divide T = {task.T}, got S={self.S}")
            if self.W > task.T:
                raise ValueError(f"W must be <= T = {task.T}, got W={self.W}")
            # phases are positions mod the period: a stride that does not divide it would mix
            # boundary and interior positions in one phase (refused, not regrouped, so that
            # every row of a report is measured on the same phases)
            if task.period % self.S:
                raise ValueError(
                    f"S must divide the phase period {task.period} (phases are positions "
                    f"mod {task.period}), got S={self.S}"
                )
        if self.local_window >= task.T:
            raise ValueError(
                f"local_window must be < T = {task.T}, got {self.local_window}"
            )


__all__ = ["Architecture", "Attention", "Gate", "Payload", "RetrievalTask"]
