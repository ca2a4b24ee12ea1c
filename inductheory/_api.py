"""The top level of `inductheory`, imported at the first use of a name of the package
(`inductheory.__getattr__`): what a notebook needs and the public subpackages (the package's
docstring lists them). Importing it imports equinox.
"""

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
    FlowRun as FlowRun,
    GateAnalysis as GateAnalysis,
    RegimeMap as RegimeMap,
    analyze_gates as analyze_gates,
    regime_map as regime_map,
    run_flow as run_flow,
    sweep as sweep,
)
from .flow import (
    Dynamics as Dynamics,
    FlowConfig as FlowConfig,
    FlowSolution as FlowSolution,
    Status as Status,
)
from .internal._version import __version__ as __version__
from .model import (
    DenseGeometry as DenseGeometry,
    ExactGeometry as ExactGeometry,
    LinearGates as LinearGates,
    Objective as Objective,
    OracleGates as OracleGates,
    SharedGates as SharedGates,
    Task as Task,
    TheoryAssumptionWarning as TheoryAssumptionWarning,
    balanced_contexts as balanced_contexts,
    effective_offsets as effective_offsets,
    hard_selection as hard_selection,
    make_geometry as make_geometry,
    monte_carlo_loss as monte_carlo_loss,
    monte_carlo_phase_accuracy as monte_carlo_phase_accuracy,
    phase_accuracy as phase_accuracy,
    phase_gap as phase_gap,
    phase_losses as phase_losses,
    population_loss as population_loss,
    query_losses as query_losses,
    sample_contexts as sample_contexts,
    selected_offsets as selected_offsets,
    uniform_gates as uniform_gates,
)
from .oracle import (
    OracleMinimizer as OracleMinimizer,
    OraclePoint as OraclePoint,
    best_vertex as best_vertex,
    minimize_oracle as minimize_oracle,
    oracle_point as oracle_point,
)
from .toy import ToyConfig as ToyConfig
from .trained import (
    CompressedModel as CompressedModel,
    Embeddings as Embeddings,
    GateClass as GateClass,
    Maps as Maps,
    ModelConfig as ModelConfig,
    TrainConfig as TrainConfig,
    TrainRun as TrainRun,
    Unembedding as Unembedding,
    init_model as init_model,
    train as train,
)
