"""A pool of long-lived worker processes for a run of named jobs (`reproduce`'s figures), and the
XLA compile flags its workers run under.

Each worker is a spawned process that keeps jax's compiled programs (and its imports) from one job
to the next, reports progress lines, heartbeats and warnings as events on a queue, and hands over
to a fresh process when its memory mappings or resident memory grow too large. The pool knows
nothing of what a job computes: it calls a module-level function with each job's arguments.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import queue as queue_module
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._devices import core_sets, on_cores, usable_cores
from ._gc import tune_garbage_collector
from ._progress import HEARTBEAT_S, Heartbeat, report_to
from ._warnings import rewarn

# XLA's cheaper code generation: no backend optimization, no expensive LLVM passes, and the
# older loop emitters in place of the fusion emitters (they compile diffrax's loops faster; when
# first chosen, the quick figures under them took 206 CPU-s against 293 with the first two flags
# alone, benchmarks/bench_reproduce.py); the programs run slower and round differently, so they
# are used only where a figure's data stay within the speed rule's tolerance
# (`figures._schedule.COMPILE_FLAGS`).
# FAST_COMPILE_FLAGS and LIGHT_COMPILE_FLAGS compile each program's LLVM module in one piece
# (`--xla_cpu_parallel_codegen_split_count=1`): XLA splits it for a thread pool by default,
# which costs more than it gains when every core is busy compiling or running (one core: quick
# relaxation_ladder 41 -> 35 s, paper_matrix 36 -> 34 s).
_ONE_PIECE = "--xla_cpu_parallel_codegen_split_count=1"
FAST_COMPILE_FLAGS = (
    "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true "
    f"--xla_cpu_use_fusion_emitters=false {_ONE_PIECE}"
)
# XLA's first optimization level: in quick mode the figures that run long programs (flows,
# oracle minimizations) finish sooner under it than under XLA's defaults or `FAST_COMPILE_FLAGS`
# (measured per figure on one core: phase_uniformity 37 -> 24-28 s, regime_boundary 24 -> 15-19 s,
# approximate_geometry 20 -> 17 s; the trained figures and boundary are slower under it).
LIGHT_COMPILE_FLAGS = (
    "--xla_backend_optimization_level=1 --xla_cpu_use_fusion_emitters=false "
    + _ONE_PIECE
)


# `FAST_COMPILE_FLAGS` are `LIGHT_COMPILE_FLAGS` with XLA's optimization level 0 and its
# expensive LLVM passes off, which is what jax's `jax_disable_most_optimizations` sets in the
# options of every program it compiles: one worker under `LIGHT_COMPILE_FLAGS` computes the
# figures of both, with the option on for those of `FAST_COMPILE_FLAGS` (the same programs and
# numbers as a worker under them, tested). A quick run then starts no process for a change of
# flags (each start imports the package, jax and matplotlib and starts the backend, about
# 2.6 CPU-s).
_MOST_OPTIMIZATIONS_OFF = {FAST_COMPILE_FLAGS: LIGHT_COMPILE_FLAGS}


def worker_flags(flags: str) -> str:
    """The `XLA_FLAGS` of the worker that computes the jobs of compile flags `flags`."""
    return _MOST_OPTIMIZATIONS_OFF.get(flags, flags)


def use_flags(flags: str, worker: str) -> None:
    """In a worker started under `worker_flags(flags)` = `worker`, compile as under `flags`:
    jax's `jax_disable_most_optimizations` on or off, and jax's in-memory caches emptied when it
    changes (a program compiled under the other setting would be served otherwise; the
    persistent cache keys its programs by the option)."""
    import jax

    off = flags in _MOST_OPTIMIZATIONS_OFF and _MOST_OPTIMIZATIONS_OFF[flags] == worker
    if jax.config.read("jax_disable_most_optimizations") != off:
        jax.config.update("jax_disable_most_optimizations", off)
        jax.clear_caches()


def start_worker(
    compilation_cache: str | None, program_store: str | None, flags: str = ""
) -> str:
    """A worker process takes the parent's persistent caches (the command line turns them on);
    it compiles with the XLA `flags` (`worker_flags` of its jobs'; XLA reads them when jax
    starts its backend, which importing this package does not), unless the environment's
    XLA_FLAGS already set an optimization level.

    **Returns:** the flags it set ("" when it set none).

    Refuses to set the flags in a process whose backend has started: XLA would not apply them,
    but jax keys its persistent cache on the `XLA_FLAGS` of the environment, so programs compiled
    as usual would be kept under the flags' key and served to later workers that do apply them.
    """
    applied = flags and "xla_backend_optimization_level" not in os.environ.get(
        "XLA_FLAGS", ""
    )
    if applied:
        if backend_started():
            raise RuntimeError(
                "a worker of its own compile flags must set XLA_FLAGS before jax starts its "
                "backend"
            )
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()
    import matplotlib

    matplotlib.use("Agg")
    if compilation_cache:
        from ._paths import enable_compilation_cache

        enable_compilation_cache(compilation_cache)
    if program_store:
        from ._programs import enable_program_store

        enable_program_store(program_store)
    return flags if applied else ""


def backend_started() -> bool:
    """Whether jax has started its backend in this process (XLA has read its flags)."""
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def worn_out() -> bool:
    """Whether this worker should hand over to a fresh process: its memory mappings near the
    kernel's limit (each compiled program maps its generated code; past the limit LLVM fails
    with "Cannot allocate memory") or its resident memory above a share of the machine's."""
    try:
        maps = Path("/proc/self/maps").read_text().count("\n")
        limit = int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return False  # not Linux: nothing to watch
    if maps > limit // 3:
        return True
    try:
        import resource

        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):
        return False
    return rss > _MEMORY_SHARE * total


