"""Results at a glance: one typed `Headline` per figure (the question it asks, the answer in at
most `ANSWER_WORDS` words, its key number with the interval), computed from the figure's stored
record alone, and the table that heads figures/README.md and docs/index.md.

Owns the headline functions (one per figure, over its `FigureData` record) and their order, the
paper's story (`Chapter`). Imports the figures' records through the registry only; nothing but
the README rendering imports it.

```python
import json
from inductheory.figures import FIGURES
from inductheory.figures._headlines import headline

stored = json.load(open("figures/data/weak_spots.json"))
headline("weak_spots", FIGURES["weak_spots"].record(stored)).number
```
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Mapping
from typing import Any

from ._registry import FIGURES
from ._stats import interval_text, share_text

ANSWER_WORDS = 20  # an answer is read at a glance: at most this many words


class Chapter(enum.Enum):
    """The paper's story, in reading order: the chapter a figure belongs to."""

    THEOREM_1 = "Theorem 1: the best compressor selects"
    THEOREM_2 = "Theorem 2: gradient flow selects"
    WEAK_SPOTS = "Periodic weak spots"
    REGIME = "Windows and the regime"
    TRAINED = "Trained models"


@dataclasses.dataclass(frozen=True)
class Headline:
    """One figure at a glance.

    **Fields:**
    - `figure`: the figure's name (its section in figures/README.md).
    - `chapter`: where it sits in the story (`Chapter`).
    - `question`: what the figure asks, one sentence.
    - `answer`: what its data answer, at most `ANSWER_WORDS` words.
    - `number`: its key number with the interval (and how the interval was made where the
      number alone does not say so).
    """

    figure: str
    chapter: Chapter
    question: str
    answer: str
    number: str

    def __post_init__(self):
        words = len(self.answer.split())
        if words > ANSWER_WORDS:
            raise ValueError(
                f"Headline {self.figure}: answer must be <= {ANSWER_WORDS} words, got {words}"
            )


def _count(k: int, n: int) -> str:
    # a share with its Wilson 95% interval, as every share of figures/README.md
    return share_text(k, n)


def _all(k: int, n: int, every: str, some: str) -> str:
    # the answer's verdict as strong as the count: `every` only when k = n
    return every if k == n else f"{some} ({k} of {n})"


def _percent(m) -> str:
    # a MeanInterval of a share as percent with its bootstrap interval
    low, high = m.ci95
    return f"{100 * m.mean:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def _theorem1_oracle(d) -> tuple[str, str, str]:
    hard, n = 0, 0
    for row, bracket in zip(d.share_hard_distinct, d.boundary):
        for N, share in zip(d.N_grid, row):
            if N >= bracket.N_star:
                n += 1
                hard += share == 1.0
    return (
        "Is the best query-agnostic compressor a hard selection with distinct heads?",
        f"Yes for N above a boundary N*(beta) with log N* ~ {d.fit.slope:.2f} beta; below it, "
        "mixtures win.",
        f"hard, distinct at N >= N*: {_count(hard, n)} grid points",
    )


def _approximate_geometry(d) -> tuple[str, str, str]:
    k = sum(r.flow_hard.k for r in d.rows)
    n = sum(r.flow_hard.n for r in d.rows)
    ds = ", ".join(str(r.d) for r in d.rows)
    return (
        "Does hard selection survive an approximate geometry (eps > 0)?",
        f"{'Mostly' if k >= 0.9 * n else 'Often not'}: flows hard-select at d = {ds}; the "
        "oracle's minimizer softens as eps grows.",
        f"flows hard-selecting: {_count(k, n)} seeds",
    )


def _theorem2_trajectories(d) -> tuple[str, str, str]:
    k = n = 0
    for run in d.runs.values():
        for status, key, value in zip(run.status, run.key_offsets, run.value_offsets):
            n += 1
            k += status == "selected" and all(v == r + 1 for r, v in zip(key, value))
    return (
        "Does gradient flow drive each head to one offset r (value r + 1)?",
        _all(k, n, "Yes: every", "Not always")
        + " reduced and full flow reaches delta-selection with value offset = key offset + 1.",
        f"selected, value = key + 1: {_count(k, n)} seeds",
    )


def _effective_offsets(d) -> tuple[str, str, str]:
    return (
        "Is the flow's selection static, the same for every context?",
        (
            f"Yes: static and average effective offsets fall together from S = {d.S} to 1."
            if d.max_static_avg_difference < 1e-2
            else "No: the static and average effective offsets part, as input-dependent gates "
            "would."
        ),
        f"max |static - avg| {d.max_static_avg_difference:.1e} (a maximum over every seed, "
        "head, gate and time: no interval)",
    )


