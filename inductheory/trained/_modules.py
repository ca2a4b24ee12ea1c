"""The paper's transformer as composed equinox modules (docs/trained.md, "The paper's compressor
family"): compressors, attentions, blocks, the model.

A context of T tokens on a cycle has two residual streams: the context stream $h_u$ (position
u, u = 0..T-1), which builds each layer's memory, and the query stream $x_t$ (the query token
x_t, no position: a query far from its source finds it by content), read out into logits over
the vocabulary with target $x_{t+1 \\bmod T}$. Per layer:

- Compressed attention. Entry j of KV head k summarizes the window $h_{j,i} = h_{(jS + i) \\bmod
  T}$, i = 0..W-1: with payload maps $C^B_i$ ($d_h \\times d$), gate maps $Z^B_i$ ($d_g \\times
  d$) and position bias $b^B_i$, $s^B_{j,i} = Z^B_i h_{j,i} + b^B_i$, $\\alpha^B_{j,i} =
  \\mathrm{softmax}_i s^B_{j,i}$ (per channel when $d_g = d_h$) and
  $k_j = \\sum_i \\alpha^K_{j,i} \\odot C^K_i h_{j,i}$, $v_j$ likewise (tied: $v_j = k_j$).
  Query heads are grouped over the KV heads; both streams read the entries, the context stream
  also its `local_window` previous positions exactly (with a learned bias per slot).
- Full attention. Every position is an entry, $k_u = K h_u$, $v_u = V h_u$; the context stream
  adds a learned relative-position bias $\\pi_q[(t - u) \\bmod T]$ (so a previous-token head can
  form), the query stream attends by content alone.

The last block updates the query stream only (the context stream is read no further).

May import: `inductheory.model` (positions, cross-entropy), `._architecture`.
"""

from __future__ import annotations

import abc
import math
from typing import final

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from ..model._logits import cross_entropy
from ..model._positions import entry_positions, previous_positions
from ._architecture import Architecture, Gate, Payload, RetrievalTask

# Parameters of the paper model are float32 (its numbers check no theorem; the float64 of the
# theorem paths would double every step's cost).
DTYPE = jnp.float32
# Standard deviation of the initial gate maps, relative to 1/sqrt(d): gates start near uniform
# (the paper's Figure 5a: every gate near (W, W) at initialization).
GATE_INIT = 0.1


def _normal(key, shape, std):
    return (std * jax.random.normal(key, shape)).astype(DTYPE)


class CompressorSwitches(eqx.Module):
    """The compressor's parts that change no array shape, held as boolean arrays (never
    trained): models that differ only in them share one compiled program. Stacked models carry
    them with the seed axis, as every other array.

    - `learned_gates`: False for uniform averaging ($\\alpha = 1/W$: the gate logits are
      zeroed, so nothing reaches the gate maps).
    - `position_bias`: whether the biases $b^B_i$ enter the gate logits.
    - `tied`: values are the keys (the value branch's arrays stay, unused).
    """

    learned_gates: Bool[Array, ""]
    position_bias: Bool[Array, ""]
    tied: Bool[Array, ""]


