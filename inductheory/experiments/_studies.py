"""Studies on the paper matrix's task (docs/trained.md, "The headline where it can hold" and
"Open questions"): rows of the matrix on other tasks (tokens that repeat, a stream with local
targets), with other architecture switches (an exact local window) or another training (the
key gates' overlap penalty), each a `StudyRow` trained through the matrix's own cache, so that
a model the command line trains (`inductheory matrix --rows ... --vocab V --local-window w`)
and the same model a figure trains are one cache entry.

- `StudyRow`: one model of a study (a matrix row, a task, changes, seeds, training).
- `study_result`: its `RowResult`, read from the cache where a run finished it.

May import: `inductheory.internal`, `inductheory.model`, `inductheory.trained`,
`._paper_matrix`, `._ceilings`.
"""

from __future__ import annotations

import dataclasses

from ..trained._architecture import Architecture
from ._ceilings import Ceilings, architecture_coverage, retrieval_ceilings
from ._paper_matrix import (
    MECHANISM_ROWS,
    MatrixRow,
    MatrixSize,
    RowResult,
    changed_row,
    matrix_row,
    matrix_row_result,
)


@dataclasses.dataclass(frozen=True)
class StudyRow:
    """One trained model of a study: the matrix row `row` with the architecture `changes`
    (pairs of an `Architecture` field and its value), on the matrix's task with `vocab`
    symbols drawn with replacement (None: distinct tokens) and `keys` (None, or a stream with
    local targets: `RetrievalTask.keys`), from `seeds` seeds (None: the size's), for `steps`
    optimizer steps (None: the size's) with the overlap penalty `overlap_penalty` (0: none);
    `mechanisms`: keep its `RowMechanisms` (gate peaks, knockouts, rotations, the local path).

    Its `size(base)` and `matrix_row(base)` are what `inductheory matrix` builds from the same
    options, so the two share a cache entry.

    ```python
    StudyRow("W8/S8 8 KV", vocab=48, changes=(("local_window", 2),))
    ```
    """

    row: str
    vocab: int | None = None
    keys: int | None = None
    changes: tuple[tuple[str, object], ...] = ()
    seeds: int | None = None
    steps: int | None = None
    overlap_penalty: float = 0.0
    mechanisms: bool = False

    def size(self, base: MatrixSize) -> MatrixSize:
        """`base` with this row's task, seeds and training (`base.rows` kept)."""
        task = dataclasses.replace(base.task, vocab=self.vocab, keys=self.keys)
        train = base.train
        if self.steps is not None:
            train = dataclasses.replace(train, steps=self.steps)
        if self.overlap_penalty:
            train = dataclasses.replace(train, overlap_penalty=self.overlap_penalty)
        seeds = base.seeds if self.seeds is None else self.seeds
        return dataclasses.replace(base, task=task, train=train, seeds=seeds)

    def matrix_row(self, base: MatrixSize) -> MatrixRow:
        """The matrix row this model is (`changed_row` of `row` by `changes`)."""
        row = matrix_row(self.row)
        if not self.changes:
            return row
        return changed_row(row, dict(self.changes), base.reference)

    def architecture(self, base: MatrixSize) -> Architecture:
        return self.matrix_row(base).architecture(base.reference)

    def ceilings(self, base: MatrixSize) -> Ceilings | None:
        """The Bayes ceilings of what this model can read (`retrieval_ceilings` of its
        `architecture_coverage`), on a task whose tokens repeat (None otherwise: distinct
        tokens are answered exactly by any reader of the pair, and a stream is not an iid
        context)."""
        size = self.size(base)
        if size.task.vocab is None or size.task.keys is not None:
            return None
        arch = self.architecture(base)
        return retrieval_ceilings(size.task, architecture_coverage(arch, size.task.T))


def study_result(
    study: StudyRow, base: MatrixSize, cache_dir, *, announce=None
) -> RowResult:
    """The `RowResult` of `study` at `base` (its size, its row), through the matrix's cache
    (`matrix_row_result`): a row of the matrix itself on its own task (distinct tokens, the
    size's seeds and training) is the matrix's entry, with the mechanisms the matrix keeps for
    its `MECHANISM_ROWS`, so a study trained after `paper_matrix` reads it; other rows keep
    theirs where `study.mechanisms`.

    **Arguments:**
    - `study`: the model; `base`: the matrix size it changes (`FULL_SIZE` or `QUICK_SIZE`).
    - `cache_dir`: the cache directory (None: always trained).
    - `announce`: called with a message before training.

    **Returns:** a `RowResult`.
    """
    size = study.size(base)
    row = study.matrix_row(base)
    matrix_own = size.to_dict() == base.to_dict() and row.name in MECHANISM_ROWS
    mechanisms = study.mechanisms or matrix_own
    return matrix_row_result(
        row, size, cache_dir, mechanisms=mechanisms, announce=announce
    )


__all__ = ["StudyRow", "study_result"]
