"""Experiments of many runs: flows of many seeds, the oracle regime map, sweeps, the
mitigation tables and the phase-uniformity frontier.

May import: `inductheory.internal`, `inductheory.model`, `inductheory.oracle`,
`inductheory.flow`.

```python
import inductheory as it
run = it.run_flow(it.Task(L=8, S=4, H=2, N=4096), it.FlowConfig(), seeds=8)
run.summary.distinct_fraction
```
"""

from ._flows import (
    NoSelectionWarning as NoSelectionWarning,
)
from ._flows import (
    distinct_fraction as distinct_fraction,
)
from ._flows import (
    flow_sample as flow_sample,
)
from ._flows import (
    independent_distinct_baseline as independent_distinct_baseline,
)
from ._flows import (
    no_selection_message as no_selection_message,
)
from ._flows import (
    offset_histogram as offset_histogram,
)
from ._flows import (
    run_flow as run_flow,
)
from ._flows import (
    sample_size as sample_size,
)
from ._flows import (
    seed_keys as seed_keys,
)
from ._flows import (
    sharded_seed_map as sharded_seed_map,
)
from ._frontier import (
    frontier_mean_at as frontier_mean_at,
)
from ._frontier import (
    mean_and_worst as mean_and_worst,
)
from ._frontier import (
    uniformity_frontier as uniformity_frontier,
)
from ._mitigations import (
    best_hard_selection as best_hard_selection,
)
from ._mitigations import (
    coordination_table as coordination_table,
)
from ._mitigations import (
    gate_measures as gate_measures,
)
from ._mitigations import (
    mitigation_table as mitigation_table,
)
from ._mitigations import (
    mitigation_task as mitigation_task,
)
from ._regime import (
    BoundaryBracket as BoundaryBracket,
)
from ._regime import (
    LogThresholdFit as LogThresholdFit,
)
from ._regime import (
    RegimeMap as RegimeMap,
)
from ._regime import (
    RegimePoint as RegimePoint,
)
from ._regime import (
    fit_log_threshold as fit_log_threshold,
)
from ._regime import (
    log_boundary as log_boundary,
)
from ._regime import (
    regime_map as regime_map,
)
from ._results import (
    FlowRun as FlowRun,
)
from ._results import (
    FlowSample as FlowSample,
)
from ._results import (
    FlowSummary as FlowSummary,
)
from ._results import (
    SeedResults as SeedResults,
)
from ._sweep import (
    points_of as points_of,
)
from ._sweep import (
    summary_table as summary_table,
)
from ._sweep import (
    sweep as sweep,
)
from ._sweep_checks import (
    SweepFailureWarning as SweepFailureWarning,
)
from ._sweep_checks import (
    SweepProblems as SweepProblems,
)
from ._sweep_checks import (
    check_grid_points as check_grid_points,
)
from ._sweep_checks import (
    sweep_problems as sweep_problems,
)
