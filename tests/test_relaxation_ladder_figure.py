"""The relaxation_ladder figure: its numbers against independent computations from the
committed per-seed data, and its tables and drawing from the committed data alone."""

import json
from pathlib import Path

import numpy as np
import pytest

from inductheory.experiments._ladder import SWITCHES, ladder_rungs
from inductheory.figures import FIGURES
from inductheory.figures._stats import wilson_interval
from inductheory.figures.relaxation_ladder import TASK
from inductheory.model._task import quiet_task

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("figures", "figures/quick")


def committed(folder):
    return json.loads((ROOT / folder / "data" / "relaxation_ladder.json").read_text())


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_rung_of_the_ladder_is_in_the_data_in_order(folder):
    data = committed(folder)
    names = [r.name for r in ladder_rungs(quiet_task(**TASK))]
    assert [s["name"] for s in data["rungs"]] == names
    assert len(names) == 2 + 2 * len(SWITCHES)
    seeds = {s["seeds"] for s in data["rungs"]}
    assert seeds == ({4} if folder.endswith("quick") else {32})


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_summaries_follow_from_the_per_seed_values(folder):
    for s in committed(folder)["rungs"]:
        p = s["per_seed"]
        keys, values = np.array(p["key_offsets"]), np.array(p["value_offsets"])
        follows = values == keys + 1
        assert s["value_follows_key"]["k"] == follows.sum()
        assert s["value_follows_key"]["n"] == follows.size
        k, n = s["value_follows_key"]["k"], s["value_follows_key"]["n"]
        assert s["value_follows_key"]["ci95"] == pytest.approx(
            list(wilson_interval(k, n))
        )
        assert s["distinct"]["k"] == sum(len(set(row)) == len(row) for row in keys)
        acc = np.array(p["phase_accuracy"])
        gap = acc.max(axis=1) - acc.min(axis=1)
        np.testing.assert_allclose(p["phase_gap"], gap, atol=1e-12)
        assert s["phase_uniform"]["k"] == int(np.sum(gap <= 0.1))
        np.testing.assert_allclose(
            [q["mean"] for q in s["phase_accuracy"]], acc.mean(axis=0), atol=1e-12
        )
        for q in s["phase_accuracy"]:
            lo, hi = q["ci95"]
            assert lo - 1e-12 <= q["mean"] <= hi + 1e-12
        static = np.array(p["static_offsets"])
        avg = np.array(p["avg_offsets"])
        for x in (static, avg):  # effective numbers of offsets lie in [1, W]
            assert np.all(x >= 1 - 1e-9) and np.all(x <= s["W"] + 1e-9)
        assert s["input_dependent"]["k"] == int(np.sum(static - avg >= 0.5))


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_flow_check_counts_agreeing_seeds(folder):
    data = committed(folder)
    f, theorem = data["flow_check"], data["rungs"][0]["per_seed"]
    agree = sum(
        a == b and c == d
        for a, b, c, d in zip(
            f["key_offsets"],
            theorem["key_offsets"],
            f["value_offsets"],
            theorem["value_offsets"],
        )
    )
    assert f["agrees"] == agree and f["selected"] == f["status"].count("selected")


def test_the_tables_and_the_drawing_come_from_the_data_alone():
    import matplotlib

    matplotlib.use("Agg")
    figure = FIGURES["relaxation_ladder"]
    data = committed("figures/quick")
    tables = figure.measured_tables(data)
    assert [len(t.rows) for t in tables] == [len(data["rungs"])] * 2 + [1]
    fig = figure.drawing(data)
    assert len(fig.axes) >= 6
