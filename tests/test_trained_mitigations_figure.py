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
