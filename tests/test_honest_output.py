"""What a user sees: warnings that name the user's line, a word when no seed selects, one JSON
schema for both dynamics."""

import json
import math
import warnings

import pytest

import inductheory as it
from inductheory.cli import main
from inductheory.experiments import NoSelectionWarning
from inductheory.flow import check_flow
from inductheory.toy import ToyConfig

# Every seed of this flow ends at t_max = 1, long before selection.
UNFINISHED = ["--t-max", "1", "--t-save-min", "0.01", "--n-save", "4", "--quiet"]
SMALL = ["flow", "--L", "4", "--S", "4", "--H", "2", "--N", "64", "--beta", "4"]


def _caught(build, category=it.TheoryAssumptionWarning):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build()
    found = [w for w in caught if issubclass(w.category, category)]
    assert found, f"no {category.__name__} raised"
    return found


@pytest.mark.parametrize(
    "build",
    [
        lambda: it.Task(L=3, S=4, H=2, N=64),  # through equinox's constructor
        lambda: it.Task(L=8, S=4, H=2, N=64).replace(gamma=2.0),  # through Task.replace
        lambda: it.FlowConfig(rho=2.0),
        lambda: check_flow(
            it.Task(L=4, S=4, H=2, N=64, eps=0.1), it.FlowConfig(dynamics="full")
        ),
        lambda: ToyConfig(L=3),
    ],
    ids=["task", "task-replace", "flow-config", "check-flow", "toy"],
)
def test_assumption_warnings_name_the_callers_line(build):
    for w in _caught(build):
        assert w.filename == __file__, (w.filename, str(w.message))


def test_run_flow_says_when_no_seed_selects():
    task = it.Task(L=4, S=4, H=2, N=64, beta=4.0)
    config = it.FlowConfig(t_max=1.0, t_save_min=0.01, n_save=4)
    out = []
    (w,) = _caught(lambda: out.append(it.run_flow(task, config, 2)), NoSelectionWarning)
    assert w.filename == __file__
    message = str(w.message)
    assert "no seed selected (t_max: 2 of 2)" in message
    assert "raise t_max" in message and "set by delta" in message
    assert math.isnan(out[0].summary.distinct_fraction)


def test_flow_cli_says_on_stderr_when_no_seed_selects(capsys):
    assert main([*SMALL, "--seeds", "2", *UNFINISHED]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "no seed selected" in line]
    assert len(lines) == 1, err  # said once, with the options' names
    assert lines[0].startswith(
        "inductheory flow: warning: no seed selected (t_max: 2 of 2)"
    )
    assert "raise --t-max" in lines[0] and "set by --delta" in lines[0]


def _keys(tree, prefix=""):
    """Every key path of a JSON tree (list entries merged)."""
    if isinstance(tree, dict):
        out = set()
        for k, v in tree.items():
            out |= {f"{prefix}/{k}"} | _keys(v, f"{prefix}/{k}")
        return out
    if isinstance(tree, list) and tree and isinstance(tree[0], dict):
        return set().union(*(_keys(v, prefix + "[]") for v in tree))
    return set()


@pytest.mark.parametrize("per_seed", [False, True])
def test_reduced_and_full_flow_json_have_the_same_keys(capsys, per_seed):
    reports = {}
    for dynamics, extra in (("reduced", []), ("full", ["--M", "16"])):
        argv = [*SMALL, "--seeds", "2", "--dynamics", dynamics, *extra, *UNFINISHED]
        assert main([*argv, "--json", *(["--per-seed"] if per_seed else [])]) == 0
        reports[dynamics] = json.loads(capsys.readouterr().out)
    assert _keys(reports["reduced"]) == _keys(reports["full"])
    # the full flow's sample fields are null for the reduced flow, and its own stay as they were
    assert set(reports["reduced"]["sample"].values()) == {None}
    assert reports["full"]["sample"]["M"] == 16
    assert reports["full"]["sample"]["geometry"] == "ExactGeometry"
    assert reports["reduced"]["summary"]["same_selection_as_reduced_fraction"] is None
    if per_seed:
        assert reports["reduced"]["seeds"][0]["reduced_selected_offsets"] is None
        assert len(reports["full"]["seeds"][0]["reduced_selected_offsets"]) == 2
