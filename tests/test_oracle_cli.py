"""`inductheory oracle`: one point as JSON, and a sweep that writes and resumes point by point."""

import json

import numpy as np
import pytest

import inductheory.experiments._regime as regime
from inductheory.cli import main

SMALL = [
    "--L",
    "4",
    "--S",
    "4",
    "--H",
    "2",
    "--restarts",
    "6",
    "--steps",
    "80",
    "--polish-steps",
    "80",
]


def test_oracle_point_json(capsys):
    assert main(["oracle", *SMALL, "--N", "16", "--beta", "8", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    # progress on stderr (the JSON on stdout stays clean): the contexts done and the starts
    assert "oracle contexts 1/1" in captured.err and "vertex starts" in captured.err
    assert out["hard_selection"] is False and out["distinct_heads"] is False
    assert out["best_loss"] < out["best_vertex_loss"] - 1e-3
    # an independent check of "not hard": some key or value gate is far from every vertex
    gates = out["contexts"][0]["gates"]
    assert (
        max(np.max(1 - np.max(np.asarray(gates[b]), axis=-1)) for b in ("key", "value"))
        > 1e-3
    )
    gates = out["contexts"][0]["gates"]
    assert np.asarray(gates["key"]).shape == (2, 4, 4)
    assert np.asarray(out["contexts"][0]["offsets"]).shape == (2, 4)


def test_oracle_sweep_writes_points_and_resumes(tmp_path, capsys, monkeypatch):
    args = [
        "oracle",
        *SMALL,
        "--sweep",
        "--N-grid",
        "16,4096",
        "--beta-grid",
        "8",
        "--out",
        str(tmp_path),
        "--json",
        "--quiet",
    ]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert len(list(tmp_path.glob("*.json"))) == 2
    # a human-readable table beside the cached points
    summary = (tmp_path / "summary.txt").read_text()
    assert "hard for N >=" in summary
    # the header names the grid swept, not the task's own N and beta
    assert "swept: N in [16, 4096]; beta in [8.0]\n" in summary
    assert "'N'" not in summary.splitlines()[0]
    csv_lines = (tmp_path / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("eps,d,beta,N,ok") and len(csv_lines) == 3
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
    assert "--N-grid must be an integer" in capsys.readouterr().err


def test_failed_local_search_falls_back_to_the_best_vertex(capsys):
    # one BFGS step from one start cannot reach the optimum; a vertex is feasible and better
    argv = [
        "oracle",
        "--L",
        "4",
        "--S",
        "3",
        "--H",
        "1",
        "--N",
        "4096",
        "--beta",
        "2",
        "--restarts",
        "1",
        "--steps",
        "1",
        "--polish-steps",
        "0",
        "--rounds",
        "1",
        "--vertex-starts",
        "0",
        "--json",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    ctx = out["contexts"][0]
    assert ctx["minimizer_failed"] and ctx["minimizer_loss"] > ctx["best_vertex_loss"]
    assert (
        out["best_loss"] == pytest.approx(out["best_vertex_loss"]) and out["gap"] == 0.0
    )
    assert out["hard_selection"]  # classified at the vertex, which is a hard selection


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--sweep", "--N-grid", "", "--beta-grid", "1"], "at least one value"),
        (
            ["--sweep", "--N-grid", "64", "--beta-grid", "1", "--refine", "-1"],
            "refine must be",
        ),
        (
            [
                "--sweep",
                "--N-grid",
                "64",
                "--beta-grid",
                "1",
                "--eps-grid",
                "0.3",
                "--d",
                "64",
            ],
            "exclude each other",
        ),
        (["--vertex-starts", "-1"], "vertex-starts must be >= 0"),
        (["--seeds", "2"], "renamed --vertex-starts"),
        (["--out", "somewhere"], "only applies with --sweep"),
        (
            ["--sweep", "--N-grid", "inf", "--beta-grid", "1"],
            "--N-grid must be an integer",
        ),
        (["--sweep", "--N-grid", "8", "--beta-grid", "1"], "N must be >= L*S"),
        (
            ["--sweep", "--N-grid", "64", "--beta-grid", "1", "--out", ""],
            "must not be empty",
        ),
    ],
)
def test_bad_sweep_parameters_exit_non_zero(capsys, argv, message):
    assert main(["oracle", *SMALL, "--N", "64", *argv]) == 2
    assert message in capsys.readouterr().err
