"""`inductheory train`, `inductheory sweep train` and `inductheory gates` under bad input: every
invalid value, unknown name, contradictory switch, size that cannot fit, unusable `--out` and
malformed gate file ends in one line naming the parameter or the file, with a non-zero exit and
before any work; interrupted and concurrent runs on one `--out` give the numbers of a straight run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from inductheory.cli import main

sys.path.insert(0, str(Path(__file__).parent))
import adversarial_cases as adv  # noqa: E402

TRAIN = ["train", "--L", "4", "--S", "3", "--H", "1", "--N", "48", "--M", "48"]
TRAIN += ["--steps", "2", "--seeds", "1", "--quiet", "--eval-contexts", "4"]
TRAIN += ["--log-points", "2", "--json"]
SWEEP = ["sweep", "train", "--L", "4", "--S", "3", "--H", "1", "--N", "48"]
SWEEP += ["--steps", "2", "--seeds", "1", "--quiet", "--eval-contexts", "4"]
SWEEP += ["--log-points", "2", "--grid", "beta=1,2"]
LONG_NAME = "x" * 300  # one component over NAME_MAX (255)
LONG_PATH = "/tmp/" + "/".join(["y" * 200] * 30)  # over PATH_MAX (4096)

E = adv.E
CASES = [
    # invalid values: negative, zero, NaN, infinite, not a number, fractional sizes
    *(E([*TRAIN, "--lr", v], "--lr: lr must be") for v in ("0", "-1", "nan", "inf")),
    E([*TRAIN, "--lr", "1e400"], "lr must be a finite number"),
    *(
        E([*TRAIN, f"--{k}", v], f"--{k}: {k} must be")
        for k, v in (
            ("steps", "0"),
            ("seeds", "-3"),
            ("seeds", "nan"),
            ("M", "inf"),
            ("eval-contexts", "0"),
            ("log-points", "1.5"),
            ("chunk", "0"),
            ("N", "0"),
            ("H", "nan"),
            ("rho", "0"),
            ("weight-decay", "-1"),
            ("weight-decay", "inf"),
            ("warmup", "1"),
            ("warmup", "-0.1"),
            ("warmup", "nan"),
            ("betas", "0.9"),
            ("betas", "0.9,1"),
            ("betas", "0.9,0.95,0.99"),
            ("local-window", "-1"),
        )
    ),
    E([*TRAIN, "--batch", "0"], "--batch: batch must be full or population"),
    E([*TRAIN, "--batch", "nan"], "--batch: batch must be full or population"),
    *(
        E([*SWEEP, "--lr", v, "--out", "{tmp}"], "--lr: lr must be")
        for v in ("0", "nan")
    ),
    E([*SWEEP[:-2], "--grid", "lr=0", "--out", "{tmp}"], "lr must be > 0"),
    E([*SWEEP[:-2], "--grid", "lr=nan", "--out", "{tmp}"], "must be finite"),
    # unknown names
    E([*TRAIN, "--optimizer", "nope"], "--optimizer must be 'gd' or the name"),
    E([*TRAIN, "--betas=-0.1,0.9"], "--betas: betas must be"),
    E([*TRAIN, "--betas", "0.9,0.95"], "taking a learning_rate and betas b1, b2"),
    E(
        [*TRAIN, "--optimizer", "sgd", "--betas", "0.9,0.95"],
        "taking a learning_rate and betas b1, b2",
    ),
    E([*TRAIN, "--optimizer", ""], "--optimizer must be 'gd'"),
    E([*TRAIN, "--schedule", "nope"], "--schedule: invalid choice"),
    E([*TRAIN, "--gates", "nope"], "--gates: invalid choice"),
    E([*SWEEP, "--optimizer", "nope", "--out", "{tmp}"], "--optimizer must be"),
    E([*SWEEP, "--schedule", "nope", "--out", "{tmp}"], "--schedule: invalid choice"),
    # switches that contradict each other
    E([*TRAIN, "--eps", "0.1"], "--eps sets the approximate geometry"),
    E([*TRAIN, "--d", "8"], "--d sets the dimension"),
    E([*TRAIN, "--batch", "population"], "--M sets the fixed sample of --batch full"),
    E([*TRAIN, "--bias", "--gates", "uniform"], "--bias adds a per-offset bias"),
    E([*TRAIN[:-1], "--embeddings", "approximate"], "needs --eps or --d"),
    E([*TRAIN, "--local-window", "12"], "--local-window must be <= 11, got 12"),
    E(
        [*SWEEP, "--local-window", "12", "--out", "{tmp}"],
        "--local-window must be <= 11",
    ),
    # sizes that cannot fit: refused before any work, with the estimate
    E([*TRAIN, "--seeds", "100000000"], "needs about"),
    E([*TRAIN, "--M", "1000000000"], "needs about"),
    E([*TRAIN, "--embeddings", "learned", "--d", "100000000"], "needs about"),
    E([*SWEEP, "--seeds", "100000000", "--out", "{tmp}"], "needs about"),
    # an --out that is a file, lies under a file, cannot be written or cannot be named
    E([*TRAIN, "--out", "{file}"], "--out: "),
    E([*TRAIN, "--out", "{file}/sub"], "--out: cannot write into"),
    E([*TRAIN, "--out", "/proc/inductheory-out"], "--out: cannot write into"),
    E([*TRAIN, "--out", f"/tmp/{LONG_NAME}"], "--out: the output directory name"),
    E([*TRAIN, "--out", LONG_PATH], "--out: the output directory's path"),
    E([*SWEEP, "--out", "{file}"], "--out: "),
    E([*SWEEP, "--out", f"/tmp/{LONG_NAME}"], "NAME_MAX"),
    E([*SWEEP, "--out", LONG_PATH], "PATH_MAX"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: " ".join(c.argv[13:])[:70])
def test_bad_train_input_is_one_line_naming_the_parameter(case):
    outcome, detail = adv.run_case(case)
    assert outcome == "clear", detail


@pytest.mark.parametrize(
    "command",
    [
        ["flow", "--quiet"],
        ["reproduce", "--quick", "--only", "coverage", "--no-cache"],
        ["oracle", "--sweep", "--N-grid", "16", "--beta-grid", "1", "--quiet"],
        ["sweep", "loss", "--grid", "beta=1"],
    ],
    ids=lambda c: c[0] if c[0] != "sweep" else "sweep loss",
)
@pytest.mark.parametrize("out", [f"/tmp/{LONG_NAME}", LONG_PATH], ids=["name", "path"])
def test_an_over_long_out_is_one_line_in_every_command(command, out, capsys):
    """ENAMETOOLONG: the name is checked before anything is created or computed."""
    assert main([*command, "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "NAME_MAX" in err or "PATH_MAX" in err


# --- gate files ---------------------------------------------------------------------------------


def _gates(capsys, *argv):
    code = main(["gates", *map(str, argv), "--json"])
    out = capsys.readouterr()
    return code, out.out, out.err


def _forged_npy(path, shape, descr="<f8"):
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": descr, "fortran_order": False, "shape": shape}
        )


class _Marker:
    """Unpickling this runs `open(path, "w")`: a file that must never be created."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _malformed(tmp_path):
    """(file, what its one-line error says) for every class of malformed gate file."""
    good = tmp_path / "good.npz"
    np.savez(good, g=np.zeros((2, 4)))
    (tmp_path / "folder.npz").mkdir()
    os.symlink(tmp_path / "absent.npz", tmp_path / "broken-link.npz")
    os.symlink(tmp_path / "folder.npz", tmp_path / "dir-link.npz")
    os.mkfifo(tmp_path / "pipe.npy")  # reading it would block forever
    _forged_npy(tmp_path / "forged.npy", (10**12, 4))  # 32 TB declared, none held
    np.save(tmp_path / "rank0.npy", np.float64(1.0))
    np.save(tmp_path / "text.npy", np.array(["a", "b"]))
    np.save(tmp_path / "complex.npy", np.zeros((2, 4), complex))
    nan = np.zeros((2, 4))
    nan[1, 3] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    np.save(tmp_path / "narrow.npy", np.zeros((3, 1)))
    objects = np.empty(2, dtype=object)
    objects[:] = [_Marker(str(tmp_path / "UNPICKLED")), 1.0]
    np.save(tmp_path / "objects.npy", objects, allow_pickle=True)
    np.savez(tmp_path / "objects.npz", g=objects)
    (tmp_path / "garbage.npz").write_bytes(b"PK\x03\x04 not really a zip")
    return [
        (tmp_path / "folder.npz", "is a directory"),
        (tmp_path / "broken-link.npz", "which does not exist (a broken link)"),
        (tmp_path / "dir-link.npz", "is a directory"),
        (tmp_path / "pipe.npy", "not a regular file"),
        (tmp_path / "forged.npy", "but the file holds 0 bytes"),
        (tmp_path / "rank0.npy", "is a scalar"),
        (tmp_path / "text.npy", "must hold real numbers"),
        (tmp_path / "complex.npy", "must hold real numbers"),
        (tmp_path / "nan.npy", "must be finite"),
        (tmp_path / "narrow.npy", "at least 2 window slots"),
        (tmp_path / "objects.npy", "Object arrays cannot be loaded"),
        (tmp_path / "objects.npz", "Object arrays cannot be loaded"),
        (tmp_path / "garbage.npz", "cannot read it as .npz"),
        (tmp_path / "absent.safetensors", "no such file"),
    ]