def _convergence_rates(d) -> tuple[str, str, str]:
    s = d.summary
    low, high = s.exponent_mean_ci95
    return (
        "How fast does the flow select?",
        "Escape from uniform gates at the predicted rate, then 1 - p(t) decays "
        + ("close to 1/t." if abs(s.exponent_mean + 1) < 0.05 else "unlike 1/t."),
        f"tail exponent {s.exponent_mean:.4f} {interval_text(low, high, 4)} "
        f"(mean over {s.tails} seeds, 95%)",
    )


def _coverage(d) -> tuple[str, str, str]:
    n = d.parameters.seeds
    row = max(d.distinct, key=lambda r: abs(r.distinct_fraction - r.baseline))
    chance = abs(row.distinct_fraction - row.baseline) <= 0.1
    k = round(row.distinct_fraction * row.selected_fraction * n)
    m = round(row.selected_fraction * n)
    return (
        "Does gradient flow make the heads cover distinct offsets?",
        (
            "No more than chance: distinct shares sit near those of independent uniform choices."
            if chance
            else "Beyond chance somewhere: a distinct share differs from uniform choices by > 0.1."
        ),
        f"largest excess, H={row.H} S={row.S}: {_count(k, m)} distinct vs "
        f"{row.baseline:.2f} by chance",
    )


def _coverage_map(d) -> tuple[str, str, str]:
    i, j, l = len(d.N) - 1, len(d.beta) // 2, len(d.rho) - 1
    share = d.distinct_fraction[i][j][l]
    low, high = d.interval_low[i][j][l], d.interval_high[i][j][l]
    reaches = low <= d.baseline <= high
    return (
        "Does splitting fade with N as the two-head toy predicts?",
        f"{'Yes' if reaches else 'Partly'}: the distinct share falls "
        f"{'to' if reaches else 'towards'} the chance level {d.baseline:.2f} as N grows; "
        f"toy rank correlation {d.spearman_excess_vs_D:.2f}.",
        f"N={d.N[i]} beta={d.beta[j]:g} rho={d.rho[l]:g}: {share:.2f} "
        f"{interval_text(low, high)} ({d.seeds} seeds, Wilson)",
    )


def _toy_stability(d) -> tuple[str, str, str]:
    k = sum(g.boundary_agrees_with_signs for g in d.diagrams)
    n = sum(g.grid_points for g in d.diagrams)
    splitting = all(a > 0 for c in d.cuts for a in c.antisymmetric)
    return (
        "Where is the two-head toy's uniform point unstable?",
        f"Heads splitting is unstable {'on the whole grid' if splitting else 'in places'}; "
        + _all(k, n, "the closed-form boundary matches", "the boundary mostly matches")
        + " the rates' signs.",
        f"boundary agrees: {_count(k, n)} grid points",
    )


def _weak_spots(d) -> tuple[str, str, str]:
    k = n = 0
    for m in d.models:
        if m.H < m.S - 1:
            n += len(m.gap)
            k += sum(g == 1.0 for g in m.gap)
    return (
        "Do converged models have periodic weak spots?",
        "Yes: each answers exactly its heads' selected phases; with H < S - 1 some phase "
        + _all(k, n, "always fails.", "fails"),
        f"phase gap 1 with H < S - 1: {_count(k, n)} seeds",
    )


def _phase_uniformity(d) -> tuple[str, str, str]:
    p = d.panels[0]
    return (
        "What does answering every phase alike cost in mean loss?",
        f"At H = {p.H}, the least worst-phase loss costs {p.price:.2f} nats of mean loss; "
        "learned gates take the other end.",
        f"price of uniformity {p.price:.3f} nats (exact frontier: no sampling interval)",
    )


def _mitigations(d) -> tuple[str, str, str]:
    learned = [r for r in d.table if r.gates == "learned"]
    n = sum(r.seeds for r in learned)
    k = sum(
        r.seeds for r in learned if r.gap.mean == 1.0
    )  # a gap <= 1 with mean 1 is 1 in all
    return (
        "Do windows, strides, uniform gates or a coordination penalty remove the weak spots?",
        "Not for learned gates: "
        + _all(k, n, "every window and stride keeps", "most seeds keep")
        + " phase gap 1; a penalty only spreads heads.",
        f"learned seeds with phase gap 1: {_count(k, n)}",
    )


