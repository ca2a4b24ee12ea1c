"""Summaries for the paper's two open questions on trained models (docs/trained.md, "Open
questions"): whether a row answers the boundary phase, per seed and as a share of seeds with
its Wilson interval, and the within-window phases beside it.

```python
boundary_answers(result.measures.phase_accuracy, S=8)
```
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..experiments._measured import Count, MeanInterval
from ..experiments._paper_matrix import boundary_phases
from ..internal._records import Record, optional_field
from ._stats import wilson_count

# A seed answers the boundary where its boundary accuracy is at least this share of its mean
# over the within-window phases (the matrix's coverage criterion: half of the reference) and
# that mean is at least `LEARNED_WITHIN` (a seed that learned nothing has a boundary as flat as
# the rest: about 1% everywhere, which the share alone would count as answered).
ANSWERED = 0.5
LEARNED_WITHIN = 0.1
# A first-layer head carries the previous-token path where at least this share of its attention
# is on the position before (a head spread evenly over the 12 compressed entries and 2 local
# slots of the matrix's rows puts about 0.07 there).
PATH_MASS = 0.5


@dataclasses.dataclass(frozen=True, kw_only=True)
class BoundaryAnswers(Record):
    """One row's boundary phase over its seeds (`boundary_answers`).

    **Fields:**
    - `boundary` (seeds,): accuracy at the boundary offset S - 1 (the phases of the period at
      that offset, pooled).
    - `within_mean`, `worst_within` (seeds,): the mean and the worst of the within-window
      offsets 0..S-2 (phases folded mod S).
    - `answered`: seeds whose boundary accuracy is at least `ANSWERED` times their
      `within_mean`, itself at least `LEARNED_WITHIN`, a `Count` with its Wilson 95%
      interval.
    - `mean` (seeds,): mean accuracy over every phase.
    """

    boundary: list[float]
    within_mean: list[float]
    worst_within: list[float]
    answered: Count
    mean: list[float]

    def answered_per_seed(self) -> list[bool]:
        """Whether each seed answers the boundary (the rule `answered` counts)."""
        return _answers(
            np.asarray(self.boundary), np.asarray(self.within_mean)
        ).tolist()


def _answers(boundary: np.ndarray, within_mean: np.ndarray) -> np.ndarray:
    return (boundary >= ANSWERED * within_mean) & (within_mean >= LEARNED_WITHIN)


def boundary_answers(phase_accuracy, S: int) -> BoundaryAnswers:
    """Whether each seed of a row answers the boundary phase (its `BoundaryAnswers`).

    **Arguments:**
    - `phase_accuracy`: per-phase accuracy (seeds, period), the period a multiple of `S`
      (`PhaseMeasures.phase_accuracy`).
    - `S`: the stride (W = S: the boundary offset is S - 1).

    **Returns:** a `BoundaryAnswers`.
    """
    acc = np.asarray(phase_accuracy, float)
    seeds, period = acc.shape
    if period % S:
        raise ValueError(f"S must divide the period {period}, got S={S}")
    boundary = acc[:, boundary_phases(S, period)].mean(axis=1)
    folded = acc.reshape(seeds, period // S, S).mean(axis=1)
    within = folded[:, : S - 1]
    within_mean = within.mean(axis=1)
    answered = _answers(boundary, within_mean)
    return BoundaryAnswers(
        boundary=boundary.tolist(),
        within_mean=within.mean(axis=1).tolist(),
        worst_within=within.min(axis=1).tolist(),
        answered=wilson_count(int(answered.sum()), seeds),
        mean=acc.mean(axis=1).tolist(),
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class PathGate(Record):
    """A concentrated KV head whose key and value gates answer the boundary phase through the
    previous-token path (`boundary_gates`): its `layer` (block index), `kv_head`, and the
    peak offsets `key_peak`, `value_peak` of its key and value gates (key = value = 0)."""

    layer: int
    kv_head: int
    key_peak: int
    value_peak: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class LocalRow(Record):
    """One local-window row.

    **Fields:** `vocab` (None: distinct tokens), `local_window` (0: none), `seeds`, `steps`;
    `boundary`: its `BoundaryAnswers`; `mean`, `worst_within`: t intervals over seeds; with a
    window only (else None): `previous_mass_per_seed` (the largest attention mass on the
    position before over the first layer's query heads), `closed_boundary_per_seed` (the
    boundary accuracy with the window closed at evaluation), `boundary_gate_per_seed` (a
    concentrated KV head whose key and value gates answer the boundary, `boundary_gates`),
    `path_gates_per_seed` (those gates, `PathGate`s), and the causal checks on the
    knockouts' own prompts (`RowMechanisms`): `knock_base_boundary_per_seed` (unablated),
    `path_heads_per_seed` (first-layer query heads with at least `PATH_MASS` of their
    attention on the position before), `knocked_path_boundary_per_seed` and
    `knocked_reader_boundary_per_seed` (the boundary with the single query head of the first,
    and of the last, layer whose mean ablation lowers it most), `rotated_boundary_per_seed` and
    `rotated_mean_per_seed` (every gate rotated by one offset). For every row:
    `no_boundary_loss`, the Bayes loss of a reader of the within-window pairs only (the
    W = S compressor's `retrieval_ceilings`), which only a model that answers the boundary
    can go below; `crossed_step_per_seed`, the first logged training step whose loss is
    below it (None: never); `loss_per_seed`, the held-out loss; `curve_steps`,
    `curve_per_seed`: the training loss at the logged steps.
    """

    vocab: int | None = optional_field()
    local_window: int
    seeds: int
    steps: int
    boundary: BoundaryAnswers
    mean: MeanInterval
    worst_within: MeanInterval
    previous_mass_per_seed: list[float] | None = optional_field()
    closed_boundary_per_seed: list[float] | None = optional_field()
    boundary_gate_per_seed: list[bool] | None = optional_field()
    path_gates_per_seed: list[list[PathGate]] | None = optional_field()
    knock_base_boundary_per_seed: list[float] | None = optional_field()
    path_heads_per_seed: list[int] | None = optional_field()
    knocked_path_boundary_per_seed: list[float] | None = optional_field()
    knocked_reader_boundary_per_seed: list[float] | None = optional_field()
    rotated_boundary_per_seed: list[float] | None = optional_field()
    rotated_mean_per_seed: list[float] | None = optional_field()
    curve_steps: list[int] | None = optional_field()
    curve_per_seed: list[list[float]] | None = optional_field()
    no_boundary_loss: float | None = optional_field()
    crossed_step_per_seed: list[int | None] | None = optional_field()
    loss_per_seed: list[float] | None = optional_field()


def task_label(vocab) -> str:
    return "distinct" if vocab is None else f"V={vocab}"


def row_label(r: LocalRow) -> str:
    """`w=2, distinct, 5,600 steps`."""
    return f"w={r.local_window}, {task_label(r.vocab)}, {r.steps:,} steps"


@dataclasses.dataclass(frozen=True)
class PathSeeds:
    """The seeds of every row with a local window, split by whether they answer the
    boundary: per group the lists `previous`, `heads`, `boundary`, `closed`, `path`,
    `reader`, `crossed` (the `LocalRow` per-seed fields) and `rows` (labels)."""

    answered: dict[str, list]
    others: dict[str, list]


def path_seeds(rows: list[LocalRow]) -> PathSeeds:
    """`PathSeeds` of the rows with a local window."""
    keys = (
        "previous",
        "heads",
        "boundary",
        "closed",
        "path",
        "reader",
        "crossed",
        "rows",
    )
    groups = ({k: [] for k in keys}, {k: [] for k in keys})
    for r in rows:
        if r.previous_mass_per_seed is None:
            continue
        for i, answered in enumerate(r.boundary.answered_per_seed()):
            g = groups[0 if answered else 1]
            g["previous"].append(r.previous_mass_per_seed[i])
            g["boundary"].append(r.boundary.boundary[i])
            g["closed"].append(r.closed_boundary_per_seed[i])
            g["heads"].append(r.path_heads_per_seed[i])
            g["path"].append(r.knocked_path_boundary_per_seed[i])
            g["reader"].append(r.knocked_reader_boundary_per_seed[i])
            g["crossed"].append(r.crossed_step_per_seed[i])
            g["rows"].append(row_label(r))
    return PathSeeds(answered=groups[0], others=groups[1])


__all__ = [
    "ANSWERED",
    "LEARNED_WITHIN",
    "PATH_MASS",
    "BoundaryAnswers",
    "LocalRow",
    "PathGate",
    "PathSeeds",
    "boundary_answers",
    "path_seeds",
    "row_label",
    "task_label",
]
