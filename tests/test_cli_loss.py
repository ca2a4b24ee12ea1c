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
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "loss" in capsys.readouterr().out


def test_loss_json_matches_the_library(capsys):
    code, out, _ = _run(capsys, "loss", "--L", "8", "--S", "4", "--H", "2", "--N", "4096", "--gamma", "1",
                        "--beta", "4", "--select", "0,2", "--json")
    assert code == 0
    data = json.loads(out)
    task = it.Task(L=8, S=4, H=2, N=4096, gamma=1.0, beta=4.0)
    gates = it.hard_selection(4, [0, 2])
    assert data["population_loss"] == pytest.approx(float(it.population_loss(task, gates)), rel=1e-12)
    assert data["phase_accuracy"] == [1.0, 0.0, 1.0]
    assert data["phase_gap"] == 1.0
    np.testing.assert_allclose(data["phase_loss"], it.phase_losses(task, gates), rtol=1e-12)


def test_loss_table_and_uniform(capsys):
    code, out, _ = _run(capsys, "loss", "--N", "64", "--uniform")
    assert code == 0 and "population loss" in out and "phase r*" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--N", "10", "--uniform"], "N must be >= L*S"),
        (["--gamma", "0", "--uniform"], "gamma must be > 0"),
        (["--select", "0,1,2"], "one offset per head"),
        (["--select", "0,3"], "0..S-2"),
        (["--select", "a,b"], "comma-separated integers"),
        (["--eps", "0.1", "--uniform"], "exact geometry"),
    ],
)
def test_bad_parameters_exit_non_zero_with_the_message(capsys, argv, message):
    code, _, err = _run(capsys, "loss", *argv)
    assert code != 0 and message in err


def test_outside_theorem_settings_warn_but_run(capsys):
    code, out, err = _run(capsys, "loss", "--L", "3", "--N", "64", "--select", "0,1")
    assert code == 0 and "L >= 4" in err and "population loss" in out
