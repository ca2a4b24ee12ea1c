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
import numpy as np

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


# Seed of the stream's fixed bigram table (`RetrievalTask.bigram_successors`).
BIGRAM_SEED = 61


class RetrievalTask(eqx.Module):
    """The retrieval task of the paper matrix: a context of T tokens of a vocabulary of N on a
    cycle; the query is the token at position t (every t), the target its successor at
    t + 1 mod T; the phase of a query is t mod `period`.

    The context's tokens are T distinct tokens of the N (`vocab` None), or T tokens drawn
    independently and uniformly, with replacement, from the `vocab` = V fixed symbols 0..V-1
    (the model's vocabulary stays N): a query token that occurs several times has several
    candidate successors, and the best reader without position information is limited by that
    ambiguity (`inductheory.experiments.retrieval_ceilings`).

    **Arguments** (keyword):
    - `T`: positions per context, >= 2.
    - `N`: vocabulary size of the model, >= T with distinct tokens, >= `vocab` otherwise.
    - `period`: phases are positions mod `period` (the least common multiple of the strides
      compared, as the paper groups mod 24); a divisor of T.
    - `vocab`: None (distinct tokens) or the number V of symbols the context draws from with
      replacement, 2 <= V <= N.
    - `keys`: None, or a language-model-like stream (with `vocab`): the symbols 0..keys-1 are
      keys, each followed by a value drawn uniformly from the V symbols (a retrieval query:
      its target is found only in the context), every other symbol x by its fixed bigram
      successor G(x) (`bigram_successors`: a local target, the same in every context);
      1 <= keys < V. The first token is uniform over the V.

    ```python
    RetrievalTask(T=96, N=128, period=24)  # distinct tokens
    RetrievalTask(T=96, N=128, period=24, vocab=48)  # tokens repeat
    RetrievalTask(T=96, N=128, period=24, vocab=128, keys=16)  # mostly local targets
    ```
    """

    T: int = eqx.field(static=True, kw_only=True)
    N: int = eqx.field(static=True, kw_only=True)
    period: int = eqx.field(static=True, kw_only=True)
    vocab: int | None = eqx.field(default=None, static=True, kw_only=True)
    keys: int | None = eqx.field(default=None, static=True, kw_only=True)

    def __check_init__(self):
        _require_int("T", self.T, 2)
        if self.vocab is None:
            _require_int("N", self.N, self.T)
        else:
            _require_int("N", self.N, 2)
            _require_int("vocab", self.vocab, 2, self.N)
        if self.keys is not None:
            if self.vocab is None:
                raise ValueError(
                    "keys needs vocab (the stream draws symbols with replacement)"
                )
            _require_int("keys", self.keys, 1, self.vocab - 1)
        _require_int("period", self.period, 1, self.T)
        if self.T % self.period:
            raise ValueError(f"period must divide T = {self.T}, got {self.period}")

    def record(self) -> dict:
        """The task's fields as plain data, `vocab` and `keys` only where set: the record (and
        cache key) of the distinct-token task is what it was before tokens could repeat."""
        fields = {"T": self.T, "N": self.N, "period": self.period}
        extra = {"vocab": self.vocab, "keys": self.keys}
        return fields | {k: v for k, v in extra.items() if v is not None}

    def bigram_successors(self) -> np.ndarray:
        """The fixed bigram table G of the stream (`keys`), (V,) int32: G(x) is the symbol after
        x in one fixed random cyclic order of the V symbols (seeded by `BIGRAM_SEED` and V,
        the same for every seed and every run), so that from any symbol the chain of local
        successors reaches a key within V - keys steps."""
        if self.keys is None:
            raise ValueError("bigram_successors needs a stream task (keys set)")
        order = np.random.default_rng((BIGRAM_SEED, self.vocab)).permutation(self.vocab)
        table = np.empty(self.vocab, np.int32)
        table[order] = np.roll(order, -1)
        return table


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
