"""Theorem 2: gradient flow of the linear gate class: configuration, initial conditions,
the reduced and full dynamics, integration on diffrax, solutions and escape rates.

May import: `inductheory.internal`, `inductheory.model`.

```python
import inductheory as it
config = it.FlowConfig(dynamics="reduced", rho=0.1)
```
"""

from ._config import (
    Dynamics as Dynamics,
    FlowConfig as FlowConfig,
    check_flow as check_flow,
)
from ._dynamics import (
    AbstractDynamics as AbstractDynamics,
    FullDynamics as FullDynamics,
    ReducedDynamics as ReducedDynamics,
    concentration_margin as concentration_margin,
    head_selection as head_selection,
    sample_gates as sample_gates,
    selection_margin as selection_margin,
)
from ._init import (
    ball_projection as ball_projection,
    ball_uniform as ball_uniform,
    initial_biases as initial_biases,
    initial_gate_vectors as initial_gate_vectors,
    project_to_mean as project_to_mean,
)
from ._integrate import (
    full_vector_field as full_vector_field,
    integrate as integrate,
    reduced_vector_field as reduced_vector_field,
    solve_full as solve_full,
    solve_reduced as solve_reduced,
)
from ._rates import (
    EscapeBlocks as EscapeBlocks,
    EscapeRates as EscapeRates,
    breaking_norm as breaking_norm,
    escape_blocks as escape_blocks,
    escape_time as escape_time,
    fit_decay_exponent as fit_decay_exponent,
    reduced_escape_rates as reduced_escape_rates,
    tail_coefficients as tail_coefficients,
    unselected_mass as unselected_mass,
)
from ._sample import (
    flow_sample as flow_sample,
    sample_size as sample_size,
    seed_keys as seed_keys,
)
from ._solution import (
    STATUSES as STATUSES,
    FlowSolution as FlowSolution,
    Status as Status,
    status_names as status_names,
)
