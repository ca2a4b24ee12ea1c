"""The paper matrix's per-row measures and findings (`figures.paper_matrix`): each row's
measures with their intervals (`row_summary`, `seed_measures`) and the findings `analyze` draws
from the rows, a function of the stored rows alone (`paper_matrix.restated`).

```python
from inductheory.figures._matrix_stats import seed_measures
seed_measures(np.array([[1.0, 0.0], [1.0, 0.2]]))["gap"].mean  # 0.9
```
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..experiments._measured import MeanInterval
from ..experiments._paper_matrix import (
    MATRIX,
    PAPER_TABLE8,
    STRIDE2_NOTE,
    RowResult,
    boundary_phases,
    matrix_row,
    permutation_p_value,
)
from ..internal._records import Record, optional_field
from ..trained._architecture import Attention
from ._stats import (
    ResampledTau,
    interval_text,
    kendall_tau,
    resampled_kendall_tau,
    t_interval,
    welch_interval,
)

# Resamples of the two-level (seeds, then contexts) bootstrap of every interval.
RESAMPLES = 1000
# A phase is covered when its accuracy is at least this share of the full-attention baseline's
# mean accuracy with as many KV heads (a weak spot: below it).
COVERED = 0.5
# A seed of a full-attention row learned the task when its mean accuracy is at least this.
LEARNED = 0.95
# Rows of the KV-head question and of the headline, by name.
KV_ROWS = ("W8/S8 1 KV (reference)", "W8/S8 2 KV", "W8/S8 4 KV", "W8/S8 8 KV")
FULL_ROWS = {1: "full attention 1 KV", 8: "full attention 8 KV"}
REFERENCE_ROW = "W8/S8 1 KV (reference)"
# Rows whose windows overlap (S < W), compared with the reference for the gap they remove.
OVERLAP_ROWS = ("W8/S4 (overlap)", "W8/S6 (overlap)")
# How the intervals of the tables are made (their captions).
INTERVALS = (
    "mean accuracy and boundary phase by a two-level percentile bootstrap (seeds, then each "
    "seed's held-out contexts); worst phase and gap by a Student t interval over the seeds' own "
    "values (each holds its seed's held-out noise; a bootstrap of contexts would resample the "
    "noise that pulls a min down, and its worst-phase interval lay wholly below its estimate in "
    "7 of 16 rows), an interval of the expected value of one seed's measure on this held-out "
    "sample, clipped to [0, 100]; every interval contains its estimate"
)


def cluster_bootstrap(
    correct, statistic, *, resamples=RESAMPLES, seed=0
) -> list[float]:
    """95% percentile interval of `statistic(phase_accuracy)` under a two-level bootstrap:
    seeds resampled with replacement, then each drawn seed's held-out contexts.

    **Arguments:**
    - `correct`: (seeds, contexts, period) correct shares per context and phase.
    - `statistic`: a function of a (seeds, period) phase-accuracy array, returning a number.

    **Returns:** `[low, high]`.
    """
    rng = np.random.default_rng(seed)
    n_seeds, n_ctx, _ = correct.shape
    stats = np.empty(resamples)
    for b in range(resamples):
        s = rng.integers(0, n_seeds, n_seeds)
        c = rng.integers(0, n_ctx, (n_seeds, n_ctx))
        stats[b] = statistic(correct[s[:, None], c].mean(axis=1))
    return [float(np.percentile(stats, 2.5)), float(np.percentile(stats, 97.5))]


@dataclasses.dataclass(frozen=True)
class SeedLosses(Record):
    """The held-out loss: its `mean` over seeds and the value of each seed (`per_seed`)."""

    mean: float
    per_seed: list[float]


@dataclasses.dataclass(frozen=True)
class PlateauChange(Record):
    """The training loss's change over the last fifth of the steps (`RowResult`): `mean` over
    seeds and the largest absolute change `max_abs`."""

    mean: float
    max_abs: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class RowSummary(Record):
    """One row's measures (`row_summary`), each a mean over seeds with a 95% interval
    (`INTERVALS`).

    **Fields:**
    - `mean_accuracy` (interval over seeds and contexts, `cluster_bootstrap`), `worst_phase`,
      `gap` (max - min over phases; both with `seed_measures`' interval over seeds): each a
      `MeanInterval`.
    - Compressed rows only (else None): `boundary_phase` (accuracy at the phases of offset
      S - 1, `cluster_bootstrap`), `within_gap` (the gap over the other phases,
      `seed_measures`), `boundary_phases` (those phases).
    - `loss` (`SeedLosses`), `initial_loss` (mean held-out loss at step 0).
    - `phase_accuracy` (period,): mean over seeds; `phase_accuracy_per_seed` (seeds, period);
      `worst_phase_per_seed` (seeds,).
    - `plateau_change` (`PlateauChange`); `curve_steps`, `curve` (points,): the training
      loss curve, mean over seeds; `wall_s`: the training's wall time.
    """

    mean_accuracy: MeanInterval
    worst_phase: MeanInterval
    gap: MeanInterval
    boundary_phase: MeanInterval | None = optional_field()
    within_gap: MeanInterval | None = optional_field()
    boundary_phases: list[int] | None = optional_field()
    loss: SeedLosses
    initial_loss: float
    phase_accuracy: list[float]
    phase_accuracy_per_seed: list[list[float]]
    worst_phase_per_seed: list[float]
    plateau_change: PlateauChange
    curve_steps: list[int]
    curve: list[float]
    wall_s: float


def row_summary(arch, result: RowResult, period: int) -> RowSummary:
    """A row's measures with their intervals (`RowSummary`)."""
    m = result.measures
    share = m.correct / m.queries_per_context  # (seeds, contexts, period)
    acc = m.phase_accuracy  # (seeds, period)

    def measure(statistic) -> MeanInterval:
        return MeanInterval(
            mean=float(statistic(acc)), ci95=cluster_bootstrap(share, statistic)
        )

    compressed = {}
    boundary = None
    if arch.attention is Attention.COMPRESSED:
        boundary = boundary_phases(arch.S, period)
        compressed = dict(
            boundary_phase=measure(lambda a: a[:, boundary].mean()),
            boundary_phases=boundary.tolist(),
        )
    seeds_loss = np.asarray(m.loss)
    return RowSummary(
        mean_accuracy=measure(lambda a: a.mean()),
        **seed_measures(acc, boundary),
        **compressed,
        loss=SeedLosses(mean=float(seeds_loss.mean()), per_seed=seeds_loss.tolist()),
        initial_loss=float(np.mean(result.initial_loss)),
        phase_accuracy=acc.mean(axis=0).tolist(),
        phase_accuracy_per_seed=acc.tolist(),
        worst_phase_per_seed=acc.min(axis=1).tolist(),
        plateau_change=PlateauChange(
            mean=float(np.mean(result.plateau_change)),
            max_abs=float(np.max(np.abs(result.plateau_change))),
        ),
        curve_steps=np.asarray(result.curve_steps).tolist(),
        curve=np.asarray(result.curve).mean(axis=0).tolist(),
        wall_s=result.wall_s,
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class StreamSummary(Record):
    """One row's held-out measures on a stream task (`stream_summary`), each a mean over seeds
    with its Student t interval over seeds (`t_interval`).

    **Fields:**
    - `loss`: the language-model loss (every query); `local_loss`, `retrieval_loss`: over the
      local and the retrieval queries (`StreamMeasures`).
    - `retrieval_mean`, `retrieval_worst`: the retrieval queries' accuracy, mean and minimum
      over phases.
    - `retrieval_phase_per_seed` (seeds, period): retrieval accuracy per phase and seed.
    - `retrieval_queries` (period,): retrieval queries per phase in the held-out contexts.
    - `loss_per_seed`, `local_loss_per_seed`, `retrieval_loss_per_seed` (seeds,).
    """

    loss: MeanInterval
    local_loss: MeanInterval
    retrieval_loss: MeanInterval
    retrieval_mean: MeanInterval
    retrieval_worst: MeanInterval
    retrieval_phase_per_seed: list[list[float]]
    retrieval_queries: list[int]
    loss_per_seed: list[float]
    local_loss_per_seed: list[float]
    retrieval_loss_per_seed: list[float]


def stream_summary(stream) -> StreamSummary:
    """A row's `StreamSummary` from its held-out `StreamMeasures` (`RowResult.stream`).

    ```python
    stream_summary(matrix_row_result(row, size, cache_dir).stream).retrieval_worst
    ```
    """
    losses = (0.0, math.inf)
    acc = np.asarray(stream.retrieval_accuracy, float)
    return StreamSummary(
        loss=t_interval(stream.loss, support=losses),
        local_loss=t_interval(stream.local_loss, support=losses),
        retrieval_loss=t_interval(stream.retrieval_loss, support=losses),
        retrieval_mean=t_interval(acc.mean(axis=1)),
        retrieval_worst=t_interval(acc.min(axis=1)),
        retrieval_phase_per_seed=acc.tolist(),
        retrieval_queries=np.asarray(stream.retrieval_queries).astype(int).tolist(),
        loss_per_seed=np.asarray(stream.loss, float).tolist(),
        local_loss_per_seed=np.asarray(stream.local_loss, float).tolist(),
        retrieval_loss_per_seed=np.asarray(stream.retrieval_loss, float).tolist(),
    )


def seed_measures(acc, boundary=None) -> dict[str, MeanInterval]:
    """The measures of extremes over phases, each a mean over seeds of one value per seed with
    its Student t interval over seeds (`t_interval`, which contains its estimate): `worst_phase`
    (min over phases), `gap` (max - min) and, given the `boundary` phases, `within_gap` (max -
    min over the other phases). A percentile bootstrap of contexts would resample the noise
    that already pulls a seed's min down (its max up), and its interval of the worst phase
    lay wholly below its own estimate in 7 of the 16 rows; the seeds' own values carry each
    seed's held-out noise, so the spread over seeds holds both sources.

    **Arguments:**
    - `acc`: (seeds, period) per-seed phase accuracies (stored as `phase_accuracy_per_seed`).
    - `boundary`: the phases of offset S - 1 (compressed rows), or None.

    **Returns:** the measures by field name of `RowSummary`.

    ```python
    seed_measures(np.array([[1.0, 0.0], [1.0, 0.2]]))["gap"].mean  # 0.9
    ```
    """
    acc = np.asarray(acc, np.float64)
    out = dict(
        worst_phase=t_interval(acc.min(axis=1)), gap=t_interval(np.ptp(acc, axis=1))
    )
    if boundary is not None:
        inside = np.setdiff1d(np.arange(acc.shape[1]), boundary)
        out["within_gap"] = t_interval(np.ptp(acc[:, inside], axis=1))
    return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class Headline(Record):
    """Full attention against compressed W8/S8, both with 8 KV heads: `full_mean`,
    `compressed_mean`, `full_worst`, `compressed_worst` (`MeanInterval`s); `full_learned`
    (full attention's mean >= `LEARNED`), `full_seeds_learned` (its seeds with mean >=
    `LEARNED`), `full_mean_of_learned_seeds` (their mean, None without any), and
    `compressed_seeds`."""

    full_mean: MeanInterval
    compressed_mean: MeanInterval
    full_worst: MeanInterval
    compressed_worst: MeanInterval
    full_learned: bool
    full_seeds_learned: int
    full_mean_of_learned_seeds: float | None
    compressed_seeds: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class Ordering(Record):
    """The mitigation rows (`rows`) ordered by their measured gap (`measured_gap`) against the
    paper's (`paper_gap`, each from its own model).

    **Fields:**
    - `tau`, `p_value`: Kendall's tau-a of the point estimates and its exact permutation p.
    - `tau_resampled`: tau under resampling of each row's seeds (`resampled_kendall_tau`).
    - `discordant`: the pairs ordered against the paper's order by the point estimates.
    - `separated`: the pairs whose gap intervals (`seed_measures`) do not overlap, each as
      [larger measured gap, smaller]; `overlapping`: the other pairs.
    """

    rows: list[str]
    measured_gap: list[float]
    paper_gap: list[float]
    tau: float
    p_value: float
    tau_resampled: ResampledTau
    discordant: list[list[str]]
    separated: list[list[str]]
    overlapping: list[list[str]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Shrinkage(Record):
    """How much the overlapping `row` shrinks the gap of the `reference` row: `measured` (the
    difference of the mean per-seed gaps, Welch 95% interval, `welch_interval`) and the paper's
    `paper` (its two rows' gaps, in points; the reference's is seed 42's)."""

    row: str
    reference: str
    measured: MeanInterval
    paper: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class Coverage(Record):
    """A W = S row with `kv_heads` KV heads, over the phases a W = S compressor can answer: the
    `within_offsets` 0..S-2 (the `boundary_phases`, offset S - 1, excluded: key and value there
    lie in different windows). An offset is covered in a seed when each of its phases (offset =
    phase mod S) reaches `COVERED` times the mean accuracy of the full-attention row `baseline`;
    `covered_offsets_per_seed` counts them, `seeds_covering_every_offset` of `seeds` cover all.
    """

    kv_heads: int
    within_offsets: list[int]
    boundary_phases: list[int]
    covered_offsets_per_seed: list[int]
    seeds_covering_every_offset: int
    seeds: int
    baseline: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class MatrixAnalysis(Record):
    """The matrix's findings (`analyze`): the `headline`, the mitigations' `ordering`, the
    overlapping rows' `shrinkage` of the reference's gap, the within-window `coverage` of the
    KV-head rows (by row name), and one line of `text`."""

    headline: Headline
    ordering: Ordering
    shrinkage: list[Shrinkage]
    coverage: dict[str, Coverage]
    text: str


def analyze(rows: dict[str, RowSummary], size) -> MatrixAnalysis:
    """The matrix's findings (module docstring of `experiments._paper_matrix`), as numbers and
    one line of text."""
    full8, comp8 = rows[FULL_ROWS[8]], rows["W8/S8 8 KV"]
    headline = Headline(
        full_mean=full8.mean_accuracy,
        compressed_mean=comp8.mean_accuracy,
        full_worst=full8.worst_phase,
        compressed_worst=comp8.worst_phase,
        full_learned=full8.mean_accuracy.mean >= LEARNED,
        full_seeds_learned=learned_seeds(full8),
        full_mean_of_learned_seeds=_mean_of_learned(full8),
        compressed_seeds=len(comp8.worst_phase_per_seed),
    )
    mitigations = [r for r in MATRIX if r.mitigation and r.name in rows]
    names = [r.name for r in mitigations]
    per_seed = {n: _per_seed_gaps(rows[n]) for n in names}
    measured = [rows[n].gap.mean for n in names]
    paper = [PAPER_TABLE8[r.paper].gap for r in mitigations]
    pairs = [
        sorted((m, n), key=lambda x: -rows[x].gap.mean)
        for i, m in enumerate(names)
        for n in names[i + 1 :]
    ]
    paper_of = dict(zip(names, paper))
    ordering = Ordering(
        rows=names,
        measured_gap=measured,
        paper_gap=paper,
        tau=kendall_tau(measured, paper).tau,
        p_value=permutation_p_value(measured, paper),
        tau_resampled=resampled_kendall_tau([per_seed[n] for n in names], paper),
        discordant=[[m, n] for m, n in pairs if paper_of[m] < paper_of[n]],
        separated=[[m, n] for m, n in pairs if _separate(rows[m].gap, rows[n].gap)],
        overlapping=[
            [m, n] for m, n in pairs if not _separate(rows[m].gap, rows[n].gap)
        ],
    )
    shrinkage = [
        Shrinkage(
            row=name,
            reference=REFERENCE_ROW,
            measured=welch_interval(
                _per_seed_gaps(rows[REFERENCE_ROW]), _per_seed_gaps(rows[name])
            ),
            paper=round(
                PAPER_TABLE8[matrix_row(REFERENCE_ROW).paper].gap
                - PAPER_TABLE8[matrix_row(name).paper].gap,
                1,
            ),
        )
        for name in OVERLAP_ROWS
        if name in rows and REFERENCE_ROW in rows
    ]
    coverage = {}
    for name in KV_ROWS:
        arch = dataclasses.replace(size.reference, **matrix_row(name).changes)
        baseline = FULL_ROWS[8] if arch.kv_heads > 1 else FULL_ROWS[1]
        if name not in rows or baseline not in rows:
            continue
        base = rows[baseline].mean_accuracy.mean
        acc = np.asarray(rows[name].phase_accuracy_per_seed)
        offsets = np.arange(acc.shape[1]) % arch.S
        inside = np.arange(arch.S - 1)
        covered = np.stack(
            [np.all(acc[:, offsets == r] >= COVERED * base, axis=1) for r in inside],
            axis=1,
        )  # (seeds, S - 1)
        coverage[name] = Coverage(
            kv_heads=arch.kv_heads,
            within_offsets=inside.tolist(),
            boundary_phases=boundary_phases(arch.S, acc.shape[1]).tolist(),
            covered_offsets_per_seed=covered.sum(axis=1).tolist(),
            seeds_covering_every_offset=int(np.sum(np.all(covered, axis=1))),
            seeds=int(acc.shape[0]),
            baseline=baseline,
        )
    ref = rows[REFERENCE_ROW]
    t = ordering.tau_resampled
    text = (
        f"full attention with 8 KV heads: mean accuracy {percent_text(headline.full_mean)}; "
        f"W8/S8 with 8 KV heads: {percent_text(headline.compressed_mean)}, worst phase "
        f"{percent_text(headline.compressed_worst)} against "
        f"{percent_text(headline.full_worst)}; reference W8/S8: gap {points_text(ref.gap)}, "
        f"boundary phase {percent_text(ref.boundary_phase)}, "
        f"within-window gap {points_text(ref.within_gap)}; mitigation ordering by gap vs the "
        f"paper's: tau {ordering.tau:.2f}, permutation p = {ordering.p_value:.2f}, tau "
        f"{tau_text(t)}; {len(ordering.separated)} of {len(pairs)} pairs' gap "
        f"intervals separate; overlap shrinks the reference's gap by "
        + ", ".join(
            f"{percent_text(x.measured, ' pts')} ({x.row}; paper {x.paper:g})"
            for x in shrinkage
        )
        + f"; {STRIDE2_NOTE}"
    )
    return MatrixAnalysis(
        headline=headline,
        ordering=ordering,
        shrinkage=shrinkage,
        coverage=coverage,
        text=text,
    )


def _per_seed_gaps(row: RowSummary) -> np.ndarray:
    """Each seed's gap (max - min over phases)."""
    return np.ptp(np.asarray(row.phase_accuracy_per_seed), axis=1)


def _separate(a: MeanInterval, b: MeanInterval) -> bool:
    """Whether two intervals do not overlap."""
    return a.ci95[1] < b.ci95[0] or b.ci95[1] < a.ci95[0]


def tau_text(t: ResampledTau) -> str:
    """The resampled tau as text: `under 2000 resamples of each row's seeds: median ...`."""
    return (
        f"under {t.resamples} resamples of each row's seeds: median {t.median:.2f}, 95% "
        f"{interval_text(*t.ci95)}, range {t.low:.2f} to {t.high:.2f}"
    )


def learned_seeds(row: RowSummary) -> int:
    """Seeds of a row whose mean accuracy over phases is at least `LEARNED`."""
    acc = np.asarray(row.phase_accuracy_per_seed).mean(axis=1)
    return int(np.sum(acc >= LEARNED))


def _mean_of_learned(row: RowSummary) -> float | None:
    acc = np.asarray(row.phase_accuracy_per_seed).mean(axis=1)
    return float(acc[acc >= LEARNED].mean()) if np.any(acc >= LEARNED) else None


def percent_text(m: MeanInterval, unit: str = "%") -> str:
    lo, hi = (100 * x for x in m.ci95)
    return f"{100 * m.mean:.1f}{unit} {interval_text(lo, hi, 1)}"


def points_text(m: MeanInterval) -> str:
    """A gap in percentage points."""
    return percent_text(m, " pts")
