"""The paper's experiment matrix trained on the retrieval task (`experiments._paper_matrix`):
full attention with 1 and 8 KV heads, the W8/S8 reference with 1, 2, 4 and 8 KV heads, the
overlapping windows, other window sizes, uniform averaging, the DeepSeek-style kernel, and one
switch of the compressor at a time, beside the paper's table 8 where it has the row."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from ..experiments._paper_matrix import (
    FULL_SIZE,
    MATRIX,
    MECHANISM_ROWS,
    PAPER_TABLE8,
    QUICK_SIZE,
    matrix_row_result,
)
from ..internal._progress import announce
from . import _style
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._matrix_stats import (
    COVERED,
    FULL_ROWS,
    INTERVALS,
    KV_ROWS,
    LEARNED,
    REFERENCE_ROW,
    MatrixAnalysis,
    Ordering,
    RowSummary,
    analyze,
    learned_seeds,
    percent_text,
    points_text,
    row_summary,
    seed_measures,
    tau_text,
)
from ._stats import share_text


@dataclasses.dataclass(frozen=True, kw_only=True)
class PaperMatrixData(FigureData):
    """Every trained row's `RowSummary` by row name (`rows`, in `MATRIX`'s order), the number
    of phases `period`, and the `analysis` (`MatrixAnalysis`)."""

    rows: dict[str, RowSummary]
    period: int
    analysis: MatrixAnalysis


def compute(context: FigureContext) -> PaperMatrixData:
    quick = context.quick
    size = QUICK_SIZE if quick else FULL_SIZE
    rows = {}
    for row in size.matrix:
        # the mechanism rows keep their models' measures for the figure paper_mechanisms:
        # one training serves both figures
        result = matrix_row_result(
            row,
            size,
            context.cache,
            mechanisms=row.name in MECHANISM_ROWS,
            announce=announce,
        )
        rows[row.name] = row_summary(
            row.architecture(size.reference), result, size.task.period
        )
    findings = analyze(rows, size)
    return PaperMatrixData(
        rows=rows,
        period=size.task.period,
        analysis=findings,
        parameters=parameters(size),
        findings=findings.text,
    )


def restated(stored: Mapping, size) -> PaperMatrixData:
    """The figure's data recomputed from its stored rows (`data/paper_matrix.json`) without
    training: each row's `seed_measures` from its per-seed phase accuracies, then `analyze`.
    The rest of a row (losses, curves, the mean accuracy's and boundary phase's bootstrap over
    contexts, which the stored data cannot redo) is kept as stored. A run of `compute` makes the
    same data (tested on the committed data).

    **Arguments:**
    - `stored`: the stored data (a dict, as read from the JSON).
    - `size`: the `MatrixSize` it was trained at (`FULL_SIZE` or `QUICK_SIZE`).

    **Returns:** a `PaperMatrixData`.

    ```python
    data = restated(json.loads(Path("figures/data/paper_matrix.json").read_text()), FULL_SIZE)
    ```
    """
    rows = {}
    for row in MATRIX:
        if row.name in stored["rows"]:
            r = RowSummary.from_dict(stored["rows"][row.name])
            measures = seed_measures(r.phase_accuracy_per_seed, r.boundary_phases)
            rows[row.name] = dataclasses.replace(r, **measures)
    findings = analyze(rows, size)
    return PaperMatrixData(
        rows=rows,
        period=stored["period"],
        analysis=findings,
        parameters=dict(stored["parameters"]),
        findings=findings.text,
    )


def parameters(size) -> dict[str, str]:
    """The figure's parameters as its README states them: the task, the reference row, the
    training and the held-out sample of `size`."""
    t, ref, tr = size.task, size.reference, size.train
    optimizer = tr.optimizer
    if tr.betas is not None:
        optimizer += f" with moment decays ({tr.betas[0]:g}, {tr.betas[1]:g})"
    if tr.weight_decay:
        optimizer += f" and decoupled weight decay {tr.weight_decay:g}"
    warmup = ""
    if tr.schedule == "warmup_cosine":  # as `optimizer_settings` trains it
        warmup = (
            f", {tr.warmup:.0%} warm-up" if tr.warmup_steps else ", no warm-up step"
        )

    longer = "".join(
        f", {row.training(size).steps} for '{row.name}' to reach its plateau"
        for row in size.matrix
        if row.steps_factor != 1
    )
    return {
        "task": f"T={t.T} positions on a cycle, N={t.N} tokens, every position a query, "
        f"phases = position mod {t.period}",
        "reference": f"d={ref.d}, {ref.layers} layers, {ref.q_heads} query heads of "
        f"dimension {ref.head_dim}, {ref.kv_heads} KV head, W{ref.W}/S{ref.S}, scalar "
        "gates, per-offset payload maps, position bias, K/V separate, RMSNorm",
        "training": f"{optimizer}, lr {tr.lr:g} ({tr.schedule}{warmup}), {tr.steps} steps of "
        f"{tr.batch} fresh contexts{longer}, clip 1, {size.seeds} seeds a row",
        "held out": f"{tr.eval_contexts} contexts, "
        f"{tr.eval_contexts * t.T // t.period} queries per phase group",
    }


def _n_pairs(o: Ordering) -> int:
    return len(o.rows) * (len(o.rows) - 1) // 2


def _pairs_text(pairs, of: int) -> str:
    """`k of n pairs (a > b, c > d)`, the pairs listed by their measured order."""
    listed = ", ".join(f"{m} > {n}" for m, n in pairs)
    return f"{len(pairs)} of {of} pairs" + (f" ({listed})" if pairs else "")


def _present(data: PaperMatrixData):
    """The rows of `MATRIX` that `data` holds, in order."""
    return [r for r in MATRIX if r.name in data.rows]


def tables(data: PaperMatrixData) -> list[MeasuredTable]:
    rows = []
    for row in _present(data):
        r = data.rows[row.name]
        p = PAPER_TABLE8.get(row.paper) if row.paper else None
        fmt = lambda v: "-" if v is None else f"{v:g}"  # noqa: E731
        rows.append(
            [
                row.name,
                f"{r.loss.mean:.3f}",
                percent_text(r.mean_accuracy),
                percent_text(r.worst_phase),
                points_text(r.gap),
                "n/a" if r.boundary_phase is None else percent_text(r.boundary_phase),
                f"{r.plateau_change.mean:+.3f}",
                "" if p is None else p.model,
                ""
                if p is None
                else " / ".join(fmt(v) for v in (p.loss, p.mean, p.worst, p.gap)),
            ]
        )
    period = data.period
    return [
        _findings_table(data),
        MeasuredTable(
            f"Per row: held-out loss, mean accuracy, worst phase (min over the {period} "
            "phases), gap (max - min over them, in points) and boundary phase (positions = S - 1 "
            f"mod S), each a mean over seeds with a 95% interval: {INTERVALS}; the training "
            "loss's change over the last fifth of the steps; the paper's row (loss / mean / "
            "worst / gap in %) with the model it comes from",
            [
                "row",
                "loss",
                "mean accuracy",
                "worst phase",
                "gap",
                "boundary phase",
                "last-fifth change",
                "paper's model",
                "paper",
            ],
            rows,
        ),
    ]


def _findings_table(data: PaperMatrixData) -> MeasuredTable:
    """The questions of the matrix, each answered with its measured numbers and the paper's."""
    rows, a = data.rows, data.analysis
    h, o = a.headline, a.ordering
    out = []

    def gap_row(name, paper_key):
        if name in rows:
            p = PAPER_TABLE8.get(paper_key)
            out.append(
                [
                    f"gap of {name}",
                    f"{points_text(rows[name].gap)} (reference "
                    f"{points_text(rows[REFERENCE_ROW].gap)})",
                    "" if p is None else f"{p.gap:g} ({p.model})",
                ]
            )

    out.append(
        [
            "8 KV heads: compressed W8/S8 against full attention, mean accuracy",
            f"{percent_text(h.compressed_mean)} against {percent_text(h.full_mean)}; full "
            f"attention learned the task (mean >= {LEARNED:g}) in "
            + share_text(h.full_seeds_learned, len(rows[FULL_ROWS[8]].loss.per_seed))
            + " seeds"
            + (
                ""
                if h.full_mean_of_learned_seeds is None
                else f", {100 * h.full_mean_of_learned_seeds:.1f}% over those"
            ),
            "59.4 against 61.1 (W8/S8 8 KV; full attention 8 KV)",
        ]
    )
    if FULL_ROWS[1] in rows:
        full1 = rows[FULL_ROWS[1]]
        out.append(
            [
                "1 KV head: full attention learned the task",
                f"mean {percent_text(full1.mean_accuracy)}, in "
                + share_text(learned_seeds(full1), len(full1.loss.per_seed))
                + " seeds",
                "mean 18.8, worst 17.2 (full attention 1 KV)",
            ]
        )
    out.append(
        [
            "8 KV heads: worst phase",
            f"{percent_text(h.compressed_worst)} against {percent_text(h.full_worst)}",
            "9.9 against 58.4 (the same models)",
        ]
    )
    for name, key in (
        ("W8/S4 (overlap)", "w8s4"),
        ("W8/S6 (overlap)", "w8s6"),
        ("uniform averaging", "uniform"),
    ):
        gap_row(name, key)
    ref = rows[REFERENCE_ROW]
    out.append(
        [
            "reference W8/S8: within-window gap (phases other than S - 1 mod S) and boundary "
            "phase",
            f"within {points_text(ref.within_gap)}; boundary {percent_text(ref.boundary_phase)}",
            "phases 0-6 differ by more than 50 points (W8/S8 reference)",
        ]
    )
    t = o.tau_resampled
    resolved_against = [pair for pair in o.separated if pair in o.discordant]
    out.append(
        [
            "mitigations ordered by gap ("
            + ", ".join(o.rows)
            + ") against the paper's order",
            f"Kendall tau-a {o.tau:.2f}, exact permutation p = {o.p_value:.3f} (share of the "
            f"{len(o.rows)}! orders agreeing at least as well); discordant: "
            f"{_pairs_text(o.discordant, _n_pairs(o))}. Tau {tau_text(t)}. Resolved (gap "
            f"intervals separate): {_pairs_text(o.separated, _n_pairs(o))}"
            + (
                f"; against the paper's order among them: "
                f"{_pairs_text(resolved_against, len(o.separated))}"
                if o.separated
                else ""
            )
            + f". Not resolved (intervals overlap): "
            f"{_pairs_text(o.overlapping, _n_pairs(o))}",
            "gaps " + ", ".join(f"{g:g}" for g in o.paper_gap) + " (each row's model)",
        ]
    )
    if a.shrinkage:
        out.append(
            [
                "overlap's shrinkage of the gap: the reference's gap minus the overlapping "
                "row's (Welch 95% interval over seeds)",
                "; ".join(f"{x.row}: {points_text(x.measured)}" for x in a.shrinkage),
                "; ".join(f"{x.row}: {x.paper:g}" for x in a.shrinkage)
                + " (75.3 of the W8/S8 reference, 1 KV head, seed 42, minus the 1-KV-head "
                "overlapping model's gap)",
            ]
        )
    # the rows' order, whatever the dict's (stored JSON sorts it)
    for c in (a.coverage[name] for name in KV_ROWS if name in a.coverage):
        first, last = c.within_offsets[0], c.within_offsets[-1]
        out.append(
            [
                f"{c.kv_heads} KV head(s): within-window offsets covered per seed (offsets "
                f"{first}-{last} mod {last + 2}, the ones a W = S compressor can answer; "
                "boundary phases "
                + ", ".join(map(str, c.boundary_phases))
                + f" excluded; an offset is covered when each of its phases >= {COVERED:g} x "
                f"the mean of {c.baseline})",
                ", ".join(map(str, c.covered_offsets_per_seed))
                + f" of {len(c.within_offsets)}; all {len(c.within_offsets)} in "
                + share_text(c.seeds_covering_every_offset, c.seeds)
                + " seeds",
                "Figure 4 (4 KV heads): the sharp heads' gate peaks together span the 8 "
                "window offsets. That is about gate peaks, not accuracy: compared here is "
                "accuracy on the within-window offsets; the gate peaks of these runs are in "
                "the figure paper_mechanisms (its 'covered')"
                if c.kv_heads == 4
                else "",
            ]
        )
    return MeasuredTable(
        "The matrix's questions, as measured here (95% intervals made as the per-row table's "
        "caption says; shares with Wilson intervals) and as the paper reports them (each with "
        "its model)",
        ["question", "measured", "paper"],
        out,
    )


