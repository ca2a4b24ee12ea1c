"""Experiments of many runs: flows of many seeds, the oracle regime map, sweeps, the
mitigation tables, the phase-uniformity frontier, the relaxation ladder of the trained model,
and the analysis of gates read from a trained model's files.

May import: `inductheory.internal`, `inductheory.model`, `inductheory.oracle`,
`inductheory.flow`, `inductheory.trained`.

```python
import inductheory as it
run = it.run_flow(it.Task(L=8, S=4, H=2, N=4096), it.FlowConfig(), seeds=8)
run.summary.distinct_fraction
```
"""

from ._ceilings import (
    CEILING_POSITIONS_MAX as CEILING_POSITIONS_MAX,
    Ceilings as Ceilings,
    architecture_coverage as architecture_coverage,
    retrieval_ceilings as retrieval_ceilings,
    retrieval_coverage as retrieval_coverage,
)
from ._flows import (
    NoSelectionWarning as NoSelectionWarning,
    distinct_fraction as distinct_fraction,
    flow_sample as flow_sample,
    independent_distinct_baseline as independent_distinct_baseline,
    no_selection_message as no_selection_message,
    offset_histogram as offset_histogram,
    run_flow as run_flow,
    run_flow_variants as run_flow_variants,
    run_flows as run_flows,
    sample_size as sample_size,
    seed_keys as seed_keys,
    sharded_seed_map as sharded_seed_map,
)
from ._frontier import (
    FrontierEnd as FrontierEnd,
    KKTCheck as KKTCheck,
    frontier_mean_at as frontier_mean_at,
    kkt_check as kkt_check,
    mean_and_worst as mean_and_worst,
    minimax_end as minimax_end,
    simplex_frontier as simplex_frontier,
    uniformity_frontier as uniformity_frontier,
)
from ._gate_files import (
    GateAnalysis as GateAnalysis,
    GateHead as GateHead,
    analyze_gates as analyze_gates,
    load_gate_tensors as load_gate_tensors,
    slot_phases as slot_phases,
)
from ._ladder import (
    SWITCHES as SWITCHES,
    LadderResult as LadderResult,
    LadderSettings as LadderSettings,
    Rung as Rung,
    RungResult as RungResult,
    ladder_rungs as ladder_rungs,
    run_ladder as run_ladder,
    rung_summary as rung_summary,
    train_rung as train_rung,
)
from ._mitigations import (
    CoordinationThreshold as CoordinationThreshold,
    SelectionEdges as SelectionEdges,
    best_hard_selection as best_hard_selection,
    coordination_table as coordination_table,
    coordination_threshold as coordination_threshold,
    gate_measures as gate_measures,
    mitigation_table as mitigation_table,
    mitigation_task as mitigation_task,
    overlapped_selections as overlapped_selections,
    selection_edges as selection_edges,
)
from ._paper_gates import (
    PaperGates as PaperGates,
    load_paper_gates as load_paper_gates,
    read_paper_gates as read_paper_gates,
    windows_stride as windows_stride,
)
from ._regime import (
    BoundaryBracket as BoundaryBracket,
    LogThresholdFit as LogThresholdFit,
    RegimeMap as RegimeMap,
    RegimePoint as RegimePoint,
    fit_log_threshold as fit_log_threshold,
    log_boundary as log_boundary,
    regime_map as regime_map,
)
from ._results import (
    FlowOutcomes as FlowOutcomes,
    FlowRun as FlowRun,
    FlowSample as FlowSample,
    FlowSummary as FlowSummary,
    SeedResults as SeedResults,
)
from ._sweep import (
    SWEEP_KINDS as SWEEP_KINDS,
    AbstractSweepKind as AbstractSweepKind,
    FlowSweep as FlowSweep,
    LossSweep as LossSweep,
    MatrixSweep as MatrixSweep,
    OracleSweep as OracleSweep,
    SweepFailureWarning as SweepFailureWarning,
    SweepProblems as SweepProblems,
    TrainSweep as TrainSweep,
    check_grid_points as check_grid_points,
    matrix_sweep as matrix_sweep,
    points_of as points_of,
    summary_table as summary_table,
    sweep as sweep,
    sweep_problems as sweep_problems,
)
from ._training import (
    TrainingSummary as TrainingSummary,
    summarize_training as summarize_training,
    train_bytes as train_bytes,
)
