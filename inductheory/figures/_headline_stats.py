"""The findings of the figure paper_headline (docs/trained.md, "The headline where it can
hold"): for each pair of a full-attention model and its W8/S8 compressor (the same heads and
layers) on one task, the mean deficit against the Bayes ceilings' deficit, the worst phase
against a guess, the covered phases against the baseline, and whether the pair is in the
paper's regime; on the stream with local targets, the language-model loss beside the worst
retrieval phase.

Intervals: differences of two models are Welch 95% intervals over seeds (`welch_interval`),
one model's per-seed values Student t intervals over seeds (`t_interval`); both contain
their estimates.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..experiments._ceilings import Ceilings
from ..experiments._measured import MeanInterval
from ..internal._records import Record, optional_field
from ._matrix_stats import RowSummary, StreamSummary
from ._stats import t_interval, welch_interval

# The paper's regime (its W8/S8 model with 8 KV heads against full attention with 8: mean 59.4
# against 61.1, worst phase 9.9 against 58.4): the compressor's mean within this many points
# of full attention's and its worst phase below this share of full attention's worst.
REGIME_MEAN_POINTS = 5.0
REGIME_WORST_SHARE = 0.5


@dataclasses.dataclass(frozen=True, kw_only=True)
class CeilingSummary(Record):
    """`Ceilings` as stored: per-phase `accuracy` and `loss`, their mean and worst."""

    accuracy: list[float]
    loss: list[float]
    mean_accuracy: float
    worst_accuracy: float
    mean_loss: float

    @classmethod
    def of(cls, ceilings: Ceilings) -> CeilingSummary:
        return cls(**ceilings.to_dict())


@dataclasses.dataclass(frozen=True, kw_only=True)
class HeadlinePoint(Record):
    """One trained model of the study.

    **Fields:**
    - `row`: the matrix row it is; `compressed`: a W8/S8 compressor (else full attention);
      `kv_heads`; `vocab` (None: distinct tokens) and `keys` (None: not a stream).
    - `seeds`; `summary`: its `RowSummary` (every query); `ceilings`: the Bayes reader of
      what it can read (tokens that repeat only); `stream`: its `StreamSummary` (a stream).
    """

    row: str
    compressed: bool
    kv_heads: int
    vocab: int | None = optional_field()
    keys: int | None = optional_field()
    seeds: int
    summary: RowSummary
    ceilings: CeilingSummary | None = optional_field()
    stream: StreamSummary | None = optional_field()

    @property
    def task_label(self) -> str:
        if self.keys is not None:
            return f"stream V={self.vocab}, K={self.keys}"
        return "distinct" if self.vocab is None else f"V={self.vocab}"

    def mean_per_seed(self) -> np.ndarray:
        """Mean accuracy over every phase, per seed."""
        return np.asarray(self.summary.phase_accuracy_per_seed).mean(axis=1)

    def within_per_seed(self) -> np.ndarray:
        """Mean accuracy over the phases the model can answer, per seed: a compressor's
        within-window phases (every phase but the boundary's), every phase otherwise."""
        acc = np.asarray(self.summary.phase_accuracy_per_seed)
        keep = np.ones(acc.shape[1], bool)
        if self.summary.boundary_phases:
            keep[self.summary.boundary_phases] = False
        return acc[:, keep].mean(axis=1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PairFinding(Record):
    """Full attention against its compressor on one task (percent as fractions).

    **Fields:**
    - `kv_heads`, `vocab` (None: distinct tokens).
    - `full_mean`, `compressed_mean`: mean accuracy (t over seeds); `mean_deficit`: full -
      compressed (Welch); `ceiling_deficit`: the same of the Bayes ceilings (exact; None on
      distinct tokens, where both ceilings are 1).
    - `full_worst`, `compressed_worst`: worst phase (t over seeds); `guess`: 1/V (None on
      distinct tokens: 1 / (N - 1) for a reader that knows the context's tokens).
    - `covered_minus_baseline`: the compressor's within-window mean minus full attention's
      mean (Welch): positive where it beats the baseline on the phases it covers.
    - `plateau`: the largest |change of the training loss over the last fifth| of the two
      models' seeds.
    - `regime`: the paper's regime (`REGIME_MEAN_POINTS`, `REGIME_WORST_SHARE`, on the
      estimates).
    """

    kv_heads: int
    vocab: int | None = optional_field()
    full_mean: MeanInterval
    compressed_mean: MeanInterval
    mean_deficit: MeanInterval
    ceiling_deficit: float | None = optional_field()
    full_worst: MeanInterval
    compressed_worst: MeanInterval
    guess: float | None = optional_field()
    covered_minus_baseline: MeanInterval
    plateau: float
    regime: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class StreamFinding(Record):
    """Full attention against its compressor on the stream with local targets.

    **Fields:** `kv_heads`, `vocab`, `keys`; `loss_difference`, `local_loss_difference`,
    `retrieval_loss_difference`: compressed - full (Welch over seeds); `full`, `compressed`:
    their `StreamSummary`s.
    """

    kv_heads: int
    vocab: int
    keys: int
    loss_difference: MeanInterval
    local_loss_difference: MeanInterval
    retrieval_loss_difference: MeanInterval
    full: StreamSummary
    compressed: StreamSummary


@dataclasses.dataclass(frozen=True, kw_only=True)
class HeadlineAnalysis(Record):
    """Every pair's `PairFinding`, the stream's `StreamFinding`s, and `text`: one line."""

    pairs: list[PairFinding]
    stream: list[StreamFinding]
    text: str


def pair_finding(full: HeadlinePoint, compressed: HeadlinePoint) -> PairFinding:
    """The `PairFinding` of two models of one task and KV-head count."""
    fm, cm = full.mean_per_seed(), compressed.mean_per_seed()
    fw = np.asarray(full.summary.worst_phase_per_seed)
    cw = np.asarray(compressed.summary.worst_phase_per_seed)
    ceiling = None
    if full.ceilings is not None and compressed.ceilings is not None:
        ceiling = full.ceilings.mean_accuracy - compressed.ceilings.mean_accuracy
    deficit = welch_interval(fm, cm)
    regime = bool(
        100 * deficit.mean <= REGIME_MEAN_POINTS
        and cw.mean() < REGIME_WORST_SHARE * fw.mean()
    )
    plateau = max(
        full.summary.plateau_change.max_abs, compressed.summary.plateau_change.max_abs
    )
    return PairFinding(
        kv_heads=full.kv_heads,
        vocab=full.vocab,
        full_mean=t_interval(fm),
        compressed_mean=t_interval(cm),
        mean_deficit=deficit,
        ceiling_deficit=ceiling,
        full_worst=t_interval(fw),
        compressed_worst=t_interval(cw),
        guess=None if full.vocab is None else 1.0 / full.vocab,
        covered_minus_baseline=welch_interval(compressed.within_per_seed(), fm),
        plateau=float(plateau),
        regime=regime,
    )


def stream_finding(full: HeadlinePoint, compressed: HeadlinePoint) -> StreamFinding:
    """The `StreamFinding` of two models of one stream task."""
    f, c = full.stream, compressed.stream

    def difference(name):
        per_seed = f"{name}_per_seed"
        return welch_interval(getattr(c, per_seed), getattr(f, per_seed))

    return StreamFinding(
        kv_heads=full.kv_heads,
        vocab=full.vocab,
        keys=full.keys,
        loss_difference=difference("loss"),
        local_loss_difference=difference("local_loss"),
        retrieval_loss_difference=difference("retrieval_loss"),
        full=f,
        compressed=c,
    )


def _pairs(points: list[HeadlinePoint]):
    """`(full, compressed)` of each task and KV-head count that has both, in order."""
    keyed = {}
    for p in points:
        keyed.setdefault((p.kv_heads, p.vocab, p.keys), {})[p.compressed] = p
    for key, pair in keyed.items():
        if len(pair) == 2:
            yield key, pair[False], pair[True]


def analyze(points: list[HeadlinePoint]) -> HeadlineAnalysis:
    """The study's `HeadlineAnalysis`."""
    pairs, streams = [], []
    for (_, _, keys), full, compressed in _pairs(points):
        if keys is None:
            pairs.append(pair_finding(full, compressed))
        else:
            streams.append(stream_finding(full, compressed))
    most = max((p.kv_heads for p in pairs), default=0)
    regime = [
        "distinct" if p.vocab is None else str(p.vocab)
        for p in pairs
        if p.regime and p.kv_heads == most
    ]
    text = (
        f"{len(pairs)} pairs; the paper's regime (mean within {REGIME_MEAN_POINTS:g} points, "
        f"worst phase below {REGIME_WORST_SHARE:g} x full attention's) at "
        + (", ".join(f"V={v}" for v in regime) or "no V")
        + " of the most KV heads"
    )
    for s in streams:
        text += (
            f"; stream K={s.keys}: loss compressed - full "
            f"{s.loss_difference.mean:+.3f}, worst retrieval phase "
            f"{100 * s.full.retrieval_worst.mean:.1f}% vs "
            f"{100 * s.compressed.retrieval_worst.mean:.1f}%"
        )
    return HeadlineAnalysis(pairs=pairs, stream=streams, text=text)


__all__ = [
    "CeilingSummary",
    "HeadlineAnalysis",
    "HeadlinePoint",
    "PairFinding",
    "StreamFinding",
    "analyze",
    "pair_finding",
    "stream_finding",
]
