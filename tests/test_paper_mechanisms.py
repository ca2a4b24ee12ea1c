"""The paper's mechanism measures on its transformers (inductheory.trained._mechanisms), the
gate file they write and `inductheory gates --paper` reads, and the figure paper_mechanisms'
summaries: each against a computation written here (numpy loops, the model's own forward
pass, scipy)."""

from __future__ import annotations

import dataclasses
import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inductheory  # noqa: F401
from inductheory.cli import main
from inductheory.experiments import analyze_gates, load_paper_gates
from inductheory.experiments._paper_matrix import (
    MECHANISMS_VERSION,
    QUICK_SIZE,
    MatrixSize,
    RowMechanisms,
    matrix_row,
    row_parameters,
    write_gate_file,
)
from inductheory.figures import paper_mechanisms as fig
from inductheory.trained._architecture import Architecture, Gate, RetrievalTask
from inductheory.trained._config import TrainConfig
from inductheory.trained._mechanisms import (
    gate_offsets,
    knockout_heads,
    mean_head_reads,
    phase_curves,
    rotate_transformer_gates,
)
from inductheory.trained._modules import CompressedAttention, init_transformer
from inductheory.trained._train import seed_model
from inductheory.trained._transformer_train import (
    gate_trajectory_point,
    sample_retrieval_contexts,
    train_transformer,
)

TASK = RetrievalTask(T=16, N=24, period=8)
SMALL = Architecture(d=16, q_heads=2, kv_heads=1, head_dim=8, layers=2, W=4, S=4)


def _model(arch=SMALL, seed=0, scale=1.0):
    """An initialized model with its gate maps scaled (sharper gates than at init)."""
    model = init_transformer(TASK, arch, jax.random.key(seed))
    for i, block in enumerate(model.blocks):
        if not isinstance(block.attention, CompressedAttention):
            continue
        c = block.attention.compressor
        model = eqx.tree_at(
            lambda m, i=i: m.blocks[i].attention.compressor.gate_map,
            model,
            scale * c.gate_map,
        )
        if arch.position_bias:
            bias = jax.random.normal(jax.random.key(100 + i), c.gate_bias.shape)
            model = eqx.tree_at(
                lambda m, i=i: m.blocks[i].attention.compressor.gate_bias,
                model,
                bias.astype(c.gate_bias.dtype),
            )
    return model


def _contexts(n, seed=1):
    return sample_retrieval_contexts(jax.random.key(seed), TASK, n)


def _entropy_number(p):
    p = np.asarray(p, np.float64)
    return np.exp(-np.sum(np.where(p > 0, p * np.log(p), 0.0), axis=-1))


def test_gate_offsets_against_pooled_windows_in_numpy():
    model = _model(scale=30.0)
    contexts = _contexts(5)
    got = gate_offsets(model, contexts)
    # every context's gates from the model's own forward pass, pooled here
    per = [model.gate_probabilities(t) for t in contexts]
    for n, layer in enumerate([0, 1]):
        alpha = np.stack([np.asarray(p[layer], np.float64) for p in per])
        M, B, K, L, W, g = alpha.shape
        for b in range(B):
            for k in range(K):
                for c in range(g):
                    windows = alpha[:, b, k, :, :, c].reshape(M * L, W)
                    mean = windows.mean(axis=0)
                    assert got.peak[n, b, k, c] == np.argmax(mean)
                    np.testing.assert_allclose(
                        got.mass[n, b, k, c], mean.max(), rtol=1e-5
                    )
                    np.testing.assert_allclose(
                        got.static[n, b, k, c], _entropy_number(mean), rtol=1e-5
                    )
                    np.testing.assert_allclose(
                        got.avg[n, b, k, c], _entropy_number(windows).mean(), rtol=1e-5
                    )
    assert (
        float(jnp.min(got.avg)) < W - 0.1
    )  # sharp enough that the check means something


