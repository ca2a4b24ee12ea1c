"""How `reproduce` schedules its figures: the XLA compile flags each is computed under, the
order its workers take them in (longest expected first, each after the figures it reads), and
whether the workers take cores of their own. The expected seconds come from `_timings`.
"""

from __future__ import annotations

from ..internal._pool import (
    FAST_COMPILE_FLAGS,
    LIGHT_COMPILE_FLAGS,
    starting_workers,
    worker_flags,
)
from ._figure import Figure
from ._registry import FIGURES
from ._timings import expected_cost

# The compile flags of the workers that compute each figure, by mode (absent: XLA's defaults).
# `FAST_COMPILE_FLAGS`: figures whose data under them equal the default compilation's within
# tolerance (checked by regenerating them and comparing every number), and in quick mode the
# trained figures, whose training is a draw of its own under them (their quick data were
# regenerated under the flags; the quick ladder and matrix compile in a third of the time).
# `LIGHT_COMPILE_FLAGS`: quick figures whose quick data were regenerated under them
# (phase_uniformity's frontier moves by 1e-3 under any change of flags, regime_boundary's
# Frank-Wolfe gaps, residuals near 1e-8, by 1e-8). The full figures compile with XLA's defaults.
# Not toy_stability in any mode (a count of split ends changes).
COMPILE_FLAGS: dict[str, dict[str, str]] = {
    "quick": {
        **dict.fromkeys(
            (
                "paper_matrix",
                "paper_mechanisms",
                "paper_headline",
                "open_questions",
                "relaxation_ladder",
                "boundary",
                "convergence_rates",
                "coverage",
                "coverage_map",
                "effective_offsets",
                "mitigations",
                "theorem1_oracle",
                "theorem2_trajectories",
                "weak_spots",
            ),
            FAST_COMPILE_FLAGS,
        ),
        **dict.fromkeys(
            ("phase_uniformity", "regime_boundary", "approximate_geometry"),
            LIGHT_COMPILE_FLAGS,
        ),
    },
    "full": {},
}


def dependencies_first(order: list[str]) -> list[str]:
    """`order` with each figure's `after` figures (those in `order`) moved before it, the
    order kept otherwise."""
    out: list[str] = []

    def put(name):
        if name in out:
            return
        for d in sorted(set(FIGURES[name].after) & set(order), key=order.index):
            put(d)
        out.append(name)

    for name in order:
        put(name)
    return out


def compile_flags(name: str, quick: bool) -> str:
    """The XLA flags figure `name` compiles with ("" for XLA's defaults)."""
    return COMPILE_FLAGS["quick" if quick else "full"].get(name, "")


# Whether the workers of a run each take their own cores (`core_sets`), by mode. The quick figures
# run small programs, which a second core speeds up by a few percent (quick relaxation_ladder
# alone: 40 and 44 s on one core, 38 and 40 s on two, with the same CPU seconds; once 52 s in a
# noisy minute), and workers sharing every core lose CPU to each other's XLA threads
# (the quick run on 2 cores, in 11 alternating pairs: 7 s more to 18 s less wall with a core each,
# less in 9, median 8.8 s less of 124-144 s; 640,000-750,000 context switches against 85,000-91,000;
# benchmarks/bench_cores.py).
# XLA sizes a worker's thread pool by its cores, so the float32 training of the quick paper_matrix
# and paper_mechanisms rounds differently (1e-7 relative), as on machines with other core counts.
# The full figures keep every core: paper_matrix runs alone for its last 18 minutes, and a row of
# it at full size trains in 13 s on two cores against 16-17 on one.
OWN_CORES = {"quick": True, "full": False}


def first_workers(order: list[str], quick: bool, jobs: int) -> list[str]:
    """The `worker_flags` of the workers a run of figures `order` (longest first) starts with:
    one of each kind of flags, in the order of their longest figure, then more of the first
    kind, `jobs` in all (fewer for fewer figures). A kind with little work (quick toy_stability,
    the one figure under XLA's defaults) so runs beside the others from the start, not alone at
    the end of the run while the other cores idle.

    ```python
    first_workers(["relaxation_ladder", "paper_matrix", "toy_stability"], True, 2)
    # [LIGHT_COMPILE_FLAGS, ""]
    ```
    """
    return starting_workers(
        [worker_flags(compile_flags(n, quick)) for n in order], jobs
    )


def run_order(figures: list[Figure], quick: bool, previous: dict) -> list[str]:
    """The names of `figures` in the order the workers take them: the longest expected first
    (`previous`: each figure's seconds in an earlier run, else `expected_cost`), each after the
    figures it reads (`dependencies_first`)."""
    names = [f.name for f in figures]
    return dependencies_first(
        [
            f.name
            for f in sorted(
                figures,
                key=lambda f: (
                    -float(previous.get(f.name, expected_cost(f, quick, names)))
                ),
            )
        ]
    )
