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
)
from ._contexts import (
    query_slots as query_slots,
)
from ._contexts import (
    sample_contexts as sample_contexts,
)
from ._gates import (
    AbstractGates as AbstractGates,
)
from ._gates import (
    LinearGates as LinearGates,
)
from ._gates import (
    OracleGates as OracleGates,
)
from ._gates import (
    SharedGates as SharedGates,
)
from ._gates import (
    concentrated_offsets as concentrated_offsets,
)
from ._gates import (
    distinct_within_blocks as distinct_within_blocks,
)
from ._gates import (
    hard_selection as hard_selection,
)
from ._gates import (
    selectable_offsets as selectable_offsets,
)
from ._gates import (
    selected_offsets as selected_offsets,
)
from ._gates import (
    shared_gates_from_logits as shared_gates_from_logits,
)
from ._gates import (
    uniform_gates as uniform_gates,
)
from ._gates import (
    value_follows_key as value_follows_key,
)
from ._geometry import (
    AbstractGeometry as AbstractGeometry,
)
from ._geometry import (
    DenseGeometry as DenseGeometry,
)
from ._geometry import (
    ExactGeometry as ExactGeometry,
)
from ._geometry import (
    approximate_geometry as approximate_geometry,
)
from ._geometry import (
    dimension_for_eps as dimension_for_eps,
)
from ._geometry import (
    make_geometry as make_geometry,
)
from ._geometry import (
    measure_eps as measure_eps,
)
from ._interventions import (
    knockout_phase_accuracy as knockout_phase_accuracy,
)
from ._interventions import (
    knockout_phase_losses as knockout_phase_losses,
)
from ._interventions import (
    mean_head_outputs as mean_head_outputs,
)
from ._interventions import (
    monte_carlo_knockout as monte_carlo_knockout,
)
from ._interventions import (
    rotate_gates as rotate_gates,
)
from ._logits import (
    attention_to_target as attention_to_target,
)
from ._logits import (
    block_attention as block_attention,
)
from ._logits import (
    cross_entropy as cross_entropy,
)
from ._logits import (
    dense_logits as dense_logits,
)
from ._logits import (
    exact_logits as exact_logits,
)
from ._logits import (
    head_outputs as head_outputs,
)
from ._logits import (
    query_logits as query_logits,
)
from ._logits import (
    top1_correct as top1_correct,
)
from ._logits import (
    windowed_logits as windowed_logits,
)
from ._loss import (
    context_loss as context_loss,
)
from ._loss import (
    monte_carlo_loss as monte_carlo_loss,
)
from ._loss import (
    monte_carlo_phase_accuracy as monte_carlo_phase_accuracy,
)
from ._loss import (
    monte_carlo_phase_losses as monte_carlo_phase_losses,
)
from ._loss import (
    phase_accuracy as phase_accuracy,
)
from ._loss import (
    phase_gap as phase_gap,
)
from ._loss import (
    phase_losses as phase_losses,
)
from ._loss import (
    phase_target_probability as phase_target_probability,
)
from ._loss import (
    population_loss as population_loss,
)
from ._loss import (
    query_losses as query_losses,
)
from ._loss import (
    shared_logits as shared_logits,
)
from ._measures import (
    effective_number as effective_number,
)
from ._measures import (
    effective_offsets as effective_offsets,
)
from ._measures import (
    entropy as entropy,
)
from ._objective import (
    OBJECTIVES as OBJECTIVES,
)
from ._objective import (
    Objective as Objective,
)
from ._objective import (
    overlap as overlap,
)
from ._objective import (
    soft_maximum as soft_maximum,
)
from ._positions import (
    entry_positions as entry_positions,
)
from ._positions import (
    query_phases as query_phases,
)
from ._positions import (
    query_positions as query_positions,
)
from ._positions import (
    target_positions as target_positions,
)
from ._positions import (
    window_tokens as window_tokens,
)
from ._task import (
    Task as Task,
)
from ._task import (
    TheoryAssumptionWarning as TheoryAssumptionWarning,
)
from ._task import (
    assumptions_silenced as assumptions_silenced,
)
from ._task import (
    quiet_task as quiet_task,
)
from ._task import (
    task_with as task_with,
)
from ._task import (
    welch_bound as welch_bound,
)
