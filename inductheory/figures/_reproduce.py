"""`reproduce`: compute, store and draw every registered figure, and write figures/README.md.

Its parts: the figures' order and compile flags (`_schedule`), their costs and times and the
console (`_timings`), the README (`_readme`); the worker processes are `internal._pool`'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
from pathlib import Path

from ..internal._clock import Clock, cpu_seconds_with_children
from ..internal._devices import usable_cores
from ..internal._io import (
    CacheWarning,
    _atomic_write,
    claimed_output_dir,
    default_cache_dir,
    probe_writable,
    read_only_cache,
    reading_only,
    write_json_atomic,
)
from ..internal._pool import Task, run_in_workers
from ..internal._progress import HEARTBEAT_S, Heartbeat, report_to
from ..internal._warnings import FigureNote, warn_at_caller, warnings_named
from . import _style
from ._figure import Figure, FigureContext, FigureData
from ._overview import SOURCES as OVERVIEW_SOURCES, overview
from ._readme import as_stored, write_readme
from ._registry import FIGURES
from ._schedule import OWN_CORES, compile_flags, dependencies_first, run_order
from ._timings import (
    FigureConsole,
    FigureTimes,
    keep_timings,
    previous_timings,
)


def _save(fig, path_stem: Path) -> None:
    # unique temporary names and atomic renames: concurrent runs never leave a partial figure
    for ext in ("png", "pdf"):
        if ext == "pdf":
            # the PDF keeps the layout solved for the PNG instead of solving it again (the 16
            # quick figures drew and saved in 15.3 CPU-s against 17.5; a layout solved with the
            # PDF's own text metrics lies within a pixel or two of it)
            fig.set_layout_engine("none")
        _atomic_write(
            path_stem.with_suffix(f".{ext}"),
            lambda tmp, ext=ext: fig.savefig(
                tmp,
                format=ext,
                dpi=130,
                bbox_inches="tight",
                metadata={"CreationDate": None} if ext == "pdf" else None,
            ),
        )


def _draw_and_save(f: Figure, data, out: Path) -> None:
    import matplotlib.pyplot as plt

    with _style.context():
        fig = f.drawing(data)
        _save(fig, out / f.name)
    plt.close(fig)


def _select(only: list[str] | None) -> list[Figure]:
    if not only:
        return list(FIGURES.values())
    unknown = sorted(set(only) - set(FIGURES))
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; choose from {list(FIGURES)}")
    return [f for name, f in FIGURES.items() if name in only]


@dataclasses.dataclass(frozen=True)
class FigureRun:
    """One figure made by `reproduce`: its `name`, its `data` (the record its `compute`
    returned, which `data/<name>.json` stores) and what making it cost (`times`, a
    `FigureTimes`).

    ```python
    run = reproduce("figures/quick", quick=True, only=["toy_stability"])["toy_stability"]
    run.data.findings, run.times.wall_s
    ```
    """

    name: str
    data: FigureData
    times: FigureTimes

    @property
    def findings(self) -> str:
        """The data's one line of measured values."""
        return self.data.findings

    def stored(self) -> dict:
        """The figure's data as `data/<name>.json` stores it (no times)."""
        return self.data.to_dict()

    def to_dict(self) -> dict:
        """The stored data with the times' fields beside them (what `--json` prints per
        figure)."""
        return {**self.stored(), **self.times.to_dict()}


def _make(name: str, context: FigureContext, out: Path, report=None) -> FigureRun:
    """Compute, store and draw one figure; returns its data with what it cost this process
    (`FigureRun`). Warnings raised meanwhile name the figure (and the run, where `_runs` names
    it), each distinct one once (`warnings_named`; `report`: see there)."""
    from ..internal._compiles import CompileCount

    f = FIGURES[name]
    clock, counter = Clock(), CompileCount()
    with warnings_named(f"figure {name}", report):
        record = f.compute(context)
    # numbers only: no timings
    write_json_atomic(out / "data" / f"{f.name}.json", record.to_dict())
    _draw_and_save(f, record, out)
    spent = clock.spent()
    times = FigureTimes(
        wall_s=round(spent.wall_s, 3),
        cpu_s=round(spent.cpu_s, 3),
        compile_s=round(spent.compile_s, 3),
        compiles=spent.compiles,
        cache_hits=counter.count().hits,
        cores=len(usable_cores()),
    )
    return FigureRun(name, record, times)


