"""Where a process's time goes: CPU seconds, and CPU seconds spent tracing, lowering and
compiling jax programs.

jax announces the start of each trace (`jaxpr_trace_duration`), lowering to StableHLO
(`jaxpr_to_mlir_module_duration`) and XLA compile (`backend_compile_duration`) to its scalar
listeners and reports its end to its time-span listeners. The spans nest (tracing an outer
program traces the inner ones), so the process CPU time is counted over the outermost spans only.
CPU, not wall, time: on a busy machine a compile waits for a core as long as it runs.
"""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
COMPILE_EVENTS = frozenset(
    {
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        BACKEND_COMPILE,
    }
)

_lock = threading.Lock()
_state = {
    "listening": False,
    "depth": 0,
    "entered": 0.0,
    "entered_wall": 0.0,
    "total": 0.0,
    "compiles": 0,
}


def _entered(event: str, value, **_) -> None:
    if event in COMPILE_EVENTS:
        with _lock:
            if _state["depth"] == 0:
                _state["entered"] = time.process_time()
                _state["entered_wall"] = time.perf_counter()
            _state["depth"] += 1


def _left(event: str, start: float, end: float, **_) -> None:
    if event in COMPILE_EVENTS:
        with _lock:
            _state["compiles"] += event == BACKEND_COMPILE
            _state["depth"] = max(_state["depth"] - 1, 0)
            if _state["depth"] == 0:
                _state["total"] += time.process_time() - _state["entered"]


def listen() -> None:
    """Start following jax's compile spans (once per process), so that `compiling_for` and
    `compile_seconds` see them."""
    with _lock:
        if _state["listening"]:
            return
        _state["listening"] = True
    import jax.monitoring

    jax.monitoring.register_scalar_listener(_entered)
    jax.monitoring.register_event_time_span_listener(_left)


def compile_seconds() -> float:
    """CPU seconds this process spent tracing, lowering or compiling jax programs since the
    first `Clock` it started (finished spans only).

    ```python
    compile_seconds()  # 0.0 before any Clock
    ```
    """
    with _lock:
        return _state["total"]


def compiling_for() -> float | None:
    """Wall seconds the trace, lowering or compile running now has taken (its outermost span),
    or None when this process is not compiling (or no `Clock` has started listening).

    ```python
    compiling_for()  # None outside a compile
    ```
    """
    with _lock:
        if _state["depth"] == 0:
            return None
        return time.perf_counter() - _state["entered_wall"]


class Spent(NamedTuple):
    """Time spent on one piece of work.

    - `wall_s`: elapsed seconds.
    - `cpu_s`: CPU seconds of this process, all its threads (jax's and XLA's too).
    - `compile_s`: the part of `cpu_s` spent tracing, lowering or compiling jax programs.
    - `compiles`: XLA compiles (each a distinct program: jitted functions and eager operations
      of new shapes; a persistent-cache hit counts too).
    """

    wall_s: float
    cpu_s: float
    compile_s: float
    compiles: int = 0


class Clock:
    """Measures the wall, CPU and compile seconds of this process from its start to `spent()`.

    ```python
    clock = Clock()
    sum(range(10**6))
    clock.spent().cpu_s
    ```
    """

    def __init__(self):
        listen()
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        self.compile = compile_seconds()
        with _lock:
            self.compiles = _state["compiles"]

    def spent(self) -> Spent:
        return Spent(
            wall_s=time.perf_counter() - self.wall,
            cpu_s=time.process_time() - self.cpu,
            compile_s=compile_seconds() - self.compile,
            compiles=_state["compiles"] - self.compiles,
        )


def cpu_seconds_with_children() -> float:
    """CPU seconds of this process and of its finished (joined) child processes.

    ```python
    start = cpu_seconds_with_children()
    # ... start and join worker processes ...
    cpu_seconds_with_children() - start  # the run's CPU seconds, the workers' included
    ```
    """
    import resource

    return sum(
        u.ru_utime + u.ru_stime
        for u in (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
    )
