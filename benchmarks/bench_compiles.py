"""Count the XLA compiles of `inductheory reproduce`, from a cold and from a warm compilation cache.

Runs `inductheory reproduce --json` twice in child processes, both from an empty figure cache
(no finished computation) into fresh output folders, under a private `INDUCTHEORY_CACHE_DIR`:

1. cold: the cache directory empty (no compiled or stored program);
2. warm: the compiled programs the first run left (jax's persistent compilation cache, `jax/`,
   and the program store, `programs/`; `--drop-programs` removes the store first) and an empty
   figure cache again.

Prints per figure, cold and warm side by side: the programs handed to XLA (`compiles`), how many
of them the persistent cache served (`hits`), the tracing and compiling CPU seconds
(`compile_s`) and the figure's wall seconds; then each run's wall time and the CPU seconds of
every process. The numbers come from the figures' worker processes (`_reproduce._make`).

    python benchmarks/bench_compiles.py --quick
    python benchmarks/bench_compiles.py --quick --only weak_spots,knockout --jobs 1

Progress goes to `<work>/cold.log` and `<work>/warm.log`; the table to stdout (`--json FILE`
also writes it as JSON). On a machine shared with other jobs the seconds vary from run to run;
the counts do not.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(work: Path, label: str, args) -> dict:
    """One `reproduce --json` run into `work/out-<label>`; its figures' data and its totals."""
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(work / "xdg"),
        "PYTHONPATH": str(ROOT),
        "INDUCTHEORY_CACHE_DIR": str(work / "cache"),
    }
    command = [sys.executable, "-m", "inductheory", "reproduce", "--json"]
    command += ["--out", str(work / f"out-{label}")]
    if args.quick:
        command.append("--quick")
    if args.only:
        command += ["--only", args.only]
    if args.jobs:
        command += ["--jobs", str(args.jobs)]
    cpu, wall = children_cpu(), time.perf_counter()
    with open(work / f"{label}.log", "w") as log:
        done = subprocess.run(
            command, env=env, stdout=subprocess.PIPE, stderr=log, text=True
        )
    wall, cpu = time.perf_counter() - wall, children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(
            f"{label} run failed (exit {done.returncode}); see {work / label}.log"
        )
    result = {"figures": json.loads(done.stdout), "wall_s": wall, "cpu_s": cpu}
    (work / f"{label}.json").write_text(json.dumps(result, indent=1))
    return result


def table(cold: dict, warm: dict) -> list[str]:
    head = (
        f"{'figure':26} {'compiles':>8} {'hits':>5} {'compile_s':>9} {'wall_s':>7}"
        f"   {'compiles':>8} {'hits':>5} {'compile_s':>9} {'wall_s':>7}"
    )
    lines = [f"{'':26} {'cold compilation cache':^32}   {'warm':^32}", head]
    lines.append("-" * len(head))
    total = {k: [0.0, 0.0] for k in ("compiles", "cache_hits", "compile_s", "wall_s")}
    for name, c in cold["figures"].items():
        w = warm["figures"].get(name, {})
        cells = []
        for d, i in ((c, 0), (w, 1)):
            for key in total:
                total[key][i] += d.get(key) or 0
            cells.append(
                f"{d.get('compiles', 0):>8} {d.get('cache_hits', 0):>5} "
                f"{d.get('compile_s', 0):>9.1f} {d.get('wall_s', 0):>7.1f}"
            )
        lines.append(f"{name:26} {cells[0]}   {cells[1]}")
    lines.append("-" * len(head))
    lines.append(
        f"{'sum over figures':26} "
        + "   ".join(
            f"{total['compiles'][i]:>8.0f} {total['cache_hits'][i]:>5.0f} "
            f"{total['compile_s'][i]:>9.1f} {total['wall_s'][i]:>7.1f}"
            for i in (0, 1)
        )
    )
    for label, r in (("cold", cold), ("warm", warm)):
        lines.append(
            f"{label} run: wall {r['wall_s']:.1f} s, CPU {r['cpu_s']:.1f} s (every process)"
        )
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="reproduce --quick")
    parser.add_argument("--only", default=None, help="comma-separated figure names")
    parser.add_argument("--jobs", type=int, default=None, help="reproduce --jobs")
    parser.add_argument(
        "--drop-programs",
        action="store_true",
        help="remove the program store before the warm run (only jax's cache stays warm)",
    )
    parser.add_argument(
        "--work", type=Path, default=None, help="folder for caches and outputs (kept)"
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write the table here"
    )
    args = parser.parse_args(argv)

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-compiles-"))
    if work.exists() and any(work.iterdir()):
        parser.error(f"--work {work} is not empty; the first run must start cold")
    work.mkdir(parents=True, exist_ok=True)
    cold = run(work, "cold", args)
    # an empty figure cache again; the compiled programs stay
    shutil.rmtree(work / "cache" / "reproduce", ignore_errors=True)
    if args.drop_programs:
        shutil.rmtree(work / "cache" / "programs", ignore_errors=True)
    warm = run(work, "warm", args)
    print("\n".join(table(cold, warm)))
    if args.json is not None:
        args.json.write_text(json.dumps({"cold": cold, "warm": warm}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