def test_knockout_of_a_last_layer_head_is_its_output_replaced_by_its_mean():
    """One layer, no norm: the query stream is e + sum_q O_q r_q, so mean-ablating head q
    subtracts O_q (r_q - mean_q), computed here from the forward pass's reads."""
    arch = dataclasses.replace(SMALL, layers=1, norm=False, q_heads=4, kv_heads=2)
    model = _model(arch, scale=10.0)
    contexts, prompts = _contexts(6), _contexts(7, seed=2)
    got = knockout_heads(model, contexts, prompts, TASK.period)
    reads = np.stack(
        [np.asarray(model.forward(t)[1][0].query_heads, np.float64) for t in prompts]
    )
    mean = reads.mean(axis=(0, 2))  # (Q, e)
    O = np.asarray(model.blocks[0].attention.output, np.float64)  # (d, Q, e)
    U = np.asarray(model.unembedding, np.float64)
    for q in range(4):
        acc = np.zeros(TASK.period)
        for t in contexts:
            x, traces = model.forward(t)
            r = np.asarray(traces[0].query_heads, np.float64)[q]  # (T, e)
            x = np.asarray(x, np.float64) - (r - mean[q]) @ O[:, q].T
            z = x @ U.T
            target = np.roll(np.asarray(t), -1)
            right = z[np.arange(TASK.T), target]
            z[np.arange(TASK.T), target] = -np.inf
            correct = right > z.max(axis=1)
            acc += correct.reshape(-1, TASK.period).mean(axis=0)
        np.testing.assert_allclose(
            np.asarray(got.ablated.accuracy[0, q]), acc / len(contexts), atol=1e-6
        )
    base = phase_curves(model, contexts, TASK.period)
    np.testing.assert_array_equal(np.asarray(got.base.accuracy), base.accuracy)


