"""`inductheory reproduce --quick`: the committed figure data are what the command produces."""

import json
import math
from pathlib import Path

import pytest
from fake_progress import FakeClock, fake_figures

import inductheory.figures._runs as runs
from inductheory.cli import main
from inductheory.figures import FIGURES, FigureRun, figure_names, redraw, reproduce
from inductheory.internal._io import to_json

ROOT = Path(__file__).resolve().parents[1]
SKIP_KEYS = {
    "wall_s",
    "cpu_s",
    "findings",
}  # timings, and a text rendering of numbers compared below


def assert_same_numbers(new, old, path="data", rtol=1e-6, atol=1e-9):
    if isinstance(old, dict):
        assert isinstance(new, dict) and set(new) == set(old), (
            f"{path}: keys {sorted(new)} != {sorted(old)}"
        )
        for k in old:
            if k not in SKIP_KEYS:
                assert_same_numbers(new[k], old[k], f"{path}.{k}", rtol, atol)
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), f"{path}: lengths differ"
        for i, (a, b) in enumerate(zip(new, old)):
            assert_same_numbers(a, b, f"{path}[{i}]", rtol, atol)
    elif isinstance(old, (int, float)) and not isinstance(old, bool):
        assert isinstance(new, (int, float)) and math.isclose(
            new, old, rel_tol=rtol, abs_tol=atol
        ), f"{path}: {new} != {old}"
    else:
        assert new == old, f"{path}: {new!r} != {old!r}"


# The default suite regenerates the quick versions of two cheap figures, one of flows and one of the
# oracle minimizer (17-31 s each on 2 loaded cores, where the whole quick run took 705 s);
# `pytest -m slow` regenerates and compares every figure.
DEFAULT_QUICK = ("coverage", "theorem1_oracle")


def regenerate(tmp_path_factory, names, jobs=1):
    out = tmp_path_factory.mktemp("figures")
    cache = tmp_path_factory.mktemp("cache")
    return (
        out,
        cache,
        reproduce(out, quick=True, cache=cache, progress=False, only=names, jobs=jobs),
    )


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    # in two worker processes (as the command line does): the committed numbers do not depend on it
    return regenerate(tmp_path_factory, list(DEFAULT_QUICK), jobs=2)


def check_quick_run(out, results, names):
    assert sorted(results) == sorted(names)
    committed = ROOT / "figures" / "quick" / "data"
    for name in names:
        for ext in ("png", "pdf"):
            assert (out / f"{name}.{ext}").stat().st_size > 1000
        old = json.loads((committed / f"{name}.json").read_text())
        new = json.loads((out / "data" / f"{name}.json").read_text())
        assert_same_numbers(new, old, name)
    readme = (out / "README.md").read_text()
    assert all(f"({name}.png)" in readme for name in names)


def test_committed_quick_data_are_reproduced(quick_run):
    out, _, results = quick_run
    check_quick_run(out, results, list(DEFAULT_QUICK))


@pytest.mark.slow
def test_every_committed_quick_figure_is_reproduced(tmp_path_factory):
    out, _, results = regenerate(tmp_path_factory, None)
    check_quick_run(out, results, figure_names())


# What a `FigureRun`'s times add to its data in `to_dict()` (and `--json` prints per figure).
TIME_KEYS = {"wall_s", "cpu_s", "compile_s", "compiles", "cache_hits", "cores"}


def test_a_figure_run_is_its_record_and_times(quick_run):
    """`reproduce` returns a `FigureRun` per figure: the figure's record (what data/<name>.json
    stores) and its times; `to_dict()` is the stored dict with the times beside it."""
    out, _, results = quick_run
    run = results["theorem1_oracle"]
    assert isinstance(run, FigureRun) and run.name == "theorem1_oracle"
    assert isinstance(run.data, FIGURES["theorem1_oracle"].data)
    stored = json.loads((out / "data" / "theorem1_oracle.json").read_text())
    d = json.loads(to_json(run.to_dict(), sort_keys=True))
    assert set(d) == set(stored) | TIME_KEYS
    assert {k: d[k] for k in stored} == stored
    assert run.findings == stored["findings"] == run.data.findings
    assert run.times.wall_s == d["wall_s"] > 0 and run.times.compiles == d["compiles"]


