"""Python's cyclic garbage collector in the processes that trace and compile many programs."""

from __future__ import annotations

import gc

# The youngest generation is collected after this many net allocations (Python's default: 700);
# the older two after 10 collections of the one below, as by default.
YOUNG_THRESHOLD = 10_000


def tune_garbage_collector() -> None:
    """Set up the cyclic garbage collector of a process that traces and compiles many programs:
    the objects alive now (its imports: jax, equinox, this package) are frozen, never scanned
    again, and the youngest generation is collected every `YOUNG_THRESHOLD` allocations.

    Tracing and lowering allocate many short-lived objects, and every full collection walks the
    whole heap of jax's modules. Under Python's defaults the collector took 3% of a quick
    figure's CPU (relaxation_ladder 1.15 of 39.7 s in 1,350 collections, paper_matrix 0.79 of
    30.9 s), under these settings 0.1-0.2 s (benchmarks/bench_reproduce.py measures whole runs).
    Reference counting still frees every object as soon as nothing refers to it; only cycles
    wait longer.

    Called where this package owns the process: the command line, the `reproduce` workers and
    the test processes; importing the package leaves the collector alone. A script of your own
    that traces and compiles many programs may call it once its imports are done.

    ```python
    import gc

    tune_garbage_collector()
    gc.get_threshold()  # (10000, 10, 10)
    ```
    """
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, 10, 10)
