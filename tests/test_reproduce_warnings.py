"""Warnings raised while `reproduce` computes a figure name the figure and the run (task, seed
count), each distinct one once, in a worker process as in this one."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import types
import warnings

import pytest

import inductheory.figures._reproduce as module
import inductheory.figures._runs as runs
from inductheory.experiments import NoSelectionWarning
from inductheory.figures._figure import Figure, FigureContext, FigureData
from inductheory.flow import FlowConfig
from inductheory.internal._pool import serve_tasks

MESSAGE = "no seed selected (max_steps: 4 of 4), so distinct_fraction is NaN"


@pytest.fixture
def warning_figure(monkeypatch):
    """A registered figure "stub" whose one flow batch (L4 S3 H2 N64, 5 seeds) warns three times
    with one message and once with another, computing nothing."""

    def run_flow(task, config, seeds, seed=0):
        for _ in range(3):
            warnings.warn(MESSAGE, NoSelectionWarning, stacklevel=2)
        warnings.warn("a second, different warning", UserWarning, stacklevel=2)
        return None

    monkeypatch.setattr(runs, "run_flow", run_flow)
    # no outcomes to cache or read back: the flows computed nothing
    monkeypatch.setattr(runs, "_flow_result", lambda run, trajectories: {})
    monkeypatch.setattr(runs, "FlowOutcomes", types.SimpleNamespace(from_dict=dict))

    def compute(context):
        runs.flow_runs(
            runs.task_of(L=4, S=3, H=2, N=64), FlowConfig(), 5, context.cache
        )
        return FigureData(parameters={}, findings="none")

    _register(monkeypatch, "stub", compute)


def _register(monkeypatch, name: str, compute) -> None:
    """Register a figure `name` computing `compute` and drawing an empty 1 x 1 figure."""

    def draw(data):
        import matplotlib.pyplot as plt

        return plt.figure(figsize=(1, 1))

    figure = Figure(
        name=name,
        title=name.title(),
        claim="none",
        compute=compute,
        draw=draw,
        data=FigureData,
    )
    monkeypatch.setitem(module.FIGURES, name, figure)


def _check(texts):
    """Two distinct warnings, each once, naming the figure, the task and the seed count."""
    assert len(texts) == 2, texts
    (selection,) = [t for t in texts if MESSAGE in t]
    assert selection.startswith("figure stub: ")
    assert "L=4 S=3 H=2 N=64" in selection and "5 seeds" in selection
    assert selection.endswith(MESSAGE)
    assert "multiprocessing" not in " ".join(texts)


def test_a_worker_sends_each_distinct_warning_once_named(warning_figure, tmp_path):
    """The worker loop (`serve_tasks`, run here in this process with its queues; `serve`
    then ends the process) reports warnings as events for the parent, named and deduplicated,
    with their categories."""
    tasks, events = queue.Queue(), queue.Queue()
    (tmp_path / "data").mkdir()
    tasks.put(("stub", "", ("stub", FigureContext(quick=True), tmp_path)))
    tasks.put(None)
    serve_tasks(0, (None, None), "", module._make, tasks, events, False)
    sent = []
    while not events.empty():
        sent.append(events.get())
    warned = [e for e in sent if e[0] == "warn"]
    _check([text for _, _, text in warned])
    assert {category for _, category, _ in warned} == {NoSelectionWarning, UserWarning}
    assert [e[0] for e in sent][-1] == "done"


def test_warnings_in_this_process_are_named_once(warning_figure, tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module.reproduce(
            tmp_path / "out", quick=True, only=["stub"], cache=False, progress=False
        )
    _check([str(w.message) for w in caught])
    assert not any("multiprocessing" in w.filename for w in caught)


# The figure "stub" of `warning_figure`, registered in every process of a command line that
# imports this (sitecustomize), so that the spawned workers have it too.
STUB = """
import types
import warnings
import inductheory.figures._reproduce as module
import inductheory.figures._runs as runs
from inductheory.experiments import NoSelectionWarning
from inductheory.figures._figure import Figure, FigureData
from inductheory.flow import FlowConfig

