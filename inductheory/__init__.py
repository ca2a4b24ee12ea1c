"""inductheory: a theory simulator for the idealized induction task behind chunked KV-cache
phase sensitivity ("Periodic Weak Spots"; the theory page is docs/theory.md).

Importing the package enables JAX float64: every check of a theorem runs in double precision.
"""

import jax as _jax

_jax.config.update("jax_enable_x64", True)

from ._config import Task, TheoryAssumptionWarning, quiet_task, welch_bound
from ._contexts import balanced_contexts, query_slots, sample_contexts
from ._gates import (
    AbstractGates,
    LinearGates,
    OracleGates,
    SharedGates,
    distinct_within_blocks,
    hard_selection,
    selected_offsets,
    shared_gates_from_logits,
    uniform_gates,
)
from ._geometry import (
    DenseGeometry,
    ExactGeometry,
    approximate_geometry,
    dimension_for_eps,
    make_geometry,
    measure_eps,
)
from ._loss import (
    monte_carlo_loss,
    monte_carlo_phase_accuracy,
    monte_carlo_phase_losses,
    phase_accuracy,
    phase_gap,
    phase_losses,
    phase_target_probability,
    population_loss,
    query_losses,
    shared_logits,
)
from ._model import (
    attention_to_target,
    block_attention,
    cross_entropy,
    dense_logits,
    exact_logits,
    head_outputs,
    query_logits,
    top1_correct,
    windowed_logits,
)
from ._positions import entry_positions, query_phases, query_positions, target_positions, window_tokens

__version__ = "0.1.0"

# Gradient flow of the linear gate class (Theorem 2) and effective-offset measures.
from ._flow_config import FlowConfig, check_flow
from ._objective import OBJECTIVES, Objective, overlap, soft_maximum
from ._dynamics import (
    AbstractDynamics,
    FullDynamics,
    ReducedDynamics,
    concentration_margin,
    head_selection,
    sample_gates,
    selection_margin,
)
from ._solution import STATUSES, FlowSolution, Status, status_names
from ._flow import (
    full_statistics,
    full_vector_field,
    integrate,
    reduced_loss,
    reduced_statistics,
    reduced_vector_field,
    sample_loss,
    solve_full,
    solve_reduced,
)
from ._rates import (
    breaking_norm,
    escape_blocks,
    escape_time,
    reduced_escape_rates,
    fit_decay_exponent,
    tail_coefficients,
    unselected_mass,
)
from ._flow_run import (
    distinct_fraction,
    flow_sample,
    independent_distinct_baseline,
    offset_histogram,
    run_flow,
    sample_size,
    seed_keys,
    sharded_seed_map,
)
from ._init import ball_projection, ball_uniform, initial_biases, initial_gate_vectors, project_to_mean
from ._measures import effective_number, effective_offsets, entropy

# Theorem 1: global minimization over the oracle class (issue 4)
from ._oracle import (
    OracleMinimizer,
    OracleResult,
    classify,
    context_geometry,
    hard_offsets,
    minimize_oracle,
    project_simplex,
)
from ._oracle_regime import exact_oracle_points, fit_log_threshold, oracle_point, regime_map
from ._regime_boundary import hard_vertex_boundary, hard_vertex_edges
from ._lanes import broadcast_lanes, stack_lanes
from ._sweep import points_of, summary_table, sweep
from ._paths import enable_compilation_cache, user_cache_dir
from ._devices import use_cpu_devices
from ._io import CacheWarning, default_cache_dir
from ._vertices import (
    VertexResult,
    all_vertex_configs,
    best_vertex,
    block_multiset_configs,
    context_loss,
    n_block_multisets,
    vertex_choices,
    vertex_gates,
    vertex_losses,
)
from ._mitigations import (
    best_hard_selection,
    coordination_table,
    gate_measures,
    mitigation_table,
    mitigation_task,
)
from ._interventions import (
    knockout_phase_accuracy,
    knockout_phase_losses,
    mean_head_outputs,
    monte_carlo_knockout,
    rotate_gates,
)

# The price of phase-uniformity (issue 11)
from ._frontier import frontier_mean_at, mean_and_worst, uniformity_frontier

