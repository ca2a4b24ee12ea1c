"""How many XLA programs a process compiled, and how many of them jax's persistent compilation
cache served instead.

jax reports each program it hands to XLA (`backend_compile_duration`, a cache hit included), each
compile request that consulted the persistent cache (`compile_requests_use_cache`), each hit
(`cache_hits`) and each entry it wrote (`cache_misses`) to its `jax.monitoring` listeners; this
module counts them from the first `CompileCount` on. A program that compiled without consulting the
cache (the cache off, or jax unable to key it) is a compile that is not a request.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
REQUESTS = "/jax/compilation_cache/compile_requests_use_cache"
HITS = "/jax/compilation_cache/cache_hits"
WRITES = "/jax/compilation_cache/cache_misses"

_lock = threading.Lock()
_counts = {"compiles": 0, "seconds": 0.0, "requests": 0, "hits": 0, "writes": 0}
_listening = [False]


def _event(event: str, **_) -> None:
    key = {REQUESTS: "requests", HITS: "hits", WRITES: "writes"}.get(event)
    if key is not None:
        with _lock:
            _counts[key] += 1


def _duration(event: str, seconds: float, **_) -> None:
    if event == BACKEND_COMPILE:
        with _lock:
            _counts["compiles"] += 1
            _counts["seconds"] += seconds


def _start_listening() -> None:
    with _lock:
        if _listening[0]:
            return
        _listening[0] = True
    import jax.monitoring

    jax.monitoring.register_event_listener(_event)
    jax.monitoring.register_event_duration_secs_listener(_duration)


class Compiles(NamedTuple):
    """What a process handed to XLA over some stretch of work.

    - `compiles`: programs handed to XLA (each a distinct program; a persistent-cache hit too).
    - `hits`: of those, the ones the persistent compilation cache served (deserialized, not
      compiled).
    - `misses`: the ones that consulted the cache, found nothing and were compiled.
    - `uncached`: the ones compiled without consulting the cache (it is off, or could not key them).
    - `writes`: cache entries written (a miss is written unless jax declines: host callbacks).
    - `seconds`: wall seconds of the compiles and cache reads together.
    """

    compiles: int = 0
    hits: int = 0
    misses: int = 0
    uncached: int = 0
    writes: int = 0
    seconds: float = 0.0

    @property
    def compiled(self) -> int:
        """Programs XLA actually compiled (not served by the cache)."""
        return self.compiles - self.hits


def _snapshot() -> dict:
    with _lock:
        return dict(_counts)


def compiles_between(before: dict, after: dict) -> Compiles:
    """The `Compiles` from one snapshot of the raw counts (`compiles`, `seconds`, `requests`,
    `hits`, `writes`) to a later one.

    ```python
    before = {"compiles": 1, "requests": 1, "hits": 0}
    compiles_between(before, {"compiles": 4, "requests": 3, "hits": 1}).hits  # 1
    ```
    """
    d = {k: after.get(k, 0) - before.get(k, 0) for k in _counts}
    return Compiles(
        compiles=d["compiles"],
        hits=d["hits"],
        misses=d["requests"] - d["hits"],
        uncached=d["compiles"] - d["requests"],
        writes=d["writes"],
        seconds=round(d["seconds"], 3),
    )


class CompileCount:
    """Counts the programs this process hands to XLA from its creation to `count()`.

    ```python
    counter = CompileCount()
    jax.jit(lambda x: x + 1)(1.0)
    counter.count().compiles  # 1
    ```
    """

    def __init__(self):
        _start_listening()
        self.start = _snapshot()

    def count(self) -> Compiles:
        return compiles_between(self.start, _snapshot())


__all__ = ["CompileCount", "Compiles", "compiles_between"]
