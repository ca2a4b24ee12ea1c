"""Run any benchmark of this folder and keep its result as data: wall time, CPU time of every
process it started, peak memory of the largest, and its closing line (the ratio it measured
side by side) as the result's note, in benchmarks/results/<name>.json.

    python benchmarks/run.py bench_flow.py            # any benchmark, with its own arguments
    python benchmarks/run.py bench_matrix.py --quick
    python benchmarks/render_performance.py           # docs/performance.md from the results

The benchmarks that time the whole project (bench_reproduce, bench_suite, bench_compiles,
bench_cores) record richer results themselves; this runner covers the rest the same way.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

from _results import RESULTS, Span, record, slug

HERE = Path(__file__).resolve().parent


def run(
    script: str, args: list[str], folder: Path = RESULTS
) -> tuple[int, Path | None]:
    """Run `script` (a file of benchmarks/) with `args`, echo its output, and record it.

    **Returns:** its exit status and the result file (None when it failed: nothing recorded).
    """
    path = HERE / script
    if path.parent != HERE or not path.is_file() or path.suffix != ".py":
        raise SystemExit(f"benchmark must be a .py file of {HERE}, got {script!r}")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(path), *args], stdout=subprocess.PIPE, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    sys.stdout.write(done.stdout)
    if done.returncode:
        return done.returncode, None
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    command = " ".join(["python", f"benchmarks/{script}", *args])
    name = slug(" ".join([Path(script).stem, *args]))
    result = record(
        name,
        Path(script).stem,
        command,
        folder=folder,
        wall_s=Span.of([wall]),
        cpu_s=Span.of([cpu]),
        # ru_maxrss: KiB on Linux, the largest process this run started
        peak_rss_gib=after.ru_maxrss / 2**20,
        note=lines[-1] if lines else "",
    )
    return 0, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("benchmark", help="a file of benchmarks/, e.g. bench_flow.py")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args()
    code, result = run(ns.benchmark, ns.args)
    if result is not None:
        print(f"recorded {result.relative_to(HERE.parent)}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
