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

from ..experiments._measured import Count
from ..experiments._paper_matrix import boundary_phases
from ..internal._records import Record
from ._stats import wilson_count

# A seed answers the boundary where its boundary accuracy is at least this share of its mean
# over the within-window phases (the matrix's coverage criterion: half of the reference) and
# that mean is at least `LEARNED_WITHIN` (a seed that learned nothing has a boundary as flat as
# the rest: about 1% everywhere, which the share alone would count as answered).
ANSWERED = 0.5
LEARNED_WITHIN = 0.1


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
    answered = (boundary >= ANSWERED * within_mean) & (within_mean >= LEARNED_WITHIN)
    return BoundaryAnswers(
        boundary=boundary.tolist(),
        within_mean=within.mean(axis=1).tolist(),
        worst_within=within.min(axis=1).tolist(),
        answered=wilson_count(int(answered.sum()), seeds),
        mean=acc.mean(axis=1).tolist(),
    )


__all__ = ["ANSWERED", "LEARNED_WITHIN", "BoundaryAnswers", "boundary_answers"]
