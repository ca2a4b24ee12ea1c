"""What making the figures costs, and what `reproduce` keeps of it: each figure's times in a run
(`FigureTimes`), its nominal cost in each mode (`expected_cost`), the wall seconds kept in the
cache for the next run's ETA (`timings.json`), and the console that prints a run's progress with
that ETA (`FigureConsole`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from ..internal._console import Console
from ..internal._eta import basis as eta_basis
from ..internal._io import CacheWarning, write_json_atomic
from ..internal._records import Record
from ..internal._warnings import warn_at_caller
from ._figure import Figure
from ._registry import FIGURES


@dataclasses.dataclass(frozen=True)
class FigureTimes(Record):
    """What making one figure cost its process: `wall_s`, `cpu_s` and `compile_s` (wall, CPU,
    and tracing and compiling seconds, rounded to ms), `compiles` (XLA compiles),
    `cache_hits` (those the persistent compilation cache served) and `cores` (the cores the
    process could run on: a worker of a quick run takes its own, `OWN_CORES`)."""

    wall_s: float
    cpu_s: float
    compile_s: float
    compiles: int
    cache_hits: int
    cores: int


# About how many CPU seconds each figure takes in quick mode from a fresh cache, each in one
# worker process (its `cost` is the full mode's; benchmarks/bench_reproduce.py --quick on 2 idle
# cores): the order in which workers start them when no previous run's times are known,
# longest first.
QUICK_COSTS = {
    "relaxation_ladder": 42,
    "paper_matrix": 32,
    "phase_uniformity": 31,
    "boundary": 20,
    "regime_boundary": 18,
    "approximate_geometry": 17,
    "effective_offsets": 14,
    "convergence_rates": 9,
    "coverage": 8,
    "mitigations": 8,
    "toy_stability": 6,
    "theorem2_trajectories": 5,
    "coverage_map": 5,
    "theorem1_oracle": 5,
    "weak_spots": 5,
    "paper_mechanisms": 1,
}
# Quick costs of figures computed without their `after` figures (`Figure.alone_cost`): the
# mechanisms train 2 of the quick matrix's 7 rows.
QUICK_ALONE_COSTS = {"paper_mechanisms": 12}


def expected_cost(f: Figure, quick: bool, names=None) -> float:
    """The nominal seconds of figure `f` in this mode: its `cost` (full), or in quick mode its
    `QUICK_COSTS` entry; a figure without one is expected to take its `cost` scaled by the
    median ratio of quick to full cost of the figures that have both. In a run of figures
    `names` without all of `f.after`, its `alone_cost` (scaled so in quick mode) where it has
    one."""
    alone = (
        names is not None
        and f.alone_cost is not None
        and not set(f.after) <= set(names)
    )
    cost, quick_costs = (
        (f.alone_cost, QUICK_ALONE_COSTS) if alone else (f.cost, QUICK_COSTS)
    )
    if not quick:
        return float(cost)
    if f.name in quick_costs:
        return float(quick_costs[f.name])
    ratios = sorted(
        QUICK_COSTS[n] / g.cost
        for n, g in FIGURES.items()
        if n in QUICK_COSTS and g.cost > 0
    )
    return float(cost) * (ratios[len(ratios) // 2] if ratios else 1.0)


def kept_timings(
    previous: dict[str, float], times: dict[str, FigureTimes]
) -> dict[str, float]:
    """The figures' wall seconds kept for the next run's ETA: this run's (`times`, by figure),
    except for figures it read whole from the figure cache (no jax program at all: their seconds
    say nothing of a computation), which keep the earlier run's.

    ```python
    kept_timings({"a": 50.0}, {"a": FigureTimes(0.4, 0.4, 0.0, 0, 0, 2)})  # {"a": 50.0}
    ```
    """
    kept = dict(previous)
    for name, t in times.items():
        if t.compiles or name not in kept:
            kept[name] = t.wall_s
    return kept


def previous_timings(path: Path | None) -> dict[str, float]:
    """The figures' wall seconds kept by an earlier run in `path` (`timings.json` in the mode's
    cache; None: no cache), or none when there are none or the file cannot be read."""
    try:
        return json.loads(path.read_text()) if path is not None else {}
    except (OSError, ValueError):
        return {}


def keep_timings(
    path: Path, previous: dict[str, float], times: dict[str, FigureTimes]
) -> None:
    """Write `kept_timings(previous, times)` to `path` for the next run's ETA; a file that
    cannot be written costs only that ETA (a `CacheWarning` says so)."""
    try:
        write_json_atomic(path, kept_timings(previous, times))
    except OSError as err:  # the figures are written: only the next run's ETA is lost
        warn_at_caller(
            f"the figures' times could not be kept in {path} "
            f"({err.strerror or err}); the next run has no ETA",
            CacheWarning,
        )


class FigureConsole(Console):
    """What `reproduce` tells the user on stderr (`internal._console.Console`) about its
    `figures`: the ETA rests on the work expected of each figure (its wall time in an earlier
    run, kept in the cache, `previous`, else its nominal cost in the mode, `quick` or full, see
    `expected_cost`; the line says which).

    ```python
    console = FigureConsole([FIGURES["coverage"]], {}, enabled=True, quick=True)
    ```
    """

    def __init__(
        self,
        figures,
        previous: dict,
        enabled: bool,
        every: float = 5.0,
        *,
        jobs: int = 1,
        quick: bool = False,
        quiet: float = 30.0,
        eta_after: float = 0.25,
        clock=time.perf_counter,
    ):
        names = [f.name for f in figures]
        super().__init__(
            {
                f.name: float(previous.get(f.name, expected_cost(f, quick, names)))
                for f in figures
            },
            eta_basis(names, previous),
            enabled,
            every,
            jobs=jobs,
            quiet=quiet,
            eta_after=eta_after,
            noun="figures",
            clock=clock,
        )

    def figure_done(self, name: str, run) -> None:
        """`finished` with the wall, CPU and compile seconds of a figure's `FigureRun`."""
        self.finished(name, run.times.wall_s, run.times.cpu_s, run.times.compile_s)
