"""The knockout and rotation figures: their summaries against independent computations from the
committed per-seed data, their helpers on hand-made inputs, and tables and drawings from the
committed data alone."""

import json
from pathlib import Path

import matplotlib
import numpy as np
import pytest

from inductheory.figures import FIGURES
from inductheory.figures._stats import wilson_interval
from inductheory.figures.knockout import DAMAGE, gate_phase_mass
from inductheory.figures.rotation import DELTAS

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("figures", "figures/quick")


def committed(folder, name):
    return json.loads((ROOT / folder / "data" / f"{name}.json").read_text())


def test_gate_phase_mass_sums_the_offsets_of_each_phase():
    # W = 8 offsets at stride 4: offsets o and o + 4 answer phase o
    gate = np.arange(8.0) / 28.0
    want = [(0 + 4) / 28, (1 + 5) / 28, (2 + 6) / 28, (3 + 7) / 28]
    np.testing.assert_allclose(gate_phase_mass(gate, 4), want)
    np.testing.assert_allclose(gate_phase_mass(gate, 8), gate)


@pytest.mark.parametrize("folder", FOLDERS)
def test_knockout_counts_follow_from_the_per_seed_changes(folder):
    data = committed(folder, "knockout")
    S = data["S"]
    seeds = 4 if folder.endswith("quick") else 32
    for name, rung in data["rungs"].items():
        raw, s = rung["raw"], rung["summary"]
        change = np.array(raw["accuracy_change"])
        keys = np.array(raw["key_offsets"])
        assert change.shape[0] == s["seeds"] == seeds
        assert change.shape[-1] == S
        damaging = agree = 0
        for i in range(change.shape[0]):
            for h in range(change.shape[2]):
                drops = [-change[i, -1, h, p] for p in range(S)]
                worst = max(drops)
                if worst >= DAMAGE:
                    damaging += 1
                    agree += drops.index(worst) == keys[i, h] % S
        assert s["damaging"]["k"] == damaging, name
        assert s["agree"] == {
            "k": agree,
            "n": damaging,
            "ci95": list(wilson_interval(agree, damaging)) if damaging else None,
        }
        # accuracy changes are differences of accuracies: within [-1, 1], and base + change
        # is an accuracy again
        base = np.array(raw["base_accuracy"])
        after = change + base[:, None, None, :]
        assert np.all(after >= -1e-12) and np.all(after <= 1 + 1e-12)


@pytest.mark.parametrize("folder", FOLDERS)
def test_rotation_r_squared_and_drops_from_the_per_seed_curves(folder):
    data = committed(folder, "rotation")
    for rung in data["rungs"].values():
        raw, s = rung["raw"], rung["summary"]
        base = np.array(raw["phase_accuracy"])
        seeds, S = base.shape
        for i, d in enumerate(s["per_delta"]):
            assert d["delta"] == DELTAS[i]
            rot = np.array(raw["rotated_phase_accuracy"][i])
            for k in range(seeds):
                # measured phases 0..S-2 against the unrotated accuracy of phase p - delta
                y = rot[k, : S - 1]
                pred = np.array([base[k, (p - d["delta"]) % S] for p in range(S - 1)])
                tot = sum((v - y.mean()) ** 2 for v in y)
                want = 1 - sum((y - pred) ** 2) / tot if tot > 0 else None
                got = d["r2"][k]
                if want is None:
                    assert got is None or np.isnan(got)
                else:
                    assert got == pytest.approx(want, abs=1e-9)
            drop = 100 * (
                np.array(raw["mean_accuracy"])
                - np.array(raw["rotated_mean_accuracy"][i])
            )
            assert d["mean_drop_points"]["mean"] == pytest.approx(drop.mean(), abs=1e-9)
            assert d["boundary"]["mean"] == pytest.approx(rot[:, -1].mean(), abs=1e-12)


@pytest.mark.parametrize("name", ["knockout", "rotation"])
def test_tables_and_drawing_from_the_committed_data(name):
    figure = FIGURES[name]
    for folder in FOLDERS:
        data = committed(folder, name)
        assert figure.tables(data)
    fig = figure.draw(committed("figures/quick", name))
    assert fig.axes
    matplotlib.pyplot.close(fig)
