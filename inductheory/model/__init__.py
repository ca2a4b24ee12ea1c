"""The idealized model: the task, positions and windows, geometry, contexts, gates, logits,
losses, objectives and measures (THEORY §1-4, §10 of the docs' theory page).

Everything a theorem is about lives here; the theorems (`inductheory.oracle`,
`inductheory.flow`) and the experiments build on it.

May import: `inductheory.internal`. Nothing here imports the theorems or the experiments.

```python
import inductheory as it
task = it.Task(L=8, S=4, H=2, N=4096)
it.model.block_attention(0.5, task.gamma, task.L)
```
"""

from ._contexts import (
    balanced_contexts as balanced_contexts,
    query_slots as query_slots,
    sample_contexts as sample_contexts,
)
from ._gates import (
    AbstractGates as AbstractGates,
    LinearGates as LinearGates,
    OracleGates as OracleGates,
    SharedGates as SharedGates,
    concentrated_offsets as concentrated_offsets,
    distinct_within_blocks as distinct_within_blocks,
    hard_selection as hard_selection,
    selectable_offsets as selectable_offsets,
    selected_offsets as selected_offsets,
    shared_gates_from_logits as shared_gates_from_logits,
    uniform_gates as uniform_gates,
    value_follows_key as value_follows_key,
)
from ._geometry import (
    AbstractGeometry as AbstractGeometry,
    DenseGeometry as DenseGeometry,
    ExactGeometry as ExactGeometry,
    approximate_geometry as approximate_geometry,
    dimension_for_eps as dimension_for_eps,
    make_geometry as make_geometry,
    measure_eps as measure_eps,
)
from ._interventions import (
    knockout_phase_accuracy as knockout_phase_accuracy,
    knockout_phase_losses as knockout_phase_losses,
    mean_head_outputs as mean_head_outputs,
    monte_carlo_knockout as monte_carlo_knockout,
    rotate_gates as rotate_gates,
)
from ._logits import (
    attention_to_target as attention_to_target,
    block_attention as block_attention,
    cross_entropy as cross_entropy,
    dense_logits as dense_logits,
    exact_logits as exact_logits,
    head_outputs as head_outputs,
    query_logits as query_logits,
    top1_correct as top1_correct,
    windowed_logits as windowed_logits,
)
from ._loss import (
    context_loss as context_loss,
    monte_carlo_loss as monte_carlo_loss,
    monte_carlo_phase_accuracy as monte_carlo_phase_accuracy,
    monte_carlo_phase_losses as monte_carlo_phase_losses,
    phase_accuracy as phase_accuracy,
    phase_gap as phase_gap,
    phase_losses as phase_losses,
    phase_target_probability as phase_target_probability,
    population_loss as population_loss,
    query_losses as query_losses,
    shared_logits as shared_logits,
)
from ._measures import (
    effective_number as effective_number,
    effective_offsets as effective_offsets,
    entropy as entropy,
)
from ._objective import (
    OBJECTIVES as OBJECTIVES,
    Objective as Objective,
    overlap as overlap,
    soft_maximum as soft_maximum,
)
from ._positions import (
    entry_positions as entry_positions,
    query_phases as query_phases,
    query_positions as query_positions,
    target_positions as target_positions,
    window_tokens as window_tokens,
)
from ._task import (
    Task as Task,
    TheoryAssumptionWarning as TheoryAssumptionWarning,
    assumptions_silenced as assumptions_silenced,
    quiet_task as quiet_task,
    task_with as task_with,
    welch_bound as welch_bound,
)
