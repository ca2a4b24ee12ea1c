"""Runs that cannot finish are refused in one line before any work: a loss sweep whose gates
alone do not fit (H = 1e8), and a figure run whose cache cannot take what it will write."""

from __future__ import annotations

import os
import time

import pytest

import inductheory.figures._readme as readme_module
import inductheory.figures._reproduce as module
import inductheory.figures._timings as timings
from inductheory.cli import main
from inductheory.internal._io import CacheWarning


def _errors(text):
    return [line for line in text.splitlines() if ": error: " in line]


def test_a_loss_sweep_at_h_1e8_is_refused_with_an_estimate(
    tmp_path, monkeypatch, capsys
):
    """Its gates (1e8 x 3, key and value) and their record in the sweep's spec are gigabytes,
    built before the sweep's own estimate: refused at once with the estimate instead of running
    into the allocator (exit 3, the memory status)."""
    monkeypatch.setenv("INDUCTHEORY_MAX_BYTES", str(2**34))
    start = time.perf_counter()
    code = main(
        ["sweep", "loss", "--L", "4", "--S", "3", "--H", "100000000", "--N", "48"]
        + ["--uniform", "--grid", "beta=1", "--quiet", "--out", str(tmp_path / "out")]
    )
    err = capsys.readouterr().err
    assert code == 3, err
    (line,) = _errors(err)
    assert "sweep loss (one grid point) needs about" in line
    assert "16 GiB is available (INDUCTHEORY_MAX_BYTES)" in line
    assert time.perf_counter() - start < 60  # nothing was built
    assert not [p for p in (tmp_path / "out").rglob("*") if not p.name.startswith(".")]


def test_a_loss_sweep_that_fits_still_runs(tmp_path, capsys):
    code = main(
        ["sweep", "loss", "--L", "4", "--S", "3", "--H", "2", "--N", "48", "--uniform"]
        + ["--grid", "beta=1", "--quiet", "--out", str(tmp_path / "out"), "--json"]
    )
    assert code == 0, capsys.readouterr().err


@pytest.fixture
def no_figure(monkeypatch):
    """Computing or drawing a figure fails the test: a refusal must come first."""

    def computed(*args, **kwargs):
        raise AssertionError("a figure was computed")

    monkeypatch.setattr(module, "_make", computed)
    monkeypatch.setattr(module, "_make_in_workers", computed)


def _cache_cases(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    timings = tmp_path / "timings-dir"
    (timings / "quick" / "timings.json").mkdir(parents=True)
    train = tmp_path / "train-file"
    (train / "quick").mkdir(parents=True)
    (train / "quick" / "train").write_text("x")
    return [
        (["--cache", str(a_file)], {}, "Not a directory"),
        ([], {"INDUCTHEORY_CACHE_DIR": str(a_file)}, "Not a directory"),
        ([], {"INDUCTHEORY_CACHE_DIR": str(a_file / "below")}, "Not a directory"),
        (["--cache", str(timings)], {}, "timings.json, which must be a file"),
        (["--cache", str(train)], {}, "train, which must be a directory"),
    ]


def test_an_unusable_cache_directory_is_refused_before_any_figure(
    tmp_path, monkeypatch, capsys, no_figure
):
    for i, (argv, env, message) in enumerate(_cache_cases(tmp_path)):
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        out = tmp_path / f"out{i}"
        argv = ["reproduce", "--quick", "--only", "coverage", "--quiet", *argv]
        assert main([*argv, "--out", str(out)]) == 2
        (line,) = _errors(capsys.readouterr().err)
        assert "cache directory" in line and message in line, line
        # nothing written (the command line's check of --out leaves an empty directory)
        assert not out.exists() or not any(out.iterdir())
        for name in env:
            monkeypatch.delenv(name)


def test_times_that_cannot_be_kept_are_a_warning_not_a_failure(tmp_path, monkeypatch):
    """The figures are written; losing the next run's ETA does not turn that into exit 1."""
    (tmp_path / "cache" / "quick").mkdir(parents=True)

    def make(name, context, out, report=None):
        (out / "data" / f"{name}.json").write_text("{}")
        data = module.FigureData(parameters={}, findings="")
        return module.FigureRun(name, data, module.FigureTimes(1.0, 1.0, 0.0, 0, 0, 1))

    write = timings.write_json_atomic

    def refuse_timings(path, data):
        if path.name == "timings.json":
            raise OSError(28, "No space left on device")
        return write(path, data)

    monkeypatch.setattr(module, "_make", make)
    monkeypatch.setattr(timings, "write_json_atomic", refuse_timings)
    monkeypatch.setattr(readme_module, "readme", lambda *args: "readme\n")
    with pytest.warns(CacheWarning, match="No space left on device"):
        module.reproduce(
            tmp_path / "out",
            quick=True,
            only=["coverage"],
            cache=tmp_path / "cache",
            progress=False,
        )
    assert (tmp_path / "out" / "data" / "coverage.json").exists()
    assert os.listdir(tmp_path / "cache" / "quick") == []
