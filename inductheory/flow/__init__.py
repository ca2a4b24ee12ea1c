"""Theorem 2: gradient flow of the linear gate class: configuration, initial conditions,
the reduced and full dynamics, integration on diffrax, solutions and escape rates.

May import: `inductheory.internal`, `inductheory.model`.

```python
import inductheory as it
config = it.FlowConfig(dynamics="reduced", rho=0.1)
```
"""

from ._config import (
    FlowConfig as FlowConfig,
)
from ._config import (
    check_flow as check_flow,
)
from ._dynamics import (
    AbstractDynamics as AbstractDynamics,
)
from ._dynamics import (
    FullDynamics as FullDynamics,
)
from ._dynamics import (
    ReducedDynamics as ReducedDynamics,
)
from ._dynamics import (
    concentration_margin as concentration_margin,
)
from ._dynamics import (
    head_selection as head_selection,
)
from ._dynamics import (
    sample_gates as sample_gates,
)
from ._dynamics import (
    selection_margin as selection_margin,
)
from ._init import (
    ball_projection as ball_projection,
)
from ._init import (
    ball_uniform as ball_uniform,
)
from ._init import (
    initial_biases as initial_biases,
)
from ._init import (
    initial_gate_vectors as initial_gate_vectors,
)
from ._init import (
    project_to_mean as project_to_mean,
)
from ._integrate import (
    full_vector_field as full_vector_field,
)
from ._integrate import (
    integrate as integrate,
)
from ._integrate import (
    reduced_vector_field as reduced_vector_field,
)
from ._integrate import (
    solve_full as solve_full,
)
from ._integrate import (
    solve_reduced as solve_reduced,
)
from ._rates import (
    breaking_norm as breaking_norm,
)
from ._rates import (
    escape_blocks as escape_blocks,
)
from ._rates import (
    escape_time as escape_time,
)
from ._rates import (
    fit_decay_exponent as fit_decay_exponent,
)
from ._rates import (
    reduced_escape_rates as reduced_escape_rates,
)
from ._rates import (
    tail_coefficients as tail_coefficients,
)
from ._rates import (
    unselected_mass as unselected_mass,
)
from ._solution import (
    STATUSES as STATUSES,
)
from ._solution import (
    FlowSolution as FlowSolution,
)
from ._solution import (
    Status as Status,
)
from ._solution import (
    status_names as status_names,
)
