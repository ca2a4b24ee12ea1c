"""`inductheory flow` end to end."""

import json

import numpy as np

from inductheory.cli import main


def test_flow_cli_json_and_files(tmp_path, capsys):
    rc = main(["flow", "--L", "4", "--S", "4", "--H", "2", "--N", "4096", "--beta", "4", "--seeds", "3",
               "--rho", "0.05", "--t-max", "1e6", "--n-save", "16", "--quiet", "--json", "--out", str(tmp_path)])
    assert rc == 0
    report = json.loads(capsys.readouterr().out)
    assert report["task"]["N"] == 4096 and report["flow"]["rho"] == 0.05 and report["flow"]["n_save"] == 16
    assert len(report["seeds"]) == 3
    for seed in report["seeds"]:
        assert seed["status"] == "selected"
        assert len(seed["key_offsets"]) == 2 and len(seed["value_offsets"]) == 2
        assert [v - k for k, v in zip(seed["key_offsets"], seed["value_offsets"])] == [1, 1]
        assert seed["t_selection"] > 0 and seed["num_steps"] > 0
    s = report["summary"]
    # the summary agrees with the per-seed offsets it summarizes
    distinct = [len(set(seed["key_offsets"])) == 2 for seed in report["seeds"]]
    assert s["distinct_fraction"] == sum(distinct) / 3
    assert abs(s["distinct_baseline_independent_uniform"] - 2 / 3) < 1e-12
    assert np.sum(s["offset_histogram"]) == 6
    assert json.loads((tmp_path / "flow.json").read_text())["summary"] == s
    npz = np.load(tmp_path / "flow.npz")
    assert npz["key_mass"].shape == (3, 17, 2, 4) and npz["loss"].shape == (3, 17)  # t = 0 and 16 save times


def test_flow_cli_rejects_reduced_with_approximate_geometry(capsys):
    rc = main(["flow", "--L", "4", "--S", "3", "--H", "1", "--N", "64", "--eps", "0.6", "--quiet"])
    assert rc == 2
    assert "exact geometry" in capsys.readouterr().err
