"""The paper's compressor family as composed modules (inductheory.trained._modules), checked
against literal loops written here, and its configuration's validation."""

from __future__ import annotations

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inductheory  # noqa: F401  (float64 switched on as in the library)
from inductheory.experiments._paper_matrix import (
    MATRIX,
    QUICK_SIZE,
    permutation_p_value,
    plateau_change,
)
from inductheory.trained._architecture import Architecture, RetrievalTask
from inductheory.trained._modules import (
    CompressedAttention,
    FullAttention,
    init_transformer,
)
from inductheory.trained._transformer_train import sample_retrieval_contexts

TASK = RetrievalTask(T=12, N=20, period=12)


def _compressor_loops(comp, arch, h, T):
    """Keys and values of every entry by explicit loops over KV heads, entries, offsets and
    channels (module docstring's formula), in numpy float64; gate kind, position bias and tying
    as `arch` says (not as the compressor's switches say)."""
    h = np.asarray(h, np.float64)
    payload = np.asarray(comp.payload, np.float64)
    _, K, slots, e, d = payload.shape
    B = 1 if arch.tied else 2
    W, S = comp.window, comp.stride
    L = T // S
    out = np.zeros((B, K, L, e))
    for b in range(B):
        for k in range(K):
            for j in range(L):
                pos = [(j * S + i) % T for i in range(W)]
                if arch.gate == "uniform":
                    alpha = np.full((W, e), 1.0 / W)
                else:
                    gm = np.asarray(comp.gate_map, np.float64)[b, k]  # (W, g, d)
                    s = np.stack([gm[i] @ h[pos[i]] for i in range(W)])  # (W, g)
                    if arch.position_bias:
                        s = s + np.asarray(comp.gate_bias, np.float64)[b, k]
                    s = s - s.max(axis=0)
                    alpha = np.exp(s) / np.exp(s).sum(axis=0)
                    alpha = np.broadcast_to(alpha, (W, e))
                for i in range(W):
                    C = payload[b, k, i if slots > 1 else 0]
                    out[b, k, j] += alpha[i] * (C @ h[pos[i]])
    return out[0], out[-1]


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"gate": "vector"},
        {"payload": "shared", "position_bias": False},
        {"gate": "uniform", "position_bias": False},
        {"tied": True, "gate": "vector", "S": 2},
        {"W": 6, "S": 3, "kv_heads": 2, "q_heads": 4},
    ],
)
def test_compressor_matches_loops(changes):
    arch = Architecture(
        **(dict(d=5, q_heads=2, kv_heads=1, head_dim=3, W=4, S=4) | changes)
    )
    model = init_transformer(TASK, arch, jax.random.key(1))
    comp = model.blocks[0].attention.compressor
    # random biases and large gate maps in both branches, so that what a switch turns off
    # (the position bias, the value branch of a tied model, the maps of uniform gates) would
    # move the result if it leaked through
    comp = eqx.tree_at(
        lambda c: (c.gate_bias, c.gate_map, c.payload),
        comp,
        (
            jax.random.normal(jax.random.key(2), comp.gate_bias.shape),
            30 * jax.random.normal(jax.random.key(4), comp.gate_map.shape),
            jax.random.normal(jax.random.key(5), comp.payload.shape),
        ),
    )
    h = jax.random.normal(jax.random.key(3), (TASK.T, arch.d)).astype(jnp.float32)
    keys, values = comp(h)
    want_k, want_v = _compressor_loops(comp, arch, h, TASK.T)
    np.testing.assert_allclose(keys, want_k, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(values, want_v, rtol=2e-5, atol=2e-6)
    if arch.tied:
        np.testing.assert_array_equal(keys, values)


def _attention_loops(att, h, x, T):
    """Both streams' head outputs (before O) by loops: query head q reads KV head
    q // (Q / K), softmax over the memory (plus the local window for the context stream)."""
    h, x = np.asarray(h, np.float64), np.asarray(x, np.float64)
    keys, values = (np.asarray(a, np.float64) for a in att.memory(jnp.asarray(h)))
    Qm = np.asarray(att.query, np.float64)
    Q, e, _ = Qm.shape
    K = keys.shape[0]

    def softmax(s):
        s = s - s.max()
        return np.exp(s) / np.exp(s).sum()

    def heads(z, context):
        out = np.zeros((Q, z.shape[0], e))
        for q in range(Q):
            g = q // (Q // K)
            for t in range(z.shape[0]):
                qv = Qm[q] @ z[t] / math.sqrt(e)
                s = list(keys[g] @ qv)
                vs = list(values[g])
                if context and isinstance(att, FullAttention):
                    bias = np.asarray(att.relative_bias, np.float64)[q]
                    s = [s[u] + bias[(t - u) % T] for u in range(T)]
                if context and isinstance(att, CompressedAttention):
                    if att.local_bias is not None:
                        lk = np.asarray(att.local_key, np.float64)[g]
                        lv = np.asarray(att.local_value, np.float64)[g]
                        lb = np.asarray(att.local_bias, np.float64)[q]
                        for slot in range(lb.shape[0]):
                            u = (t - 1 - slot) % T
                            s.append((lk @ h[u]) @ qv + lb[slot])
                            vs.append(lv @ h[u])
                a = softmax(np.array(s))
                out[q, t] = a @ np.array(vs)
        return out

    return heads(h, True), heads(x, False)


@pytest.mark.parametrize(
    "changes",
    [
        {"attention": "full", "kv_heads": 2},
        {"attention": "full", "kv_heads": 1},
        {"kv_heads": 2, "local_window": 3},
        {"kv_heads": 4},
    ],
)
def test_attention_matches_loops(changes):
    arch = Architecture(**(dict(d=6, q_heads=4, head_dim=3, W=4, S=4) | changes))
    model = init_transformer(TASK, arch, jax.random.key(4))
    att = model.blocks[0].attention
    leaves = ("relative_bias",) if isinstance(att, FullAttention) else ("local_bias",)
    for name in leaves:
        if getattr(att, name, None) is not None:
            att = eqx.tree_at(
                lambda a, n=name: getattr(a, n),
                att,
                jax.random.normal(jax.random.key(5), getattr(att, name).shape),
            )
    h = jax.random.normal(jax.random.key(6), (TASK.T, arch.d)).astype(jnp.float32)
    x = jax.random.normal(jax.random.key(7), (TASK.T, arch.d)).astype(jnp.float32)
    memory = att.memory(h)
    want_h, want_x = _attention_loops(att, h, x, TASK.T)
    np.testing.assert_allclose(
        att.read_context(h, memory), want_h, rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(att.read_query(x, memory), want_x, rtol=1e-4, atol=1e-5)


def test_scalar_gate_is_vector_gate_with_equal_channels():
    """A vector gate whose channels all carry the scalar gate's map gives the scalar model."""
    scalar = Architecture(d=5, q_heads=2, head_dim=3, W=4, S=4)
    model = init_transformer(TASK, scalar, jax.random.key(8))
    vector = init_transformer(
        TASK, dataclasses.replace(scalar, gate="vector"), jax.random.key(8)
    )
    for i in range(len(model.blocks)):
        comp = model.blocks[i].attention.compressor
        rep = lambda a: jnp.repeat(a, 3, axis=3)  # noqa: E731
        vector = eqx.tree_at(
            lambda m, i=i: m.blocks[i],
            vector,
            eqx.tree_at(
                lambda b: (
                    b.attention.compressor.gate_map,
                    b.attention.compressor.gate_bias,
                ),
                model.blocks[i],
                (rep(comp.gate_map), rep(comp.gate_bias)),
            ),
        )
    tokens = sample_retrieval_contexts(jax.random.key(9), TASK, 1)[0]
    np.testing.assert_allclose(
        vector.logits(tokens)[0], model.logits(tokens)[0], rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("row", MATRIX, ids=lambda r: r.name)
def test_every_row_starts_near_log_n(row):
    """Models are initialized so that the first loss is near ln N (within 0.05)."""
    size = QUICK_SIZE
    arch = row.architecture(size.reference)
    model = init_transformer(size.task, arch, jax.random.key(0))
    contexts = sample_retrieval_contexts(jax.random.key(1), size.task, 16)
    loss = float(eqx.filter_jit(lambda m, c: m.loss(c))(model, contexts))
    assert abs(loss - math.log(size.task.N)) < 0.05


def test_target_is_the_successor_on_the_cycle():
    tokens = sample_retrieval_contexts(jax.random.key(0), TASK, 1)[0]
    model = init_transformer(
        TASK, Architecture(d=4, q_heads=1, head_dim=2, W=4, S=4), jax.random.key(0)
    )
    _, _, target = model.logits(tokens)
    np.testing.assert_array_equal(target, np.asarray(tokens)[(np.arange(12) + 1) % 12])
    assert len(set(np.asarray(tokens).tolist())) == TASK.T


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(q_heads=6, kv_heads=4), "q_heads must be a multiple of kv_heads = 4"),
        (dict(W=4, S=8), "S must be <= W = 4"),
        (dict(gate="soft"), "gate must be one of scalar, vector, uniform"),
        (dict(payload="x"), "payload must be one of per-offset, shared"),
        (dict(attention="sparse"), "attention must be one of compressed, full"),
        (dict(gate="uniform"), "position_bias biases the gate logits"),
        (dict(attention="full", first_layer_full=True), "first_layer_full"),
        (dict(d=0), "d must be >= 1"),
        (dict(local_window=-1), "local_window must be >= 0"),
        (dict(tied=1), "tied must be a bool"),
    ],
)
def test_architecture_refuses_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        Architecture(**kwargs)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(T=12, N=10, period=12), "N must be >= 12"),
        (dict(T=12, N=20, period=5), "period must divide T = 12"),
    ],
)
def test_task_refuses_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RetrievalTask(**kwargs)