def test_the_workers_of_a_quick_run_take_cores_of_their_own(quick_run):
    """Two quick figures in two workers: each worker ran on its own share of the usable cores
    (`OWN_CORES`), one core each on a 2-core machine."""
    from inductheory.internal._devices import core_sets, usable_cores

    _, _, results = quick_run
    shares = sorted(map(len, core_sets(usable_cores(), 2)))
    assert sorted(run.times.cores for run in results.values()) == shares
    if len(usable_cores()) > 1:
        assert all(run.times.cores < len(usable_cores()) for run in results.values())


def test_cli_json_prints_findings_and_times_per_figure(tmp_path, monkeypatch, capsys):
    import inductheory.figures._reproduce as module

    times = module.FigureTimes(1.5, 1.25, 0.5, 3, 1, 2)
    data = module.FigureData(parameters={}, findings="measured")
    monkeypatch.setattr(
        module,
        "_reproduce",
        lambda figures, *args: {
            f.name: module.FigureRun(f.name, data, times) for f in figures
        },
    )
    argv = ["reproduce", "--only", "coverage", "--no-cache", "--quiet", "--jobs", "1"]
    assert main([*argv, "--out", str(tmp_path), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {"coverage": {"findings": "measured", **times.to_dict()}}
    assert set(printed["coverage"]) == {"findings"} | TIME_KEYS


def test_committed_full_figures_exist_with_their_data():
    for name in figure_names():
        for suffix in (".png", ".pdf"):
            assert (ROOT / "figures" / f"{name}{suffix}").exists(), name
        assert (ROOT / "figures" / "data" / f"{name}.json").exists(), name
    readme = (ROOT / "figures" / "README.md").read_text()
    assert "inductheory reproduce" in readme and "Mode: full" in readme


@pytest.mark.parametrize("folder, quick", [("figures", False), ("figures/quick", True)])
def test_committed_readme_is_rendered_from_the_committed_data(folder, quick):
    # a clean clone stays clean: `reproduce` renders the README from the same numbers
    import re

    from inductheory.figures import readme

    out = ROOT / folder
    committed = (out / "README.md").read_text()
    command = re.search(r"Command: `([^`]*)`", committed).group(1)
    data = {
        name: json.loads((out / "data" / f"{name}.json").read_text())
        for name in figure_names()
    }
    assert readme(data, quick, command) == committed


def test_a_rerun_resumes_from_the_cache(quick_run, tmp_path, monkeypatch):
    first, cache, _ = quick_run

    def refuse(*args, **kwargs):
        raise AssertionError("recomputed a cached result")

    monkeypatch.setattr(runs, "run_flow", refuse)
    again = reproduce(
        tmp_path, quick=True, cache=cache, progress=False, only=["coverage"]
    )
    assert sorted(again) == ["coverage"]
    for name in again:  # the stored data of the rerun equal those of the first run
        assert_same_numbers(
            json.loads((tmp_path / "data" / f"{name}.json").read_text()),
            json.loads((first / "data" / f"{name}.json").read_text()),
            name,
        )
        # and so does its picture, drawn from the cached results
        assert (tmp_path / f"{name}.png").read_bytes() == (
            first / f"{name}.png"
        ).read_bytes()


def test_a_redraw_of_the_stored_data_draws_the_run_s_pictures(quick_run, tmp_path):
    import shutil

    first, _, _ = quick_run
    shutil.copytree(first / "data", tmp_path / "data")
    assert redraw(tmp_path, only=list(DEFAULT_QUICK)) == list(DEFAULT_QUICK)
    for name in DEFAULT_QUICK:
        assert (tmp_path / f"{name}.png").read_bytes() == (
            first / f"{name}.png"
        ).read_bytes(), name


def test_an_interrupted_run_keeps_what_it_finished(tmp_path, monkeypatch):
    calls = []
    original = runs.flow_runs

    def interrupt_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(runs, "flow_runs", interrupt_second)
    with pytest.raises(KeyboardInterrupt):
        reproduce(
            tmp_path / "out",
            quick=True,
            cache=tmp_path / "cache",
            progress=False,
            only=["weak_spots"],
        )
    finished = list((tmp_path / "cache").rglob("*.json"))
    assert (
        len(finished) == 1
    )  # the first flow batch was written atomically before the interruption
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def _redraw_from_stored_data(tmp_path, monkeypatch, names):
    (tmp_path / "data").mkdir()
    for name in names:
        (tmp_path / "data" / f"{name}.json").write_text(
            (ROOT / "figures" / "quick" / "data" / f"{name}.json").read_text()
        )
    monkeypatch.setattr(
        runs,
        "flow_runs",
        lambda *a, **k: (_ for _ in ()).throw(AssertionError("computed")),
    )
    assert redraw(tmp_path, only=names) == names
    for name in names:
        assert (tmp_path / f"{name}.png").stat().st_size > 1000


def test_redraw_from_stored_data_needs_no_computation(tmp_path, monkeypatch):
    # the figures the quick run above does not draw, every other one (all of them under -m slow;
    # test_figure_data.py draws the others in the default run)
    names = [n for n in figure_names() if n not in DEFAULT_QUICK][::2]
    _redraw_from_stored_data(tmp_path, monkeypatch, names)


@pytest.mark.slow
def test_every_figure_is_redrawn_from_stored_data(tmp_path, monkeypatch):
    _redraw_from_stored_data(tmp_path, monkeypatch, figure_names())


def test_figures_are_one_module_each_and_the_library_does_not_import_them():
    import subprocess
    import sys

    assert figure_names() == [
        "theorem2_trajectories",
        "effective_offsets",
        "weak_spots",
        "boundary",
        "mitigations",
        "coverage",
        "coverage_map",
        "phase_uniformity",
        "convergence_rates",
        "toy_stability",
        "theorem1_oracle",
        "regime_boundary",
        "approximate_geometry",
        "relaxation_ladder",
        "paper_matrix",
        "paper_mechanisms",
        "paper_headline",
        "open_questions",
    ]
    for name, f in FIGURES.items():
        assert (
            f.name == name
            and f.compute.__module__
            == f.draw.__module__
            == f"inductheory.figures.{name}"
        )
        for folder in ("figures", "figures/quick"):
            data = json.loads((ROOT / folder / "data" / f"{name}.json").read_text())
            claim = f.claim_text(data)
            assert "THEORY.md" not in claim and "docs/theory.md §" in claim
            if name.startswith("theorem"):
                assert "checked numerically, not proved" in claim
    code = (
        "import sys, inductheory; "
        "print(any(m.startswith('inductheory.figures') for m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT
    )
    assert result.stdout.strip() == "False", result.stderr


def test_cli_lists_figures_and_rejects_unknown_ones(capsys):
    assert main(["reproduce", "--list"]) == 0
    assert capsys.readouterr().out.split() == figure_names()
    assert main(["reproduce", "--only", "nope", "--out", "/tmp/inductheory-none"]) == 2
    assert "unknown figure" in capsys.readouterr().err


@pytest.mark.slow
def test_committed_full_data_are_reproduced(tmp_path):
    reproduce(tmp_path, quick=False, cache=tmp_path / "cache", progress=False)
    for name in figure_names():
        old = json.loads((ROOT / "figures" / "data" / f"{name}.json").read_text())
        new = json.loads((tmp_path / "data" / f"{name}.json").read_text())
        assert_same_numbers(new, old, name)


def test_progress_of_a_figure_reaches_the_user_prefixed_and_throttled(capsys):
    from inductheory.figures._timings import FigureConsole
    from inductheory.internal._progress import Progress, report_to

    figures = [FIGURES["toy_stability"], FIGURES["coverage"]]
    status = FigureConsole(
        figures, {"toy_stability": 1.0, "coverage": 99.0}, True, every=60.0
    )
    status.started("coverage")
    # a loop that is silent by default speaks through the sink, at most once per `every`
    with report_to(lambda line, finished: status.line("coverage", line, finished)):
        with Progress(2, "flow (reduced)", enabled=False) as bar:
            bar.update()
            bar.update()
    status.started("toy_stability")
    status.finished("toy_stability", 1.5)  # 1% of the expected work: no ETA yet
    status.finished("coverage", 252.4)
    status.total()
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "running: coverage"
    assert err[1].startswith("  coverage: flow (reduced) 1/2 [")
    assert err[2] == "running: coverage, toy_stability"
    assert err[3] == "done toy_stability (1.5 s); 1/2"
    assert err[4] == "done coverage (4 min 12 s); 2/2"
    assert err[5].startswith("total ") and len(err) == 6


def test_an_eta_waits_for_a_quarter_of_the_expected_work_and_scales_it(capsys):
    from inductheory.figures._timings import FigureConsole

    clock = FakeClock()
    status = FigureConsole(fake_figures(a=20, b=80, c=100), {}, True, clock=clock)
    status.started("a")
    clock.now = 10.0
    status.finished("a", 10.0)  # 20 of 200 expected seconds: no ETA yet
    status.started("b")
    clock.now = 50.0
    status.finished("b", 40.0)  # half of the work, done in half the expected time
    err = capsys.readouterr().err.splitlines()
    assert err[1] == "done a (10.0 s); 1/3"
    # c expected 100 s, scaled by (10 + 40) / (20 + 80)
    assert err[3] == "done b (40.0 s); 2/3, about 50.0 s left (nominal costs)"


def test_an_eta_counts_parallel_jobs_and_running_figures(capsys):
    from inductheory.figures._timings import FigureConsole

    clock = FakeClock()
    status = FigureConsole(
        fake_figures(a=100, b=100, c=100, d=100, e=100), {}, True, jobs=2, clock=clock
    )
    for name in "ab":
        status.started(name)
    clock.now = 50.0
    status.finished("a", 50.0)
    status.started("c")
    assert status.eta() is None  # 100 of 500 expected seconds
    status.finished("b", 50.0)
    status.started("d")
    clock.now = 70.0
    # scale 0.5: c and d have 50 - 20 s left each, e (not started) 50 s; two at a time
    assert status.eta() == pytest.approx((30 + 30 + 50) / 2)
    status.finished("c", 20.0)
    status.finished("d", 20.0)
    # e alone is left: never less than the longest figure left; the finished figures took
    # 0.35 of their expectation, but e is expected to take at least half of its own (FLOOR)
    assert 100 * (50 + 50 + 20 + 20) / 400 < 50.0
    assert status.eta() == pytest.approx(50.0)
    status.started("e")
    clock.now = 70.0 + 51.0
    assert status.eta() is None  # past its expectation: no estimate, not "0 s left"


def test_a_silent_stretch_is_broken_by_a_still_running_line(capsys):
    from inductheory.figures._timings import FigureConsole

    clock = FakeClock()
    status = FigureConsole(fake_figures(a=10, b=10), {}, True, clock=clock)
    status.started("a")
    status.line("a", "flow (reduced) 1/4")
    clock.now = 29.0
    status.quiet_for()
    clock.now = 30.5
    status.quiet_for()
    clock.now = 45.0
    status.quiet_for()  # 14.5 s after the last line
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "running: a",
        "  a: flow (reduced) 1/4",
        "still running: a (30.5 s; last: flow (reduced) 1/4)",
    ]


def test_a_heartbeat_says_what_a_silent_job_does_and_for_how_long():
    from inductheory.internal._progress import Heartbeat

    clock, compiling, lines = FakeClock(), [None], []
    beat = Heartbeat(
        lines.append, period=20.0, clock=clock, compiling=lambda: compiling[0]
    )
    beat.sink(lambda line, finished: None)("flow (reduced) 1/4", False)
    clock.now = 19.9
    assert beat.check() is None  # not yet silent for a period
    clock.now = 20.0
    beat.check()
    clock.now = 35.0
    compiling[0] = 12.5
    assert beat.check() is None  # 15 s after the last heartbeat
    clock.now = 40.0
    beat.check()
    beat.seen("flow (reduced) 2/4")  # a progress line: the silence starts again
    clock.now = 59.0
    assert beat.check() is None
    assert lines == [
        "computing; no progress line for 20.0 s (last: flow (reduced) 1/4)",
        "compiling a jax program (for 12.5 s); no progress line for 40.0 s "
        "(last: flow (reduced) 1/4)",
    ]


def test_heartbeats_are_printed_at_once_under_the_figures_name(capsys):
    from inductheory.figures._timings import FigureConsole

    clock = FakeClock()
    status = FigureConsole(fake_figures(a=10, b=10), {}, True, clock=clock)
    status.started("a")
    status.line("a", "flow (reduced) 1/4")
    clock.now = 1.0  # within the `every` throttle of progress lines
    status.beat("a", "computing; no progress line for 20.0 s")
    status.beat("b", "late: b is not running")
    clock.now = 31.0
    status.quiet_for()  # 30 s after the heartbeat: the still-running line keeps the progress
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "running: a",
        "  a: flow (reduced) 1/4",
        "  a: computing; no progress line for 20.0 s",
        "still running: a (31.0 s; last: flow (reduced) 1/4)",
    ]


