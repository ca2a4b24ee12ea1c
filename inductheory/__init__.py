"""inductheory: a theory simulator for the idealized induction task behind chunked KV-cache
phase sensitivity ("Periodic Weak Spots"; the theory page is docs/theory.md).

The top level holds what a notebook needs; the rest lives in public subpackages, one per
concept: `inductheory.model` (task, geometry, gates, logits, losses, measures),
`inductheory.oracle` (Theorem 1), `inductheory.flow` (Theorem 2), `inductheory.experiments`
(many runs: flows of many seeds, regime maps, sweeps, mitigations, frontier),
`inductheory.toy` (the two-head toy), `inductheory.trained` (the trained compressed model)
and `inductheory.internal` (infrastructure).

Importing the package enables JAX float64: every check of a theorem runs in double precision.
The names below and the subpackages are imported on first use (`inductheory._api`), so that
importing the package imports no equinox: the command line (`inductheory._entry`) sets equinox's
process-wide options before that.

```python
import inductheory as it
task = it.Task(L=8, S=4, H=2, N=4096, beta=4.0)
loss = it.population_loss(task, it.hard_selection(task.S, [[0, 2]]))
```
"""

from ._xla_defaults import set_xla_defaults as _set_xla_defaults

# before anything starts jax's backend: XLA reads XLA_FLAGS once (see _xla_defaults.py)
_set_xla_defaults()

import jax as _jax

_jax.config.update("jax_enable_x64", True)

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

# what `__getattr__` imports from `_api` besides `__all__`
_LAZY = {
    "__version__",
    "experiments",
    "flow",
    "internal",
    "model",
    "oracle",
    "toy",
    "trained",
}


def __getattr__(name: str):
    """A public name, a subpackage or `__version__`, imported with all the others at the first
    use of any (PEP 562): `inductheory.Task`, `from inductheory import train`."""
    if name not in _LAZY and name not in __all__:
        raise AttributeError(f"module 'inductheory' has no attribute {name!r}")
    from . import _api

    globals().update({n: getattr(_api, n) for n in (*__all__, *_LAZY)})
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_LAZY})
