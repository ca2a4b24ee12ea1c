import json

import numpy as np
import pytest

import inductheory as it
from inductheory.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_help_lists_the_subcommands(capsys):
    assert main(["--help"]) == 0
    assert "loss" in capsys.readouterr().out


def test_loss_json_matches_the_library(capsys):
    code, out, _ = _run(
        capsys,
        "loss",
        "--L",
        "8",
        "--S",
        "4",
        "--H",
        "2",
        "--N",
        "4096",
        "--gamma",
        "1",
        "--beta",
        "4",
        "--select",
        "0,2",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    task = it.Task(L=8, S=4, H=2, N=4096, gamma=1.0, beta=4.0)
    gates = it.hard_selection(4, [0, 2])
    assert data["population_loss"] == pytest.approx(
        float(it.population_loss(task, gates)), rel=1e-12
    )
    assert data["phase_accuracy"] == [1.0, 0.0, 1.0]
    assert data["phase_gap"] == 1.0
    np.testing.assert_allclose(
        data["phase_loss"], it.phase_losses(task, gates), rtol=1e-12
    )


def test_loss_table_and_uniform(capsys):
    code, out, _ = _run(capsys, "loss", "--N", "64", "--uniform")
    assert code == 0 and "population loss" in out and "phase r*" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--N", "10", "--uniform"], "N must be >= L*S"),
        (["--gamma", "0", "--uniform"], "gamma must be > 0"),
        (["--select", "0,1,2"], "one offset per head"),
        (["--select", "0,3"], "0..W-2"),
        (["--select", "a,b"], "comma-separated integers"),
        (["--select", "0,,1"], "no empty item"),
        (["--select", "1e20,0"], "comma-separated integers"),
        (["--select", "100000000000000000000,0"], "<= 2"),
        (
            ["--N", "64", "--uniform", "--seed", "3"],
            "--seed only applies to Monte Carlo",
        ),
        (["--N", "1e400", "--uniform"], "N must be an integer"),
        (["--beta", "nan", "--uniform"], "beta must be a finite number"),
    ],
)
def test_bad_parameters_exit_non_zero_with_the_message(capsys, argv, message):
    code, _, err = _run(capsys, "loss", *argv)
    assert code != 0 and message in err


def test_outside_theorem_settings_warn_but_run(capsys):
    code, out, err = _run(capsys, "loss", "--L", "3", "--N", "64", "--select", "0,1")
    assert code == 0 and "L >= 4" in err and "population loss" in out


def test_loss_monte_carlo_on_approximate_geometry(capsys):
    # --eps/--d/--seed work: Monte Carlo on the realized geometry, seeded
    argv = [
        "loss",
        "--L",
        "4",
        "--S",
        "3",
        "--H",
        "1",
        "--N",
        "64",
        "--d",
        "48",
        "--select",
        "0",
        "--contexts",
        "16",
        "--seed",
        "1",
        "--json",
    ]
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    data = json.loads(out)
    assert data["method"] == "monte_carlo" and data["monte_carlo"]["contexts"] == 16
    assert (
        data["monte_carlo"]["dim"] == 48 and 0 < data["monte_carlo"]["eps_realized"] < 1
    )
    assert len(data["phase_loss"]) == 2 and all(np.isfinite(data["phase_loss"]))
    assert _run(capsys, *argv)[1] == out  # same seed, same numbers


def test_loss_monte_carlo_on_exact_geometry_matches_the_closed_form(capsys):
    base = [
        "loss",
        "--L",
        "4",
        "--S",
        "3",
        "--H",
        "1",
        "--N",
        "64",
        "--select",
        "0",
        "--json",
    ]
    exact = json.loads(_run(capsys, *base)[1])
    mc = json.loads(_run(capsys, *base, "--contexts", "4")[1])
    # under exact geometry every context has the same loss: Monte Carlo equals the closed form
    np.testing.assert_allclose(mc["phase_loss"], exact["phase_loss"], rtol=1e-12)
    assert mc["phase_accuracy"] == exact["phase_accuracy"]


def test_huge_gamma_gives_finite_correct_loss(capsys):
    # gamma = 1e3, 1e6: A(1) -> 1 and the other blocks get no attention (no NaN, no null JSON)
    for gamma in ("1e3", "1e6"):
        code, out, _ = _run(
            capsys,
            "loss",
            "--L",
            "8",
            "--S",
            "4",
            "--H",
            "2",
            "--N",
            "4096",
            "--gamma",
            gamma,
            "--select",
            "0,2",
            "--json",
        )
        data = json.loads(out)
        assert code == 0 and data["phase_accuracy"] == [1.0, 0.0, 1.0]
        a, b = it.model.block_attention(1.0, float(gamma), 8)
        assert float(a) == 1.0 and float(b) < 1e-300
        # phase 0: head 0 puts all attention on the target's value, head 1 on nothing in the
        # target block
        assert all(np.isfinite(data["phase_loss"]))


def test_non_finite_result_is_an_error_not_null(capsys):
    code, out, err = _run(
        capsys, "toy", "--beta", "1e308", "--gamma", "1e308", "--json"
    )
    assert (code == 0 and "null" not in out) or (
        code == 1 and "not finite" in err and out == ""
    )