def _make_in_workers(
    figures: list[Figure],
    jobs: int,
    context: FigureContext,
    out: Path,
    previous: dict,
    status: FigureConsole,
) -> dict[str, FigureRun]:
    """Figures computed by `jobs` long-lived worker processes (`internal._pool.run_in_workers`),
    the longest expected first, each after the figures it reads (`_schedule.run_order`), each
    compiled under its `compile_flags`. In quick mode each worker runs on cores of its own
    (`OWN_CORES`). A figure whose `after` figure is being computed by another worker waits for
    it when a cache carries that one's work over. The workers report progress lines on a
    queue; this process prints them (`status`)."""
    tasks = [
        Task(
            name,
            compile_flags(name, context.quick),
            (name, context, out),
            FIGURES[name].after,
        )
        for name in run_order(figures, context.quick, previous)
    ]
    return run_in_workers(
        tasks,
        _make,
        jobs,
        status,
        status.figure_done,
        own_cores=OWN_CORES["quick" if context.quick else "full"],
        wait_for_after=context.cache is not None,
        noun="figure",
    )


# Where each mode's figures live in the repository when no output directory is named.
DEFAULT_OUT = {False: Path("figures"), True: Path("figures") / "quick"}


def reproduce(
    out: str | Path | None = None,
    *,
    quick: bool = False,
    only: list[str] | None = None,
    cache: str | Path | bool = True,
    progress: bool = True,
    command: str | None = None,
    jobs: int | None = None,
) -> dict[str, FigureRun]:
    """Compute, save and draw the theorem figures.

    **Arguments:**
    - `out`: output directory (PNG, PDF, `data/*.json`, `README.md`); None: the mode's own,
      `figures/` (full) or `figures/quick/` (`DEFAULT_OUT`).
    - `quick`: small sizes (minutes on 2 cores, used by the tests).
    - `only`: names of the figures to make (default all, see `figure_names()`).
    - `cache`: the directory where finished computations are kept by their parameters (each
      mode in its own subdirectory); True: `default_cache_dir() / "reproduce"`, in the user's
      XDG cache directory; False: no cache.
    - `progress`: show progress on stderr.
    - `command`: the command line recorded in the README.
    - `jobs`: worker processes computing figures at once, each taking the next figure when
      done and keeping its compiled programs for it (the command line's default: the CPU
      cores, at most 4); `None`: one after the other in this process. Most figure
      computations keep one core busy (small solver loops, compiling), so on
      k cores k jobs take about 1/k of the time; the numbers do not depend on it (in quick
      mode, workers compile each figure with its `compile_flags`, which this process does
      not: the same numbers within that tolerance, but for phase_uniformity's frontier (1e-3)
      and regime_boundary's Frank-Wolfe gaps (1e-8), whose quick data are those of the flags).

    A study figure (`Figure.study`: longer than the main job can hold) is computed only when
    `only` names it; a run without `only` (full or quick) redraws it and its README section
    from its committed `<out>/data/<name>.json` (a `FigureNote` says how to make data that are
    missing).

    **Returns:** a `FigureRun` (its data and times) of each figure computed, by name.
    """
    import matplotlib

    matplotlib.use("Agg")
    if jobs is not None:
        _require_jobs(jobs)
    figures = _select(only)
    out = DEFAULT_OUT[bool(quick)] if out is None else Path(out)
    mode_cache = _mode_cache(cache, bool(quick))
    unwritable = None if mode_cache is None else require_cache_dir(mode_cache)
    reading = contextlib.nullcontext()
    if unwritable is not None and mode_cache.is_dir():
        warn_at_caller(
            f"the cache directory {mode_cache} cannot be written ({unwritable}): its "
            "entries are read, what is computed now is not kept",
            CacheWarning,
        )
        reading = reading_only(mode_cache)
    elif unwritable is not None:
        warn_at_caller(
            f"the cache directory {mode_cache} cannot be created ({unwritable}): the run "
            "goes on without a cache",
            CacheWarning,
        )
        mode_cache = None
    # one mode per directory: quick figures over full ones (or back) are refused, not mixed
    with reading, claimed_output_dir(out, "reproduce", {"quick": bool(quick)}):
        context = FigureContext(quick=bool(quick), cache=mode_cache)
        return _reproduce(figures, out, context, only, progress, command, jobs)


def _mode_cache(cache: str | Path | bool, quick: bool) -> Path | None:
    """The mode's cache directory under `cache` (see `reproduce`), or None for no cache."""
    if cache is False:
        return None
    root = default_cache_dir() / "reproduce" if cache is True else Path(cache)
    return root / ("quick" if quick else "full")