def test_architecture_refuses_a_stride_that_does_not_tile_the_task():
    with pytest.raises(ValueError, match="S must divide T = 12"):
        init_transformer(TASK, Architecture(W=5, S=5), jax.random.key(0))


def test_permutation_p_value_counts_inversions():
    """Kendall's tau-a of 5 items is 1 - 4 inv / 20 (inv: discordant pairs), and the orderings
    of 5 items with at most k inversions are 1, 1 + 4, 1 + 4 + 9, 1 + 4 + 9 + 15 of 120 for
    k = 0..3 (Mahonian numbers): tau >= 0.4 (k <= 3) happens by chance with p = 29/120."""
    reference = [5, 4, 3, 2, 1]
    cases = {0: [5, 4, 3, 2, 1], 2: [4, 3, 5, 2, 1], 3: [3, 4, 5, 2, 1]}
    for inv, values in cases.items():
        pairs = [(i, j) for i in range(5) for j in range(i + 1, 5)]
        assert sum(values[i] < values[j] for i, j in pairs) == inv
        want = sum([1, 4, 9, 15][: inv + 1]) / 120
        assert permutation_p_value(values, reference) == pytest.approx(want)
    assert permutation_p_value([1, 2, 3, 4, 5], reference) == pytest.approx(1.0)