def _boundary(d) -> tuple[str, str, str]:
    last = d.learned[-1]
    k = round(last.accuracy_mean[-1] * last.converged)
    only = all(w.accuracy_mean[-1] == 0 for w in d.learned[:-1])
    sooner = any(o.W < last.W and o.accuracy[-1] > 0 for o in d.oracle)
    return (
        "With windows W > S, do learned gates answer the boundary phase S - 1?",
        f"{'Only' if only else 'Best'} at W = {last.W}, where they give up the other phases; "
        + ("the oracle answers it sooner." if sooner else "the oracle no sooner."),
        f"boundary phase answered at W = {last.W}: {_count(k, last.converged)} seeds",
    )


def _regime_boundary(d) -> tuple[str, str, str]:
    brackets = [b for s in d.oracle for b in s.boundary] + list(d.flow)
    k = sum(b.agrees for b in brackets)
    return (
        "Where does the hard-selection regime end?",
        "Where the closed form N*(beta) says: "
        + (
            "every measured bracket of oracle and flow contains it."
            if k == len(brackets)
            else f"{k} of {len(brackets)} measured brackets of oracle and flow contain it."
        ),
        f"brackets agreeing: {_count(k, len(brackets))}",
    )


def _relaxation_ladder(d) -> tuple[str, str, str]:
    c = d.flow_check
    return (
        "Does a trained model keep the theorem's selection?",
        _all(c.agrees, len(c.status), "Yes", "Mostly")
        + " at the theorem rung (the flow's Euler scheme); Adam and learned embeddings loosen it.",
        f"theorem rung agrees with the flow: {_count(c.agrees, len(c.status))} seeds",
    )


def _paper_matrix(d) -> tuple[str, str, str]:
    h = d.analysis.headline
    shows = h.full_worst.ci95[0] > 0.5 > h.compressed_worst.ci95[1]
    return (
        "Does the paper's trained compressor family show the weak spot?",
        (
            "Yes: W8/S8 with 8 KV heads almost never answers its worst phase; full attention "
            "answers every phase."
            if shows
            else "Not at this size: full attention does not answer its worst phase either."
            if h.full_worst.ci95[0] <= 0.5
            else "No: W8/S8 with 8 KV heads answers its worst phase as well."
        ),
        f"W8/S8 8 KV worst phase {_percent(h.compressed_worst)} ({h.compressed_seeds} seeds, "
        f"t interval over seeds) vs full attention {_percent(h.full_worst)}",
    )


def _paper_mechanisms(d) -> tuple[str, str, str]:
    name, row = next(
        ((name, row) for name, row in d.rows.items() if "reference" in name),
        next(iter(d.rows.items())),
    )
    c = row.gates.static_concentrated
    inputs, damaging = row.gates.input_dependent, row.knockout.damaging
    return (
        "Do the trained models show the paper's mechanism measures?",
        f"{c.k} of {c.n} key gates concentrate statically, {inputs.k} of {inputs.n} depend on "
        f"the input; {damaging.k} of {damaging.n} single-head knockouts hurt.",
        f"{name}: key gates statically concentrated {_count(c.k, c.n)}",
    )


def _paper_headline(d) -> tuple[str, str, str]:
    big = [
        f
        for f in d.analysis.pairs
        if f.kv_heads == max(q.kv_heads for q in d.analysis.pairs)
    ]
    regime = [f for f in big if f.regime]
    # the number: the headline task's pair (V = 48) where it is in the regime
    f = next((g for g in regime if g.vocab == 48), (regime or big)[0])
    task = "distinct tokens" if f.vocab is None else f"V = {f.vocab}"
    return (
        "Where does the paper's regime (mean kept, worst phase collapsed) hold?",
        (
            "Where tokens repeat: at "
            + ", ".join(
                "distinct" if g.vocab is None else f"V={g.vocab}" for g in regime
            )
            + " the compressor's mean stays close while one phase collapses."
            if regime
            else "Nowhere in this sweep: the mean already shows the damage."
        ),
        f"{task}, {f.kv_heads} KV: mean deficit {100 * f.mean_deficit.mean:.1f} points "
        f"[{100 * f.mean_deficit.ci95[0]:.1f}, {100 * f.mean_deficit.ci95[1]:.1f}] (Welch), "
        f"W8/S8 worst phase {_percent(f.compressed_worst)}",
    )


def _open_questions(d) -> tuple[str, str, str]:
    # at the longest budget trained, where the path can have formed
    longest = max(r.steps for r in d.local)
    rows = [r for r in d.local if r.steps == longest]
    windows = [r for r in rows if r.local_window]
    k = sum(r.boundary.answered.k for r in windows)
    n = sum(r.boundary.answered.n for r in windows)
    plain = [r for r in rows if not r.local_window]
    k0 = sum(r.boundary.answered.k for r in plain)
    n0 = sum(r.boundary.answered.n for r in plain)
    return (
        "Can a local window answer the boundary phase, and does coordination even the phases?",
        f"At {longest:,} steps windows answer the boundary in {k} of {n} seeds "
        f"({k0} of {n0} without); coordination: phases uneven.",
        f"boundary answered with a local window at {longest:,} steps {_count(k, n)}",
    )


