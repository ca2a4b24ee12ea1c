"""The memory each command's sizes add to a process, next to the estimate the command checks
before it allocates (issue 65). tests/test_memory_estimates.py runs this file as one subprocess
from the repository's root, `python -m tests.memory_peaks NAME ...` (this checkout's package
first on the path): one JSON object on the last line of stdout, by name
`{"estimate": bytes, "added": bytes, "cpu_s": seconds}`.

The process first runs a tiny `loss` (the backend, its compiler and the command line's modules
start and stay). Then, for each command: the kernel's peak resident set of this process
(`VmHWM`) is reset by writing 5 to /proc/self/clear_refs, the resident set is read as the
baseline, the command runs once at its size, and `added` is the peak above the baseline: its
arrays, with the compiling of its programs (which a run needs too). `estimate` is the largest
total the command passed to `check_memory` (a wrapper records them). `ru_maxrss` would not do:
a spawned child inherits the peak of the process it was spawned from (a test worker's gigabytes)
at exec.

The caller sets `MALLOC_MMAP_THRESHOLD_` so that glibc maps every large block on its own and
returns it when freed: a command's arrays never land in memory an earlier command freed, below
the baseline.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time

# name: the command line, sized so that its largest arrays (hundreds of MB) dominate the peak
# and it runs for about a second
COMMANDS = {
    # the closed form: H x W gates and their temporaries
    "loss": [
        "loss",
        "--S",
        "4",
        "--L",
        "4",
        "--N",
        "4096",
        "--uniform",
        "--H",
        "4000000",
    ],
    # the reduced flow: every seed's statistics at every save time
    "flow": ["flow", "--L", "4", "--t-max", "1", "--seeds", "100", "--n-save", "5000"],
    # the full flow: a chunk of seeds' solver states of dimension N + 1
    "flow-full": ["flow", "--dynamics", "full", "--L", "4", "--N", "65536", "--M", "64"]
    + ["--t-max", "1", "--seeds", "2"],
    # the oracle: every start's n x n Newton matrices
    "oracle": ["oracle", "--L", "4", "--N", "64", "--restarts", "300", "--steps", "3"]
    + ["--vertex-starts", "1"],
    # train paper (and matrix, whose rows it trains): the transformer's activations on a batch
    "train-paper": [
        "train",
        "paper",
        "--steps",
        "1",
        "--seeds",
        "1",
        "--batch",
        "1024",
    ],
}
QUIET = {"loss": [], "toy": []}  # commands without --quiet
WARM_UP = ["loss", "--S", "4", "--L", "4", "--N", "64", "--uniform", "--H", "2"]


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _record_estimates(seen: list[int]) -> None:
    """Wrap `check_memory` in its module and wherever a loaded module imported it, appending
    every estimate's total to `seen` (modules imported later read the wrapper)."""
    from inductheory.internal import _memory

    original = _memory.check_memory

    def recording(estimate, what):
        total = (
            estimate.total
            if isinstance(estimate, _memory.MemoryEstimate)
            else int(estimate)
        )
        seen.append(total)
        return original(estimate, what)

    _memory.check_memory = recording
    for module in list(sys.modules.values()):
        if getattr(module, "check_memory", None) is original:
            module.check_memory = recording


def _run(argv: list[str]) -> None:
    from inductheory.cli import main

    quiet = QUIET.get(argv[0], ["--quiet"])
    with contextlib.redirect_stdout(io.StringIO()):
        code = main([*argv, *quiet])
    if code != 0:
        raise SystemExit(f"inductheory {' '.join(argv)} exited with {code}")


def measure(names) -> dict:
    """`{name: {"estimate", "added", "cpu_s"}}` of the commands `names` (keys of COMMANDS)."""
    from inductheory.cli import build_parser

    build_parser()  # every command's module, before the wrapping
    seen: list[int] = []
    _record_estimates(seen)
    _run(WARM_UP)
    out = {}
    for name in names:
        seen.clear()
        _reset_peak()
        base, start = _status("VmRSS"), time.process_time()
        _run(COMMANDS[name])
        out[name] = {
            "estimate": max(seen),
            "added": _status("VmHWM") - base,
            "cpu_s": round(time.process_time() - start, 2),
        }
        print(name, out[name], file=sys.stderr, flush=True)
    return out


if __name__ == "__main__":
    import warnings

    warnings.simplefilter(
        "ignore"
    )  # sizes outside the theorems' assumptions, no selection
    print(json.dumps(measure(sys.argv[1:] or list(COMMANDS))))
