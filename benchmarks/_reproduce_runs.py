"""What the reproduce benchmarks share: their options, an empty work folder, and one run of
`inductheory reproduce --json` in a child process under a private cache directory."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def parser(doc: str) -> argparse.ArgumentParser:
    """The options both benchmarks take (`--quick`, `--only`, `--jobs`, `--work`, `--json`)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="reproduce --quick")
    p.add_argument("--only", default=None, help="comma-separated figure names")
    p.add_argument("--jobs", type=int, default=None, help="reproduce --jobs")
    p.add_argument(
        "--work", type=Path, default=None, help="folder for caches and outputs (kept)"
    )
    p.add_argument("--json", type=Path, default=None, help="also write the table here")
    return p


def empty_work(p: argparse.ArgumentParser, args, prefix: str) -> Path:
    """`--work`, created, or a fresh temporary folder; a folder with files in it is refused (the
    first run must start from empty caches)."""
    work = args.work or Path(tempfile.mkdtemp(prefix=prefix))
    if work.exists() and any(work.iterdir()):
        p.error(f"--work {work} is not empty; the run must start from empty caches")
    work.mkdir(parents=True, exist_ok=True)
    return work


def peak_rss_gib() -> float:
    """The peak resident memory of the largest finished child process so far, GiB."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20


def children_usage() -> tuple[float, int]:
    """CPU seconds and context switches of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_nvcsw + usage.ru_nivcsw


# `python -m inductheory` with the workers of every mode sharing every core (`OWN_CORES` off)
_SHARING_CORES = (
    "import sys, _inductheory_entry as entry; entry.command_line_environment(); "
    "import inductheory.figures._schedule as r; r.OWN_CORES.update(quick=False, full=False); "
    "sys.exit(entry.main())"
)


def run_reproduce(
    work: Path, label: str, args, *, own_caches: bool = False, own_cores: bool = True
) -> dict:
    """One `reproduce --json` run into `work/out-<label>`, its progress in `work/<label>.log`,
    with `work/cache` as the cache directory (figure cache, compiled programs) and `work/xdg` as
    the user's cache (`own_caches`: `work/cache-<label>` and `work/xdg-<label>`, empty);
    `own_cores=False` runs the workers on every core in every mode (`OWN_CORES` off). Returns
    `{"figures": per-figure JSON, "wall_s", "cpu_s", "switches"}` (CPU seconds and context
    switches of every process), also written to `work/<label>.json`."""
    suffix = f"-{label}" if own_caches else ""
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(work / f"xdg{suffix}"),
        "PYTHONPATH": str(ROOT),
        "INDUCTHEORY_CACHE_DIR": str(work / f"cache{suffix}"),
    }
    start = ["-m", "inductheory"] if own_cores else ["-c", _SHARING_CORES]
    command = [sys.executable, *start, "reproduce", "--json"]
    command += ["--out", str(work / f"out-{label}")]
    command += ["--quick"] * args.quick
    command += ["--only", args.only] if args.only else []
    command += ["--jobs", str(args.jobs)] if args.jobs else []
    (cpu, switches), wall = children_usage(), time.perf_counter()
    with open(work / f"{label}.log", "w") as log:
        done = subprocess.run(
            command, env=env, stdout=subprocess.PIPE, stderr=log, text=True
        )
    wall = time.perf_counter() - wall
    cpu_after, switches_after = children_usage()
    if done.returncode != 0:
        raise SystemExit(
            f"{label} run failed (exit {done.returncode}); see {work / label}.log"
        )
    result = {
        "figures": json.loads(done.stdout),
        "wall_s": wall,
        "cpu_s": cpu_after - cpu,
        "switches": switches_after - switches,
        "peak_rss_gib": peak_rss_gib(),
    }
    (work / f"{label}.json").write_text(json.dumps(result, indent=1))
    return result