# Each figure's chapter and headline function (question, answer, number), in story order.
HEADLINES: dict[str, tuple[Chapter, Callable[[Any], tuple[str, str, str]]]] = {
    "theorem1_oracle": (Chapter.THEOREM_1, _theorem1_oracle),
    "approximate_geometry": (Chapter.THEOREM_1, _approximate_geometry),
    "theorem2_trajectories": (Chapter.THEOREM_2, _theorem2_trajectories),
    "effective_offsets": (Chapter.THEOREM_2, _effective_offsets),
    "convergence_rates": (Chapter.THEOREM_2, _convergence_rates),
    "coverage": (Chapter.THEOREM_2, _coverage),
    "coverage_map": (Chapter.THEOREM_2, _coverage_map),
    "toy_stability": (Chapter.THEOREM_2, _toy_stability),
    "weak_spots": (Chapter.WEAK_SPOTS, _weak_spots),
    "phase_uniformity": (Chapter.WEAK_SPOTS, _phase_uniformity),
    "mitigations": (Chapter.WEAK_SPOTS, _mitigations),
    "boundary": (Chapter.REGIME, _boundary),
    "regime_boundary": (Chapter.REGIME, _regime_boundary),
    "relaxation_ladder": (Chapter.TRAINED, _relaxation_ladder),
    "paper_matrix": (Chapter.TRAINED, _paper_matrix),
    "paper_mechanisms": (Chapter.TRAINED, _paper_mechanisms),
    "paper_headline": (Chapter.TRAINED, _paper_headline),
    "open_questions": (Chapter.TRAINED, _open_questions),
}


def headline(name: str, record) -> Headline:
    """The headline of figure `name` from its record (a `FigureData`, or the dict stored in
    `data/<name>.json`).

    **Arguments:**
    - `name`: a registered figure with a headline (`HEADLINES`).
    - `record`: its data.

    **Returns:** the `Headline`.
    """
    if name not in HEADLINES:
        raise ValueError(
            f"headline: name must be one of {list(HEADLINES)}, got {name!r}"
        )
    chapter, make = HEADLINES[name]
    question, answer, number = make(FIGURES[name].record(record))
    return Headline(name, chapter, question, answer, number)


def headlines(data: Mapping[str, Any]) -> list[Headline]:
    """The headlines of the figures in `data` (records or stored dicts, by name), in story
    order; figures without data are left out."""
    return [headline(name, data[name]) for name in HEADLINES if name in data]


def anchor(title: str, *, collapse: bool) -> str:
    """The anchor of a Markdown heading: GitHub's (`collapse=False`: every removed character's
    spaces kept) or Python-Markdown's, which MkDocs uses (`collapse=True`: runs of spaces and
    hyphens become one hyphen).

    ```python
    anchor("The two-head toy: where p = 1/2", collapse=True)  # 'the-two-head-toy-where-p-12'
    ```
    """
    text = re.sub(r"[^\w\- ]", "", title.lower())
    if collapse:
        return re.sub(r"[-\s]+", "-", text.strip())
    return text.replace(" ", "-")


def headline_table(rows: list[Headline], link: Callable[[str], str]) -> list[str]:
    """The headlines as Markdown lines: one table per chapter (a bold chapter line above it),
    each row the figure's question (linked by `link(name)`), answer and key number."""
    lines: list[str] = []
    for chapter in Chapter:
        mine = [h for h in rows if h.chapter is chapter]
        if not mine:
            continue
        lines += [
            f"**{chapter.value}**",
            "",
            "| question | answer | key number |",
            "|---|---|---|",
        ]
        for h in mine:
            cells = (f"[{h.question}]({link(h.figure)})", h.answer, h.number)
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    return lines


def glance_lines(data: Mapping[str, Any], link: Callable[[str], str]) -> list[str]:
    """The block "Results at a glance" (a lead line and `headline_table`) for the figures in
    `data`, in story order: the table of contents of a figures README and of docs/index.md."""
    rows = headlines(data)
    if not rows:
        return []
    return [
        "**Results at a glance.** Each figure's question, its answer and its key number (95% "
        "intervals: Wilson for shares, bootstrap over seeds for means, as its section says), "
        "computed from its stored data; the question links to the figure's section.",
        "",
        *headline_table(rows, link),
    ]


__all__ = [
    "ANSWER_WORDS",
    "HEADLINES",
    "Chapter",
    "Headline",
    "anchor",
    "glance_lines",
    "headline",
    "headlines",
]
