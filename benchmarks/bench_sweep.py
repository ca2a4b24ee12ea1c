"""Benchmarks of the sweeps (not a test): `python benchmarks/bench_sweep.py [--sections ...]`.

Every ratio is measured side by side in one run (the machine is noisy):
- oracle: a 64-point (beta x N) regime map at L4 S4 H2 as one vectorized sweep (compile included),
  on one CPU device and on one per core, each in a fresh process, vs the same points one by one
  through the code before traced scalars (a checkout of `--baseline-ref`, run in a subprocess:
  every point compiled its own programs there).
- flow: a reduced-flow sweep of 64 parameter points x 256 seeds, wall time including compilation, on
  one CPU device and on one device per core (`use_cpu_devices`), each in a fresh process.
- cli: two runs of `inductheory flow --seeds 64 --dynamics reduced` in fresh processes sharing a
  fresh persistent compilation cache (the second one is the "cache warm" time).
- seeds: per-seed cost of the batched reduced flow at 64, 1024 and 4096 seeds (steady state).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import jax
import numpy as np

import inductheory as it

ROOT = Path(__file__).resolve().parents[1]
BETAS = [4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 12.0]
NS = [16, 32, 64, 128, 256, 512, 1024, 4096]


ORACLE_SWEEP = textwrap.dedent("""
    import sys, time
    import inductheory as it
    it.internal.use_cpu_devices(int(sys.argv[1]))
    betas, ns = eval(sys.argv[2]), eval(sys.argv[3])
    task = it.Task(L=4, S=4, H=2, N=1024, beta=4.0)
    t0 = time.perf_counter()
    ds = it.sweep("oracle", task, {"beta": betas, "N": ns})
    print(time.perf_counter() - t0)
    cell = lambda b, n: ds.sel(beta=b, N=n)
    print(repr([(b, n, bool(cell(b, n).hard_selection), float(cell(b, n).best_loss))
                for b in betas for n in ns]))
""")


def _timed_points(
    script: str, args: list[str], env=None, cwd=None
) -> tuple[float, list]:
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
    )
    wall, points = out.stdout.strip().splitlines()[-2:]
    return float(wall), eval(points)  # noqa: S307 (our own subprocess's repr)


def bench_oracle(ref: str, baseline_points: int) -> None:
    cores = os.cpu_count() or 1
    print(
        f"\n== oracle regime map: L4 S4 H2, {len(BETAS)} betas x {len(NS)} N = "
        f"{len(BETAS) * len(NS)} points, "
        "default OracleMinimizer (32 restarts + 8 vertex starts), each run in a fresh process"
    )
    new = {}
    for devices in sorted({1, cores}):
        new[devices] = _timed_points(
            ORACLE_SWEEP, [str(devices), repr(BETAS), repr(NS)]
        )
        hard = np.mean([h for _, _, h, _ in new[devices][1]])
        print(
            f"vectorized sweep on {devices} CPU device(s) (compile included): "
            f"{new[devices][0]:.1f} s, "
            f"hard share {hard:.3f}"
        )
    pts = [(b, n) for b in BETAS for n in NS][:baseline_points]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            f"git -C {ROOT} archive {ref} inductheory | tar -x -C {tmp}",
            shell=True,
            check=True,
        )
        script = textwrap.dedent(f"""
            import time, jax, inductheory as it
            t0 = time.perf_counter(); hard = []
            for beta, N in {pts!r}:
                task = it.quiet_task(L=4, S=4, H=2, N=N, beta=beta)  # the archived API
                p = it.oracle_point(task, jax.random.key(0))
                hard.append((beta, N, p["hard_selection"], p["best_loss"]))
            print(time.perf_counter() - t0); print(repr(hard))
        """)
        old, old_points = _timed_points(
            script, [], env={**os.environ, "PYTHONPATH": tmp}, cwd=tmp
        )
    scale = len(BETAS) * len(NS) / len(pts)
    print(
        f"one by one at {ref} ({len(pts)} points): {old:.1f} s"
        + (f", x{scale:.0f} extrapolated = {old * scale:.1f} s" if scale != 1 else "")
    )
    for devices, (wall, points) in new.items():
        mine = {(b, n): (h, loss) for b, n, h, loss in points}
        same = all(
            mine[b, n][0] == h and abs(mine[b, n][1] - loss) < 1e-9
            for b, n, h, loss in old_points
        )
        print(
            f"ratio on {devices} device(s): {old * scale / wall:.1f}x; "
            f"same hard/not-hard verdicts and losses (1e-9): {same}"
        )


FLOW_SWEEP = textwrap.dedent("""
    import sys, time
    import inductheory as it
    it.internal.use_cpu_devices(int(sys.argv[1]))
    task = it.Task(L=8, S=4, H=2, N=4096, beta=4.0)
    grid = {"beta": [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0],
            "rho": [1e-3, 3e-3, 1e-2, 0.03, 0.05, 0.1, 0.2, 0.3]}
    t0 = time.perf_counter()
    ds = it.sweep("flow", task, grid, config=it.FlowConfig(), seeds=256)
    wall = time.perf_counter() - t0
    print(f"{ds.attrs['devices']} CPU device(s): wall including compile {wall:.1f} s; "
          f"selected {float(ds.selected_fraction.mean()):.3f} of flows; "
          "distinct fraction at beta 4: "
          f"{ds.distinct_fraction.sel(beta=4.0).values.round(3).tolist()}")