# Rows drawn as per-phase curves.
CURVE_ROWS = (
    "full attention 8 KV",
    "W8/S8 1 KV (reference)",
    "W8/S8 8 KV",
    "W8/S4 (overlap)",
    "uniform averaging",
    "DeepSeek-style (W8/S4 vector tied)",
)


def _label_groups(points, radius: float = 3.0):
    """`((x, y), [row numbers], level)` per group of scatter points within `radius` (in
    percentage points) of the group's first point: one label per group, so that rows drawn on
    top of each other (full attention's two rows at 100%) stay legible. Labels are centred
    below their point; one that would overlap a label beside it goes a `level` lower."""
    groups = []
    for n, (x, y) in enumerate(points, start=1):
        for (gx, gy), numbers in groups:
            if abs(x - gx) <= radius and abs(y - gy) <= radius:
                numbers.append(n)
                break
        else:
            groups.append(((x, y), [n]))
    placed, out = [], []
    for (x, y), numbers in sorted(groups, key=lambda g: g[0]):
        width = 2.0 * len(", ".join(map(str, numbers))) + 1.5  # axis units, fontsize 7
        level = 0
        while any(
            lvl == level and abs(y - py) < 6 and abs(x - px) < (width + w) / 2
            for px, py, w, lvl in placed
        ):
            level += 1
        placed.append((x, y, width, level))
        out.append(((x, y), numbers, level))
    return out


