"""Sweeps: a grid of parameter values run as one vectorized computation, returned as a
labeled dataset.

A sweep takes a template (a `Task`, and a `FlowConfig`, an `OracleMinimizer` or gates), a grid of
values for some of its traced scalars, and returns an `xarray.Dataset` whose dimensions are named
after the grid parameters (then seed, head, offset, ...), with every fixed parameter and the library
version in its attributes.

How it runs. The grid points (crossed with seeds for flows) are cut into blocks of a fixed number of
points; every block is one call of one compiled program (vmap over the block, sharded over local
devices), padded with copies of its last point, so a sweep over k points compiles exactly the
programs a sweep over one point compiles. Only parameters that set a shape are looped in Python:
N (and kappa under an approximate geometry) for the full flow, every parameter for the oracle
under an approximate geometry. With `out`, each finished block is written atomically
(`blocks/block-NNNNN.npz`, each recording the sweep's parameters and code version) beside a
manifest of them (`sweep.json`), so an interrupted sweep resumes at its first unfinished block,
using only blocks that prove they are its own; the assembled dataset is `sweep.nc`.
Before anything is
allocated, the memory of the largest block and of every point's results is estimated
(`sweep_bytes`): a sweep that cannot fit is refused with a one-line `MemoryError`. With a Dask
`distributed` scheduler address, blocks are computed by the cluster's workers (same blocks, same
programs, same numbers).

The family's modules: `_spec` (the spec and its grid), `_kind` (`AbstractSweepKind`), one module
per kind (`_loss`, `_flow`, `_oracle`, `_train`, `_matrix`: rows of the paper's matrix, run by
`matrix_sweep`), `_registry` (`SWEEP_KINDS`, `sweep_kind`),
`_store` (blocks, manifest, the assembled dataset), `_driver` (`run_spec`, `sweep`), `_cluster`
(the Dask scheduler reached or refused, blocks on its workers) and
`_checks` (what a sweep checks before and after it runs).
"""

from ._checks import (
    PointChecks as PointChecks,
    SweepFailureWarning as SweepFailureWarning,
    SweepProblems as SweepProblems,
    check_grid_points as check_grid_points,
    sweep_problems as sweep_problems,
)
from ._cluster import (
    SCHEDULER_TIMEOUT_S as SCHEDULER_TIMEOUT_S,
    connect_scheduler as connect_scheduler,
    parse_scheduler as parse_scheduler,
)
from ._driver import (
    check_sweep_memory as check_sweep_memory,
    matrix_sweep as matrix_sweep,
    run_spec as run_spec,
    sweep as sweep,
    sweep_bytes as sweep_bytes,
)
from ._flow import FlowSweep as FlowSweep
from ._kind import AbstractSweepKind as AbstractSweepKind
from ._loss import LossSweep as LossSweep, loss_point_bytes as loss_point_bytes
from ._matrix import MatrixSweep as MatrixSweep
from ._oracle import OracleSweep as OracleSweep
from ._registry import (
    KINDS as KINDS,
    SWEEP_KINDS as SWEEP_KINDS,
    sweep_kind as sweep_kind,
)
from ._spec import (
    SweepSpec as SweepSpec,
    grid_point as grid_point,
    grid_points as grid_points,
)
from ._store import (
    assemble as assemble,
    blocks_of as blocks_of,
    points_of as points_of,
    summary_table as summary_table,
)
from ._train import TrainSweep as TrainSweep
