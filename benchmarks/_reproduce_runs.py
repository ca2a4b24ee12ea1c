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


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_reproduce(work: Path, label: str, args) -> dict:
    """One `reproduce --json` run into `work/out-<label>`, its progress in `work/<label>.log`,
    with `work/cache` as the cache directory (figure cache, compiled programs) and `work/xdg` as
    the user's cache; returns `{"figures": per-figure JSON, "wall_s", "cpu_s"}` (CPU of every
    process), also written to `work/<label>.json`."""
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(work / "xdg"),
        "PYTHONPATH": str(ROOT),
        "INDUCTHEORY_CACHE_DIR": str(work / "cache"),
    }
    command = [sys.executable, "-m", "inductheory", "reproduce", "--json"]
    command += ["--out", str(work / f"out-{label}")]
    command += ["--quick"] * args.quick
    command += ["--only", args.only] if args.only else []
    command += ["--jobs", str(args.jobs)] if args.jobs else []
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