def draw(data: PaperMatrixData):
    import matplotlib.pyplot as plt

    with _style.context():
        fig, axes = plt.subplots(2, 2, figsize=(11, 8))
        ax = axes[0, 0]
        period = data.period
        present = _present(data)
        for i, name in enumerate(n for n in CURVE_ROWS if n in data.rows):
            acc = 100 * np.asarray(data.rows[name].phase_accuracy)
            ax.plot(
                np.arange(period),
                acc,
                marker=_style.MARKERS[i % len(_style.MARKERS)],
                color=_style.color(i),
                label=name,
            )
        ax.set_xlabel(f"phase (source position mod {period})")
        ax.set_ylabel("held-out accuracy (%)")
        ax.set_xticks(np.arange(0, period, 2))
        ax.set_ylim(-2, 135)
        ax.set_yticks(np.arange(0, 101, 20))
        ax.set_title("Per-phase accuracy (mean over seeds)")
        ax.legend(loc="upper center", fontsize=6.5, ncol=2)

        ax = axes[0, 1]
        points = []
        for i, row in enumerate(present):
            r = data.rows[row.name]
            x, y = 100 * r.mean_accuracy.mean, 100 * r.worst_phase.mean
            points.append((x, y))
            ax.scatter(
                x, y, color=_style.color(i), marker=_style.MARKERS[i % 8], zorder=3
            )
            p = PAPER_TABLE8.get(row.paper) if row.paper else None
            if p is not None and p.mean is not None:
                ax.scatter(
                    p.mean,
                    p.worst,
                    color=_style.color(i),
                    marker=_style.MARKERS[i % 8],
                    facecolors="none",
                    zorder=2,
                )
                ax.annotate(
                    f"{i + 1}p",
                    (p.mean, p.worst),
                    fontsize=6.5,
                    color="0.4",
                    xytext=(3, -8),
                    textcoords="offset points",
                )
        for (x, y), numbers, level in _label_groups(points):
            # below the points (the paper's open markers sit above them), the crowded ones
            # staggered, each tied to its point by a thin line
            ax.annotate(
                ", ".join(str(n) for n in numbers),
                (x, y),
                fontsize=7,
                xytext=(0, -9 - 8 * level),
                textcoords="offset points",
                ha="center",
                va="top",
                arrowprops=dict(arrowstyle="-", lw=0.4, color="0.6", shrinkA=0)
                if level
                else None,
            )
        ax.plot([0, 100], [0, 100], color="0.7", lw=0.8, ls=":")
        ax.set_xlim(-4, 104)
        ax.set_ylim(-22, 106)  # room below 0 for the labels
        ax.set_yticks(np.arange(0, 101, 20))
        ax.set_xlabel("mean accuracy (%)")
        ax.set_ylabel("worst phase (%)")
        ax.set_title("Rows (filled, numbered as in the table); the paper's (open, 'p')")

        ax = axes[1, 0]
        for i, row in enumerate(present):
            r = data.rows[row.name]
            ax.plot(
                np.asarray(r.curve_steps) + 1,
                r.curve,
                color=_style.color(i),
                ls=_style.LINESTYLES[(i // 8) % 4],
                label=f"{i + 1}. {row.name}",
            )
        ax.set_xscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (mean over seeds)")
        ax.set_title("Loss curves of every row")
        ax.legend(fontsize=5.5, ncol=2)

        ax = axes[1, 1]
        names = [r.name for r in present]
        gaps = [100 * data.rows[n].gap.mean for n in names]
        errs = np.array(
            [
                [
                    100 * data.rows[n].gap.mean - 100 * data.rows[n].gap.ci95[0],
                    100 * data.rows[n].gap.ci95[1] - 100 * data.rows[n].gap.mean,
                ]
                for n in names
            ]
        ).T
        y = np.arange(len(names))
        ax.barh(
            y, gaps, xerr=errs, color=_style.color(0), height=0.4, label="simulator"
        )
        paper = [(PAPER_TABLE8[r.paper].gap if r.paper else None) for r in present]
        py = [yy for yy, p in zip(y, paper) if p is not None]
        ax.barh(
            np.array(py) + 0.4,
            [p for p in paper if p is not None],
            height=0.4,
            color=_style.color(1),
            label="paper (its model)",
        )
        ax.set_yticks(y + 0.2)
        ax.set_yticklabels([f"{i + 1}. {n}" for i, n in enumerate(names)], fontsize=6.5)
        ax.invert_yaxis()
        ax.set_xlabel("phase gap (points)")
        ax.set_title("Gap per row")
        ax.legend(fontsize=7)
        fig.tight_layout()
    return fig


CLAIM = (
    "The paper's compressor family (docs/trained.md; beyond docs/theory.md §11: per-offset "
    "payload maps, scalar or vector gates, position bias, K/V tied or not, 1-8 KV heads with "
    "grouped query heads, every layer compressed) and full-attention baselines of the same "
    "heads and layers, trained on one retrieval task; per row the held-out loss, mean "
    "accuracy, worst phase, gap and boundary phase with 95% intervals that contain their "
    "estimates (over seeds and contexts for means, over seeds for minima and gaps), beside "
    "the paper's table 8 labelled with the model each number comes from; the mitigations' "
    "order by gap with its tau under seed resampling and the pairs its intervals resolve; "
    "coverage over the within-window offsets alone. Whether full attention learned the task "
    "at this size is stated with the numbers: a model that does not learn it is no evidence "
    "for or against the paper."
)

FIGURE = Figure(
    "paper_matrix",
    "The paper's compressor family and its table 8, trained on the task",
    CLAIM,
    compute,
    draw,
    cost=2520,  # 2,521 s wall (3,309 CPU-s) in the main job on 2 cores
    tables=tables,
    data=PaperMatrixData,
)