""")


def bench_flow() -> None:
    cores = os.cpu_count() or 1
    print(
        "\n== reduced-flow sweep: 64 points (8 beta x 8 rho) x 256 seeds, L8 S4 H2 "
        "N4096, fresh processes "
        f"(1 CPU device, then it.internal.use_cpu_devices({cores}))"
    )
    for devices in sorted({1, cores}):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", FLOW_SWEEP, str(devices)], check=True)
        print(f"  (process wall incl. import: {time.perf_counter() - t0:.1f} s)")


def bench_cli() -> None:
    print(
        "\n== `inductheory flow --seeds 64 --dynamics reduced`, two fresh processes, "
        "one fresh compilation cache"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "INDUCTHEORY_CACHE_DIR": cache}
        for label in ("first (cold cache)", "second (warm cache)"):
            t0 = time.perf_counter()
            subprocess.run(
                [
                    "inductheory",
                    "flow",
                    "--seeds",
                    "64",
                    "--dynamics",
                    "reduced",
                    "--quiet",
                    "--json",
                ],
                env=env,
                check=True,
                capture_output=True,
            )
            print(f"{label}: {time.perf_counter() - t0:.2f} s wall")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import inductheory"], check=True)
        print(
            f"(python -c 'import inductheory' alone: {time.perf_counter() - t0:.2f} s)"
        )


def bench_seeds() -> None:
    task = it.Task(L=8, S=4, H=2, N=10**6, beta=4.0)
    config = it.FlowConfig()
    print("\n== batched reduced flow (run_flow), per-seed cost in steady state")
    for seeds in (64, 1024, 4096):
        it.run_flow(task, config, seeds, chunk=seeds)
        t0 = time.perf_counter()
        it.run_flow(task, config, seeds, chunk=seeds)
        dt = time.perf_counter() - t0
        print(f"{seeds:5d} seeds: {dt:.3f} s, {1e3 * dt / seeds:.3f} ms per seed")


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sections", default="oracle,flow,cli,seeds")
    p.add_argument(
        "--baseline-ref",
        default="c953f28",
        help="git revision of the one-by-one baseline",
    )
    p.add_argument(
        "--baseline-points",
        type=int,
        default=64,
        help="oracle points run by the baseline",
    )
    args = p.parse_args()
    print(f"jax {jax.__version__}, devices {jax.devices()}, {os.cpu_count()} CPUs")
    sections = args.sections.split(",")
    if "oracle" in sections:
        bench_oracle(args.baseline_ref, args.baseline_points)
    if "flow" in sections:
        bench_flow()
    if "cli" in sections:
        bench_cli()
    if "seeds" in sections:
        bench_seeds()


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