def run_flow(task, config, seeds, seed=0):
    for _ in range(3):
        warnings.warn(MESSAGE, NoSelectionWarning, stacklevel=2)
    warnings.warn("a second, different warning", UserWarning, stacklevel=2)

def compute(context):
    runs.flow_runs(runs.task_of(L=4, S=3, H=2, N=64), FlowConfig(), 5, context.cache)
    return FigureData(parameters={}, findings="none")

def draw(data):
    import matplotlib.pyplot as plt
    return plt.figure(figsize=(1, 1))

runs.run_flow = run_flow
runs._flow_result = lambda run, trajectories: {}
runs.FlowOutcomes = types.SimpleNamespace(from_dict=dict)
module.FIGURES["stub"] = Figure(
    name="stub", title="Stub", claim="none", compute=compute, draw=draw, data=FigureData
)
"""


def test_the_command_line_prints_worker_warnings_one_line_each(tmp_path):
    """End to end: `inductheory reproduce --jobs 1` computes the figure in a spawned worker process
    and prints each distinct warning once, as one line naming the figure and the run."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"MESSAGE = {MESSAGE!r}\n{STUB}")
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    )
    argv = ["reproduce", "--quick", "--only", "stub", "--no-cache", "--quiet"]
    argv += ["--jobs", "1", "--out", str(tmp_path / "out")]
    proc = subprocess.run(
        [sys.executable, "-m", "inductheory", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    prefix = "inductheory: warning: "
    lines = [x for x in proc.stderr.splitlines() if x.startswith(prefix)]
    _check([x.removeprefix(prefix) for x in lines])
    assert "multiprocessing" not in proc.stderr


@pytest.fixture
def bisection_figure(monkeypatch):
    """A registered figure "bisect" running regime_boundary's `flow_bracket` on fake reduced
    flows: a flow at N < 100 selects no seed and warns, as `run_flow` does."""
    import types

    import inductheory.figures.regime_boundary as regime

    def flow_runs(task, config, seeds, cache_dir):
        N = int(task.N)
        if N < 100:
            warnings.warn(
                f"no seed selected at N={N}", NoSelectionWarning, stacklevel=2
            )
            return types.SimpleNamespace(selected=[[-1, -1]] * seeds)
        return types.SimpleNamespace(selected=[[0, 1]] * seeds)

    monkeypatch.setattr(regime._runs, "flow_runs", flow_runs)

    def compute(context):
        task_of = lambda **kw: runs.task_of(L=4, S=4, H=2, gamma=1.0, **kw)  # noqa: E731
        bracket = regime.flow_bracket(
            task_of, 8.0, 16, 1024, 3, FlowConfig(), 4, None, prediction=None
        )
        regime._say_non_selection([bracket])
        missed = [p.N for p in bracket.points if p.share_selected == 0]
        return FigureData(parameters={}, findings=f"missed {missed}")

    _register(monkeypatch, "bisect", compute)


def test_flows_past_the_boundary_are_one_note_not_a_warning_each(
    bisection_figure, tmp_path, capsys, monkeypatch
):
    """regime_boundary's bisection runs flows that select nothing on purpose: the command line
    prints one note for them all, never a NoSelectionWarning per flow."""
    from inductheory.cli import main

    def in_this_process(figures, jobs, context, out, previous, status):
        return {f.name: module._make(f.name, context, out) for f in figures}

    # the command line's workers would not have the figure registered here
    monkeypatch.setattr(module, "_make_in_workers", in_this_process)
    out = tmp_path / "out"
    argv = ["reproduce", "--quick", "--only", "bisect", "--no-cache", "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning" not in err, err
    (note,) = [x for x in err.splitlines() if x.startswith("inductheory: note: ")]
    missed = json.loads((out / "data" / "bisect.json").read_text())["findings"]
    Ns = [int(n) for n in missed.removeprefix("missed [").rstrip("]").split(",")]
    assert len(Ns) >= 2 and all(n < 100 for n in Ns)  # several flows failed, one note
    assert note.startswith("inductheory: note: figure bisect: ")
    assert f"{len(Ns)} of the " in note and "selected no seed" in note
    assert all(f"N={n} beta=8" in note for n in Ns)