def _reproduce(figures, out, context: FigureContext, only, progress, command, jobs):
    """The body of `reproduce`, in the directory it claimed (`context.cache`: the mode's cache
    directory, already checked, or None)."""
    quick, mode_cache = context.quick, context.cache
    (out / "data").mkdir(parents=True, exist_ok=True)
    # a run of every figure keeps the studies' committed data (`Figure.study`): the main job's
    # hour and the quick run's two minutes hold only without them
    studies = [] if only else [f for f in figures if f.study]
    figures = [f for f in figures if f not in studies]
    # Honest ETA: each figure's wall time in the previous run (kept in the cache), else none.
    timings_path = None if mode_cache is None else mode_cache / "timings.json"
    previous = previous_timings(timings_path)
    results: dict[str, FigureRun] = {}
    status = FigureConsole(figures, previous, progress, jobs=jobs or 1, quick=quick)
    cpu_start = cpu_seconds_with_children()
    if jobs is not None:
        results = _make_in_workers(figures, jobs, context, out, previous, status)
    else:
        for f in (FIGURES[n] for n in dependencies_first([f.name for f in figures])):
            status.started(f.name)
            if progress:
                with (
                    Heartbeat(
                        lambda line, name=f.name: status.beat(name, line), HEARTBEAT_S
                    ) as heart,
                    report_to(
                        heart.sink(
                            lambda line, finished, name=f.name: status.line(
                                name, line, finished
                            )
                        )
                    ),
                ):
                    results[f.name] = _make(f.name, context, out)
            else:
                results[f.name] = _make(f.name, context, out)
            status.figure_done(f.name, results[f.name])
    status.total(cpu_seconds_with_children() - cpu_start)
    results = {f.name: results[f.name] for f in figures}  # registry order
    if timings_path is not None and not read_only_cache(mode_cache):
        keep_timings(
            timings_path, previous, {name: run.times for name, run in results.items()}
        )
    # rendered from the data as stored (keys sorted), so that a fresh run, a run from the cache and
    # a redraw of data/*.json write the same README
    stored = {name: as_stored(run.stored()) for name, run in results.items()}
    stored.update(_redraw_studies(studies, out))
    stored = {name: stored[name] for name in FIGURES if name in stored}
    write_readme(out, stored, quick, command, partial=only is not None)
    if all((out / "data" / f"{name}.json").exists() for name in OVERVIEW_SOURCES):
        overview(out)  # the README's picture, from the stored data (about a second)
    return results


def _redraw_studies(studies: list[Figure], out: Path) -> dict[str, dict]:
    """The committed data of the study figures (`Figure.study`) of a full run, each redrawn
    from its `<out>/data/<name>.json`; a study without one is left out, with a `FigureNote`
    saying how to make it."""
    stored = {}
    for f in studies:
        path = out / "data" / f"{f.name}.json"
        if not path.exists():
            warn_at_caller(
                f"figure {f.name} is a study, longer than this run computes: its data "
                f"{path} are missing; make them with `inductheory reproduce --only "
                f"{f.name}`",
                FigureNote,
            )
            continue
        data = as_stored(json.loads(path.read_text()))
        _draw_and_save(f, data, out)
        stored[f.name] = data
    return stored


def require_cache_dir(path: Path) -> str | None:
    """Refuse a cache directory that cannot be used (a file in its place or in its path, an
    unreachable location) with a `ValueError` naming it, before any figure is computed: the
    results would otherwise be computed and then fail to be kept. One that cannot be written
    for want of permission (or on a read-only file system) is not refused: the reason is
    returned (None: writable), and `reproduce` reads its entries without writing (or runs
    without a cache where it does not exist).

    Creates the directory and writes and removes a probe file in it (permission bits say nothing
    for root or on read-only file systems).

    ```python
    require_cache_dir(default_cache_dir() / "reproduce" / "quick")  # None: writable
    ```
    """
    unwritable = None
    try:
        probe_writable(path)
    except OSError as err:
        if err.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise ValueError(
                f"the cache directory {path} cannot be written ({err.strerror or err}); "
                "choose a writable one (INDUCTHEORY_CACHE_DIR or --cache) or none "
                "(--no-cache)"
            ) from None
        unwritable = err.strerror or str(err)
    # what a run writes in it by a fixed name: a directory in the place of a file (or the
    # reverse) would fail only after the figures were computed
    for name, directory in (("timings.json", False), ("train", True)):
        entry = path / name
        if os.path.lexists(entry) and entry.is_dir() != directory:
            raise ValueError(
                f"the cache directory {path} holds {entry}, which must be a "
                f"{'directory' if directory else 'file'}; delete it or choose another cache "
                "(--cache) or none (--no-cache)"
            )
    return unwritable


def _require_jobs(jobs) -> None:
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1 (got {jobs!r})")


def redraw(out: str | Path = "figures", *, only: list[str] | None = None) -> list[str]:
    """Draw figures again from their stored `<out>/data/<name>.json`, without computing anything.

    For a change of drawing only: the PNG and PDF are what `reproduce` draws from the same data.

    **Returns:** the names drawn.
    """
    import matplotlib

    matplotlib.use("Agg")
    out = Path(out)
    figures = _select(only)
    for f in figures:
        _draw_and_save(
            f, json.loads((out / "data" / f"{f.name}.json").read_text()), out
        )
    return [f.name for f in figures]
