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
from ..internal._records import Record
from ..trained._local_path import boundary_gates
from ..trained._mechanisms import GateOffsets
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._matrix_stats import percent_text
from ._mechanism_summaries import covered_phases
from ._open_questions import (
    PATH_MASS,
    LocalRow,
    PathGate,
    boundary_answers,
    row_label,
    task_label,
)
from ._open_questions_draw import draw_open_questions
from ._stats import share_text, t_interval, wilson_count

ROW = "W8/S8 8 KV"
# The local-window rows this figure trains, 8 seeds each: (vocab (None: distinct tokens),
# window w (0: none), steps (None: the matrix's 2,800)). The other (w, steps) pairs are a
# `sweep matrix` away (docs/trained.md, "Open questions").
LOCAL_ROWS = (
    (None, 0, None),
    (None, 1, None),
    (None, 2, None),
    (48, 0, None),
    (48, 1, None),
    (48, 2, None),
    (None, 0, 5600),
    (None, 1, 5600),
    (None, 2, 5600),
    (None, 8, 5600),
    (48, 0, 5600),
    (48, 2, 5600),
)
# The overlap penalty's weights at each KV-head count (0: the matrix's row).
PENALTIES = {4: (0.0, 0.1, 1.0), 8: (0.0, 0.01, 0.1, 1.0)}
COORDINATION_ROWS = {4: "W8/S8 4 KV", 8: "W8/S8 8 KV"}


def _local(w: int, vocab, steps=None) -> StudyRow:
    changes = (("local_window", w),) if w else ()
    return StudyRow(ROW, vocab=vocab, changes=changes, steps=steps, mechanisms=bool(w))


def full_studies() -> tuple[list[StudyRow], list[StudyRow]]:
    """`(local, coordination)`: the local-window rows (`LOCAL_ROWS`) and the coordination
    rows (the weights of `PENALTIES` at 4 and 8 KV heads, distinct tokens)."""
    local = [_local(w, v, steps) for v, w, steps in LOCAL_ROWS]
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
    # knockouts (seeds, layers, q_heads, period) index blocks; the first local layer is block
    # 0 (`local_blocks`), the reader the last block
    knocked = np.asarray(m.knockout_accuracy)[..., phases].mean(axis=-1)
    rotated = np.asarray(m.rotated_accuracy)[:, list(m.rotations).index(1)]
    gates = [_path_gates(m, s, S) for s in range(previous.shape[0])]
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
        path_heads_per_seed=(previous >= PATH_MASS).sum(axis=-1).tolist(),
        knocked_path_boundary_per_seed=knocked[:, 0].min(axis=-1).tolist(),
        knocked_reader_boundary_per_seed=knocked[:, -1].min(axis=-1).tolist(),
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
        curve_steps=np.asarray(result.curve_steps).tolist(),
        curve_per_seed=curve.tolist(),
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


