"""How many devices the host CPU is split into, so that sweeps and flow batches run on every
core; which cores a process may run on, and how worker processes share them."""

from __future__ import annotations

import contextlib
import operator
import os
import warnings

# Each device starts its own threads: XLA aborts (no Python error) past the thread limit.
MAX_CPU_DEVICES = 256


def use_cpu_devices(count: int | None = None) -> int:
    """Split the host CPU into `count` XLA devices (default: one per core).

    Sweeps and batched flows shard their lanes over the local devices (`sweep`, `run_flow`); on a
    CPU, jax makes one device by default, and the small operations of a batched flow then keep
    one core busy. With one device per core the lanes run side by side (`benchmarks/bench_sweep.py`
    times both; docs/cli.md reports its timings).

    The lanes of each device are batched separately, so results may differ from a one-device run
    in the last digits (relative 1e-10 in flow times); offsets, statuses and step counts agree.
    The device count is recorded in a sweep's attributes. Only the CPU backend is affected: a
    GPU run shards over its GPUs whatever this says.

    **Arguments:**

    - `count`: devices, from 1 to 256; None uses `os.cpu_count()`. More devices than cores run
      (with a warning) but only compete for the cores.

    **Returns:** the number of CPU devices set.

    Call it before the first JAX computation (jax fixes its devices when it starts):

    ```python
    import inductheory as it
    it.internal.use_cpu_devices()  # e.g. 2 on a 2-core machine
    ds = it.sweep("flow", it.Task(L=8, S=4, H=2, N=4096, beta=4.0), {"beta": [2.0, 4.0]}, seeds=256)
    ```
    """
    import jax

    if count is None:
        count = min(os.cpu_count() or 1, MAX_CPU_DEVICES)
    try:
        valid = (
            not isinstance(count, bool)
            and 1 <= operator.index(count) <= MAX_CPU_DEVICES
        )
    except TypeError:
        valid = False
    if not valid:
        raise ValueError(
            f"count must be an integer from 1 to {MAX_CPU_DEVICES} (got {count!r})"
        )
    count = operator.index(count)
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:
        try:
            have = len(jax.devices("cpu"))
        except RuntimeError:  # started without a CPU backend (e.g. JAX_PLATFORMS=cuda)
            have = None
        if have == count:
            return count
        raise RuntimeError(
            f"use_cpu_devices({count}) must come before the first JAX computation: jax has already "
            f"started with {'no' if have is None else have} CPU device(s)"
        ) from None
    cores = os.cpu_count() or 1
    if count > cores:
        warnings.warn(
            f"use_cpu_devices({count}): more devices than the {cores} cores; they compete for "
            "the cores and add no speed",
            UserWarning,
            stacklevel=2,
        )
    return count


def usable_cores() -> list[int]:
    """The cores this process may run on (its CPU affinity), sorted; where the platform has no
    affinity, every core.

    ```python
    len(usable_cores())  # e.g. 2 on a 2-core machine, 1 under `taskset -c 0`
    ```
    """
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def core_sets(cores: list[int], workers: int) -> list[frozenset[int]]:
    """`cores` shared out among `workers` processes that each take their own: consecutive runs
    of cores as equal as can be (the first ones one longer); with more workers than cores, one
    core each, in turn.

    ```python
    core_sets([0, 1, 2, 3, 4], 2)  # [{0, 1, 2}, {3, 4}]
    core_sets([0, 1], 3)  # [{0}, {1}, {0}]
    ```
    """
    if workers < 1 or not cores:
        raise ValueError(
            f"core_sets needs at least one core and one worker (got {len(cores)} cores, "
            f"{workers} workers)"
        )
    cores = sorted(cores)
    if workers >= len(cores):
        return [frozenset({cores[i % len(cores)]}) for i in range(workers)]
    size, longer = divmod(len(cores), workers)
    sets, start = [], 0
    for i in range(workers):
        end = start + size + (i < longer)
        sets.append(frozenset(cores[start:end]))
        start = end
    return sets


@contextlib.contextmanager
def on_cores(cores: frozenset[int] | None):
    """Run the calling thread on `cores` for the block, so that a process it starts there runs
    on them too, with every thread it makes (the affinity is inherited, and XLA sizes its thread
    pool by it); None, a platform without affinity, or cores the system refuses (`OSError`, e.g.
    taken away meanwhile): leave it as it is, since where a process runs changes only its speed.

    ```python
    with on_cores(frozenset({0})):
        process.start()  # runs on core 0 only
    ```
    """
    if cores is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, cores)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


__all__ = ["use_cpu_devices"]
