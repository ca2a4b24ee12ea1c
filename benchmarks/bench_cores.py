"""Workers on cores of their own against workers sharing every core, in `inductheory reproduce`.

A quick run's workers each take their own cores (`OWN_CORES` in inductheory/figures/_schedule.py);
this benchmark runs `reproduce --json` alternately as shipped ("own") and with every worker on
every core ("shared"), `--pairs` times, each run from empty caches of its own, and prints per run
its wall time, the CPU seconds and context switches of every process, each pair's ratio of wall
times, and the medians. The machine's speed drifts within an hour; alternating pairs and the
median of their ratios keep that drift out of the comparison.

It then compares the two runs' figure data of the first pair (`data/*.json`, timings left out):
the float32 training of paper_matrix and paper_mechanisms sums in another order on a thread pool
of another size (relative 1e-7 in their losses, 8e-5 in a difference of two losses near 0.003);
every other figure is identical.

    python benchmarks/bench_cores.py --quick --pairs 3
    python benchmarks/bench_cores.py --quick --only relaxation_ladder,boundary --pairs 2

Progress goes to `<work>/<run>.log`; the table to stdout (`--json FILE` also writes it as JSON);
both kinds' results to benchmarks/results/.
"""

from __future__ import annotations

import json
import math
import statistics
import sys

from _reproduce_runs import empty_work, parser, run_reproduce
from _results import Span, machine, record, reproduce_command, slug

SKIPPED = {"wall_s", "cpu_s", "compile_s", "compiles", "cache_hits", "cores"}


def largest_difference(a, b) -> float:
    """The largest relative difference between the numbers of two JSON values of one shape
    (inf where their structure or any other value differs); timings are skipped."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return math.inf
        return max(
            (largest_difference(a[k], b[k]) for k in a if k not in SKIPPED),
            default=0.0,
        )
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return math.inf
        return max(map(largest_difference, a, b), default=0.0)
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        if a == b or (math.isnan(a) and math.isnan(b)):
            return 0.0
        return abs(a - b) / max(abs(a), abs(b))
    return 0.0 if a == b else math.inf


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--pairs", type=int, default=3, help="alternating pairs of runs")
    args = p.parse_args(argv)
    if args.pairs < 1:
        p.error(f"--pairs must be at least 1 (got {args.pairs})")
    work = empty_work(p, args, "bench-cores-")
    runs: dict[str, list[dict]] = {"own": [], "shared": []}
    print(f"{'run':10} {'wall s':>8} {'CPU s':>8} {'switches':>10} {'own/shared':>11}")
    for i in range(args.pairs):
        for kind in ("own", "shared"):
            run = run_reproduce(
                work, f"{kind}{i}", args, own_caches=True, own_cores=kind == "own"
            )
            runs[kind].append(run)
            ratio = (
                f"{runs['own'][i]['wall_s'] / run['wall_s']:.3f}"
                if kind == "shared"
                else ""
            )
            print(
                f"{kind + str(i):10} {run['wall_s']:8.1f} {run['cpu_s']:8.1f} "
                f"{run['switches']:10d} {ratio:>11}",
                flush=True,
            )
    ratios = [o["wall_s"] / s["wall_s"] for o, s in zip(runs["own"], runs["shared"])]
    for kind in runs:
        print(
            f"median {kind}: wall {statistics.median(r['wall_s'] for r in runs[kind]):.1f} s, "
            f"CPU {statistics.median(r['cpu_s'] for r in runs[kind]):.1f} s"
        )
    print(
        f"own/shared wall, per pair: {', '.join(f'{r:.3f}' for r in ratios)}; "
        f"median {statistics.median(ratios):.3f}"
    )
    for kind, words in (
        ("own", "a core per worker"),
        ("shared", "workers sharing every core"),
    ):
        benchmark = f"reproduce{'-quick' if args.quick else ''}, {words}"
        record(
            f"{slug(benchmark)}-{slug(machine()[0])}",
            benchmark,
            reproduce_command(args),
            wall_s=Span.of([r["wall_s"] for r in runs[kind]]),
            cpu_s=Span.of([r["cpu_s"] for r in runs[kind]]),
            note=f"alternating with the other kind in {args.pairs} pairs; own/shared wall "
            f"median {statistics.median(ratios):.3f}",
        )
    print("figure data, first pair (data/*.json):")
    for path in sorted((work / "out-own0" / "data").glob("*.json")):
        other = work / "out-shared0" / "data" / path.name
        diff = largest_difference(
            json.loads(path.read_text()),
            json.loads(other.read_text()) if other.exists() else None,
        )
        name = path.stem
        print(
            f"  {name:24} {'identical' if diff == 0 else f'largest rel. difference {diff:.1e}'}"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({**runs, "ratios": ratios}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