def test_plateau_change_of_a_flat_and_a_falling_curve():
    flat = np.full((2, 100), 3.0)
    np.testing.assert_allclose(plateau_change(flat), 0.0)
    falling = np.tile(np.linspace(5, 1, 100), (1, 1))
    # last tenth mean minus the tenth ending at step 80: (steps 90..99) - (70..79)
    want = falling[0, 90:].mean() - falling[0, 70:80].mean()
    np.testing.assert_allclose(plateau_change(falling), [want])


def test_training_memory_counts_the_parameters_of_an_initialized_model(monkeypatch):
    """`training_bytes` traces one model's shapes; the bytes of a built model's trainable arrays
    (counted on real arrays) agree, and a run that cannot fit is refused before anything is
    built, naming the memory it needs."""
    from inductheory.internal import _memory
    from inductheory.trained._config import TrainConfig
    from inductheory.trained._transformer_train import (
        train_transformer,
        training_bytes,
    )

    task = RetrievalTask(T=24, N=32, period=24)
    arch = Architecture(W=4, S=4, d=16, kv_heads=2, q_heads=4)
    model = init_transformer(task, arch, jax.random.key(3))
    params = eqx.filter(model, eqx.is_inexact_array)
    built = sum(a.nbytes for a in jax.tree.leaves(params))
    config = TrainConfig(optimizer="adamw", steps=100, batch=8)
    estimate = training_bytes(task, arch, config, 5)
    assert estimate.parts["parameters"] == 5 * built
    assert estimate.parts["optimizer_moments"] == 2 * 5 * built
    monkeypatch.setenv(_memory.ENV_MAX_BYTES, str(estimate.total - 1))
    with pytest.raises(MemoryError, match="training 5 seeds needs about"):
        train_transformer(task, arch, config, 5)


