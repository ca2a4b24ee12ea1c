"""The figures trained_effective_offsets and previous_token: their counts and means against
independent recomputations from the committed per-seed data, and their tables and drawings
from the committed data alone."""

import json
from pathlib import Path

import numpy as np
import pytest

from inductheory.experiments._ladder import INPUT_DEPENDENT
from inductheory.figures import FIGURES
from inductheory.figures._stats import wilson_interval
from inductheory.figures.previous_token import PREVIOUS_TOKEN
from inductheory.figures.trained_effective_offsets import STATIC_CONCENTRATED

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("figures", "figures/quick")


def committed(folder, name):
    return json.loads((ROOT / folder / "data" / f"{name}.json").read_text())


def _is(count, flags):
    flags = np.asarray(flags, bool)
    assert (count["k"], count["n"]) == (int(flags.sum()), flags.size)
    assert count["ci95"] == pytest.approx(list(wilson_interval(count["k"], count["n"])))


@pytest.mark.parametrize("folder", FOLDERS)
def test_effective_offset_classes_follow_from_the_trajectories(folder):
    data = committed(folder, "trained_effective_offsets")
    assert [r["name"] for r in data["rungs"]] == ["theorem", "realistic"]
    for r in data["rungs"]:
        st, av = np.array(r["static"]), np.array(r["avg"])  # (seeds, n_log, H, 2)
        assert st.shape == (r["seeds"], len(r["steps"]), r["H"], 2)
        assert r["seeds"] == (4 if folder.endswith("quick") else 32)
        for x in (st, av):  # effective numbers of offsets lie in [1, W]
            assert np.all(x >= 1 - 1e-4) and np.all(x <= r["W"] + 1e-4)
        s, a = st[:, -1], av[:, -1]
        # the rule written out once more, on the stored (rounded) values
        dependent = s - a >= INPUT_DEPENDENT - 1e-4
        static = ~dependent & (s <= STATIC_CONCENTRATED + 1e-4)
        kinds = np.array(r["end_classes"])
        near = np.isclose(s - a, INPUT_DEPENDENT, atol=2e-4) | np.isclose(
            s, STATIC_CONCENTRATED, atol=2e-4
        )
        assert np.all((kinds == "input_dependent")[~near] == dependent[~near])
        assert np.all((kinds == "static")[~near] == static[~near])
        for b, branch in enumerate(("key", "value")):
            for c in ("static", "input_dependent", "diffuse"):
                _is(r["classes"][branch][c], kinds[..., b] == c)
        keys, values = np.array(r["key_offsets"]), np.array(r["value_offsets"])
        _is(r["value_follows_key"], values == keys + 1)
        assert (
            r["shift"]
            == np.bincount(
                ((values - keys) % r["W"]).ravel(), minlength=r["W"]
            ).tolist()
        )


@pytest.mark.parametrize("folder", FOLDERS)
def test_previous_token_counts_follow_from_the_per_seed_values(folder):
    data = committed(folder, "previous_token")
    assert [p["rung"] for p in data["pairs"]] == ["theorem", "realistic"]
    for p in data["pairs"]:
        assert (p["one"]["layers"], p["two"]["layers"]) == (1, 2)
        for arm in (p["one"], p["two"]):
            keys, values = np.array(arm["key_offsets"]), np.array(arm["value_offsets"])
            _is(arm["key_equals_value"], keys == values)
            _is(arm["value_follows_key"], values == keys + 1)
            acc = np.array(arm["phase_accuracy"])
            assert acc.shape == (arm["seeds"], data["S"])
            assert arm["boundary_accuracy"]["mean"] == pytest.approx(
                acc[:, -1].mean(), abs=1e-6
            )
            lo, hi = arm["boundary_accuracy"]["ci95"]
            assert lo - 1e-12 <= arm["boundary_accuracy"]["mean"] <= hi + 1e-12
        prev = np.array(p["two"]["previous"])
        assert prev.shape == (p["two"]["seeds"], data["H"])
        assert np.all(prev >= -1e-9) and np.all(prev <= 1 + 1e-9)
        _is(p["two"]["previous_heads"], prev >= PREVIOUS_TOKEN)
        _is(
            p["two"]["seeds_with_previous_head"], np.any(prev >= PREVIOUS_TOKEN, axis=1)
        )
        # the drawn seed (largest previous-token mass): causal rows summing to 1 (4 decimals)
        pattern = np.array(p["two"]["pattern"])
        T = data["T"]
        assert pattern.shape == (data["H"], T, T)
        np.testing.assert_allclose(pattern.sum(axis=-1), 1.0, atol=T * 1e-4)
        assert np.all(
            pattern[:, np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] == 0
        )
        t = np.arange(1, T)
        seed = p["two"]["pattern_seed"]
        assert seed == int(np.argmax(prev.mean(axis=1)))
        np.testing.assert_allclose(
            pattern[:, t, t - 1].mean(axis=1), prev[seed], atol=1e-4
        )
        two = np.array(p["two"]["phase_accuracy"])[:, -1]
        one = np.array(p["one"]["phase_accuracy"])[:, -1]
        assert p["boundary_difference"]["mean"] == pytest.approx(
            two.mean() - one.mean()
        )


@pytest.mark.parametrize("name", ["trained_effective_offsets", "previous_token"])
def test_the_tables_and_the_drawing_come_from_the_data_alone(name):
    import matplotlib

    matplotlib.use("Agg")
    figure = FIGURES[name]
    data = committed("figures/quick", name)
    assert all(t.rows for t in figure.tables(data))
    assert len(figure.draw(data).axes) >= 6