def test_malformed_gate_files_are_one_line_naming_the_file(tmp_path, capsys):
    for path, message in _malformed(tmp_path):
        code, out, err = _gates(capsys, path)
        assert code == 2 and out == "", (path, err)
        assert err.count("\n") == 1, err  # no warning (an unclosed file) besides it
        assert err.startswith(f"inductheory gates: error: {path}: ") and message in err
    code, _, err = _gates(capsys, tmp_path / "good.npz", "--tensor", "missing")
    assert code == 2 and "no tensor matches 'missing'; available: g" in err
    # object arrays are refused unread: the pickled object never ran
    assert not (tmp_path / "UNPICKLED").exists()


def test_a_link_to_a_gate_file_reads_the_file(tmp_path, capsys):
    gates = np.full((2, 4), -9.0)
    gates[0, 1] = gates[1, 2] = 9.0
    np.savez(tmp_path / "real.npz", g=gates)
    os.symlink(tmp_path / "real.npz", tmp_path / "link.npz")
    code, direct, _ = _gates(capsys, tmp_path / "real.npz")
    assert code == 0
    code, linked, _ = _gates(capsys, tmp_path / "link.npz")
    assert code == 0
    strip = lambda text: {k: v for k, v in json.loads(text).items() if k != "file"}
    assert strip(linked) == strip(direct)
    assert [h["argmax_slot"] for h in json.loads(direct)["heads"]] == [1, 2]