class AbstractCompressor(eqx.Module):
    """Folds each window of a context stream into one key and one value per KV head."""

    stride: eqx.AbstractVar[int]
    window: eqx.AbstractVar[int]

    @abc.abstractmethod
    def gates(
        self, h: Float[Array, "positions d"]
    ) -> Float[Array, "branches kv entries offsets channels"]:
        """$\\alpha^B_{j,i}$, keys first (tied: the value branch repeats the keys'; channels
        1 for scalar gates)."""

    @abc.abstractmethod
    def payloads(
        self, h: Float[Array, "positions d"]
    ) -> Float[Array, "branches kv entries offsets head_dim"]:
        """$C^B_i h_{j,i}$ of every window slot (tied as `gates`)."""

    @abc.abstractmethod
    def __call__(self, h: Float[Array, "positions d"]):
        """Keys and values of the entries, each (kv, entries, head_dim)."""

    def windows(self, T: int) -> np.ndarray:
        """Positions of entry j's slots, (T / S, W) (static)."""
        return entry_positions(T // self.stride, self.stride, self.window)


def _payloads(payload, h, windows):
    if (
        payload.shape[2] == 1
    ):  # shared: project each position once, then gather the slots
        return jnp.einsum("bked,td->bkte", payload[:, :, 0], h)[:, :, windows]
    return jnp.einsum("bkwed,lwd->bklwe", payload, h[windows])


@final
class GatedCompressor(AbstractCompressor):
    """$\\alpha = \\mathrm{softmax}_i (Z_i h_{j,i} + b_i)$, with the `CompressorSwitches`
    applied: uniform averaging zeroes the logits, no position bias drops $b_i$, tying makes
    the values the keys.

    Arrays (2 branches, keys first; W' = W per-offset or 1 shared; g = 1 scalar or $d_h$
    vector): `payload` (2, kv, W', d_h, d), `gate_map` (2, kv, W, g, d), `gate_bias`
    (2, kv, W, g).
    """

    payload: Float[Array, "branches kv slots head_dim d"]
    gate_map: Float[Array, "branches kv offsets channels d"]
    gate_bias: Float[Array, "branches kv offsets channels"]
    switches: CompressorSwitches
    stride: int = eqx.field(static=True)
    window: int = eqx.field(static=True)

    def _alpha(self, h):
        windows = self.windows(h.shape[0])
        s = jnp.einsum("bkwgd,lwd->bklwg", self.gate_map, h[windows])
        s = s + jnp.where(self.switches.position_bias, self.gate_bias, 0)[:, :, None]
        # zero logits give exactly 1/W (every exp is 1), and no gradient to Z or b
        return jax.nn.softmax(jnp.where(self.switches.learned_gates, s, 0), axis=3)

    def _tie(self, branches):
        return jnp.stack(
            [branches[0], jnp.where(self.switches.tied, branches[0], branches[1])]
        )

    def _slots(self, h):
        return _payloads(self.payload, h, self.windows(h.shape[0]))

    def gates(self, h):
        return self._tie(self._alpha(h))

    def payloads(self, h):
        return self._tie(self._slots(h))

    def __call__(self, h):
        entries = jnp.sum(self._alpha(h) * self._slots(h), axis=3)
        # tied at the entries, where one tied branch's two reads meet (its gradient as one
        # branch read twice)
        return entries[0], jnp.where(self.switches.tied, entries[0], entries[1])


def _weights(q, keys, bias=None, local=None):
    """The attention weights of `_read`, (K, Q / K, n, M [+ w]): over the M entries, then the w
    exact local slots (slot i: the position i + 1 before the query)."""
    Q, n, e = q.shape
    K = keys.shape[0]
    qg = q.reshape(K, Q // K, n, e) / math.sqrt(e)
    s = jnp.einsum("kgne,kme->kgnm", qg, keys)
    if bias is not None:
        s = s + bias.reshape(K, Q // K, n, -1)
    if local is not None:
        lk, lb = local[0], local[2]
        near = jnp.einsum("kgne,knwe->kgnw", qg, lk) + lb.reshape(K, Q // K, 1, -1)
        s = jnp.concatenate([s, near], axis=-1)
    return jax.nn.softmax(s, axis=-1)


def _read(q, keys, values, bias=None, local=None):
    """Grouped-query attention: q (Q, n, e) over keys/values (K, M, e), query head j reading KV
    head j // (Q / K); `bias` (Q, n, M); `local` = (keys, values, bias) of per-query exact
    entries, (K, n, w, e) twice and (Q, w). Returns (Q, n, e)."""
    Q, n, e = q.shape
    M = keys.shape[1]
    a = _weights(q, keys, bias, local)
    out = jnp.einsum("kgnm,kme->kgne", a[..., :M], values)
    if local is not None:
        out = out + jnp.einsum("kgnw,knwe->kgne", a[..., M:], local[1])
    return out.reshape(Q, n, e)


class AbstractAttention(eqx.Module):
    """One layer's attention: a memory built from the context stream, read by both streams."""

    query: eqx.AbstractVar[Float[Array, "q_heads head_dim d"]]
    output: eqx.AbstractVar[Float[Array, "d q_heads head_dim"]]

    @abc.abstractmethod
    def memory(self, h: Float[Array, "positions d"]):
        """Keys and values, each (kv, entries, head_dim)."""

    @abc.abstractmethod
    def read_context(self, h, memory) -> Float[Array, "q_heads positions head_dim"]:
        """Every context position's heads over the memory (and what else it sees)."""

    def read_query(self, x, memory) -> Float[Array, "q_heads queries head_dim"]:
        """Every query's heads over the memory, by content alone."""
        return _read(self._queries(x), *memory)

    def _queries(self, z):
        return jnp.einsum("qed,nd->qne", self.query, z)

    def project(self, heads) -> Float[Array, "n d"]:
        """$O$ applied to the concatenated heads."""
        return jnp.einsum("dqe,qne->nd", self.output, heads)


@final
class CompressedAttention(AbstractAttention):
    """Attention over the compressed cache (module docstring); `local_key`, `local_value`
    (kv, d_h, d) and `local_bias` (Q, w) exist when the context stream sees its w previous
    positions exactly."""

    compressor: AbstractCompressor
    query: Float[Array, "q_heads head_dim d"]
    output: Float[Array, "d q_heads head_dim"]
    local_key: Float[Array, "kv head_dim d"] | None
    local_value: Float[Array, "kv head_dim d"] | None
    local_bias: Float[Array, "q_heads local"] | None

    def memory(self, h):
        return self.compressor(h)

    def _local(self, h):
        if self.local_bias is None:
            return None
        T, w = h.shape[0], self.local_bias.shape[1]
        near = previous_positions(np.arange(T), w, T)  # (T, w)
        lk = jnp.einsum("ked,td->kte", self.local_key, h)[:, near]
        lv = jnp.einsum("ked,td->kte", self.local_value, h)[:, near]
        return lk, lv, self.local_bias

    def read_context(self, h, memory):
        return _read(self._queries(h), *memory, local=self._local(h))

    def context_weights(
        self, h: Float[Array, "positions d"], memory
    ) -> Float[Array, "q_heads positions slots"]:
        """The context stream's attention weights of every query head at every position: over
        the compressed entries (T / S), then the `local_window` exact slots (slot i: the
        position i + 1 before)."""
        a = _weights(self._queries(h), memory[0], local=self._local(h))
        return a.reshape(-1, *a.shape[2:])


@final
class FullAttention(AbstractAttention):
    """Exact attention over every position; `relative_bias` (Q, T) biases the context stream's
    scores by $\\pi_q[(t - u) \\bmod T]$."""

    key: Float[Array, "kv head_dim d"]
    value: Float[Array, "kv head_dim d"]
    query: Float[Array, "q_heads head_dim d"]
    output: Float[Array, "d q_heads head_dim"]
    relative_bias: Float[Array, "q_heads positions"]

    def memory(self, h):
        return (
            jnp.einsum("ked,td->kte", self.key, h),
            jnp.einsum("ked,td->kte", self.value, h),
        )

    def read_context(self, h, memory):
        T = h.shape[0]
        lag = (np.arange(T)[:, None] - np.arange(T)[None, :]) % T
        return _read(self._queries(h), *memory, bias=self.relative_bias[:, lag])


class BlockTrace(eqx.Module):
    """What one block computed on one context: its normed context stream `normed` (T, d), the
    input of its compressor, and its heads' reads before the output map, `query_heads` and
    `context_heads` (Q, T, d_h; the last block's context heads are None)."""

    normed: Float[Array, "positions d"]
    query_heads: Float[Array, "q_heads positions head_dim"]
    context_heads: Float[Array, "q_heads positions head_dim"] | None


def _ablate(heads, ablation, stream: int):
    """Heads with those of `ablation = (mask (Q,), means)` replaced by their mean output;
    `means` is (2, Q, d_h): the query stream's mean first, the context stream's second."""
    if ablation is None:
        return heads
    mask, means = ablation
    return jnp.where(mask[:, None, None], means[stream][:, None, :], heads)


@final
class Block(eqx.Module):
    """Pre-norm residual block: $z \\leftarrow z + O\\,\\mathrm{attn}(\\mathrm{norm}(z))$, then
    (optionally) $z \\leftarrow z + \\mathrm{MLP}(\\mathrm{norm}(z))$, on both streams."""

    attention: AbstractAttention
    attention_norm: eqx.nn.RMSNorm | None
    mlp: eqx.nn.MLP | None
    mlp_norm: eqx.nn.RMSNorm | None

    def forward(self, h, x, *, last: bool, ablation=None):
        """`(h, x, BlockTrace)`; `ablation = (mask, means)` mean-ablates the masked query heads
        in both streams (the paper's knockout), None for the model itself."""
        hn, xn = _norm(self.attention_norm, h), _norm(self.attention_norm, x)
        memory = self.attention.memory(hn)
        query_heads = _ablate(self.attention.read_query(xn, memory), ablation, 0)
        x = x + self.attention.project(query_heads)
        context_heads = None
        if not last:
            context_heads = _ablate(
                self.attention.read_context(hn, memory), ablation, 1
            )
            h = h + self.attention.project(context_heads)
        if self.mlp is not None:
            x = x + jax.vmap(self.mlp)(_norm(self.mlp_norm, x))
            if not last:
                h = h + jax.vmap(self.mlp)(_norm(self.mlp_norm, h))
        return h, x, BlockTrace(hn, query_heads, context_heads)

    def __call__(self, h, x, *, last: bool):
        return self.forward(h, x, last=last)[:2]


def _norm(norm, z):
    return z if norm is None else jax.vmap(norm)(z)


@final
class Transformer(eqx.Module):
    """The paper's transformer on `RetrievalTask` (build it with `init_transformer`).

    ```python
    model = init_transformer(task, Architecture(W=8, S=8), jax.random.key(0))
    model.loss(contexts)  # mean cross-entropy over every query of every context
    ```
    """

    embedding: Float[Array, "vocab d"]
    blocks: tuple[Block, ...]
    final_norm: eqx.nn.RMSNorm | None
    unembedding: Float[Array, "vocab d"]

    def forward(self, tokens: Int[Array, " positions"], ablations=None):
        """`(x, traces)`: the normed query stream after the last block (T, d; query t holds
        token t) and each block's `BlockTrace`. `ablations`, one per block (None or `(mask,
        means)`, see `Block.forward`), mean-ablates heads."""
        h = x = self.embedding[tokens]
        traces = []
        for i, block in enumerate(self.blocks):
            h, x, trace = block.forward(
                h,
                x,
                last=i == len(self.blocks) - 1,
                ablation=None if ablations is None else ablations[i],
            )
            traces.append(trace)
        return _norm(self.final_norm, x), traces

    def streams(self, tokens: Int[Array, " positions"]):
        """The query stream after the last block, (T, d) (query t holds token t)."""
        return self.forward(tokens)[0]

    def logits(self, tokens: Int[Array, " positions"], ablations=None):
        """`(logits, log_multiplicity, target)` of every query of one context (the library's
        convention: `cross_entropy` and `top1_correct` apply): logits (T, N), target
        $x_{t+1 \\bmod T}$; `ablations` as in `forward`."""
        return self._read_out(self.forward(tokens, ablations)[0], tokens)

    def _read_out(self, x, tokens):
        z = x @ self.unembedding.T
        return z, jnp.zeros(z.shape[1], z.dtype), jnp.roll(tokens, -1)

    def query_losses(
        self, tokens: Int[Array, " positions"]
    ) -> Float[Array, " positions"]:
        """Cross-entropy of each query of one context."""
        return cross_entropy(*self.logits(tokens))

    def loss(self, contexts: Int[Array, "contexts positions"]) -> Float[Array, ""]:
        """Mean cross-entropy over the contexts and every query."""
        return jnp.mean(jax.vmap(self.query_losses)(contexts))

    def gate_probabilities(self, tokens: Int[Array, " positions"]) -> list:
        """Per layer, its compressor's $\\alpha$ on one context, (branches, kv, entries, W,
        channels); None for an exact layer."""
        return self._gates(self.forward(tokens)[1])

    def query_losses_and_gates(self, tokens: Int[Array, " positions"]):
        """`(query_losses(tokens), gate_probabilities(tokens))` from one forward pass."""
        x, traces = self.forward(tokens)
        return cross_entropy(*self._read_out(x, tokens)), self._gates(traces)

    def _gates(self, traces) -> list:
        return [
            block.attention.compressor.gates(trace.normed)
            if isinstance(block.attention, CompressedAttention)
            else None
            for block, trace in zip(self.blocks, traces)
        ]


def _compressor(key, task: RetrievalTask, arch: Architecture) -> AbstractCompressor:
    K, e, d, W = arch.kv_heads, arch.head_dim, arch.d, arch.W
    slots = W if arch.payload is Payload.PER_OFFSET else 1
    g = e if arch.gate is Gate.VECTOR else 1
    # a tied model draws one branch and repeats it (the value branch stays unused); uniform
    # averaging draws no gate maps: the draws of each model are those of its own parameters
    B = 1 if arch.tied else 2
    k_payload, k_gate = jax.random.split(key)
    payload = _normal(k_payload, (B, K, slots, e, d), 1 / math.sqrt(d))
    if arch.gate is Gate.UNIFORM:
        gate_map = jnp.zeros((B, K, W, g, d), DTYPE)
    else:
        gate_map = _normal(k_gate, (B, K, W, g, d), GATE_INIT / math.sqrt(d))
    if arch.tied:
        payload, gate_map = (jnp.concatenate([a, a]) for a in (payload, gate_map))
    switches = CompressorSwitches(
        learned_gates=jnp.asarray(arch.gate is not Gate.UNIFORM),
        position_bias=jnp.asarray(arch.position_bias),
        tied=jnp.asarray(arch.tied),
    )
    return GatedCompressor(
        payload=payload,
        gate_map=gate_map,
        gate_bias=jnp.zeros((2, K, W, g), DTYPE),
        switches=switches,
        stride=arch.S,
        window=W,
    )


def alibi_bias(heads: int, T: int) -> Float[Array, "heads positions"]:
    """The initial relative-position bias of full attention on the cycle: ALiBi's
    $-m_q \\min(\\ell, T - \\ell)$ at lag $\\ell = (t - u) \\bmod T$, slopes
    $m_q = 2^{-8(q+1)/Q}$ (learned from there): attention starts local, as under RoPE's decay.
    """
    lag = np.arange(T)
    distance = np.minimum(lag, T - lag)
    slopes = 2.0 ** (-8.0 * (np.arange(heads) + 1) / heads)
    return jnp.asarray(-slopes[:, None] * distance[None, :], DTYPE)


def _attention(key, task, arch: Architecture, compressed: bool) -> AbstractAttention:
    Q, K, e, d = arch.q_heads, arch.kv_heads, arch.head_dim, arch.d
    keys = jax.random.split(key, 5)
    query = _normal(keys[0], (Q, e, d), 1 / math.sqrt(d))
    # residual branches start small, so the first loss is near ln N
    output = _normal(keys[1], (d, Q, e), 1 / math.sqrt(Q * e * 2 * arch.layers))
    if not compressed:
        return FullAttention(
            key=_normal(keys[2], (K, e, d), 1 / math.sqrt(d)),
            value=_normal(keys[3], (K, e, d), 1 / math.sqrt(d)),
            query=query,
            output=output,
            relative_bias=alibi_bias(Q, task.T),
        )
    w = arch.local_window
    local = (None, None, None)
    if w:
        local = (
            _normal(keys[2], (K, e, d), 1 / math.sqrt(d)),
            _normal(keys[3], (K, e, d), 1 / math.sqrt(d)),
            jnp.zeros((Q, w), DTYPE),
        )
    return CompressedAttention(
        compressor=_compressor(keys[4], task, arch),
        query=query,
        output=output,
        local_key=local[0],
        local_value=local[1],
        local_bias=local[2],
    )


def init_transformer(
    task: RetrievalTask, arch: Architecture, key: PRNGKeyArray
) -> Transformer:
    """A transformer of `arch` on `task` at its initial parameters (float32).

    Token embeddings N(0, 1); query, key, value and payload maps N(0, 1/d); output maps
    N(0, 1/(2 n Q d_h)) with n layers; gate maps N(0, (`GATE_INIT`)^2/d) and zero biases
    (gates start near uniform); zero position biases; the unembedding N(0, 1/d^2), so the
    first loss is near ln N. Pure: vmaps over keys.

    **Arguments:**
    - `task`: the retrieval task (T, N).
    - `arch`: the architecture.
    - `key`: PRNG key.

    **Returns:** a `Transformer`.

    ```python
    task = RetrievalTask(T=96, N=128, period=24)
    model = init_transformer(task, Architecture(W=8, S=8), jax.random.key(0))
    ```
    """
    if not isinstance(arch, Architecture):
        raise ValueError(f"arch must be an Architecture, got {type(arch).__name__}")
    arch.check_task(task)
    d = arch.d
    k_emb, k_unemb, k_blocks = jax.random.split(key, 3)
    blocks = []
    for i, compressed in enumerate(arch.compressed_layers):
        k_att, k_mlp = jax.random.split(jax.random.fold_in(k_blocks, i))
        mlp = None
        if arch.mlp:
            mlp = eqx.nn.MLP(
                d, d, 4 * d, 1, activation=jax.nn.gelu, key=k_mlp, dtype=DTYPE
            )
        blocks.append(
            Block(
                _attention(k_att, task, arch, compressed),
                eqx.nn.RMSNorm(d, use_bias=False, dtype=DTYPE) if arch.norm else None,
                mlp,
                eqx.nn.RMSNorm(d, use_bias=False, dtype=DTYPE)
                if arch.norm and arch.mlp
                else None,
            )
        )
    return Transformer(
        embedding=_normal(k_emb, (task.N, d), 1.0),
        blocks=tuple(blocks),
        final_norm=eqx.nn.RMSNorm(d, use_bias=False, dtype=DTYPE)
        if arch.norm
        else None,
        unembedding=_normal(k_unemb, (task.N, d), 1.0 / d),
    )


__all__ = [
    "AbstractAttention",
    "AbstractCompressor",
    "Block",
    "BlockTrace",
    "CompressedAttention",
    "CompressorSwitches",
    "FullAttention",
    "GatedCompressor",
    "Transformer",
    "init_transformer",
]
