"""The paper matrix: its rows and paper table, the `inductheory matrix` command (options derived
from `Architecture`, resume from --out), and the figure's statistics on synthetic results."""

from __future__ import annotations

import dataclasses
import enum
import json

import numpy as np
import pytest

import inductheory  # noqa: F401
from inductheory.cli import _matrix as cli_matrix, build_parser, main
from inductheory.experiments import _paper_matrix as pm
from inductheory.figures import _matrix_stats as ms, paper_matrix as fig
from inductheory.trained._architecture import Architecture, Attention
from inductheory.trained._transformer_train import PhaseMeasures


def test_rows_are_distinct_architectures_with_paper_rows_that_exist():
    archs = [r.architecture(pm.REFERENCE) for r in pm.MATRIX]
    assert len(set(archs)) == len(archs)  # no two rows train the same model
    assert len({r.name for r in pm.MATRIX}) == len(pm.MATRIX)
    for r in pm.MATRIX:
        assert r.paper is None or r.paper in pm.PAPER_TABLE8
        r.architecture(pm.REFERENCE).check_task(pm.TASK)
    # every stride of the matrix tiles T with at least 8 entries at the largest, and the phases
    # are the strides' least common multiple
    strides = {a.S for a in archs if a.attention is Attention.COMPRESSED}
    assert pm.TASK.T // max(strides) >= 8
    assert pm.TASK.period == np.lcm.reduce(sorted(strides))


def test_paper_table_labels_each_number_with_its_model():
    """The numbers of the paper's table 8 as the paper gives them, each with its model: 75.3 is
    the 1-KV-head reference (seed 42), 9.9 the 8-KV-head W8/S8 model."""
    t = pm.PAPER_TABLE8
    assert (t["reference-42"].gap, t["reference-42"].worst) == (75.3, 5.7)
    assert (
        "1 KV head" in t["reference-42"].model and "seed 42" in t["reference-42"].model
    )
    assert (t["w8s8-8kv"].worst, t["w8s8-8kv"].gap) == (9.9, 71.1)
    assert "8 KV heads" in t["w8s8-8kv"].model
    assert (t["full-8kv"].loss, t["full-8kv"].mean, t["full-8kv"].worst) == (
        2.437,
        61.1,
        58.4,
    )
    assert all("6.09" not in str(p) for p in t.values())
    assert "DeepSeek-V4.1-Flash" in pm.STRIDE2_NOTE
    # each row's gap agrees with its max - min within rounding (mean - worst <= gap)
    for p in t.values():
        if p.mean is not None:
            assert p.worst <= p.mean


def test_cli_options_are_every_architecture_field_and_default_to_the_row():
    parser = build_parser()
    args = parser.parse_args(["matrix"])
    fields = dataclasses.fields(Architecture)
    for f in fields:
        assert getattr(args, f.name) is None, f.name  # the row's own value stands
    assert cli_matrix.architecture_changes(args) == {}
    args = parser.parse_args(
        [
            "matrix",
            "--kv-heads",
            "4",
            "--gate",
            "vector",
            "--no-position-bias",
            "--tied",
        ]
    )
    changes = cli_matrix.architecture_changes(args)
    assert changes == {
        "kv_heads": 4,
        "gate": "vector",
        "position_bias": False,
        "tied": True,
    }
    arch = dataclasses.replace(pm.REFERENCE, **changes)
    assert arch.gate.value == "vector" and arch.kv_heads == 4
    # choices of the enum fields are the enums' values
    for f in fields:
        if isinstance(f.default, enum.Enum):
            action = next(
                a
                for a in parser._subparsers._group_actions[0].choices["matrix"]._actions
                if a.dest == f.name
            )
            assert action.choices == [m.value for m in type(f.default)]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--rows", "W9/S9"], "row must be one of"),
        (["--kv-heads", "3"], "q_heads must be a multiple of kv_heads = 3"),
        (["--S", "5", "--W", "5", "--rows", "W4/S4"], "S must divide T = 96"),
        (["--lr", "nan"], "lr must be a finite number"),
        (["--steps", "0"], "steps must be >= 1"),
        (["--gate", "soft"], "invalid choice"),
        (["--warmup", "1"], "warmup must be"),
        (["--betas", "0.9"], "betas must be two numbers"),
        (["--weight-decay", "-1"], "weight-decay must be"),
    ],
)
def test_cli_refuses_bad_input_before_training(argv, message, capsys, monkeypatch):
    monkeypatch.setattr(
        cli_matrix, "run_row", lambda *a, **k: pytest.fail("trained on bad input")
    )
    code = main(["matrix", *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["matrix"], ["train", "paper"]], ids=" ".join)
