"""The console script `inductheory` and `python -m inductheory` are one entry point: both set the
command line's process-wide options before equinox reads them, and tune the garbage collector;
importing the package does neither."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import _inductheory_entry as entry
from inductheory.internal._gc import YOUNG_THRESHOLD

ROOT = Path(__file__).resolve().parents[1]

# Imported by Python at start-up (before any module of the command): at exit it writes what the
# process environment and equinox hold, the collector's youngest threshold and whether it froze.
REPORTER = """
import atexit, gc, os, sys

def _report():
    eqx = sys.modules.get("equinox._config")
    with open(os.environ["ENTRY_REPORT"], "w") as f:
        f.write(f"{os.environ.get('EQX_ON_ERROR')} {getattr(eqx, 'EQX_ON_ERROR', None)} ")
        f.write(f"{gc.get_threshold()[0]} {gc.get_freeze_count() > 0}")

atexit.register(_report)
"""

ENTRY_POINTS = {
    # what the console script runs (pyproject.toml: inductheory = "_inductheory_entry:main")
    "console script": [
        "-c",
        "import sys, _inductheory_entry; sys.exit(_inductheory_entry.main())",
    ],
    "python -m": ["-m", "inductheory"],
}


def _seen(tmp_path, user_value):
    """(environment, equinox) values of EQX_ON_ERROR in each entry point's process, then its
    collector's youngest threshold and whether it froze its imports."""
    (tmp_path / "sitecustomize.py").write_text(REPORTER)
    env = {k: v for k, v in os.environ.items() if k != "EQX_ON_ERROR"}
    if user_value is not None:
        env["EQX_ON_ERROR"] = user_value
    paths = [str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    procs = {}
    for name, args in ENTRY_POINTS.items():
        env_one = {**env, "ENTRY_REPORT": str(tmp_path / name.replace(" ", "_"))}
        procs[name] = subprocess.Popen(
            [sys.executable, *args, "--version"],
            env=env_one,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    seen = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert out.startswith("inductheory "), out
        seen[name] = (tmp_path / name.replace(" ", "_")).read_text().split()
    return seen


@pytest.mark.parametrize("user_value, want", [(None, "nan"), ("raise", "raise")])
def test_both_entry_points_set_the_same_environment(tmp_path, user_value, want):
    seen = _seen(tmp_path, user_value)
    tuned = [str(YOUNG_THRESHOLD), "True"]
    assert seen == {name: [want, want, *tuned] for name in ENTRY_POINTS}


def test_importing_the_package_leaves_the_garbage_collector_alone():
    # this Python's own settings (they differ between versions), before and after the import
    code = (
        "import gc; print(gc.get_threshold(), gc.get_freeze_count()); import inductheory; "
        "print(gc.get_threshold(), gc.get_freeze_count())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    before, after = out.splitlines()
    assert after == before and before.endswith(" 0")


def test_only_python_m_inductheory_counts_as_running_the_package(monkeypatch):
    cases = [
        (["-m"], ["python", "-m", "inductheory", "flow"], True),
        (["-m"], ["python", "-X", "utf8", "-minductheory"], True),
        (["-m"], ["python", "-m", "inductheory.figures"], False),
        (["-m"], ["python", "-m", "pytest"], False),
        (["-c"], ["python", "-c", "import inductheory"], False),
        (["/x/inductheory"], ["python", "/x/inductheory", "-m", "inductheory"], False),
    ]
    for argv, orig_argv, want in cases:
        monkeypatch.setattr(sys, "argv", argv)
        monkeypatch.setattr(sys, "orig_argv", orig_argv)
        assert entry.run_as_main_module() is want, orig_argv
