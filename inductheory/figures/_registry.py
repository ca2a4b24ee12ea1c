"""The figures, by name, in the order of figures/README.md."""

from __future__ import annotations

from . import (
    approximate_geometry,
    boundary,
    convergence_rates,
    coverage,
    coverage_map,
    effective_offsets,
    mitigations,
    open_questions,
    paper_headline,
    paper_matrix,
    paper_mechanisms,
    phase_uniformity,
    regime_boundary,
    relaxation_ladder,
    theorem1_oracle,
    theorem2_trajectories,
    toy_stability,
    weak_spots,
)
from ._figure import Figure

FIGURES: dict[str, Figure] = {
    m.FIGURE.name: m.FIGURE
    for m in (
        theorem2_trajectories,
        effective_offsets,
        weak_spots,
        boundary,
        mitigations,
        coverage,
        coverage_map,
        phase_uniformity,
        convergence_rates,
        toy_stability,
        theorem1_oracle,
        regime_boundary,
        approximate_geometry,
        relaxation_ladder,
        paper_matrix,
        paper_mechanisms,
        paper_headline,
        open_questions,
    )
}


def figure_names() -> list[str]:
    """The names of every figure, in order."""
    return list(FIGURES)
