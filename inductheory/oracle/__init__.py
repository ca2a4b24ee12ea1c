"""Theorem 1: global minimization over the oracle gate class, hard-selection vertices, one
regime point (oracle optimum against the best vertex) and the closed-form hard-vertex boundary.

May import: `inductheory.internal`, `inductheory.model`.

```python
import inductheory as it
point = it.oracle_point(it.Task(L=4, S=3, H=1, N=64), jax.random.key(0))
point.hard_selection, point.contexts[0].offsets
```
"""

from ._boundary import (
    hard_vertex_boundary as hard_vertex_boundary,
    hard_vertex_edges as hard_vertex_edges,
)
from ._minimize import (
    OracleMinimizer as OracleMinimizer,
    OracleResult as OracleResult,
    classify as classify,
    context_geometry as context_geometry,
    minimize_oracle as minimize_oracle,
    project_simplex as project_simplex,
)
from ._point import (
    ContextRecord as ContextRecord,
    OraclePoint as OraclePoint,
    OracleSummary as OracleSummary,
    exact_oracle_points as exact_oracle_points,
    oracle_point as oracle_point,
)
from ._vertices import (
    VertexResult as VertexResult,
    all_vertex_configs as all_vertex_configs,
    best_vertex as best_vertex,
    block_multiset_configs as block_multiset_configs,
    n_block_multisets as n_block_multisets,
    vertex_gates as vertex_gates,
    vertex_losses as vertex_losses,
)