# A worker whose peak resident memory passes this share of the machine's hands over to a new one.
_MEMORY_SHARE = 0.25


@dataclasses.dataclass(frozen=True)
class Task:
    """One job for the pool: its `name` (unique in the run), the XLA compile `flags` it is
    computed under ("" for XLA's defaults; a worker under `worker_flags(flags)` takes it),
    the `args` its job function is called with, and the names of the tasks whose cached work it
    reads (`after`): while one of those runs, it waits, rather than compute the same thing
    beside it.

    ```python
    Task("coverage", FAST_COMPILE_FLAGS, ("coverage", True, None, Path("out")))
    ```
    """

    name: str
    flags: str
    args: tuple
    after: tuple[str, ...] = ()


def starting_workers(kinds: list[str], jobs: int) -> list[str]:
    """The `worker_flags` of the workers a run starts with, given those of its tasks in the order
    they are taken (`kinds`, longest first): one of each kind, in the order of their longest
    task, then more of the first kind, `jobs` in all (fewer for fewer tasks). A kind with little
    work so runs beside the others from the start, not alone at the end of the run while the
    other cores idle.

    ```python
    starting_workers([LIGHT_COMPILE_FLAGS, LIGHT_COMPILE_FLAGS, ""], 2)  # [LIGHT_COMPILE_FLAGS, ""]
    ```
    """
    distinct = list(dict.fromkeys(kinds))
    n = min(jobs, len(kinds))
    return (distinct[:n] + [distinct[0]] * n)[:n] if distinct else []


def serve(
    worker: int, caches, flags: str, job: Callable, tasks, events, progress: bool
) -> None:
    """A worker process: computes the tasks it is sent (`(name, compile flags, args)`, None to
    stop) one at a time with `job(*args, report=...)`, keeping jax's compiled programs between
    them, and reports on `events`: `("line", name, text, finished)` progress, `("beat", name,
    text)` a `Heartbeat` after `HEARTBEAT_S` seconds without progress, `("warn", category,
    text)` a warning (`job` passes `report` to `_warnings.warnings_named`), `("done", worker,
    name, result, retiring)` (`retiring`: worn out, it stops) and `("failed", worker, name,
    error, trace)`. It is started under the XLA `flags` (`worker_flags`: it is sent only the
    tasks whose compile flags those serve). Once told to stop (or worn out, or failed) it leaves
    at once (`_leave`); an error outside a task ends it as usual, with its traceback."""
    tune_garbage_collector()
    serve_tasks(worker, caches, flags, job, tasks, events, progress)
    _leave(events)


