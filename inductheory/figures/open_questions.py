"""The paper's two open questions on trained models (docs/trained.md, "Open questions"): the
boundary phase through an exact local window (rows of the 8-KV W8/S8 compressor with a local
window of w positions and without, on distinct tokens and on tokens that repeat; per seed the
boundary accuracy, the previous-token attention and the boundary with the window closed at
evaluation), and coordination across heads (the key gates' overlap penalty swept over its
weight at 4 and 8 KV heads: offsets covered, worst within-window phase, mean, loss)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..experiments._ceilings import architecture_coverage, retrieval_ceilings
from ..experiments._measured import Count, MeanInterval
from ..experiments._mitigations import coordination_threshold, mitigation_task
from ..experiments._paper_matrix import FULL_SIZE, QUICK_SIZE, boundary_phases
from ..experiments._studies import StudyRow, study_result
from ..internal._progress import announce
from ..internal._records import Record, optional_field
from ..trained._local_path import boundary_gates
from ..trained._mechanisms import GateOffsets
from . import _style
from ._figure import Figure, FigureData, MeasuredTable
from ._matrix_stats import percent_text
from ._mechanism_summaries import covered_phases
from ._open_questions import BoundaryAnswers, boundary_answers
from ._stats import share_text, t_interval, wilson_count

ROW = "W8/S8 8 KV"
# The rows this figure trains (8 seeds a row); w in {1, S} and the
# weights between 0 and 1 are a `sweep matrix` away (docs/trained.md, "Open questions").
LOCAL_WINDOWS = (0, 2)
LOCAL_VOCAB = (None, 48)
# The overlap penalty's weights at each KV-head count (0: the matrix's row).
PENALTIES = {4: (0.0, 1.0), 8: (0.0, 0.1, 1.0)}
COORDINATION_ROWS = {4: "W8/S8 4 KV", 8: "W8/S8 8 KV"}


def _local(w: int, vocab) -> StudyRow:
    changes = (("local_window", w),) if w else ()
    return StudyRow(ROW, vocab=vocab, changes=changes, mechanisms=bool(w))


def full_studies() -> tuple[list[StudyRow], list[StudyRow]]:
    """`(local, coordination)`: the local-window rows (every w of `LOCAL_WINDOWS` on each
    task of `LOCAL_VOCAB`) and the coordination rows (the weights of `PENALTIES` at 4 and 8
    KV heads, distinct tokens)."""
    local = [_local(w, v) for v in LOCAL_VOCAB for w in LOCAL_WINDOWS]
    coordination = [
        StudyRow(row, overlap_penalty=lam, mechanisms=bool(lam))
        for kv, row in COORDINATION_ROWS.items()
        for lam in PENALTIES[kv]
    ]
    return local, coordination


def quick_studies() -> tuple[list[StudyRow], list[StudyRow]]:
    """The quick figure's rows: w = 0 and 2 on distinct tokens, the penalty 0 and 1 at 8
    KV heads."""
    local = [_local(w, None) for w in (0, 2)]
    coordination = [
        StudyRow(ROW, overlap_penalty=lam, mechanisms=bool(lam)) for lam in (0.0, 1.0)
    ]
    return local, coordination


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
    `knocked_boundary_per_seed` (with the query head of largest previous-token mass in the
    first local layer mean-ablated), `rotated_boundary_per_seed` and
    `rotated_mean_per_seed` (every gate rotated by one offset). For every row:
    `no_boundary_loss`, the Bayes loss of a reader of the within-window pairs only (the
    W = S compressor's `retrieval_ceilings`), which only a model that answers the boundary
    can go below; `crossed_step_per_seed`, the first logged training step whose loss is
    below it (None: never); `loss_per_seed`, the held-out loss.
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
    knocked_boundary_per_seed: list[float] | None = optional_field()
    rotated_boundary_per_seed: list[float] | None = optional_field()
    rotated_mean_per_seed: list[float] | None = optional_field()
    no_boundary_loss: float | None = optional_field()
    crossed_step_per_seed: list[int | None] | None = optional_field()
    loss_per_seed: list[float] | None = optional_field()


@dataclasses.dataclass(frozen=True, kw_only=True)
class CoordinationPoint(Record):
    """One weight of the overlap penalty at one KV-head count.

    **Fields:** `kv_heads`, `overlap_penalty`, `seeds`; `covered_per_seed`: distinct phases
    the concentrated key gates of each seed answer (of S = 8); `covered`, `mean`,
    `worst_within`, `loss`: t intervals over seeds; `uniform`: seeds whose worst within-window
    phase is at least half their within-window mean (a `Count`, Wilson interval).
    """

    kv_heads: int
    overlap_penalty: float
    seeds: int
    covered_per_seed: list[int]
    covered: MeanInterval
    mean: MeanInterval
    worst_within: MeanInterval
    loss: MeanInterval
    uniform: Count


@dataclasses.dataclass(frozen=True, kw_only=True)
class IdealizedThreshold(Record):
    """The idealized flow's $\\lambda^*$ at H = `kv_heads` heads on the within-window queries
    of W = S = 8 (`coordination_threshold`): above `threshold` no hard selection with two
    heads on one offset is a local minimum of the penalized loss; `lowest`: the smallest
    threshold of an overlapped selection."""

    kv_heads: int
    threshold: float
    lowest: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class OpenQuestionsData(FigureData):
    """The `local` rows, the `coordination` points with the idealized `thresholds`, the
    stride `S` and the `period`."""

    local: list[LocalRow]
    coordination: list[CoordinationPoint]
    thresholds: list[IdealizedThreshold]
    S: int
    period: int


def idealized_thresholds(kv_heads, S: int, T: int) -> list[IdealizedThreshold]:
    """`IdealizedThreshold` of the idealized task (theory §9) at each KV-head count."""
    out = []
    for kv in kv_heads:
        c = coordination_threshold(mitigation_task(S, S, H=kv, T=T, queries="within"))
        out.append(
            IdealizedThreshold(kv_heads=kv, threshold=c.threshold, lowest=c.lowest)
        )
    return out


def _gates(m, seed: int) -> GateOffsets:
    return GateOffsets(
        peak=m.peak[seed], mass=m.mass[seed], static=m.static[seed], avg=m.avg[seed]
    )


def _path_gates(m, seed: int, S: int) -> list[PathGate]:
    """The concentrated KV heads of one seed that answer the boundary (`boundary_gates`;
    `layer` counts the gated layers, which are every block of the matrix's rows)."""
    g = boundary_gates(_gates(m, seed), S)
    layers = np.nonzero(np.asarray(g.answers_boundary & g.concentrated))
    return [
        PathGate(
            layer=int(i),
            kv_head=int(kv),
            key_peak=int(g.key_peak[i, kv]),
            value_peak=int(g.value_peak[i, kv]),
        )
        for i, kv in zip(*layers, strict=True)
    ]


def _path_measures(m, phases, S: int) -> dict:
    """The local path's measures and causal checks of a row with an exact local window (the
    `LocalRow` fields after `boundary_gate_per_seed`'s description)."""
    previous = np.asarray(m.previous_mass)[:, 0]  # (seeds, q_heads): first local layer
    seeds = previous.shape[0]
    path_heads = previous.argmax(axis=-1)  # the head most on the position before
    # knockouts index blocks; the first local layer is block 0 (`local_blocks`)
    knocked = np.asarray(m.knockout_accuracy)[np.arange(seeds), 0, path_heads]
    rotated = np.asarray(m.rotated_accuracy)[:, list(m.rotations).index(1)]
    gates = [_path_gates(m, s, S) for s in range(seeds)]
    return dict(
        previous_mass_per_seed=previous.max(axis=-1).tolist(),
        closed_boundary_per_seed=np.asarray(m.closed_window_accuracy)[:, phases]
        .mean(axis=1)
        .tolist(),
        boundary_gate_per_seed=[bool(g) for g in gates],
        path_gates_per_seed=gates,
        knock_base_boundary_per_seed=np.asarray(m.base_accuracy)[:, phases]
        .mean(axis=1)
        .tolist(),
        knocked_boundary_per_seed=knocked[:, phases].mean(axis=1).tolist(),
        rotated_boundary_per_seed=rotated[:, phases].mean(axis=1).tolist(),
        rotated_mean_per_seed=rotated.mean(axis=1).tolist(),
    )


def local_row(study: StudyRow, base, result) -> LocalRow:
    """A `LocalRow` from a trained row's `RowResult`."""
    size, arch = study.size(base), study.architecture(base)
    acc = np.asarray(result.measures.phase_accuracy)
    answers = boundary_answers(acc, arch.S)
    extra = {}
    m = result.mechanisms
    if arch.local_window and m is not None and m.previous_mass is not None:
        extra = _path_measures(m, boundary_phases(arch.S, size.task.period), arch.S)
    # the compressor's reader without the boundary: the local window adds no coverage
    covered = architecture_coverage(
        dataclasses.replace(arch, local_window=0), size.task.T
    )
    floor = retrieval_ceilings(size.task, covered).mean_loss
    curve = np.asarray(result.curve)
    crossed = [
        int(result.curve_steps[np.argmax(c < floor)]) if np.any(c < floor) else None
        for c in curve
    ]
    return LocalRow(
        no_boundary_loss=floor,
        crossed_step_per_seed=crossed,
        loss_per_seed=np.asarray(result.measures.loss).tolist(),
        vocab=size.task.vocab,
        local_window=arch.local_window,
        seeds=len(acc),
        steps=size.train.steps,
        boundary=answers,
        mean=t_interval(answers.mean),
        worst_within=t_interval(answers.worst_within),
        **extra,
    )


def coordination_point(study: StudyRow, base, result) -> CoordinationPoint:
    """A `CoordinationPoint` from a trained row's `RowResult` (with its mechanisms)."""
    size, arch = study.size(base), study.architecture(base)
    answers = boundary_answers(np.asarray(result.measures.phase_accuracy), arch.S)
    m = result.mechanisms
    covered = covered_phases(m.peak, m.static)  # as the mechanisms figure counts them
    seeds = len(covered)
    within, worst = np.asarray(answers.within_mean), np.asarray(answers.worst_within)
    return CoordinationPoint(
        kv_heads=arch.kv_heads,
        overlap_penalty=size.train.overlap_penalty,
        seeds=seeds,
        covered_per_seed=covered,
        covered=t_interval(covered, support=(0.0, float(arch.S))),
        mean=t_interval(answers.mean),
        worst_within=t_interval(worst),
        loss=t_interval(result.measures.loss, support=(0.0, np.inf)),
        uniform=wilson_count(int(np.sum(worst >= 0.5 * within)), seeds),
    )


def compute(quick: bool, cache_dir) -> OpenQuestionsData:
    base = QUICK_SIZE if quick else FULL_SIZE
    local, coordination = quick_studies() if quick else full_studies()
    rows = [
        local_row(s, base, study_result(s, base, cache_dir, announce=announce))
        for s in local
    ]
    points = [
        coordination_point(s, base, study_result(s, base, cache_dir, announce=announce))
        for s in coordination
    ]
    kv = sorted({p.kv_heads for p in points})
    data = dict(
        local=rows,
        coordination=points,
        thresholds=idealized_thresholds(kv, base.reference.S, base.task.T),
        S=base.reference.S,
    )
    return OpenQuestionsData(
        **data,
        period=base.task.period,
        parameters=parameters(base, quick),
        findings=findings(rows, points),
    )


def parameters(base, quick: bool) -> dict[str, str]:
    t, tr = base.task, base.train
    return {
        "rows": f"'{ROW}' with an exact local window of w in "
        + "{0 (none), 2}"
        + " positions on the context stream, on distinct tokens"
        + ("" if quick else " and on tokens drawn with replacement from V = 48")
        + "; the key gates' overlap penalty lambda in "
        + (
            "{0, 1} at 8 KV heads"
            if quick
            else "{0, 1} at 4 and {0, 0.1, 1} at 8 KV heads"
        ),
        "task": f"the matrix's: T={t.T}, N={t.N}, phases mod {t.period}",
        "training": f"the matrix's: {tr.steps} steps of {tr.batch} contexts, "
        f"{base.seeds} seeds a row",
        "held out": f"{tr.eval_contexts} contexts",
    }


def findings(rows: list[LocalRow], points: list[CoordinationPoint]) -> str:
    parts = [
        f"w={r.local_window} "
        f"{'distinct' if r.vocab is None else f'V={r.vocab}'}: boundary answered in "
        f"{share_text(r.boundary.answered.k, r.boundary.answered.n)} seeds"
        for r in rows
    ]
    parts += [
        f"lambda={p.overlap_penalty:g} {p.kv_heads} KV: covered {p.covered.mean:.1f}, "
        f"worst within {100 * p.worst_within.mean:.1f}%"
        for p in points
    ]
    return "; ".join(parts)


def _task(vocab) -> str:
    return "distinct" if vocab is None else f"V={vocab}"


def _percents(values) -> str:
    return ", ".join(f"{100 * v:.0f}" for v in values)


def _path_gate_text(per_seed) -> str:
    """The boundary gates of the seeds that have one: seed: layer/KV head (key, value)."""
    found = [
        f"seed {s}: "
        + ", ".join(
            f"layer {g.layer} KV {g.kv_head} (key {g.key_peak}, value {g.value_peak})"
            for g in gates
        )
        for s, gates in enumerate(per_seed or [])
        if gates
    ]
    return f" ({'; '.join(found)})" if found else ""


def tables(data: OpenQuestionsData) -> list[MeasuredTable]:
    local = []
    for r in data.local:
        a = r.boundary.answered
        mech = "-"
        if r.previous_mass_per_seed is not None:
            gates = sum(r.boundary_gate_per_seed)
            mech = (
                "previous-token mass "
                + ", ".join(f"{v:.2f}" for v in r.previous_mass_per_seed)
                + "; boundary with the window closed "
                + _percents(r.closed_boundary_per_seed)
                + "%, with the head of largest previous-token mass knocked out "
                + _percents(r.knocked_boundary_per_seed)
                + " (unablated "
                + _percents(r.knock_base_boundary_per_seed)
                + ")%, with the gates rotated by one offset "
                + _percents(r.rotated_boundary_per_seed)
                + f"%; boundary gates in {gates}/{r.seeds} seeds"
                + _path_gate_text(r.path_gates_per_seed)
            )
        local.append(
            [
                _task(r.vocab),
                str(r.local_window or "none"),
                ", ".join(f"{100 * b:.0f}" for b in r.boundary.boundary),
                share_text(a.k, a.n),
                percent_text(r.mean),
                percent_text(r.worst_within),
                mech,
            ]
        )
    coordination = [
        [
            str(p.kv_heads),
            f"{p.overlap_penalty:g}",
            ", ".join(map(str, p.covered_per_seed)),
            f"{p.covered.mean:.1f} [{p.covered.ci95[0]:.1f}, {p.covered.ci95[1]:.1f}]",
            percent_text(p.mean),
            percent_text(p.worst_within),
            share_text(p.uniform.k, p.uniform.n),
            f"{p.loss.mean:.3f}",
        ]
        for p in data.coordination
    ]
    return [
        MeasuredTable(
            "The boundary through a local path: per row the boundary accuracy of every seed "
            "(%), the seeds that answer it (boundary >= half the seed's within-window mean; "
            "Wilson 95% interval), mean and worst within-window phase (Student t 95% over "
            "seeds), and the mechanism per seed",
            [
                "task",
                "w",
                "boundary per seed",
                "answered",
                "mean",
                "worst within",
                "path",
            ],
            local,
        ),
        MeasuredTable(
            f"Coordination: the key gates' overlap penalty lambda; distinct phases the "
            f"concentrated key gates answer per seed (of S = {data.S}), their mean, mean "
            "accuracy, worst within-window phase (Student t 95% over seeds), seeds whose "
            "worst within-window phase is at least half their within-window mean (Wilson), "
            "held-out loss. The idealized flow's lambda* (above it no two heads share an "
            "offset at a local minimum): "
            + "; ".join(
                f"{t.kv_heads} heads {t.threshold:.3f} (lowest {t.lowest:.4f})"
                for t in data.thresholds
            ),
            [
                "KV heads",
                "lambda",
                "covered per seed",
                "covered",
                "mean",
                "worst within",
                "uniform",
                "loss",
            ],
            coordination,
        ),
    ]


def draw(data: OpenQuestionsData):
    import matplotlib.pyplot as plt

    with _style.context():
        fig, axes = plt.subplots(2, 2, figsize=(11, 8))
        ax = axes[0, 0]
        labels = []
        for i, r in enumerate(data.local):
            b = 100 * np.asarray(r.boundary.boundary)
            x = i + np.linspace(-0.15, 0.15, b.size)
            ax.scatter(x, b, color=_style.color(0 if r.vocab is None else 1), s=14)
            a = r.boundary.answered
            ax.annotate(f"{a.k}/{a.n}", (i, 103), ha="center", fontsize=7, color="0.3")
            labels.append(f"w={r.local_window}\n{_task(r.vocab)}")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_xlim(-0.5, len(labels) - 0.5)
        ax.set_ylim(-3, 110)
        ax.set_ylabel("boundary-phase accuracy per seed (%)")
        ax.set_title("The boundary with an exact local window (seeds answering)")

        ax = axes[0, 1]
        for r in data.local:
            if r.previous_mass_per_seed is None:
                continue
            c = _style.color(LOCAL_WINDOWS.index(r.local_window) % 8)
            marker = "o" if r.vocab is None else "s"
            ax.scatter(
                r.previous_mass_per_seed,
                100 * np.asarray(r.boundary.boundary),
                color=c,
                marker=marker,
                label=f"w={r.local_window} {_task(r.vocab)}",
            )
            ax.scatter(
                r.previous_mass_per_seed,
                100 * np.asarray(r.closed_boundary_per_seed),
                color=c,
                marker=marker,
                facecolors="none",
            )
        ax.set_xlabel("previous-token attention mass (first layer, largest head)")
        ax.set_ylabel("boundary accuracy (%); open: window closed")
        ax.set_ylim(-3, 105)
        ax.set_title("The path: previous-token attention and the causal check")
        ax.legend(fontsize=6.5)

        for ax, value, scale, title in (
            (axes[1, 0], lambda p: p.covered, 1, "Phases the key gates answer"),
            (axes[1, 1], lambda p: p.worst_within, 100, "Worst within-window phase"),
        ):
            weights = sorted({p.overlap_penalty for p in data.coordination})
            for k, kv in enumerate(sorted({p.kv_heads for p in data.coordination})):
                pts = [p for p in data.coordination if p.kv_heads == kv]
                # one column per weight (evenly spaced: 0 has no place on a log axis)
                x = np.array([weights.index(p.overlap_penalty) for p in pts])
                m = [value(p) for p in pts]
                ax.errorbar(
                    x + 0.1 * k,
                    [scale * v.mean for v in m],
                    yerr=np.array(
                        [
                            [scale * (v.mean - v.ci95[0]), scale * (v.ci95[1] - v.mean)]
                            for v in m
                        ]
                    ).T,
                    color=_style.color(k),
                    marker=_style.MARKERS[k],
                    capsize=3,
                    label=f"{kv} KV heads",
                )
            ax.set_xticks(range(len(weights)))
            ax.set_xticklabels([f"{w:g}" for w in weights])
            ax.set_xlabel("overlap penalty lambda")
            ax.set_title(title)
            ax.legend(fontsize=7)
        axes[1, 0].set_ylabel(f"distinct phases (of S = {data.S})")
        axes[1, 0].set_ylim(-0.3, data.S + 0.3)
        axes[1, 1].set_ylabel("accuracy (%)")
        axes[1, 1].set_ylim(-3, 105)
        fig.tight_layout()
    return fig


def claim(data: OpenQuestionsData) -> str:
    text = (
        "The paper's open questions on trained models: an exact local window beside the "
        "8-KV W8/S8 compressor (docs/theory.md §10: the boundary phase), and the key gates' "
        "overlap penalty (§9's coordination, lambda* from the idealized flow). Boundary "
        "answered in "
        + "; ".join(
            f"{share_text(r.boundary.answered.k, r.boundary.answered.n)} seeds at w="
            f"{r.local_window} ({_task(r.vocab)})"
            for r in data.local
        )
        + ". With the penalty: "
        + "; ".join(
            f"{p.kv_heads} KV, lambda={p.overlap_penalty:g}: {p.covered.mean:.1f} phases "
            f"covered, worst within-window {100 * p.worst_within.mean:.1f}%"
            for p in data.coordination
        )
        + "."
    )
    return text


FIGURE = Figure(
    "open_questions",
    "The paper's open questions: the boundary through a local path, coordination",
    claim,
    compute,
    draw,
    cost=0.0,
    tables=tables,
    data=OpenQuestionsData,
    after=("paper_matrix",),
    study=True,  # hours of training on 2 cores: `reproduce --only` (docs/trained.md)
)
