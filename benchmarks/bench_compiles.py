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
    python benchmarks/bench_compiles.py --quick --only weak_spots,coverage --jobs 1

Progress goes to `<work>/cold.log` and `<work>/warm.log`; the table to stdout (`--json FILE`
also writes it as JSON). On a machine shared with other jobs the seconds vary from run to run;
the counts do not. Both runs' results go to benchmarks/results/.
"""

from __future__ import annotations

import json
import shutil
import sys

from _reproduce_runs import empty_work, parser, run_reproduce
from _results import Span, machine, record, reproduce_command, slug


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
    p = parser(__doc__)
    p.add_argument(
        "--drop-programs",
        action="store_true",
        help="remove the program store before the warm run (only jax's cache stays warm)",
    )
    args = p.parse_args(argv)
    work = empty_work(p, args, "bench-compiles-")
    cold = run_reproduce(work, "cold", args)
    # an empty figure cache again; the compiled programs stay
    shutil.rmtree(work / "cache" / "reproduce", ignore_errors=True)
    if args.drop_programs:
        shutil.rmtree(work / "cache" / "programs", ignore_errors=True)
    warm = run_reproduce(work, "warm", args)
    print("\n".join(table(cold, warm)))
    for label, run in (("cold", cold), ("warm", warm)):
        benchmark = (
            f"reproduce{'-quick' if args.quick else ''}, {label} compilation cache"
        )
        record(
            f"{slug(benchmark)}-{slug(machine()[0])}",
            benchmark,
            reproduce_command(args),
            wall_s=Span.of([run["wall_s"]]),
            cpu_s=Span.of([run["cpu_s"]]),
            compiles=sum(d.get("compiles") or 0 for d in run["figures"].values()),
            note=f"{sum(d.get('cache_hits') or 0 for d in run['figures'].values())} programs "
            "read from the persistent compilation cache",
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"cold": cold, "warm": warm}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