def _leave(events) -> None:
    """End a worker process once its `events` are sent, without Python's and jax's teardown:
    freeing every compiled program takes about 2 ms each (2 s of a quick run's worker, on the
    run's critical path at its end), and nothing of it is kept (figures, caches and compiled
    programs are on disk before their "done" is sent)."""
    events.close()
    events.join_thread()  # what was put is in the pipe
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def serve_tasks(
    worker: int, caches, flags: str, job: Callable, tasks, events, progress
) -> None:
    """`serve`'s loop: returns when told to stop, worn out or after a failed task."""
    applied = start_worker(*caches, flags=flags)
    while (task := tasks.get()) is not None:
        name, task_flags, args = task
        if applied:
            use_flags(task_flags, applied)

        def sink(line, finished, name=name):
            events.put(("line", name, line, finished))

        def beat(line, name=name):
            events.put(("beat", name, line))

        def warn(category, text):
            try:
                pickle.dumps(category)
            except Exception:  # a class the parent cannot import
                category = UserWarning
            events.put(("warn", category, text))

        try:
            if progress:
                with Heartbeat(beat, HEARTBEAT_S) as heart, report_to(heart.sink(sink)):
                    result = job(*args, report=warn)
            else:
                result = job(*args, report=warn)
        except BaseException as err:
            import traceback

            trace = traceback.format_exc()
            try:
                pickle.dumps(err)
            except Exception:
                err = RuntimeError(f"{type(err).__name__}: {err}")
            events.put(("failed", worker, name, err, trace))
            return
        retiring = worn_out()
        events.put(("done", worker, name, result, retiring))
        if retiring:
            return


