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
)
from ._boundary import (
    hard_vertex_edges as hard_vertex_edges,
)
from ._minimize import (
    OracleMinimizer as OracleMinimizer,
)
from ._minimize import (
    OracleResult as OracleResult,
)
from ._minimize import (
    classify as classify,
)
from ._minimize import (
    context_geometry as context_geometry,
)
from ._minimize import (
    minimize_oracle as minimize_oracle,
)
from ._minimize import (
    project_simplex as project_simplex,
)
from ._point import (
    ContextRecord as ContextRecord,
)
from ._point import (
    OraclePoint as OraclePoint,
)
from ._point import (
    exact_oracle_points as exact_oracle_points,
)
from ._point import (
    oracle_point as oracle_point,
)
from ._vertices import (
    VertexResult as VertexResult,
)
from ._vertices import (
    all_vertex_configs as all_vertex_configs,
)
from ._vertices import (
    best_vertex as best_vertex,
)
from ._vertices import (
    block_multiset_configs as block_multiset_configs,
)
from ._vertices import (
    n_block_multisets as n_block_multisets,
)
from ._vertices import (
    vertex_gates as vertex_gates,
)
from ._vertices import (
    vertex_losses as vertex_losses,
)