def test_mean_head_reads_are_the_reads_averaged_over_prompts_and_positions():
    model = _model()
    prompts = _contexts(4)
    means = mean_head_reads(model, prompts)
    traces = [model.forward(t)[1] for t in prompts]
    want_q = np.mean([np.asarray(tr[0].query_heads).mean(axis=1) for tr in traces], 0)
    want_c = np.mean([np.asarray(tr[0].context_heads).mean(axis=1) for tr in traces], 0)
    np.testing.assert_allclose(means[0][0], want_q, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(means[0][1], want_c, rtol=1e-5, atol=1e-7)
    assert not np.any(
        np.asarray(means[-1][1])
    )  # the last block's context stream is unread


def test_ablating_no_head_is_the_model():
    model = _model()
    contexts = _contexts(3)
    means = mean_head_reads(model, contexts)
    none = [(jnp.zeros(2, bool), m) for m in means]
    a = phase_curves(model, contexts, TASK.period, none)
    b = phase_curves(model, contexts, TASK.period)
    np.testing.assert_array_equal(a.accuracy, b.accuracy)
    np.testing.assert_array_equal(a.loss, b.loss)


def test_rotation_moves_a_bias_only_first_layer_gate_by_delta():
    """With zero gate maps the first layer's gate is softmax(b), the same in every window:
    rotating by delta moves its mass from offset o to o + delta (mod W)."""
    model = _model(scale=0.0)
    t = _contexts(1)[0]
    before = np.asarray(model.gate_probabilities(t)[0])
    for delta in (1, -1, 2, 3, 4):
        after = np.asarray(
            rotate_transformer_gates(model, delta).gate_probabilities(t)[0]
        )
        np.testing.assert_allclose(after, np.roll(before, delta, axis=3), rtol=1e-6)
    same = rotate_transformer_gates(rotate_transformer_gates(model, 3), -3)
    assert all(
        np.array_equal(a, b)
        for a, b in zip(jax.tree.leaves(same), jax.tree.leaves(model))
    )
    with pytest.raises(ValueError, match="delta must be an integer"):
        rotate_transformer_gates(model, 1.5)
    # with the payload maps: they move along their offset axis too, and W turns back
    moved = rotate_transformer_gates(model, 1, payloads=True)
    for i in (0, 1):
        before_c = np.asarray(model.blocks[i].attention.compressor.payload)
        after_c = np.asarray(moved.blocks[i].attention.compressor.payload)
        np.testing.assert_array_equal(after_c, np.roll(before_c, 1, axis=-3))
    full = rotate_transformer_gates(model, 4, payloads=True)
    assert all(
        np.array_equal(a, b)
        for a, b in zip(jax.tree.leaves(full), jax.tree.leaves(model))
    )


def _run(arch=SMALL, steps=6, seeds=2, points=0):
    config = TrainConfig(
        optimizer="adamw", lr=3e-3, steps=steps, batch=4, chunk=4, eval_contexts=8
    )
    return train_transformer(TASK, arch, config, seeds, trajectory_points=points)


def test_the_gate_trajectory_leaves_training_unchanged_and_ends_at_the_final_gates():
    plain, traced = _run(), _run(points=4)
    # the recording run is another compiled program, whose update XLA may round differently in
    # float32's last bit (the learning rate is a traced value); recording that fed back into
    # training (another batch, another key, a changed gate) would move the loss far more
    np.testing.assert_allclose(plain.loss, traced.loss, rtol=1e-6)
    np.testing.assert_array_equal(plain.measures.correct, traced.measures.correct)
    assert plain.trajectory is None
    assert traced.trajectory_steps.tolist() == [0, 1, 2, 3, 6]
    probe = sample_retrieval_contexts(
        jax.random.fold_in(jax.random.key(0), 4), TASK, 32
    )
    np.testing.assert_allclose(
        traced.trajectory[:, -1], gate_trajectory_point(traced.models, probe), rtol=1e-6
    )
    start = eqx.filter_vmap(lambda k: init_transformer(TASK, SMALL, k))(
        jax.random.split(jax.random.fold_in(jax.random.key(0), 1), 2)
    )
    np.testing.assert_allclose(
        traced.trajectory[:, 0], gate_trajectory_point(start, probe), rtol=1e-6
    )
    uniform = _run(
        dataclasses.replace(SMALL, gate=Gate.UNIFORM, position_bias=False), points=4
    )
    assert uniform.trajectory is None


def test_a_gate_file_written_by_the_model_reads_back_its_gates(tmp_path):
    """The file path (numpy float64 from Z, b and the windows) against `gate_offsets` (the
    model's forward pass), for every seed, KV head and branch."""
    arch = dataclasses.replace(SMALL, kv_heads=2, gate=Gate.VECTOR)
    run = _run(arch)
    size = MatrixSize(task=TASK, reference=arch, train=run.train_config, seeds=2)
    path = tmp_path / "gates.safetensors"
    write_gate_file(run, size, 0, path)
    contexts = sample_retrieval_contexts(
        jax.random.fold_in(jax.random.key(0), 3), TASK, 8
    )
    for seed in range(2):
        model = seed_model(run.models, seed)
        want = gate_offsets(model, contexts)
        for b, branch in enumerate(("key", "value")):
            logits = load_paper_gates(path, branch)
            for n, layer in enumerate([0, 1]):
                a = analyze_gates(
                    {"x": logits[f"seed{seed}.layer{layer}.{branch}"]},
                    window_axis=0,
                    stride=4,
                    branch=branch,
                )
                static = np.array([h.effective_offsets for h in a.heads])
                avg = np.array([h.average_offsets for h in a.heads])
                slot = np.array([h.argmax_slot for h in a.heads])
                np.testing.assert_allclose(
                    static, np.asarray(want.static[n, b]).reshape(-1), rtol=1e-4
                )
                np.testing.assert_allclose(
                    avg, np.asarray(want.avg[n, b]).reshape(-1), rtol=1e-4
                )
                np.testing.assert_array_equal(
                    slot, np.asarray(want.peak[n, b]).reshape(-1)
                )


def test_gates_paper_command_reads_a_file_from_the_matrix_command(tmp_path, capsys):
    path = tmp_path / "ref.safetensors"
    rc = main(
        [
            "matrix",
            "--quick",
            "--rows",
            "W8/S8 1 KV (reference)",
            "--seeds",
            "1",
            "--steps",
            "2",
            "--export-gates",
            str(path),
            "--quiet",
            "--json",
        ]
    )
    assert rc == 0 and path.exists()
    capsys.readouterr()
    assert main(["gates", str(path), "--paper", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # two layers, one KV head, one channel (scalar gates): two key gates over 8 slots
    assert len(out["heads"]) == 2 and out["window"] == 8
    assert main(["gates", str(path), "--paper", "--branch", "value", "--json"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--rows", "uniform averaging"], "needs a row with learned gates"),
        (["--rows", "W4/S4,W12/S12"], "needs exactly one row"),
        (
            ["--rows", "W4/S4", "--export-gates-name", "x.npz"],
            "must name a .safetensors",
        ),
    ],
)
def test_export_gates_refusals(tmp_path, capsys, argv, message):
    target = str(tmp_path / "g.safetensors")
    if "--export-gates-name" in argv:
        i = argv.index("--export-gates-name")
        argv = argv[:i] + ["--export-gates", str(tmp_path / argv[i + 1])]
    else:
        argv = argv + ["--export-gates", target]
    rc = main(["matrix", "--quick", "--quiet", *argv])
    err = capsys.readouterr().err
    assert rc != 0 and message in err and len(err.strip().splitlines()) == 1


def test_gates_paper_refusals(tmp_path, capsys):
    path = tmp_path / "bad.npz"
    np.savez(path, **{"l.key.gate_map": np.zeros((1, 4, 1, 3))})
    assert main(["gates", str(path), "--paper"]) != 0
    assert "needs the inputs 'l.windows'" in capsys.readouterr().err
    np.savez(
        path,
        **{"l.key.gate_map": np.zeros((1, 4, 1, 3)), "l.windows": np.zeros((5, 4, 2))},
    )
    assert main(["gates", str(path), "--paper"]) != 0
    assert "must have shape (windows, 4, 3)" in capsys.readouterr().err
    assert main(["gates", str(path), "--paper", "--branch", "tied"]) != 0
    assert "branches in the file: key" in capsys.readouterr().err
    assert main(["gates", str(path), "--paper", "--window-axis", "0"]) != 0
    assert "does not apply with --paper" in capsys.readouterr().err


def test_mechanism_rows_share_the_matrix_rows_cache_key_but_for_the_flag():
    row = matrix_row("W8/S8 8 KV")
    plain = row_parameters(row, QUICK_SIZE)
    assert set(plain) == {"kind", "version", "row", "size"}
    assert row_parameters(row, QUICK_SIZE, mechanisms=True) == {
        **plain,
        "mechanisms": MECHANISMS_VERSION,
    }
    assert row_parameters(row, QUICK_SIZE, seed=3)["seed"] == 3
    changed = dataclasses.replace(row, changes={**row.changes, "tied": True})
    assert row_parameters(changed, QUICK_SIZE)["changes"]["tied"] == "True"


def test_spearman_is_undefined_for_a_constant_measure():
    from inductheory.figures._stats import spearman

    assert spearman([1.0, 2.0, 3.0], [3.0, 1.0, 2.0]) == pytest.approx(-0.5)
    assert np.isnan(spearman(np.ones(4), np.arange(4)))


def _mechanisms(seeds=2, S=4, Q=4, K=2):
    """Hand-made measures: KV head k's key gate peaks at offset k (static 1), value at k + 1;
    query head q (KV head q // 2) damages only phase q // 2 by 0.5 in layer 1 (the last)."""
    layers, period = 2, 2 * S
    peak = np.zeros((seeds, layers, 2, K, 1), int)
    peak[:, :, 0, :, 0] = np.arange(K)
    peak[:, :, 1, :, 0] = np.arange(K) + 1
    base = np.full((seeds, period), 0.8)
    knock = np.repeat(base[:, None, None], layers, 1).repeat(Q, 2)
    for q in range(Q):
        knock[:, 1, q, [q // 2, q // 2 + S]] -= 0.5
    rotated = np.stack([np.roll(base, d, axis=-1) for d in (-1, 1)], axis=1)
    return RowMechanisms(
        trajectory_steps=np.array([0, 10]),
        trajectory=np.full((seeds, 2, layers, 2, K, 1, 2), 4.0),
        peak=peak,
        mass=np.ones(peak.shape),
        static=np.ones(peak.shape),
        avg=np.ones(peak.shape),
        knockout_accuracy=knock,
        knockout_loss=np.zeros_like(knock),
        base_accuracy=base,
        base_loss=np.zeros_like(base),
        rotations=np.array([-1, 1]),
        rotated_accuracy=rotated,
        rotated_all_accuracy=rotated,
    )


def test_figure_summaries_on_a_hand_made_row():
    m = _mechanisms()
    g = fig.gate_summary(m, W=4)
    # 2 seeds x 2 layers x 2 KV heads, every key gate concentrated, value = key + 1
    assert g.static_concentrated.k == g.static_concentrated.n == 8
    assert g.value_follows_key.k == 8 and g.input_dependent.k == 0
    assert g.covered_phases_per_seed == [2, 2]
    k = fig.knockout_summary(m, S=4, kv_heads=2)
    # 2 seeds x 2 layers x 4 heads; the 8 of the last layer damage (0.5), all aligned
    assert (k.heads, k.damaging.k, k.aligned.k) == (16, 8, 8)
    assert k.spread_median == 1 and k.top_share_mean == 1.0
    # every phase has base accuracy 0.8, so chance is one in S = 4
    assert k.chance == pytest.approx(0.25)
    r = fig.rotation_summary(m.base_accuracy, m.rotated_accuracy, m.rotations, S=4)
    # a flat curve: r^2 undefined everywhere, every accuracy kept
    assert r.undefined == 4
    assert r.kept_range == pytest.approx([1.0, 1.0])
    # a curve with structure that rotates exactly: r^2 = 1
    base = np.tile([0.9, 0.1, 0.5, 0.3, 0.9, 0.1, 0.5, 0.3], (2, 1))
    exact = dataclasses.replace(
        m,
        base_accuracy=base,
        rotated_accuracy=np.stack([np.roll(base, d, -1) for d in (-1, 1)], 1),
    )
    r = fig.rotation_summary(
        exact.base_accuracy, exact.rotated_accuracy, exact.rotations, S=4
    )
    assert r.r_squared_range == pytest.approx([1.0, 1.0]) and r.undefined == 0
    # the same shift at a quarter of the level: r^2 stays 1, a quarter of the accuracy kept
    quarter = dataclasses.replace(exact, rotated_accuracy=exact.rotated_accuracy / 4)
    r = fig.rotation_summary(
        quarter.base_accuracy, quarter.rotated_accuracy, quarter.rotations, S=4
    )
    assert r.r_squared_range == pytest.approx([1.0, 1.0])
    assert r.kept_range == pytest.approx([0.25, 0.25])
    assert np.asarray(r.seed_rotated).shape == (2, 2, 4)


def test_shift_correlation_of_a_curve_flat_up_to_rounding_is_undefined():
    from inductheory.trained import shift_correlation

    flat = np.full(4, 0.8)  # its mean rounds to 0.8000000000000002
    assert np.isnan(shift_correlation(flat, flat, 1))


SWITCHES = [
    {"mlp": True},
    {"local_window": 2},
    {"first_layer_full": True},
    {"gate": Gate.VECTOR, "tied": True},
    {"norm": False},
]


# The default run trains every switch at once (one compiled chunk, about 6 s; each alone is another
# 5-6 s compile), the slow target each switch alone as well.
@pytest.mark.parametrize(
    "changes",
    [{k: v for switch in SWITCHES for k, v in switch.items()}]
    + [pytest.param(switch, marks=pytest.mark.slow) for switch in SWITCHES],
    ids=["all"] + [f"changes{i}" for i in range(len(SWITCHES))],
)
def test_every_switch_trains_with_its_trajectory(changes):
    """Each switch of the family through the compiled training chunk (an MLP's activation
    function once broke the seeds' vmap)."""
    run = _run(dataclasses.replace(SMALL, **changes), steps=2, seeds=2, points=2)
    assert np.all(np.isfinite(run.loss)) and run.trajectory is not None


def test_knockout_summary_refuses_vector_gates():
    """The alignment of a damaging head with its key gate's peak is one offset per gate: vector
    gates (one peak per channel) are refused by name, not read at channel 0."""
    import types

    from inductheory.figures.paper_mechanisms import knockout_summary

    vector = types.SimpleNamespace(peak=np.zeros((2, 1, 2, 4, 3), int))
    with pytest.raises(ValueError, match="3 channels"):
        knockout_summary(vector, S=8, kv_heads=4)