def test_training_options_change_the_size_and_nothing_else(command):
    given = ["--warmup", "0.05", "--betas", "0.8,0.9", "--weight-decay", "0.2"]
    size = cli_matrix._size(
        build_parser().parse_args([*command, *given, "--lr", "0.01"])
    )
    expected = dataclasses.replace(
        pm.FULL_SIZE.train, warmup=0.05, betas=(0.8, 0.9), weight_decay=0.2, lr=0.01
    )
    assert size == dataclasses.replace(pm.FULL_SIZE, train=expected)
    assert cli_matrix._size(build_parser().parse_args(command)) == pm.FULL_SIZE


def _fake_result(seeds=2, contexts=8, period=24, acc=0.5, seed=0):
    rng = np.random.default_rng(seed)
    correct = rng.binomial(4, acc, (seeds, contexts, period))
    loss = rng.normal(4.0, 0.1, (seeds, 50))
    steps, curve = pm.loss_curve(loss)
    return pm.RowResult(
        measures=PhaseMeasures(
            loss=loss[:, -1],
            correct=correct,
            phase_loss=np.full((seeds, period), 4.0),
            queries_per_context=4,
        ),
        initial_loss=np.full(seeds, 4.85),
        curve_steps=steps,
        curve=curve,
        plateau_change=pm.plateau_change(loss),
        wall_s=1.0,
    )


