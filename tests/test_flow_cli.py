"""`inductheory flow` end to end."""

import json

import numpy as np

from inductheory.cli import main
from inductheory.internal._io import to_json

SMALL = [
    "flow",
    "--L",
    "4",
    "--S",
    "4",
    "--H",
    "2",
    "--N",
    "4096",
    "--beta",
    "4",
    "--rho",
    "0.05",
    "--t-max",
    "1e6",
    "--n-save",
    "16",
    "--quiet",
]


def test_flow_cli_json_and_files(tmp_path, capsys):
    rc = main([*SMALL, "--seeds", "3", "--json", "--out", str(tmp_path)])
    assert rc == 0
    report = json.loads(capsys.readouterr().out)
    assert (
        report["task"]["N"] == 4096
        and report["flow"]["rho"] == 0.05
        and report["flow"]["n_save"] == 16
    )
    # compact: per seed only its status name and selected offsets
    assert len(report["seeds"]) == 3
    assert all(
        set(seed) == {"seed_index", "status", "selected_offsets"}
        for seed in report["seeds"]
    )
    # every detail is in flow.json
    full = json.loads((tmp_path / "flow.json").read_text())
    for seed in full["seeds"]:
        assert seed["status"] == "selected" and "solver_result" not in seed
        assert len(seed["key_offsets"]) == 2 and len(seed["value_offsets"]) == 2
        assert [v - k for k, v in zip(seed["key_offsets"], seed["value_offsets"])] == [
            1,
            1,
        ]
        assert seed["t_selection"] > 0 and seed["num_steps"] > 0
    s = report["summary"]
    # the summary agrees with the per-seed offsets it summarizes
    distinct = [len(set(seed["selected_offsets"])) == 2 for seed in report["seeds"]]
    assert (
        s["distinct_fraction"] == sum(distinct) / 3
        and s["selected_seeds"] == 3
        and s["failed_seeds"] == 0
    )
    assert abs(s["distinct_baseline_independent_uniform"] - 2 / 3) < 1e-12
    assert np.sum(s["offset_histogram"]) == 6
    assert full["summary"] == s
    npz = np.load(tmp_path / "flow.npz")
    assert npz["key_mass"].shape == (3, 17, 2, 4) and npz["loss"].shape == (
        3,
        17,
    )  # t = 0 and 16 save times
    assert (
        "result" not in npz
        and list(npz["status_names"][npz["status"]]) == ["selected"] * 3
    )
    assert oct((tmp_path / "flow.json").stat().st_mode & 0o777) != oct(
        0o600
    )  # not mkstemp's 0600


def test_flow_cli_per_seed_detail(capsys):
    # three seeds, as above: the same compiled program (the seed count is part of its shape)
    assert main([*SMALL, "--seeds", "3", "--json", "--per-seed"]) == 0
    seeds = json.loads(capsys.readouterr().out)["seeds"]
    assert len(seeds) == 3
    for seed in seeds:
        assert (
            seed["status"] == "selected"
            and "diffrax_result" not in seed
            and isinstance(seed["num_steps"], int)
        )


def test_flow_report_is_a_record_read_back_from_its_json(capsys):
    """What --json prints is a `FlowReport`'s dict, compact (`SeedOutcome`s) or per seed
    (`SeedDetails`), and reads back as that record."""
    from inductheory.cli._flow import FlowReport, SeedDetails, SeedOutcome

    for extra, kind in (([], SeedOutcome), (["--per-seed"], SeedDetails)):
        assert main([*SMALL, "--seeds", "3", "--json", *extra]) == 0
        printed = json.loads(capsys.readouterr().out)
        report = FlowReport.from_dict(printed)
        assert [type(s) for s in report.seeds] == [kind] * 3
        assert report.seeds[0].status == "selected" and report.task["L"] == 4
        assert json.loads(to_json(report.to_dict(), sort_keys=True)) == printed


def test_failed_seeds_exit_non_zero_unless_allowed(capsys):
    argv = [*SMALL, "--seeds", "2", "--max-steps", "3"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert "2 of 2 seeds failed (max_steps: 2)" in err and "no seed selected" in out
    assert main([*argv, "--allow-failures", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    s = report["summary"]
    # no distinct fraction pretends to summarize failed seeds
    assert (
        s["selected_seeds"] == 0
        and s["distinct_fraction"] is None
        and s["status_counts"]["max_steps"] == 2
    )


def test_flow_cli_rejects_reduced_with_approximate_geometry(capsys):
    rc = main(
        [
            "flow",
            "--L",
            "4",
            "--S",
            "3",
            "--H",
            "1",
            "--N",
            "64",
            "--eps",
            "0.6",
            "--quiet",
        ]
    )
    assert rc == 2
    assert "exact geometry" in capsys.readouterr().err


def test_radius_below_float64_resolution_is_refused(capsys):
    assert main([*SMALL, "--rho", "1e-20"]) == 2
    err = capsys.readouterr().err
    assert (
        "below float64 resolution" in err
        and "use rho >=" in err
        and len(err.strip().splitlines()) == 1
    )


def test_full_only_options_with_reduced_dynamics_are_errors(capsys):
    for flag, value in (
        ("--M", "64"),
        ("--init", "projected"),
        ("--sample", "iid"),
        ("--batch-size", "8"),
    ):
        assert main([*SMALL, flag, value]) == 2
        assert f"{flag} applies to --dynamics full only" in capsys.readouterr().err


def test_run_flow_refuses_bool_seeds():
    import pytest

    import inductheory as it

    with pytest.raises(ValueError, match="seeds must be an integer"):
        it.run_flow(it.Task(L=4, S=4, H=2, N=4096), it.FlowConfig(), True)
