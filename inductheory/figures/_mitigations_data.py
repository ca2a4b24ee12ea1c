"""The mitigations figure's data: the mitigation table's rows (`experiments._mitigations`),
coordination and threshold rows, the comparison with the paper, and a few reads of a row that the
computation, the claim and the drawing share."""

from __future__ import annotations

import dataclasses

from ..experiments._mitigations import CoordinationRow, MitigationRow
from ..internal._records import Record
from ._figure import FigureData
from ._parameters import MitigationsParameters

# The kinds of gates of the mitigation table, in the order of its rows and bars.
KINDS = ("learned", "hard optimum", "uniform")
# The overlap penalty's weight just below and just above lambda* of each group (`ThresholdRow`).
THRESHOLD_FACTORS = (0.8, 1.2)


@dataclasses.dataclass(frozen=True, kw_only=True)
class LabelledCoordinationRow(CoordinationRow):
    """A `CoordinationRow` with its variant's `label` on the axis (`"mean"`, `"lambda=0.1"`,
    `"tau=0.3"`)."""

    label: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class ThresholdRow(CoordinationRow):
    """A `CoordinationRow` of flows penalized at `factor` times lambda* of their group.

    **Fields (besides the row's):** `lambda_star`, `lambda_star_lowest`: the group's lambda*
    and the smallest threshold of its overlapped selections (`CoordinationThreshold`);
    `factor`, `coordination`: the multiple of lambda* and the lambda run; `overlapped_seeds`:
    selected seeds that ended with two heads on one offset; `strict_minima`: the overlapped
    selections (key offsets per head) that are strict local minima at that lambda, among
    `overlapped_selections` in all.
    """

    lambda_star: float
    lambda_star_lowest: float
    factor: float
    coordination: float
    overlapped_seeds: int
    strict_minima: list[list[int]]
    overlapped_selections: int


@dataclasses.dataclass(frozen=True)
class PaperComparison(Record):
    """One of the paper's settings beside ours (percent).

    **Fields:** `setting`: the paper's name of it; `S`, `W`, `gates`: the table row it compares
    with; `paper_gap`, `paper_mean_accuracy`: the paper's gap and mean accuracy on trained
    models (None where it gives none); `paper_model`: the model they come from, and whether it
    is of the paper's `controlled` family (only those are ordered against each other); `gap`:
    our mean per-seed gap; `gap_of_mean_curve`: the gap of our seed-mean accuracy curve;
    `mean_accuracy`: our mean accuracy.
    """

    setting: str
    S: int
    W: int
    gates: str
    paper_gap: float
    paper_mean_accuracy: float | None
    paper_model: str
    controlled: bool
    gap: float
    gap_of_mean_curve: float
    mean_accuracy: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class MitigationsData(FigureData):
    """The mitigation table and coordination, with the paper's gaps.

    **Fields:** `table`: three `MitigationRow` per (S, W) (learned, hard optimum, uniform);
    `coordination`: one `LabelledCoordinationRow` per group (H, queries) and variant;
    `threshold`: per group, a `ThresholdRow` at each of `THRESHOLD_FACTORS` lambda*; `paper`:
    the paper's settings that the table has (`PaperComparison`; empty in the quick run).
    """

    table: list[MitigationRow]
    coordination: list[LabelledCoordinationRow]
    threshold: list[ThresholdRow]
    paper: list[PaperComparison]
    parameters: MitigationsParameters


def tau_of(r) -> float:
    """The worst-phase objective's temperature tau of a coordination row (1 for a row of the
    mean objective)."""
    return r.variant.get("tau", 1.0) if r.variant.get("objective") else 1.0


def lambda_of(r) -> float:
    """The overlap penalty's weight lambda of a coordination row (0: none)."""
    return r.variant.get("coordination", 0.0)


def distinct_seeds(row) -> int:
    """Seeds whose heads selected pairwise distinct offsets."""
    d = row.distinct_fraction
    return 0 if d is None else int(round(d * row.selected_seeds))