def test_cli_resumes_finished_rows_from_out(tmp_path, monkeypatch, capsys):
    calls = []

    def fake(row, size, *, seed=0, progress=False, mechanisms=False):
        calls.append(row.name)
        return _fake_result()

    # the command trains through the cached `matrix_row_result`, which calls `run_row`
    monkeypatch.setattr(pm, "run_row", fake)
    argv = ["matrix", "--rows", "W4/S4,K/V tied", "--quick", "--json", "--quiet"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert calls == ["W4/S4", "K/V tied"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    assert calls == ["W4/S4", "K/V tied"]  # nothing trained again
    assert json.loads(capsys.readouterr().out) == first


def test_row_result_round_trips_through_json():
    r = _fake_result()
    back = pm.RowResult.from_dict(
        json.loads(json.dumps(r.to_dict(), default=np.ndarray.tolist))
    )
    for f in dataclasses.fields(pm.RowResult):
        if f.name != "measures":
            np.testing.assert_array_equal(getattr(back, f.name), getattr(r, f.name))
    for f in dataclasses.fields(PhaseMeasures):
        np.testing.assert_array_equal(
            getattr(back.measures, f.name), getattr(r.measures, f.name)
        )


def test_cluster_bootstrap_covers_binomial_truth():
    """Seeds with equal accuracy p: the two-level interval of the mean has the binomial width
    2 * 1.96 * sqrt(p (1 - p) / n) within 30% and covers p in most of 40 draws."""
    p, seeds, contexts, period = 0.3, 4, 64, 24
    covered, widths = 0, []
    for s in range(40):
        share = np.random.default_rng(s).binomial(4, p, (seeds, contexts, period)) / 4
        lo, hi = ms.cluster_bootstrap(share, np.mean, resamples=300, seed=s)
        covered += lo <= p <= hi
        widths.append(hi - lo)
    n = seeds * contexts * period * 4
    want = 2 * 1.96 * np.sqrt(p * (1 - p) / n)
    assert abs(np.median(widths) / want - 1) < 0.3
    assert covered >= 34  # 95% nominal: 38 expected; >= 34 of 40 fails with p < 0.01


def test_row_summary_boundary_and_within_phases():
    """A compressed row answering every phase but the boundary (S - 1 mod S) has boundary
    accuracy 0 and within-window gap 0."""
    period = 24
    correct = np.full((2, 8, period), 4)
    correct[:, :, 7::8] = 0
    fake = _fake_result()
    r = dataclasses.replace(
        fake, measures=dataclasses.replace(fake.measures, correct=correct)
    )
    s = fig.row_summary(pm.REFERENCE, r, period)
    assert s.boundary_phases == [7, 15, 23]
    assert s.boundary_phase.mean == 0
    assert s.within_gap.mean == 0
    assert s.gap.mean == 1
    assert s.mean_accuracy.mean == pytest.approx(21 / 24)
    full = fig.row_summary(
        dataclasses.replace(pm.REFERENCE, attention="full"), r, period
    )
    assert full.boundary_phase is None and "boundary_phase" not in full.to_dict()


@pytest.mark.parametrize(
    "folder, size", [("figures", pm.FULL_SIZE), ("figures/quick", pm.QUICK_SIZE)]
)
def test_committed_data_agree_with_their_rows(folder, size):
    """The committed figure data: every row of the size, its summary numbers recomputed from its
    per-seed phase accuracies, the findings recomputed from the rows, and the tables and the
    drawing made from the data alone."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    stored = json.loads((root / folder / "data" / "paper_matrix.json").read_text())
    data = fig.FIGURE.record(stored)
    # data of the size the code trains now (its steps, seeds, sample), not of an older one
    assert stored["parameters"] == fig.parameters(size)
    assert sorted(data.rows) == sorted(r.name for r in size.matrix)
    for name, r in data.rows.items():
        # trained for its row's steps (the stride-2 row twice the size's)
        assert r.curve_steps[-1] == pm.matrix_row(name).training(size).steps - 1, name
        acc = np.asarray(r.phase_accuracy_per_seed)
        assert acc.shape == (size.seeds, size.task.period)
        assert r.mean_accuracy.mean == pytest.approx(acc.mean())
        assert r.worst_phase.mean == pytest.approx(acc.min(axis=1).mean())
        assert r.gap.mean == pytest.approx(np.ptp(acc, axis=1).mean())
        # loss starts near ln N (the initialization's promise)
        assert abs(r.initial_loss - np.log(size.task.N)) < 0.05, name
    again = fig.analyze(data.rows, size)
    assert json.loads(json.dumps(again.to_dict())) == stored["analysis"]
    assert fig.tables(data)
    fig.draw(data)


def test_kendall_tau_against_scipy_without_ties():
    from scipy import stats

    from inductheory.figures._stats import kendall_tau

    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.permutation(6), rng.normal(size=6)
        got = kendall_tau(a, b)
        assert got.tau == pytest.approx(stats.kendalltau(a, b).statistic)
        assert got.concordant + got.discordant == got.pairs == 15
    with pytest.raises(ValueError, match="1-d of one length"):
        kendall_tau([1.0], [2.0])


def test_train_paper_is_the_matrix_command_on_the_reference_row(
    tmp_path, monkeypatch, capsys
):
    """`inductheory train paper` trains the family like `inductheory matrix`: the reference row
    by default, changed by the same architecture options, into the same --out cache (a row
    trained by one is read, not trained again, by the other). A change that makes another
    row of the matrix is that row; any other is named by what it changes."""
    calls = []

    def fake(row, size, *, seed=0, progress=False, mechanisms=False):
        calls.append((row.name, row.architecture(size.reference)))
        return _fake_result()

    monkeypatch.setattr(pm, "run_row", fake)
    tail = ["--quick", "--json", "--quiet", "--out", str(tmp_path)]
    switches = ["--payload", "shared", "--gate", "vector", "--q-heads", "8"]
    assert main(["train", "paper", *switches, *tail]) == 0
    first = json.loads(capsys.readouterr().out)
    name = (
        "W8/S8 1 KV (reference) with gate=vector, payload=shared"  # q_heads unchanged
    )
    arch = dataclasses.replace(pm.REFERENCE, payload="shared", gate="vector")
    assert list(first["rows"]) == [name]
    assert calls == [(name, arch)]
    argv = ["matrix", "--rows", "W8/S8 1 KV (reference)", *switches, *tail]
    assert main(argv) == 0
    assert len(calls) == 1  # read from the cache train paper wrote
    assert json.loads(capsys.readouterr().out) == first
    # 8 KV heads on the reference is the matrix's W8/S8 8 KV row, with its paper row
    assert main(["train", "paper", "--kv-heads", "8", *tail]) == 0
    assert calls[-1] == ("W8/S8 8 KV", dataclasses.replace(pm.REFERENCE, kv_heads=8))
    assert list(json.loads(capsys.readouterr().out)["rows"]) == ["W8/S8 8 KV"]
    assert pm.matrix_row("W8/S8 8 KV").paper == "w8s8-8kv"
