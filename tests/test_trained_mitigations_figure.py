"""The trained_mitigations figure: the ordering comparison and the per-phase summary on hand-made
examples, and its numbers, tables and drawing from the committed data."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from inductheory.experiments._mitigations import PAPER
from inductheory.figures import FIGURES
from inductheory.figures.trained_mitigations import (
    LADDER,
    kendall_tau,
    ordering,
    phase_summary,
)

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("figures", "figures/quick")


def committed(folder):
    return json.loads((ROOT / folder / "data" / "trained_mitigations.json").read_text())


def test_kendall_tau_against_scipy_without_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.permutation(6), rng.normal(size=6)
        got = kendall_tau(a, b)
        assert got["tau"] == pytest.approx(stats.kendalltau(a, b).statistic)
        assert got["concordant"] + got["discordant"] == got["pairs"] == 15


def test_ordering_on_a_hand_made_example():
    paper = {"W8/S8": 75.3, "W8/S4": 39.8, "W8/S6": 31.9, "uniform": 19.2, "S=2": 6.09}
    # the idealized flows' seed-mean gaps at W=8: S=8 29%, S=6 59%, S=4 and S=2 100%,
    # uniform 0 (the mitigations figure's claim)
    ours = {"W8/S8": 0.29, "W8/S4": 1.0, "W8/S6": 0.59, "uniform": 0.0, "S=2": 1.0}
    got = ordering(ours, paper)
    assert got["reference_order"] == ["W8/S8", "W8/S4", "W8/S6", "uniform", "S=2"]
    # by hand: pairs (larger first in the paper) and whether ours agrees
    # S8>S4 no, S8>S6 no, S8>u yes, S8>S2 no, S4>S6 yes, S4>u yes, S4>S2 tie,
    # S6>u yes, S6>S2 no, u>S2 no
    assert (got["concordant"], got["discordant"], got["ties"]) == (4, 5, 1)
    assert got["tau"] == pytest.approx(-0.1)
    assert not got["same"]
    assert ordering(paper, paper)["same"] and ordering(paper, paper)["tau"] == 1.0
    with pytest.raises(ValueError, match="same settings"):
        ordering({"W8/S8": 1.0}, paper)
    with pytest.raises(ValueError, match="1-d of one length"):
        kendall_tau([1.0], [2.0])


def test_phase_summary_on_a_hand_example():
    acc = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]])
    s = phase_summary(acc, [2.0, 3.0])
    assert s["seeds"] == 2
    assert [c["mean"] for c in s["curve"]] == [0.5, 0.5, 0.5]
    assert s["gap_of_mean_curve"] == 0.0  # the seed-mean curve is flat
    assert s["per_seed_gap"]["mean"] == 1.0  # every seed has gap 1
    assert s["mean_accuracy"]["mean"] == pytest.approx(0.5)
    assert s["per_seed_worst"]["mean"] == 0.0
    assert s["boundary"]["mean"] == 0.5 and s["loss"]["mean"] == 2.5
    assert s["worst_of_mean_curve"] == {"value": 0.5, "phase": 0}


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_summaries_follow_from_the_per_seed_values(folder):
    data = committed(folder)
    for r in data["rows"]:
        acc = np.array(r["per_seed"]["phase_accuracy"])
        assert acc.shape == (r["seeds"], r["S"])
        curve = acc.mean(axis=0)
        assert r["gap_of_mean_curve"] == pytest.approx(curve.max() - curve.min())
        gaps = acc.max(axis=1) - acc.min(axis=1)
        assert r["per_seed_gap"]["mean"] == pytest.approx(gaps.mean())
        lo, hi = r["per_seed_gap"]["ci95"]
        assert lo - 1e-12 <= gaps.mean() <= hi + 1e-12
    for o in data["orderings"].values():
        for v in o.values():
            assert v["reference_order"] == [n for n in PAPER if n in data["paper"]]
    seeds = {r["seeds"] for r in data["rows"]}
    assert seeds == ({4} if folder.endswith("quick") else {32})


def test_the_full_data_cover_the_five_settings_at_every_rung():
    data = committed("figures")
    got = {(r["setting"], r["rung"]) for r in data["rows"]}
    assert got == {
        (n, rung) for n in PAPER for rung in ("theorem", "realistic", "baseline")
    }


def test_the_tables_and_the_drawing_come_from_the_data_alone():
    import matplotlib

    matplotlib.use("Agg")
    figure = FIGURES["trained_mitigations"]
    data = committed("figures/quick")
    tables = figure.tables(data)
    assert len(tables) >= 2
    fig = figure.draw(data)
    assert len(fig.axes) >= 3 + len(data["paper"])


def test_the_cumulative_rungs_are_the_ladders_between_theorem_and_realistic():
    from inductheory.experiments._ladder import SWITCHES
    from inductheory.figures import _trained
    from inductheory.trained._config import ModelConfig

    task = _trained.paper_task(8, 8)
    assert _trained.CUMULATIVE == tuple(f"cumulative:{w}" for w in SWITCHES[:-1])
    # each switch's change of the model, written out (docs/trained.md's ladder)
    learned = dict(embeddings="learned", d=32, maps="learned", unembedding="learned")
    model = {
        "minibatch": {},
        "adam": {},
        "approximate": dict(embeddings="approximate"),
        "learned": learned,
        "gate_bias": dict(learned, bias=True),
        "local": dict(learned, bias=True, local_window=1),
    }
    theorem = _trained.paper_rung("theorem", task)
    for w, fields in model.items():
        r = _trained.paper_rung(f"cumulative:{w}", task)
        assert r.switches == SWITCHES[: SWITCHES.index(w) + 1]
        assert r.model_config == ModelConfig(**fields)
        t = r.train_config
        assert t.batch == 16 and t.eval_contexts == 64
        if w == "minibatch":  # gradient descent: the theorem rung's step and steps
            assert (t.optimizer, t.lr) == (theorem.train_config.optimizer, 8.0)
            assert t.steps == theorem.train_config.steps == 1000
        else:
            assert (t.optimizer, t.lr, t.steps) == ("adam", 1e-2, 400)
        assert r.task.d == (16 if w == "approximate" else task.d)
    # one more switch (two layers) is the realistic rung
    realistic = _trained.paper_rung("realistic", task)
    last = _trained.paper_rung("cumulative:local", task)
    assert realistic.model_config == ModelConfig(
        **{**_trained._config(last), "layers": 2}
    )
    assert realistic.train_config == last.train_config
    # with uniform gates the rungs before learned representations have nothing to train
    uniform = [
        _trained.learns(_trained.paper_rung(f"cumulative:{w}", task, gates="uniform"))
        for w in model
    ]
    assert uniform == [False, False, False, True, True, True]
    quick = _trained.paper_rung("cumulative:minibatch", task, quick=True)
    assert quick.train_config.steps == _trained.QUICK_STEPS["theorem"]


def test_ladder_orderings_on_a_hand_made_example():
    from inductheory.figures.trained_mitigations import ladder_orderings

    paper = {"a": 3.0, "b": 2.0, "c": 1.0}
    one = np.array([[1.0, 0.0], [1.0, 0.0]])  # gap 1
    half = np.array([[1.0, 0.5], [1.0, 0.5]])  # gap 0.5
    flat = np.array([[0.5, 0.5], [0.5, 0.5]])  # gap 0
    got = ladder_orderings(
        {
            "same": {"a": one, "b": half, "c": flat},
            "reversed": {"a": flat, "b": half, "c": one},
            "again": {"a": flat, "b": half, "c": one},
        },
        paper,
    )
    assert [g["ordering"]["tau"] for g in got] == [1.0, -1.0, -1.0]
    assert [g["changed"] for g in got] == [False, True, False]
    # identical seeds: every resample gives the same gaps and tau
    assert got[0]["gaps"]["b"] == {"value": 0.5, "ci95": [0.5, 0.5]}
    assert got[1]["tau_ci95"] == [-1.0, -1.0]


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_ladder_follows_from_the_stored_curves(folder):
    data = committed(folder)
    if "ladder" not in data:
        pytest.skip(f"{folder} has no ladder data yet")
    names = [n for n in PAPER if n in data["paper"]]
    paper = [data["paper"][n]["gap"] for n in names]
    ladder = data["ladder"]
    assert [r["rung"] for r in ladder] == list(LADDER)
    for r in ladder:
        gaps = [r["gaps"][n]["value"] for n in names]
        assert kendall_tau(gaps, paper)["tau"] == pytest.approx(r["ordering"]["tau"])
        for n in names:
            lo, hi = r["gaps"][n]["ci95"]
            assert 0 <= lo <= hi <= 1
    # the end rungs are the table's theorem and realistic rows, number for number
    for rung, r in ((ladder[0]["rung"], ladder[0]), (ladder[-1]["rung"], ladder[-1])):
        for n in names:
            row = next(
                x for x in data["rows"] if x["setting"] == n and x["rung"] == rung
            )
            assert r["gaps"][n]["value"] == pytest.approx(row["gap_of_mean_curve"])
        assert r["ordering"]["tau"] == pytest.approx(
            data["orderings"][rung]["gap_of_mean_curve"]["tau"]
        )