def compute(context: FigureContext) -> OpenQuestionsData:
    quick = context.quick
    base = QUICK_SIZE if quick else FULL_SIZE
    local, coordination = quick_studies() if quick else full_studies()
    rows = [
        local_row(s, base, study_result(s, base, context.cache, announce=announce))
        for s in local
    ]
    points = [
        coordination_point(
            s, base, study_result(s, base, context.cache, announce=announce)
        )
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
    local, coordination = quick_studies() if quick else full_studies()
    rows = "; ".join(
        f"w={s.changes[0][1] if s.changes else 0} ({task_label(s.vocab)}, "
        f"{s.size(base).train.steps:,} steps)"
        for s in local
    )
    weights = "; ".join(
        f"{kv} KV heads: "
        + ", ".join(
            f"{s.overlap_penalty:g}"
            for s in coordination
            if s.architecture(base).kv_heads == kv
        )
        for kv in sorted({s.architecture(base).kv_heads for s in coordination})
    )
    return {
        "rows": f"'{ROW}' with an exact local window of w positions on the context "
        f"stream (0: none), on distinct tokens or tokens drawn with replacement from V "
        f"symbols: {rows}; the key gates' overlap penalty lambda ({weights})",
        "task": f"the matrix's: T={t.T}, N={t.N}, phases mod {t.period}",
        "training": f"the matrix's: {tr.steps} steps of {tr.batch} contexts unless a row "
        f"says otherwise, {base.seeds} seeds a row",
        "held out": f"{tr.eval_contexts} contexts",
    }


def findings(rows: list[LocalRow], points: list[CoordinationPoint]) -> str:
    parts = [
        f"{row_label(r)}: boundary answered in "
        f"{share_text(r.boundary.answered.k, r.boundary.answered.n)} seeds"
        for r in rows
    ]
    parts += [
        f"lambda={p.overlap_penalty:g} {p.kv_heads} KV: covered {p.covered.mean:.1f}, "
        f"worst within {100 * p.worst_within.mean:.1f}%"
        for p in points
    ]
    return "; ".join(parts)


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
                + _values(r.previous_mass_per_seed, scale=1.0, digits=2)
                + "; boundary with the window closed "
                + _values(r.closed_boundary_per_seed)
                + f"%; first-layer heads with at least {PATH_MASS:g} of their attention "
                "on the position before "
                + ", ".join(map(str, r.path_heads_per_seed))
                + "; boundary with the most damaging single head knocked out, first layer "
                + _values(r.knocked_path_boundary_per_seed)
                + "%, last layer "
                + _values(r.knocked_reader_boundary_per_seed)
                + "% (unablated "
                + _values(r.knock_base_boundary_per_seed)
                + "%); with the gates rotated by one offset "
                + _values(r.rotated_boundary_per_seed)
                + f"%; boundary gates in {gates}/{r.seeds} seeds"
                + _path_gate_text(r.path_gates_per_seed)
            )
        local.append(
            [
                task_label(r.vocab),
                str(r.local_window or "none"),
                f"{r.steps:,}",
                _values(r.boundary.boundary),
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
                "steps",
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


def _values(values, seeds=None, scale=100.0, digits=0) -> str:
    """`values` of the `seeds` (None: every seed), scaled (percent by default), joined."""
    seeds = range(len(values)) if seeds is None else seeds
    return ", ".join(f"{scale * values[i]:.{digits}f}" for i in seeds)


def _row_path_claim(r: LocalRow) -> str:
    """What the seeds of one window row that answer the boundary show."""
    answered = [i for i, a in enumerate(r.boundary.answered_per_seed()) if a]
    others = [v for i, v in enumerate(r.previous_mass_per_seed) if i not in answered]
    crossed = [r.crossed_step_per_seed[i] for i in answered]
    return (
        f" At {row_label(r)} seeds {', '.join(map(str, answered))} answer it "
        f"({_values(r.boundary.boundary, answered)}%): a first-layer head puts "
        f"{_values(r.previous_mass_per_seed, answered, 1.0, 2)} of its attention on the "
        f"position before (the other seeds at most {max(others, default=0):.2f}); with the "
        f"window closed at evaluation their boundary is "
        f"{_values(r.closed_boundary_per_seed, answered)}%, with the most damaging single "
        f"first-layer head knocked out {_values(r.knocked_path_boundary_per_seed, answered)}"
        f"% ({_values(r.path_heads_per_seed, answered, 1.0)} heads carry the path), with "
        f"the most damaging last-layer head (the reader) "
        f"{_values(r.knocked_reader_boundary_per_seed, answered)}%; "
        + (
            "their training loss never goes below the no-boundary reader's."
            if all(c is None for c in crossed)
            else "their training loss goes below the no-boundary reader's at step "
            + ", ".join("never" if c is None else f"{c:,}" for c in crossed)
            + "."
        )
    )


def _path_claim(rows: list[LocalRow]) -> str:
    window = [r for r in rows if r.previous_mass_per_seed is not None]
    answering = [r for r in window if r.boundary.answered.k]
    if not answering:
        n = sum(r.seeds for r in window)
        top = max(v for r in window for v in r.previous_mass_per_seed)
        return (
            f" No seed with a local window answers it (0 of {n}); their largest "
            f"previous-token mass is {top:.2f}."
        )
    text = "".join(_row_path_claim(r) for r in answering)
    overlap = seed_overlap(answering)
    if overlap is not None:
        one, two, shared, chance, pairs = overlap
        text += (
            f" Seeds {', '.join(map(str, shared))} answer it both at {row_label(one)} and at "
            f"{row_label(two)}: were each row's answering seeds drawn at random, an overlap "
            f"this large would have the chance {chance:.3f} (hypergeometric; the smallest "
            f"of {pairs} pairs of rows on one task)."
        )
    return text


def seed_overlap(rows: list[LocalRow]):
    """The pair of rows on one task (same vocab and seeds) whose answering seeds overlap
    least by chance: `(row, row, shared seeds, chance, pairs compared)`, the chance
    $P(|A \\cap B| \\ge k)$ of the hypergeometric law of two independent draws of $|A|$ and
    $|B|$ of the n seeds; None where no pair shares a seed."""
    from scipy.stats import hypergeom

    sets = [
        (r, {i for i, a in enumerate(r.boundary.answered_per_seed()) if a})
        for r in rows
    ]
    best, pairs = None, 0
    for i, (r, a) in enumerate(sets):
        for q, b in sets[i + 1 :]:
            if r.vocab != q.vocab or r.seeds != q.seeds:
                continue
            pairs += 1
            shared = sorted(a & b)
            if not shared:
                continue
            chance = float(hypergeom.sf(len(shared) - 1, r.seeds, len(a), len(b)))
            if best is None or chance < best[3]:
                best = (r, q, shared, chance)
    return None if best is None else (*best, pairs)


def claim(data: OpenQuestionsData) -> str:
    return (
        "The paper's open questions on trained models: an exact local window beside the "
        "8-KV W8/S8 compressor (docs/theory.md §10: the boundary phase), and the key gates' "
        "overlap penalty (§9's coordination, lambda* from the idealized flow). Boundary "
        "answered in "
        + "; ".join(
            f"{share_text(r.boundary.answered.k, r.boundary.answered.n)} seeds at "
            f"{row_label(r)}"
            for r in data.local
        )
        + "."
        + _path_claim(data.local)
        + " With the penalty: "
        + "; ".join(
            f"{p.kv_heads} KV, lambda={p.overlap_penalty:g}: {p.covered.mean:.1f} phases "
            f"covered, worst within-window {100 * p.worst_within.mean:.1f}%"
            for p in data.coordination
        )
        + "."
    )


def draw(data: OpenQuestionsData):
    """The figure (`_open_questions_draw.draw_open_questions`): the boundary per seed, the
    path's causal checks, the loss curves, and the coordination sweep."""
    return draw_open_questions(data)


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
