"""Time `inductheory reproduce` from an empty cache, as a new user's first run.

Runs the command line in a child process with a private, empty cache directory and XDG cache
(no compiled or stored program, no finished computation), and prints per figure its wall seconds,
CPU seconds (its worker process, all threads), compile seconds (tracing, lowering and XLA
compile, from jax's monitoring spans) and its XLA compiles (distinct programs), then the run's
wall time, CPU seconds of every process (the command and its workers) and CPU use in percent of
one core.

    python benchmarks/bench_reproduce.py --quick
    python benchmarks/bench_reproduce.py --only weak_spots,coverage --jobs 2

Progress goes to `<work>/run.log`; the table to stdout (`--json FILE` also writes it as JSON);
the run's result to benchmarks/results/ (`python benchmarks/render_performance.py` renders it).
"""

from __future__ import annotations

import json
import sys

from _reproduce_runs import empty_work, parser, run_reproduce
from _results import Span, machine, record, reproduce_command, slug


def main(argv=None) -> int:
    p = parser(__doc__)
    args = p.parse_args(argv)
    work = empty_work(p, args, "bench-reproduce-")
    run = run_reproduce(work, "run", args)
    wall, cpu = run["wall_s"], run["cpu_s"]
    figures = run["figures"]
    rows = [
        (name, d["wall_s"], d["cpu_s"], d["compile_s"], d.get("compiles") or 0)
        for name, d in sorted(figures.items(), key=lambda kv: -kv[1]["cpu_s"])
    ]
    print(
        f"{'figure':24s} {'wall s':>8s} {'CPU s':>8s} {'compile s':>10s} {'compile %':>9s} "
        f"{'compiles':>8s}"
    )
    for name, w, c, k, n in rows:
        print(
            f"{name:24s} {w:8.1f} {c:8.1f} {k:10.1f} {100 * k / max(c, 1e-9):8.0f}% {n:8d}"
        )
    fig_cpu = sum(r[2] for r in rows)
    fig_compile = sum(r[3] for r in rows)
    print(
        f"{'figures':24s} {sum(r[1] for r in rows):8.1f} {fig_cpu:8.1f} {fig_compile:10.1f} "
        f"{100 * fig_compile / max(fig_cpu, 1e-9):8.0f}% {sum(r[4] for r in rows):8d}"
    )
    print(
        f"run ({'quick' if args.quick else 'full'}"
        f"{', only ' + args.only if args.only else ''}): wall {wall:.1f} s, CPU {cpu:.1f} s "
        f"({cpu / 60:.1f} CPU-min) = {100 * cpu / wall:.0f}% of one core; compile "
        f"{100 * fig_compile / max(cpu, 1e-9):.0f}% of the CPU; work folder {work}"
    )
    benchmark = "reproduce" + ("-quick" if args.quick else "")
    benchmark += f" --only {args.only}" if args.only else ""
    path = record(
        f"{slug(benchmark)}-{slug(machine()[0])}",
        benchmark,
        reproduce_command(args),
        wall_s=Span.of([wall]),
        cpu_s=Span.of([cpu]),
        peak_rss_gib=run["peak_rss_gib"],
        compiles=sum(r[4] for r in rows),
    )
    print(
        f"result written to {path} (python benchmarks/render_performance.py renders it)"
    )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "quick": args.quick,
                    "only": args.only,
                    "wall_s": wall,
                    "cpu_s": cpu,
                    "figures": {
                        r[0]: dict(
                            zip(("wall_s", "cpu_s", "compile_s", "compiles"), r[1:])
                        )
                        for r in rows
                    },
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
