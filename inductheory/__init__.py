"""inductheory: a theory simulator for the idealized induction task behind chunked KV-cache
phase sensitivity ("Periodic Weak Spots"; the theory page is docs/theory.md).

The top level holds what a notebook needs; the rest lives in public subpackages, one per
concept: `inductheory.model` (task, geometry, gates, logits, losses, measures),
`inductheory.oracle` (Theorem 1), `inductheory.flow` (Theorem 2), `inductheory.experiments`
(many runs: flows of many seeds, regime maps, sweeps, mitigations, frontier),
`inductheory.toy` (the two-head toy), `inductheory.trained` (the trained compressed model)
and `inductheory.internal` (infrastructure).

Importing the package enables JAX float64: every check of a theorem runs in double precision.

```python
import inductheory as it
task = it.Task(L=8, S=4, H=2, N=4096, beta=4.0)
loss = it.population_loss(task, it.hard_selection(task.S, [[0, 2]]))
```
"""

import sys as _sys

# `python -m inductheory` imports the package before its __main__ runs: the command line's
# process-wide options are set here, before equinox is imported (see _inductheory_entry.py).
if _sys.argv[:1] == ["-m"]:
    import _inductheory_entry

    if _inductheory_entry.run_as_main_module():
        _inductheory_entry.command_line_environment()

from .internal._xla_defaults import set_xla_defaults as _set_xla_defaults

# before anything starts jax's backend: XLA reads XLA_FLAGS once (internal/_xla_defaults.py)
_set_xla_defaults()

import jax as _jax

_jax.config.update("jax_enable_x64", True)

from . import (
    experiments as experiments,
    flow as flow,
    internal as internal,
    model as model,
    oracle as oracle,
    toy as toy,
    trained as trained,
)
from .experiments import (
    FlowRun,
    GateAnalysis,
    RegimeMap,
    analyze_gates,
    regime_map,
    run_flow,
    sweep,
)
from .flow import Dynamics, FlowConfig, FlowSolution, Status
from .internal._version import __version__ as __version__
from .model import (
    DenseGeometry,
    ExactGeometry,
    LinearGates,
    Objective,
    OracleGates,
    SharedGates,
    Task,
    TheoryAssumptionWarning,
    balanced_contexts,
    effective_offsets,
    hard_selection,
    make_geometry,
    monte_carlo_loss,
    monte_carlo_phase_accuracy,
    phase_accuracy,
    phase_gap,
    phase_losses,
    population_loss,
    query_losses,
    sample_contexts,
    selected_offsets,
    uniform_gates,
)
from .oracle import (
    OracleMinimizer,
    OraclePoint,
    best_vertex,
    minimize_oracle,
    oracle_point,
)
from .toy import ToyConfig
from .trained import (
    CompressedModel,
    Embeddings,
    GateClass,
    Maps,
    ModelConfig,
    TrainConfig,
    TrainRun,
    Unembedding,
    init_model,
    train,
)

__all__ = [
    "CompressedModel",
    "DenseGeometry",
    "Dynamics",
    "Embeddings",
    "ExactGeometry",
    "FlowConfig",
    "FlowRun",
    "FlowSolution",
    "GateAnalysis",
    "GateClass",
    "LinearGates",
    "Maps",
    "ModelConfig",
    "Objective",
    "OracleGates",
    "OracleMinimizer",
    "OraclePoint",
    "RegimeMap",
    "SharedGates",
    "Status",
    "Task",
    "TheoryAssumptionWarning",
    "ToyConfig",
    "TrainConfig",
    "Unembedding",
    "analyze_gates",
    "TrainRun",
    "balanced_contexts",
    "best_vertex",
    "effective_offsets",
    "hard_selection",
    "init_model",
    "make_geometry",
    "minimize_oracle",
    "monte_carlo_loss",
    "monte_carlo_phase_accuracy",
    "oracle_point",
    "phase_accuracy",
    "phase_gap",
    "phase_losses",
    "population_loss",
    "query_losses",
    "regime_map",
    "run_flow",
    "sample_contexts",
    "selected_offsets",
    "sweep",
    "train",
    "uniform_gates",
]