@pytest.mark.parametrize(
    "arch",
    [
        Architecture(W=4, S=4, d=16),
        Architecture(W=4, S=2, d=16, gate="vector", tied=True, kv_heads=2),
        Architecture(W=4, S=4, d=16, gate="uniform", position_bias=False, mlp=True),
        Architecture(d=16, attention="full", kv_heads=8),
        Architecture(W=6, S=6, d=16, payload="shared", local_window=2),
    ],
)
def test_seeds_initialized_together_equal_each_seed_built_alone(arch):
    from inductheory.trained._transformer_train import _initial_models

    task = RetrievalTask(T=24, N=32, period=24)
    keys = jax.random.split(jax.random.key(7), 3)
    together = _initial_models(task, arch, keys)
    for i, key in enumerate(keys):
        alone = init_transformer(task, arch, key)
        mine = jax.tree.map(lambda a, i=i: a[i], eqx.filter(together, eqx.is_array))
        assert jax.tree.structure(mine) == jax.tree.structure(
            eqx.filter(alone, eqx.is_array)
        )
        for x, y in zip(
            jax.tree.leaves(mine), jax.tree.leaves(eqx.filter(alone, eqx.is_array))
        ):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "arch",
    [
        Architecture(W=4, S=4, d=16, kv_heads=2, q_heads=4),
        # the DeepSeek-style kernel: overlapping windows, vector gates, K/V tied
        Architecture(W=4, S=2, d=16, gate="vector", tied=True, kv_heads=2, q_heads=4),
        Architecture(attention="full", d=16, kv_heads=2, q_heads=4),
    ],
)
def test_the_compiled_chunk_trains_as_the_default_compilation(arch):
    """`training_program`'s chunk, compiled with its own choice of XLA's YNNPACK fusions and
    (full attention, on CPU) stepping one seed at a time, trains as the plain `eqx.filter_jit`
    of the chunk with every seed in one vmap: losses and parameters after 10 steps of 3 seeds
    agree up to float32 rounding (a choice of emission, for speed). Plain SGD: Adam's
    normalized step would turn a rounding difference in a near-zero gradient into a whole
    step."""
    import dataclasses

    from inductheory.trained._config import TrainConfig
    from inductheory.trained._transformer_train import (
        _CPU_PLANS,
        _initial_models,
        _Program,
        clipped,
        training_program,
    )

    task = RetrievalTask(T=24, N=32, period=24)
    config = TrainConfig(optimizer="sgd", lr=0.1, steps=10, batch=4, chunk=10)
    models = _initial_models(task, arch, jax.random.split(jax.random.key(5), 3))
    params, static = eqx.partition(models, eqx.is_inexact_array)
    program, run_chunk = training_program(task, arch, config)
    cpu = jax.default_backend() == "cpu"
    assert program.seed_group == (_CPU_PLANS[arch.attention][1] if cpu else None)
    opt_state = eqx.filter_vmap(clipped(program.optimizer).init)(params)
    rest = (params, opt_state, static, jax.random.key(6), jnp.arange(3), jnp.asarray(0))
    tuned = run_chunk(program, *rest)
    all_seeds = dataclasses.replace(program, seed_group=None)
    plain = eqx.filter_jit(_Program.run_chunk)(all_seeds, *rest)
    assert np.all(np.isfinite(np.asarray(plain[2])))
    for x, y in zip(
        jax.tree.leaves((tuned[0], tuned[2])), jax.tree.leaves((plain[0], plain[2]))
    ):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_query_outcomes_in_batches_equal_one_vmap_over_every_context():
    """`query_outcomes` takes the contexts `CONTEXT_BATCH` at a time (a remainder batch too):
    every context's correctness and loss equal those of one vmap over all of them, computed
    here from `Transformer.logits` directly: to the last bit in the full batches (the matrix's
    256 held-out contexts are 8 of them), to float32 rounding in the remainder (a batch of
    another size, which XLA may emit with other roundings)."""
    from inductheory.model._logits import cross_entropy, top1_correct
    from inductheory.trained._mechanisms import CONTEXT_BATCH, query_outcomes

    task = RetrievalTask(T=24, N=32, period=24)
    model = init_transformer(
        task, Architecture(W=4, S=4, d=16, kv_heads=2, q_heads=4), jax.random.key(4)
    )
    n = CONTEXT_BATCH + 9
    contexts = sample_retrieval_contexts(jax.random.key(8), task, n)

    def one(tokens):
        logits = model.logits(tokens)
        return top1_correct(*logits), cross_entropy(*logits)

    correct, losses = jax.jit(query_outcomes)(model, contexts)
    want_correct, want_losses = jax.jit(jax.vmap(one))(contexts)
    assert correct.shape == losses.shape == (n, task.T)
    np.testing.assert_array_equal(correct, want_correct)
    full = slice(0, CONTEXT_BATCH)
    np.testing.assert_array_equal(losses[full], want_losses[full])
    np.testing.assert_allclose(losses, want_losses, rtol=1e-6)


