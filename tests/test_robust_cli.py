"""At the command line, every adversarial case ends in a correct result or a
one-line error.

By default one case per class of `adversarial_cases.cases()` runs (fast); `-m slow` runs them all.
"""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import inductheory.experiments._regime as regime
from inductheory.cli import main
from inductheory.internal import _io

sys.path.insert(0, str(Path(__file__).parent))
import adversarial_cases as adv  # noqa: E402

# Classes whose runs are already exercised by tests/test_flow_cli.py and tests/test_oracle_cli.py.
COVERED_ELSEWHERE = {"flow-ok", "failed-seeds", "oracle-ok", "oracle-sweep"}
ONE_PER_CLASS = [c for c in adv.cases() if c.klass and c.klass not in COVERED_ELSEWHERE]


def _id(case):
    return f"{case.klass}:{' '.join(case.argv)[:60]}"


@pytest.mark.parametrize("case", ONE_PER_CLASS, ids=_id)
def test_one_case_per_class(case):
    outcome, detail = adv.run_case(case)
    assert outcome in ("ok", "clear"), detail


@pytest.mark.slow
@pytest.mark.parametrize("case", adv.cases(), ids=_id)
def test_every_adversarial_case(case):
    outcome, detail = adv.run_case(case)
    assert outcome in ("ok", "clear"), detail


SMALL_SWEEP = [
    "oracle",
    "--L",
    "4",
    "--S",
    "3",
    "--H",
    "1",
    "--restarts",
    "2",
    "--steps",
    "5",
    "--polish-steps",
    "5",
    "--rounds",
    "1",
    "--vertex-starts",
    "1",
    "--quiet",
    "--sweep",
    "--N-grid",
    "16,64,256",
    "--beta-grid",
    "1,2",
]


def test_ctrl_c_exits_130_with_one_line_keeping_finished_points(
    tmp_path, capsys, monkeypatch
):
    real, calls = regime.exact_oracle_points, []

    def interrupted_after_one(
        *a, **k
    ):  # one compiled call per point: the second point is interrupted
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(regime, "exact_oracle_points", interrupted_after_one)
    assert main([*SMALL_SWEEP, "--out", str(tmp_path)]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "interrupted" in err[0] and "kept" in err[0]
    assert len(list(tmp_path.glob("*.json"))) == 1  # the finished point is on disk
    monkeypatch.setattr(regime, "exact_oracle_points", real)
    assert main([*SMALL_SWEEP, "--out", str(tmp_path)]) == 0  # resumes
    assert len(list(tmp_path.glob("*.json"))) == 6


def test_unexpected_error_is_one_line_and_debug_shows_the_traceback(
    capsys, monkeypatch
):
    import inductheory.cli._toy as toy

    def boom(config):
        raise RuntimeError("something odd")

    monkeypatch.setattr(toy, "split_advantage", boom)
    monkeypatch.delenv("INDUCTHEORY_DEBUG", raising=False)
    assert main(["toy"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "inductheory toy: error: unexpected RuntimeError: something odd "
        "(set INDUCTHEORY_DEBUG=1 for the traceback)"
    ]
    monkeypatch.setenv("INDUCTHEORY_DEBUG", "1")
    assert main(["toy"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_concurrent_writers_of_one_file_never_corrupt_it(tmp_path):
    path, errors = tmp_path / "point.json", []

    def writer(k):
        try:
            for i in range(30):
                _io.write_json_atomic(path, {"writer": k, "i": i, "pad": "x" * 5000})
                json.loads(path.read_text())  # every read sees a whole file
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and [p.name for p in tmp_path.iterdir()] == ["point.json"]


def test_written_files_are_0644_under_the_usual_umask(tmp_path):
    old = os.umask(0o022)
    try:
        _io.write_text_atomic(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644


@pytest.mark.slow
def test_no_traceback_from_a_real_process_and_sigint_exits_130(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    bad = subprocess.run(
        [sys.executable, "-m", "inductheory", "toy", "--L", "1e21"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert (
        bad.returncode == 2
        and "Traceback" not in bad.stderr
        and len(bad.stderr.strip().splitlines()) == 1
    )
    import signal
    import time

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inductheory",
            *SMALL_SWEEP[1:],
            "--N-grid",
            "16,64,256,1024,4096",
            "--beta-grid",
            "1,2,4",
            "--out",
            str(tmp_path),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.time() + 300
    while not list(tmp_path.glob("*.json")) and time.time() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "Traceback" not in err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("inductheory oracle: error: interrupted")
    )
    assert list(tmp_path.glob("*.json"))