def test_the_quick_cost_of_a_figure_without_one_is_its_cost_scaled_like_the_others():
    from types import SimpleNamespace

    from inductheory.figures._timings import QUICK_COSTS, expected_cost

    known = sorted(QUICK_COSTS[n] / FIGURES[n].cost for n in QUICK_COSTS)
    new = SimpleNamespace(name="not_a_figure", cost=100.0, after=(), alone_cost=None)
    assert expected_cost(new, quick=True) == pytest.approx(100 * known[len(known) // 2])
    assert expected_cost(new, quick=False) == 100.0
    assert expected_cost(FIGURES["coverage"], quick=True) == QUICK_COSTS["coverage"]


def test_a_figure_that_reads_another_figures_trainings_comes_after_it():
    """paper_mechanisms reads the runs paper_matrix trains and caches: the workers' order puts
    the matrix first whatever the costs say, and the mechanisms' nominal cost is that of
    reading them, or of training them where the matrix is not in the run."""
    from inductheory.figures._schedule import compile_flags, dependencies_first
    from inductheory.figures._timings import expected_cost

    assert FIGURES["paper_mechanisms"].after == ("paper_matrix",)
    assert dependencies_first(["paper_mechanisms", "coverage", "paper_matrix"]) == [
        "paper_matrix",
        "paper_mechanisms",
        "coverage",
    ]
    assert dependencies_first(["paper_mechanisms", "coverage"]) == [
        "paper_mechanisms",
        "coverage",
    ]
    # a figure waits only for a running dependency: the workers of one compile kind must be
    # able to run it first
    for f in FIGURES.values():
        for quick in (False, True):
            assert all(
                compile_flags(d, quick) == compile_flags(f.name, quick) for d in f.after
            )
    mechanisms = FIGURES["paper_mechanisms"]
    both = ["paper_matrix", "paper_mechanisms"]
    assert expected_cost(mechanisms, False, both) == mechanisms.cost
    alone = expected_cost(mechanisms, False, ["paper_mechanisms"])
    assert alone == mechanisms.alone_cost > 10 * mechanisms.cost
    assert expected_cost(mechanisms, True, ["paper_mechanisms"]) < alone


def test_no_eta_before_the_first_figure_is_measured(capsys):
    from inductheory.figures._timings import FigureConsole

    clock = FakeClock()
    # one figure holds most of the expected work: even when it is running long, no estimate
    status = FigureConsole(fake_figures(a=90, b=5, c=5), {}, True, jobs=2, clock=clock)
    status.started("a")
    status.started("b")
    clock.now = 300.0
    status.quiet_for()
    assert status.eta() is None
    status.finished("b", 300.0)
    assert "left" not in capsys.readouterr().err


def test_a_clock_counts_the_programs_compiled_and_says_when_one_compiles():
    import jax
    import jax.numpy as jnp

    from inductheory.internal._clock import Clock, compiling_for

    seen = []
    # a shape no other test compiles this program for
    f = jax.jit(
        lambda x: (
            jnp.sin(x) * 3.0
            + jax.pure_callback(lambda y: (seen.append(compiling_for()), y)[1], x, x)
        )
    )
    clock = Clock()
    x = jnp.ones(7919)
    f(x).block_until_ready()
    first = clock.spent()
    f(x).block_until_ready()  # compiled already
    second = clock.spent()
    assert first.compiles >= 1 and second.compiles == first.compiles
    assert first.compile_s > 0
    assert seen == [None, None]  # the program runs after its compile has ended
    assert compiling_for() is None


def test_measured_tables_render_as_markdown_and_reject_ragged_rows():
    from inductheory.figures import MeasuredTable

    table = MeasuredTable("caption (n = 2)", ["a", "b|c"], [["1", "2"], ["3", "4"]])
    assert table.markdown() == [
        "caption (n = 2)",
        "",
        "| a | b\\|c |",
        "|---|---|",
        "| 1 | 2 |",
        "| 3 | 4 |",
    ]
    with pytest.raises(ValueError, match="row 1 has 1 cells, expected 2"):
        MeasuredTable("c", ["a", "b"], [["1", "2"], ["3"]])


def test_a_worker_sets_its_xla_flags_before_jax_starts(monkeypatch):
    import os

    from inductheory.figures._schedule import COMPILE_FLAGS, compile_flags
    from inductheory.internal import _pool
    from inductheory.internal._pool import (
        FAST_COMPILE_FLAGS,
        LIGHT_COMPILE_FLAGS,
        start_worker,
    )

    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    # this process has started jax: flags set now would not be applied, yet key the programs
    # compiled as usual in the persistent cache as if they were
    monkeypatch.setattr(_pool, "backend_started", lambda: True)
    with pytest.raises(RuntimeError, match="before jax starts its backend"):
        start_worker(None, None, flags=FAST_COMPILE_FLAGS)
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false"
    monkeypatch.setattr(_pool, "backend_started", lambda: False)  # a fresh worker
    start_worker(None, None, flags="")
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false"
    start_worker(None, None, flags=LIGHT_COMPILE_FLAGS)
    assert os.environ["XLA_FLAGS"] == (
        "--xla_cpu_enable_fast_math=false " + LIGHT_COMPILE_FLAGS
    )
    start_worker(None, None, flags=FAST_COMPILE_FLAGS)  # an optimization level is set
    assert os.environ["XLA_FLAGS"].count("xla_backend_optimization_level") == 1
    # every figure named for a mode is a registered figure, of one of the two flag sets; the
    # full figures compile with XLA's defaults
    assert COMPILE_FLAGS["full"] == {}
    for mode, flags in COMPILE_FLAGS.items():
        assert set(flags) <= set(figure_names()), mode
        assert set(flags.values()) <= {FAST_COMPILE_FLAGS, LIGHT_COMPILE_FLAGS}, mode
    # toy_stability's count of split ends changes under either set: XLA's defaults
    assert compile_flags("toy_stability", True) == ""
    assert compile_flags("paper_matrix", False) == ""


def _record_runs(monkeypatch):
    """Replace the figures' computation by a stub that writes one data file and records where."""
    import inductheory.figures._reproduce as module

    made = []

    def stub(figures, out, context, only, progress, command, jobs):
        (out / "data").mkdir(parents=True, exist_ok=True)
        (out / "data" / "stub.json").write_text(json.dumps({"quick": context.quick}))
        made.append((Path(out), context.quick))
        return {}

    monkeypatch.setattr(module, "_reproduce", stub)
    return made


def _files(folder: Path, skip: Path) -> dict:
    return {
        p.relative_to(folder): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and skip not in p.parents
    }


def test_quick_without_out_writes_figures_quick_and_leaves_the_full_figures(
    tmp_path, monkeypatch, capsys
):
    """`reproduce --quick` writes the repository's quick home, figures/quick, and does not touch
    the full figures in figures/; an explicit --out holding the other mode's figures is refused
    (either way round) with one line naming it."""
    monkeypatch.chdir(tmp_path)
    made = _record_runs(monkeypatch)
    args = ["--only", "coverage", "--no-cache", "--quiet", "--jobs", "1"]
    assert main(["reproduce", *args]) == 0  # the full figures
    full = _files(tmp_path / "figures", tmp_path / "figures" / "quick")
    assert full  # something to protect
    assert main(["reproduce", "--quick", *args]) == 0
    assert made == [(Path("figures"), False), (Path("figures") / "quick", True)]
    assert "figures written to figures/quick/" in capsys.readouterr().out
    assert _files(tmp_path / "figures", tmp_path / "figures" / "quick") == full
    assert json.loads((tmp_path / "figures/quick/data/stub.json").read_text()) == {
        "quick": True
    }
    for argv in (["--quick", "--out", "figures"], ["--out", "figures/quick"]):
        assert main(["reproduce", *argv, *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "inductheory reproduce: error:" in err
        assert argv[-1] in err
    assert len(made) == 2  # nothing computed for the refused runs
    assert _files(tmp_path / "figures", tmp_path / "figures" / "quick") == full
