"""Benchmark of the oracle regime map (not a test): `python benchmarks/bench_oracle.py`.

The 64-point (8 beta x 8 N) regime map at L4 S4 H2 (8 vertex starts per point), each path in a
fresh process (compilation included), side by side in one run:
- point by point: `oracle_point` called per grid point in a Python loop at `--baseline-ref` (a
  checkout of the code before traced scalars, run in a subprocess: every point compiled its own
  programs there); `--baseline-points` < 64 runs the first points only and extrapolates.
- bfgs: today's vectorized sweep with the BFGS-on-logits + projected-gradient minimizer
  (`OracleMinimizer(method="bfgs")`, the independent second method).
- newton: the same sweep with the active-set Newton minimizer (`method="newton"`, the default).

Where the Newton sweep's time goes (one process): XLA compiling its one program (vertex
enumeration, starts and the Newton loop: Hessian, shifted Cholesky factors, candidate steps),
then running the points one after another, each point's starts in lockstep under `vmap` until
its slowest start stops.

Each line gives the wall time and the CPU time of the process (user + system, all threads: the
fairer number on a shared machine); the ratios are of CPU times, and of wall times in brackets.
Verdicts (hard with distinct heads, Theorem 1's `criterion` under exact geometry) and best losses
are compared point by point against the point-by-point path and against bfgs.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import jax

ROOT = Path(__file__).resolve().parents[1]
BETAS = [4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 12.0]
NS = [16, 32, 64, 128, 256, 512, 1024, 4096]

SWEEP = textwrap.dedent("""
    import sys
    import inductheory as it
    it.internal.use_cpu_devices(int(sys.argv[2]))
    betas, ns = eval(sys.argv[3]), eval(sys.argv[4])
    task = it.Task(L=4, S=4, H=2, N=1024, beta=4.0)
    method, restarts = sys.argv[1].split(":")
    config = it.OracleMinimizer(method=method, restarts=int(restarts))
    ds = it.sweep("oracle", task, {"beta": betas, "N": ns}, config=config)
    cell = lambda b, n: ds.sel(beta=b, N=n)
    print(repr([(b, n, bool(cell(b, n).distinct_heads), float(cell(b, n).best_loss))
                for b in betas for n in ns]))
""")


def _run(script: str, args: list[str], env=None, cwd=None) -> tuple[float, float, list]:
    """(wall s, CPU s, points) of a fresh Python process running `script`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    points = eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 (our own subprocess)
    return wall, cpu, points


def _agreement(mine: list, reference: list) -> tuple[int, int, float]:
    """(same verdicts, points compared, max relative best-loss difference)."""
    ours = {(b, n): (ok, loss) for b, n, ok, loss in mine}
    same, rel = 0, 0.0
    for b, n, ok, loss in reference:
        same += ours[b, n][0] == ok
        rel = max(rel, abs(ours[b, n][1] - loss) / abs(loss))
    return same, len(reference), rel


def baseline(ref: str, points: list) -> tuple[float, float, list]:
    """The point-by-point path at `ref` (an archived checkout) over `points`."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            f"git -C {ROOT} archive {ref} inductheory | tar -x -C {tmp}",
            shell=True,
            check=True,
        )
        script = textwrap.dedent(f"""
            import jax, inductheory as it
            out = []
            for beta, N in {points!r}:
                task = it.quiet_task(L=4, S=4, H=2, N=N, beta=beta)  # the archived API
                p = it.oracle_point(task, jax.random.key(0))
                out.append((beta, N, bool(p["distinct_heads"]), float(p["best_loss"])))
            print(repr(out))
        """)
        env = {**os.environ, "PYTHONPATH": tmp}
        return _run(script, [], env=env, cwd=tmp)


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--baseline-ref", default="c953f28")
    p.add_argument("--baseline-points", type=int, default=64)
    p.add_argument("--devices", type=int, default=1, help="CPU devices of the sweeps")
    p.add_argument(
        "--methods",
        default="bfgs:32,newton:4",
        help="minimizers of the sweeps, as method:random starts (8 vertex starts each)",
    )
    args = p.parse_args()
    n = len(BETAS) * len(NS)
    print(
        f"jax {jax.__version__}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}; oracle regime map L4 S4 H2, {len(BETAS)} betas x "
        f"{len(NS)} N = {n} points, 8 vertex starts + the random ones named, fresh processes"
    )
    runs = {}
    for method in args.methods.split(","):
        runs[method] = _run(SWEEP, [method, str(args.devices), repr(BETAS), repr(NS)])
        wall, cpu, _ = runs[method]
        print(
            f"{method:>9} sweep on {args.devices} device(s): wall {wall:7.1f} s, "
            f"CPU {cpu:7.1f} s"
        )
    pts = [(b, N) for b in BETAS for N in NS][: args.baseline_points]
    wall, cpu, old = baseline(args.baseline_ref, pts)
    scale = n / len(pts)
    print(
        f"point by point at {args.baseline_ref} ({len(pts)} points): wall {wall:7.1f} s, "
        f"CPU {cpu:7.1f} s"
        + (
            f"; x{scale:.0f} extrapolated: {wall * scale:.1f} s, {cpu * scale:.1f} s"
            if scale != 1
            else ""
        )
    )
    for method, (m_wall, m_cpu, points) in runs.items():
        same, k, rel = _agreement(points, old)
        print(
            f"{method:>9} vs point by point: {cpu * scale / m_cpu:5.1f}x CPU "
            f"({wall * scale / m_wall:.1f}x wall); same verdicts {same}/{k}, "
            f"max relative loss difference {rel:.1e}"
        )
    names = list(runs)
    for a, b in zip(names, names[1:]):
        same, k, rel = _agreement(runs[b][2], runs[a][2])
        print(
            f"{b} vs {a}: {runs[a][1] / runs[b][1]:.1f}x CPU "
            f"({runs[a][0] / runs[b][0]:.1f}x wall); same verdicts "
            f"{same}/{k}, max relative loss difference {rel:.1e}"
        )


if __name__ == "__main__":
    main()