def run_in_workers(
    tasks: list[Task],
    job: Callable,
    jobs: int,
    console,
    done: Callable[[str, Any], None],
    *,
    own_cores: bool = False,
    wait_for_after: bool = True,
    noun: str = "job",
) -> dict[str, Any]:
    """Tasks computed by `jobs` long-lived worker processes, in the order given (longest
    expected first, each after its `after` tasks), each worker taking the next task when it
    finishes one.

    A worker keeps jax's compiled programs (and its imports) from one task to the next, so tasks
    of the same shapes compile them once; a worker near the limit of memory mappings for
    generated code, or holding much memory, hands over to a fresh process (`worn_out`). A worker
    runs under one set of XLA flags (`worker_flags`) for life: it takes the first task left that
    they serve, and when none is left hands over to a worker of the kind of the first task left;
    the run starts with a worker of each kind (`starting_workers`). With `own_cores` each worker
    runs on cores of its own (the usable cores shared out by `core_sets`; a new worker takes
    those of the one it replaces). With `wait_for_after`, a task whose `after` task is being
    computed by another worker waits for it (it reads what that one caches); a worker with
    nothing else of its kind to do waits too.

    **Arguments:**
    - `tasks`: the `Task`s, in the order to take them.
    - `job`: a module-level function (the spawned workers import it by name), called in a
      worker as `job(*task.args, report=...)`; what it returns is sent back (picklable).
    - `jobs`: worker processes at once.
    - `console`: where progress goes (`_console.Console`: `started`, `line`, `beat`,
      `quiet_for` and `enabled`).
    - `done(name, result)`: called in this process as each task finishes.
    - `noun`: what a task is called in the messages of a failed or dead worker.

    **Returns:** each task's result, by name.

    ```python
    run_in_workers([Task("a", "", (1,))], work, 2, Console({"a": 1.0}, "nominal costs", False),
                   lambda name, result: None)
    ```
    """
    import multiprocessing

    import jax

    from ._programs import program_store_directory

    store = program_store_directory()
    # spawn, not fork: the parent has started jax's threads
    context = multiprocessing.get_context("spawn")
    events = context.Queue()
    caches = (
        jax.config.jax_compilation_cache_dir or None,
        None if store is None else str(store),
    )
    by_name = {t.name: t for t in tasks}
    order = [t.name for t in tasks]
    results: dict[str, Any] = {}
    workers: dict[int, tuple] = {}  # id -> (process, task queue, compile flags)
    starting = starting_workers([worker_flags(t.flags) for t in tasks], jobs)
    # cores of their own, when the workers take them: live worker -> index in `own`
    own = core_sets(usable_cores(), len(starting)) if starting and own_cores else []
    cores_of: dict[int, int] = {}
    busy: dict[int, str] = {}  # id -> the task it computes
    waiting: set[int] = set()  # workers whose next tasks wait for a running one
    count = iter(range(10**9))

    def kind(name: str) -> str:
        return worker_flags(by_name[name].flags)

    def blocked(name: str) -> bool:
        # waits only for a task running now (one not started comes first in `order`; a task
        # and its `after` tasks compile alike, tested for the figures), and only where a cache
        # carries the runs over
        if not wait_for_after:
            return False
        return any(running in by_name[name].after for running in busy.values())

    def spawn(flags: str) -> int:
        worker, queue = next(count), context.Queue()
        process = context.Process(
            target=serve,
            args=(worker, caches, flags, job, queue, events, console.enabled),
            daemon=True,
        )
        taken = {cores_of.get(w) for w in workers}
        free = [i for i in range(len(own)) if i not in taken]
        if free:
            cores_of[worker] = free[0]
        with on_cores(own[free[0]] if free else None):
            process.start()
        workers[worker] = (process, queue, flags)
        return worker

    def assign(worker: int) -> None:
        _, queue, flags = workers[worker]
        # the first task left that this worker's flags serve
        mine = [n for n in order if kind(n) == flags]
        name = next((n for n in mine if not blocked(n)), None)
        if name is not None:
            order.remove(name)
            busy[worker] = name
            console.started(name)
            queue.put((name, by_name[name].flags, by_name[name].args))
            return
        if mine:  # each waits for a task another worker computes now
            waiting.add(worker)
            return
        queue.put(None)
        # only tasks of other compile flags are left: a worker of the first one's takes over
        if order:
            workers.pop(worker)[0].join()
            assign(spawn(kind(order[0])))

    def handle(event) -> None:
        what = event[0]
        if what == "line":
            console.line(*event[1:])
        elif what == "beat":
            console.beat(*event[1:])
        elif what == "warn":  # already named and made distinct by the worker
            rewarn(*event[1:])
        elif what == "done":
            _, worker, name, result, retiring = event
            busy.pop(worker, None)
            results[name] = result
            done(name, result)
            if retiring:
                workers.pop(worker)[0].join()
            # what waited for this task may start (or stop), before a fresh process is
            # spawned for it
            for other in list(waiting):
                waiting.discard(other)
                assign(other)
            if not retiring:
                assign(worker)
            elif order:  # a fresh process takes over the tasks left
                assign(spawn(kind(order[0])))
        elif what == "failed":
            _, worker, name, err, trace = event
            if not isinstance(err, KeyboardInterrupt):
                sys.stderr.write(f"{noun} {name} failed in its worker:\n{trace}")
            raise err

    failed = True
    try:
        for flags in starting:
            spawn(flags)
        for worker in list(workers):
            assign(worker)
        while len(results) < len(tasks):
            try:
                handle(events.get(timeout=0.5))
            except queue_module.Empty:
                pass
            console.quiet_for()
            for worker, name in list(busy.items()):
                process = workers[worker][0]
                if process.is_alive():
                    continue
                # its last messages may still be on their way
                deadline = time.perf_counter() + 5.0
                while worker in busy and time.perf_counter() < deadline:
                    try:
                        handle(events.get(timeout=0.5))
                    except queue_module.Empty:
                        pass
                if worker in busy:
                    raise RuntimeError(
                        f"the worker process computing {noun} {name} died (exit code "
                        f"{process.exitcode}); rerun to resume from the cache"
                    )
        failed = False
    finally:
        for process, _, _ in workers.values():
            process.join(timeout=0 if failed else 10)  # told to stop: they exit at once
            if process.is_alive():
                process.terminate()
                process.join(timeout=5)
    return results