# The two-head toy of docs/theory.md §8 (issue 5)
from ._toy import (
    ToyConfig,
    corner_losses,
    escape_rate_grid,
    escape_rates,
    logistic_loss,
    split_advantage,
    symmetric_stability_boundary,
    toy_flow,
    toy_gradient,
    toy_loss,
    toy_margins,
)


__all__ = [
    "mitigation_task",
    "mitigation_table",
    "gate_measures",
    "coordination_table",
    "best_hard_selection",
    "AbstractDynamics",
    "AbstractGates",
    "CacheWarning",
    "DenseGeometry",
    "ExactGeometry",
    "FlowConfig",
    "FlowSolution",
    "FullDynamics",
    "LinearGates",
    "OBJECTIVES",
    "Objective",
    "OracleGates",
    "OracleMinimizer",
    "OracleResult",
    "ReducedDynamics",
    "STATUSES",
    "SharedGates",
    "Status",
    "Task",
    "TheoryAssumptionWarning",
    "ToyConfig",
    "VertexResult",
    "all_vertex_configs",
    "approximate_geometry",
    "attention_to_target",
    "balanced_contexts",
    "ball_projection",
    "ball_uniform",
    "best_vertex",
    "block_attention",
    "block_multiset_configs",
    "breaking_norm",
    "broadcast_lanes",
    "check_flow",
    "classify",
    "concentration_margin",
    "context_geometry",
    "context_loss",
    "corner_losses",
    "cross_entropy",
    "default_cache_dir",
    "dense_logits",
    "dimension_for_eps",
    "distinct_fraction",
    "distinct_within_blocks",
    "effective_number",
    "effective_offsets",
    "enable_compilation_cache",
    "use_cpu_devices",
    "entropy",
    "entry_positions",
    "escape_blocks",
    "escape_rate_grid",
    "escape_rates",
    "escape_time",
    "exact_logits",
    "exact_oracle_points",
    "fit_decay_exponent",
    "fit_log_threshold",
    "flow_sample",
    "frontier_mean_at",
    "full_statistics",
    "full_vector_field",
    "hard_offsets",
    "hard_selection",
    "hard_vertex_boundary",
    "hard_vertex_edges",
    "head_outputs",
    "head_selection",
    "independent_distinct_baseline",
    "initial_biases",
    "initial_gate_vectors",
    "integrate",
    "knockout_phase_accuracy",
    "knockout_phase_losses",
    "logistic_loss",
    "make_geometry",
    "mean_and_worst",
    "mean_head_outputs",
    "measure_eps",
    "minimize_oracle",
    "monte_carlo_knockout",
    "monte_carlo_loss",
    "monte_carlo_phase_accuracy",
    "monte_carlo_phase_losses",
    "n_block_multisets",
    "offset_histogram",
    "oracle_point",
    "overlap",
    "phase_accuracy",
    "phase_gap",
    "phase_losses",
    "phase_target_probability",
    "points_of",
    "population_loss",
    "project_simplex",
    "project_to_mean",
    "query_logits",
    "query_losses",
    "query_phases",
    "query_positions",
    "query_slots",
    "quiet_task",
    "reduced_escape_rates",
    "reduced_loss",
    "reduced_statistics",
    "reduced_vector_field",
    "regime_map",
    "rotate_gates",
    "run_flow",
    "sample_contexts",
    "sample_gates",
    "sample_loss",
    "sample_size",
    "seed_keys",
    "selected_offsets",
    "selection_margin",
    "sharded_seed_map",
    "shared_gates_from_logits",
    "shared_logits",
    "soft_maximum",
    "solve_full",
    "solve_reduced",
    "split_advantage",
    "stack_lanes",
    "status_names",
    "summary_table",
    "sweep",
    "symmetric_stability_boundary",
    "tail_coefficients",
    "target_positions",
    "top1_correct",
    "toy_flow",
    "toy_gradient",
    "toy_loss",
    "toy_margins",
    "uniform_gates",
    "uniformity_frontier",
    "unselected_mass",
    "user_cache_dir",
    "vertex_choices",
    "vertex_gates",
    "vertex_losses",
    "welch_bound",
    "window_tokens",
    "windowed_logits",
]
