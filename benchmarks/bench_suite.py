"""Time the default test suite as CI runs it, and write the result to benchmarks/results/.

Runs `python -m pytest -n 2 --dist loadfile` in a child process from the repository root and
records its wall time, the CPU seconds of every process and the number of tests that ran
(`benchmarks/results/suite-<processor>.json`; render the pages with
`python benchmarks/render_performance.py`). Run it on otherwise idle cores.

    python benchmarks/bench_suite.py
"""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import time

from _results import ROOT, Span, machine, record, slug

COMMAND = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-q"]


def main() -> int:
    start = time.perf_counter()
    done = subprocess.run(COMMAND, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(done.stdout[-2000:])
    if done.returncode != 0:
        print(
            f"the suite failed (exit {done.returncode}); nothing recorded",
            file=sys.stderr,
        )
        return done.returncode
    passed = re.search(r"(\d+) passed", done.stdout)
    processor, _ = machine()
    path = record(
        f"suite-{slug(processor)}",
        "suite",
        "python -m pytest -n 2 --dist loadfile",
        wall_s=Span.of([wall]),
        cpu_s=Span.of([usage.ru_utime + usage.ru_stime]),
        peak_rss_gib=usage.ru_maxrss / 2**20,
        tests=int(passed.group(1)) if passed else None,
    )
    print(f"suite: wall {wall:.0f} s; written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