# --- interrupted and concurrent runs on one --out --------------------------------------------

# Long enough (in chunks) to be stopped in the middle, short in seconds: the chunks after the
# first checkpoint take 2-4 s under the suite's compile flags (1,200-2,000 steps/s on a core
# shared with the other test worker), so a poller slowed down by a loaded machine still stops it
# midway; every run here costs its steps again (6 runs in all).
RUN = ["train", "--L", "4", "--S", "3", "--H", "1", "--N", "48", "--M", "48"]
RUN += ["--optimizer", "adam", "--lr", "0.05", "--steps", "5000", "--chunk", "25"]
RUN += ["--seeds", "2", "--eval-contexts", "16", "--log-points", "8", "--quiet"]


# The run as a user starts it: SIGINT raising KeyboardInterrupt and unblocked, whatever the test
# worker passed on (a child inherits an ignored or blocked SIGINT); set in the child itself, not
# by a preexec_fn (a fork of this multithreaded process).
_DEFAULT_SIGINT = (
    "import runpy, signal, sys; "
    "signal.signal(signal.SIGINT, signal.default_int_handler); "
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT]); "
    "sys.argv[0] = 'inductheory'; "
    "runpy.run_module('inductheory', run_name='__main__', alter_sys=True)"
)


def _start(out, *extra):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    return subprocess.Popen(
        [sys.executable, "-c", _DEFAULT_SIGINT, *RUN, "--out", str(out), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _signal_state(pid: int) -> str:
    """The kernel's view of a process's signals (blocked, ignored, caught masks)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return "no /proc status"
    return " ".join(x for x in lines if x.startswith(("SigBlk", "SigIgn", "SigCgt")))


def _numbers(out: Path) -> dict:
    """The run's report without its timings, and its statistics."""
    report = json.loads((out / "report.json").read_text())
    report.pop("timings")
    with np.load(out / "statistics.npz") as stats:
        arrays = {k: stats[k].tolist() for k in stats.files}
    return {"report": report, "statistics": arrays}


def _stop_midway(out: Path, sig) -> subprocess.CompletedProcess:
    proc = _start(out)
    deadline = time.time() + 300
    while not (out / "checkpoint.eqx").exists() and time.time() < deadline:
        time.sleep(0.005)
    finished_first = proc.poll() is not None
    state = _signal_state(proc.pid)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert not finished_first, (
        f"the run ended (exit {proc.returncode}) before the signal could stop it midway: "
        f"report.json {'exists' if (out / 'report.json').exists() else 'is missing'}; {err}"
    )
    assert sig != signal.SIGINT or proc.returncode == 130, (
        f"SIGINT did not stop the run (exit {proc.returncode}); its signals then: {state}; {err}"
    )
    return proc.returncode, err


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    out = tmp_path_factory.mktemp("straight")
    proc = _start(out)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return _numbers(out)


def test_sigint_and_sigkill_then_resume_give_the_numbers_of_a_straight_run(
    straight, tmp_path
):
    code, err = _stop_midway(tmp_path, signal.SIGINT)
    assert code == 130 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (
        "inductheory train: error: interrupted; with --out the run resumes from its last "
        "chunk"
    )
    assert not (tmp_path / "report.json").exists()  # stopped before its end
    code, _ = _stop_midway(tmp_path, signal.SIGKILL)  # resumed, then killed outright
    assert code == -signal.SIGKILL
    assert not (tmp_path / "report.json").exists()
    proc = _start(tmp_path)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert _numbers(tmp_path) == straight
    assert not list(tmp_path.glob(".*.tmp"))  # no partial file left behind


def test_two_concurrent_runs_on_one_out_never_interleave(straight, tmp_path):
    """Both writers finish; every file is whole (atomic writes) and holds the straight run's
    numbers; a concurrent run of other parameters is refused in one line, before any work."""
    first = _start(tmp_path)
    # the run of other parameters starts once the first has claimed --out (else whichever
    # process the scheduler runs first claims it, and the test would depend on the load)
    record = tmp_path / ".inductheory-out"
    deadline = time.monotonic() + 300
    while not record.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert record.exists()
    second = _start(tmp_path)
    other = _start(tmp_path, "--rho", "0.2")
    for proc in (first, second):
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    _, err = other.communicate(timeout=600)
    assert other.returncode == 2
    assert err.count("\n") == 1 and "other parameters" in err, err
    assert _numbers(tmp_path) == straight
    assert not list(tmp_path.glob(".*.tmp"))


def test_an_interrupted_train_sweep_resumes_with_the_numbers_of_a_straight_one(
    tmp_path, monkeypatch, capsys
):
    """Ctrl-C in the second grid point: exit 130 with one line, the first point kept; the same
    command then computes only what is left and reports the straight sweep's points."""
    from inductheory.experiments._sweep import _driver

    argv = [*SWEEP[:-2], "--grid", "beta=1,2,3", "--block", "1", "--json"]
    assert main([*argv, "--out", str(tmp_path / "straight")]) == 0
    straight = json.loads(capsys.readouterr().out)["points"]
    real, calls = _driver.compute_block, []

    def interrupted(spec, indices):
        calls.append(indices)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(spec, indices)

    monkeypatch.setattr(_driver, "compute_block", interrupted)
    assert main([*argv, "--out", str(tmp_path / "run")]) == 130
    err = capsys.readouterr().err
    assert _one_error(err).startswith("inductheory sweep train: error: interrupted")
    calls.clear()
    monkeypatch.setattr(
        _driver, "compute_block", lambda s, i: (calls.append(i), real(s, i))[1]
    )
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    assert calls == [[1], [2]]  # the finished point was kept, not recomputed
    assert json.loads(capsys.readouterr().out)["points"] == straight


def _one_error(err: str) -> str:
    (line,) = [x for x in err.splitlines() if ": error: " in x]
    assert "Traceback" not in err
    return line