def test_rows_differing_in_switches_that_change_no_shape_share_one_compiled_program():
    """Uniform averaging, no position bias and K/V tying are masks on the reference's arrays
    (`CompressorSwitches`), so after the reference has trained, such a row compiles nothing
    but its own initialization (op by op, done first here): the training chunk and the
    held-out evaluation are the reference's programs. A row of another shape (vector gates)
    compiles its own."""
    from inductheory.internal._compiles import CompileCount
    from inductheory.trained._config import TrainConfig
    from inductheory.trained._transformer_train import (
        _initial_models,
        train_transformer,
    )

    task = RetrievalTask(T=24, N=32, period=24)
    base = Architecture(W=4, S=4, d=16, kv_heads=2, q_heads=4)
    config = TrainConfig(
        optimizer="adamw", lr=3e-3, steps=4, batch=4, chunk=4, eval_contexts=8
    )
    reference = train_transformer(task, base, config, 2)
    for changes in (
        dict(position_bias=False),
        dict(tied=True),
        dict(gate="uniform", position_bias=False),
    ):
        arch = dataclasses.replace(base, **changes)
        _initial_models(task, arch, jax.random.split(jax.random.key(1), 2))
        counter = CompileCount()
        run = train_transformer(task, arch, config, 2)
        assert counter.count().compiles == 0, changes
        assert not np.array_equal(run.loss, reference.loss), changes
    counter = CompileCount()
    train_transformer(task, dataclasses.replace(base, gate="vector"), config, 2)
    assert counter.count().compiles > 1
