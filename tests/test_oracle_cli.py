"""`inductheory oracle`: one point as JSON, and a sweep that writes and resumes point by point."""

import json

import numpy as np
import pytest

import inductheory._oracle_regime as regime
from inductheory.cli import main

SMALL = ["--L", "4", "--S", "4", "--H", "2", "--restarts", "6", "--steps", "80", "--polish-steps", "80"]


def test_oracle_point_json(capsys):
    assert main(["oracle", *SMALL, "--N", "16", "--beta", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hard_selection"] is False and out["distinct_heads"] is False
    assert out["best_loss"] < out["best_vertex_loss"] - 1e-3
    assert out["gap"] == pytest.approx(out["best_vertex_loss"] - out["best_loss"])
    gates = out["contexts"][0]["gates"]
    assert np.asarray(gates["key"]).shape == (2, 4, 4)
    assert np.asarray(out["contexts"][0]["offsets"]).shape == (2, 4)


def test_oracle_sweep_writes_points_and_resumes(tmp_path, capsys, monkeypatch):
    args = ["oracle", *SMALL, "--sweep", "--N-grid", "16,4096", "--beta-grid", "8", "--out", str(tmp_path), "--json", "--quiet"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert len(list(tmp_path.glob("*.json"))) == 2
    (mp,) = first["maps"]
    by_N = {p["task"]["N"]: p for p in mp["points"]}
    assert by_N[16]["ok"] is False and by_N[4096]["ok"] is True
    assert mp["boundary"][0]["N_star"] == 4096 and mp["boundary"][0]["N_below"] == 16

    # a second run recomputes nothing: every point comes from the files
    def fail(*a, **k):
        raise AssertionError("recomputed a finished point")

    monkeypatch.setattr(regime, "oracle_point", fail)
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["maps"] == first["maps"]


def test_oracle_rejects_bad_grid(capsys):
    assert main(["oracle", *SMALL, "--sweep", "--N-grid", "16,x"]) == 2
    assert "comma-separated" in capsys.readouterr().err
