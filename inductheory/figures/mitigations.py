"""Mitigations: window, stride, uniform gates and coordination, beside the paper's numbers."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from ..experiments._mitigations import (
    PAPER,
    SETTINGS,
    CoordinationRow,
    MitigationRow,
    coordination_table,
    coordination_threshold,
    mitigation_table,
    mitigation_task,
    selection_edges,
)
from ..flow._config import FlowConfig
from ..internal._records import Record, field_values
from . import _runs, _style
from ._figure import Figure, FigureData, MeasuredTable
from ._stats import (
    compact,
    interval_text,
    kendall_tau,
    share_text,
    span_text,
    stored_parameter,
    wilson_interval,
)


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


def _lower(n: int) -> str:
    """The Wilson 95% lower bound of n/n, to 2 decimals below 100 trials, 3 below 1000, else 4."""
    digits = 2 if n < 100 else 3 if n < 1000 else 4
    return f"{wilson_interval(n, n)[0]:.{digits}f}"


def _count(k: int, n: int) -> str:
    """`k/n [low, high]` (Wilson 95%), 3 decimals where an end lies within 0.05 of 0 or 1 (from
    20 trials on), else 2."""
    lo, hi = wilson_interval(k, n)
    near = (lo < 0.05 or hi > 0.95) and n >= 20
    return f"{k}/{n} {interval_text(lo, hi, 3 if near else 2)}"


def _sci_span(values) -> str:
    """A range of small numbers on one power of ten: `2.9-3.0e-4`."""
    e = math.floor(math.log10(max(values)))
    return span_text([v / 10**e for v in values], lambda x: f"{x:.1f}") + f"e{e}"


def _and(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _pair(S, W) -> str:
    return f"({S},{W})"


def _tau(r) -> float:
    return r.variant.get("tau", 1.0) if r.variant.get("objective") else 1.0


def _lam(r) -> float:
    return r.variant.get("coordination", 0.0)


def _settings_claim(data: MitigationsData) -> str:
    """The mitigation table's part of the claim."""
    table, task = data.table, data.parameters["task"]
    flow = data.parameters["flow"]
    rows = {(r.S, r.W, r.gates): r for r in table}
    settings = list(dict.fromkeys((r.S, r.W) for r in table))
    learned = [rows[(S, W, "learned")] for S, W in settings]
    hard = [rows[(S, W, "hard optimum")] for S, W in settings]
    uniform = [rows[(S, W, "uniform")] for S, W in settings]
    seeds = sorted({r.seeds for r in learned})
    total = sum(r.seeds for r in learned)
    selected = sum(r.status["selected"] for r in learned)
    gap_one = sum(round(r.gap.mean * r.seeds) for r in learned)
    (T,) = {r.L * r.S for r in table}
    (H,) = {r.H for r in table}
    if selected == total:
        per = "/".join(f"{n}/{n}" for n in seeds)
        sel = f"every seed selected: {per} per setting (Wilson 95% lower bound " + (
            f"{'/'.join(_lower(n) for n in seeds)})"
            + (
                f", {total}/{total} in all (lower bound {_lower(total)})"
                if len(learned) > 1
                else ""
            )
        )
    else:
        sel = f"selected: {share_text(selected, total)} seeds (Wilson 95%)"
    text = (
        "Exact per-phase measures (docs/theory.md §9, §10) on exact-geometry tasks with T "
        f"= L*S = {T} positions, H={H}, N={stored_parameter(task, 'N')}, beta="
        f"{stored_parameter(task, 'beta')}, gamma={stored_parameter(task, 'gamma')}, kappa="
        f"{stored_parameter(task, 'kappa')} and all queries (the boundary phase S-1 included), "
        f"for (S, W) in {{{', '.join(_pair(S, W) for S, W in settings)}}}. Learned gates: the "
        f"final gates of {'/'.join(map(str, seeds))} reduced flows per setting (rho="
        f"{compact(float(stored_parameter(flow, 'rho')))}, delta="
        f"{compact(float(stored_parameter(flow, 'delta')))}; {sel}); hard optimum: the one-hot "
        "shared gate of least population loss, by exhaustive enumeration of key and value "
        "offsets of both heads (a vertex, not shown to be optimal among all gates); uniform "
        "gates 1/W. "
    )
    if gap_one == total:
        text += (
            "Every learned seed has phase gap 1 at every setting "
            f"({total}/{total}, Wilson 95% lower bound {_lower(total)}; "
        )
    else:
        text += f"Learned seeds with phase gap 1: {share_text(gap_one, total)} (Wilson 95%; "
    text += "per-seed accuracy is 0 or 1 per phase). "
    ties = all(r.gap.mean == 0 and r.mean_accuracy.mean == 0 for r in uniform)
    p_uniform = [r.mean_target_probability.mean for r in uniform]
    p_other = [r.mean_target_probability.mean for r in learned + hard]
    text += (
        "Uniform gates "
        + (
            "tie at every phase: gap 0, mean accuracy 0, and "
            if ties
            else f"have gaps {span_text([r.gap.mean for r in uniform])} and "
        )
        + ("the lowest" if max(p_uniform) < min(p_other) else "not always the lowest")
        + f" target probability ({_sci_span(p_uniform)} against {_sci_span(p_other)})."
    )
    # learned flows whose every seed put both heads on one offset, under a window W > S
    collapsed = []
    for r in learned:
        ((choice, k),) = r.selections.items() if len(r.selections) == 1 else ((0, 0),)
        offsets = set(str(choice).split(","))
        if r.W > r.S and k == r.seeds and len(offsets) == 1:
            collapsed.append((r, int(offsets.pop())))
    if collapsed:
        boundary = [
            r
            for r, offset in collapsed
            if offset == r.S - 1 and r.accuracy == [0.0] * (r.S - 1) + [1.0]
        ]
        counts = sorted({r.seeds for r, _ in collapsed})
        text += (
            " With windows the flows collapse: at "
            + ", ".join(_pair(r.S, r.W) for r, _ in collapsed)
            + f" all {'/'.join(map(str, counts))} seeds put both heads on one offset"
            + (
                " ("
                + ", ".join(_pair(r.S, r.W) for r in boundary)
                + ": offset S-1, answering only the boundary phase)"
                if boundary
                else ""
            )
        )
        at4 = {r.W: r.mean_accuracy.mean for r in learned if r.S == 4}
        if 4 in at4 and len(at4) > 1:
            wider: dict[str, list[int]] = {}
            for W, a in at4.items():
                if W > 4:
                    wider.setdefault(f"{a:.2f}", []).append(W)
            text += (
                ", so at S=4 the mean accuracy "
                + (
                    "falls"
                    if all(at4[4] > a for a in at4.values() if a != at4[4])
                    else "moves"
                )
                + f" from {at4[4]:.2f} (W=4) to "
                + ", ".join(
                    f"{a} (W={', '.join(map(str, Ws))})" for a, Ws in wider.items()
                )
            )
        text += ";"
    above = sum(a.mean_loss.mean > h.mean_loss.mean for a, h in zip(learned, hard))
    text += (
        (" the" if collapsed else " The")
        + " learned loss is above the hard optimum's at "
        + (
            "every setting"
            if above == len(learned)
            else f"{above} of the {len(learned)} settings"
        )
    )
    both = {r.W: all(a == 1 for a in r.accuracy) for r in hard if r.S == 2}
    if len(both) > 1:
        from_W = [W for W in sorted(both) if all(both[w] for w in both if w >= W)]
        text += ", and the hard optimum answers both phases of S=2 " + (
            f"once W >= {from_W[0]}" if from_W else "at no W"
        )
    return text + "."


def _paper_claim(data: MitigationsData) -> str:
    """The comparison with the paper's gaps, where the data have it: the settings of the
    paper's controlled family ordered against each other; the others (another model, another
    task) each named with its model, outside that order."""
    paper = [p for p in data.paper if p.controlled]
    others = [p for p in data.paper if not p.controlled]
    if not paper:
        return ""
    learned = [p for p in paper if p.gates == "learned"]
    uniform = [p for p in paper if p.gates == "uniform"]
    order = sorted(paper, key=lambda p: -p.paper_gap)
    reproduced = all(u.gap < min(p.gap for p in learned) for u in uniform)
    curve: dict[str, list[int]] = {}
    for p in sorted(learned, key=lambda p: p.gap_of_mean_curve):
        curve.setdefault(f"{p.gap_of_mean_curve:.0f}", []).append(p.S)
    tau = kendall_tau(
        [p.gap_of_mean_curve for p in learned], [p.paper_gap for p in learned]
    ).tau
    (W,) = {p.W for p in learned}
    gaps = {p.gap for p in learned}
    return (
        " Against the paper's gaps on trained models of its controlled family (1 KV head; "
        + " > ".join(f"{p.setting} {compact(p.paper_gap)}%" for p in order)
        + "): only 'uniform averaging has the smaller gap and a low mean accuracy' is "
        + ("reproduced" if reproduced else "reproduced, and not even that")
        + "; the per-seed gap is "
        + (
            f"{gaps.pop():.0f}% for every learned setting"
            if len(gaps) == 1
            else f"{span_text(sorted(gaps), lambda x: f'{x:.0f}')}% over the learned settings"
        )
        + ", and the gap of the seed-mean accuracy curve orders the strides "
        + (
            "the other way"
            if tau < 0
            else "as the paper does"
            if tau > 0
            else "differently"
        )
        + f" (W={W}: "
        + ", ".join(f"{_and(f'S={S}' for S in Ss)} {g}%" for g, Ss in curve.items())
        + ")."
        + "".join(
            f" Not of that family, so outside that order: the paper's {p.setting} number, "
            f"{compact(p.paper_gap)}, is the largest phase gap of {p.paper_model} (ours at "
            f"S={p.S}, W={p.W}: per-seed gap {p.gap:.0f}%, seed-mean curve "
            f"{p.gap_of_mean_curve:.0f}%)."
            for p in others
        )
    )


def _coordination_claim(data: MitigationsData) -> str:
    """The coordination part: lambda*, the overlap penalty and the worst-phase objective."""
    coord, threshold = data.coordination, data.threshold
    Hs = sorted({r.H for r in coord})
    queries = list(dict.fromkeys(r.queries for r in coord))
    (S,) = {r.S for r in coord}
    star = {(r.H, r.queries): r.lambda_star for r in threshold}
    lowest = {(r.H, r.queries): r.lambda_star_lowest for r in threshold}
    full = sorted({r.seeds for r in coord if _tau(r) >= 1})
    budget = sorted({r.seeds for r in coord if _tau(r) < 1})
    text = (
        f" Coordination (W=S={S}, H "
        + (f"in {{{', '.join(map(str, Hs))}}}" if len(Hs) > 1 else f"= {Hs[0]}")
        + f", queries {_and(queries)}; {'/'.join(map(str, full))} seeds per variant"
        + (
            f", {'/'.join(map(str, budget))} for the worst-phase objective at tau < 1"
            if budget
            else ""
        )
        + "). The threshold lambda*, above which no hard selection with two heads on one "
        "offset is a local minimum of the penalized loss (closed-form edge derivatives, checked "
        "against sympy and autodiff in proofs/coordination_threshold.py), is "
    )

    def by_queries(values: dict) -> list[str]:
        out = []
        for i, q in enumerate(queries):
            v = "/".join(
                sorted({f"{x:.3f}" for (_, q2), x in values.items() if q2 == q})
            )
            out.append(f"{v} with {q}" + (" queries" if i == 0 else ""))
        return out

    triple = {k: v for k, v in lowest.items() if v < star[k] * (1 - 1e-6)}
    text += (
        _and(by_queries(star))
        + f" (H = {_and(map(str, Hs))}"
        + (
            "; a triple of heads "
            + _and(
                f"{triple[k]:.3f}" for k in sorted(triple, key=_query_order(queries))
            )
            if triple
            else ""
        )
        + ")."
    )

    # runs above lambda*: the threshold rows above 1 and the penalties above their group's
    above_thr = [r for r in threshold if r.factor > 1]
    penalties = [r for r in coord if _lam(r) > 0]
    above_pen = [r for r in penalties if _lam(r) > star[(r.H, r.queries)]]
    runs = above_thr + above_pen
    lams = {q: {_lam(r) for r in above_pen if r.queries == q} for q in queries}
    common = set.intersection(*lams.values())
    extra = {q: sorted(v - common) for q, v in lams.items() if v - common}
    seeds = sorted({r.seeds for r in runs})
    pooled = sum(r.seeds for r in runs)
    distinct = sum(_distinct_seeds(r) for r in runs)
    factors = sorted({r.factor for r in above_thr})
    text += (
        " Above it ("
        + _and(
            [f"{'/'.join(f'{f:g}' for f in factors)} lambda*"]
            + [f"{x:g}" for x in sorted(common)]
        )
        + "".join(
            f"; with {q} queries also {_and(f'{x:g}' for x in v)}"
            for q, v in extra.items()
        )
        + ") "
        + (
            f"every seed ended on distinct offsets: {'/'.join(f'{n}/{n}' for n in seeds)} per "
            f"run, Wilson 95% lower bound {'/'.join(_lower(n) for n in seeds)}, "
            f"{pooled}/{pooled} pooled over the {len(runs)} runs, lower bound {_lower(pooled)}."
            if distinct == pooled
            else f"{_count(distinct, pooled)} seeds ended on distinct offsets, pooled over the "
            f"{len(runs)} runs."
        )
    )

    below = [r for r in threshold if r.factor < 1]
    (factor,) = {r.factor for r in below}
    strict = []
    for H in Hs:
        counts = {
            (len(r.strict_minima), r.overlapped_selections) for r in below if r.H == H
        }
        (k, n), *_ = sorted(counts)
        strict.append(
            (f"all {n}" if k == n else f"{k} of the {n}")
            + (" overlapped selections" if not strict else "")
            + f" at H={H}"
        )
    triples_strict = any(
        len(set(c)) == 1 for r in below for c in r.strict_minima if len(c) > 2
    )
    text += (
        " Below it the overlapped selections with a pair of heads are strict local minima "
        f"(at {factor:g} lambda*: {_and(strict)}"
        + (
            ", the triples not"
            if any(r.H > 2 for r in below) and not triples_strict
            else ""
        )
        + "; every one enumerated, not a sample)"
    )
    # seeds of more than two heads that ended overlapped below lambda*
    many = [H for H in Hs if H > 2]
    for H in many:
        thr = [r for r in below if r.H == H]
        pen = [r for r in penalties if r.H == H and _lam(r) <= star[(H, r.queries)]]
        stuck = [r for r in thr + pen if _overlapped(r)]
        if not stuck:
            text += f" and no H={H} seed ends there"
            continue
        text += (
            f" and some H={H} seeds end there: "
            + _and(
                f"{_count(_overlapped(r), r.selected_seeds)} ({r.queries})" for r in thr
            )
            + f" at {factor:g} lambda*"
        )
        for lam in sorted({_lam(r) for r in pen}, reverse=True):
            at = [r for r in pen if _lam(r) == lam]
            if len(at) == 1:
                (r,) = at
                k, n = _distinct_seeds(r), r.selected_seeds
                text += (
                    f", {_count(_overlapped(r), n)} {r.queries} at lambda={lam:g} "
                    f"({k}/{n} distinct, {_count(k, n).split(' ', 1)[1]})"
                )
            else:
                text += (
                    f"; lambda={lam:g}: H={H} "
                    + _and(
                        f"{_count(_distinct_seeds(r), r.selected_seeds)} {r.queries}"
                        for r in at
                    )
                    + " distinct"
                )
    text += "."
    return (
        text + _two_heads_claim(data, star, penalties, below) + _objective_claim(data)
    )


def _query_order(queries):
    """A sort key of (H, queries) pairs: by the order of `queries`, then H."""
    return lambda k: (queries.index(k[1]), k[0])


def _overlapped(r) -> int:
    """Selected seeds whose heads did not all select distinct offsets."""
    return r.selected_seeds - _distinct_seeds(r)


def _two_heads_claim(data, star, penalties, below) -> str:
    """H=2 under the penalty, the mean objective's shares and what the penalty costs."""
    coord = data.coordination
    text = ""
    pen2 = [r for r in penalties if r.H == 2]
    below2 = [r for r in below if r.H == 2]
    if pen2 and below2:
        seeds = sorted({r.seeds for r in pen2})
        stuck = sum(r.overlapped_seeds for r in below2)
        n_below = sum(r.selected_seeds for r in below2)
        clean = all(_distinct_seeds(r) == r.seeds for r in pen2)
        strict = all(len(r.strict_minima) == r.overlapped_selections for r in below2)
        factor = below2[0].factor
        text += (
            " At H=2 "
            + (
                f"no seed ended overlapped at any lambda >= {min(_lam(r) for r in pen2):g} "
                f"({'/'.join(f'{n}/{n}' for n in seeds)} distinct per run, lower bound "
                f"{'/'.join(_lower(n) for n in seeds)}; "
                if clean
                else "some seeds ended overlapped under the penalty ("
            )
            + f"{_count(stuck, n_below)} overlapped at {factor:g} lambda*)"
            + (", although the pair is then a strict local minimum." if strict else ".")
        )
    means = {(r.H, r.queries): r for r in coord if not r.variant}
    Hs = sorted({H for H, _ in means})
    parts = []
    for i, H in enumerate(Hs):
        rows = [r for (H2, _), r in means.items() if H2 == H]
        parts.append(
            _and(
                f"{_count(_distinct_seeds(r), r.selected_seeds)}"
                + (f" ({r.queries})" if i == 0 else "")
                for r in rows
            )
            + (" distinct" if i == 0 else "")
            + f" at H={H}"
        )
    text += " The mean objective: " + ", ".join(parts) + "."
    cheap = all(
        r.mean_loss.mean <= means[(r.H, r.queries)].mean_loss.mean for r in penalties
    )
    text += (
        " The penalty costs no population loss (mean over seeds no higher than the mean "
        "flow's in every group)"
        if cheap
        else " The penalty raises the population loss (mean over seeds) in some group"
    )
    (S,) = {r.S for r in coord}
    last = [q for H, q in means if H == S - 1]
    if last:
        said = []
        for q in last:
            rows = sorted(
                (r for r in penalties if (r.H, r.queries) == (S - 1, q)), key=_lam
            )
            start = means[(S - 1, q)].worst_accuracy.mean
            if all(r.worst_accuracy.mean == start for r in rows):
                said.append(f"with {q} queries it stays {start:.2g}")
                continue
            ones = [
                _lam(r)
                for i, r in enumerate(rows)
                if all(x.worst_accuracy.mean == 1 for x in rows[i:])
            ]
            said.append(
                f"with {q} queries the worst-phase accuracy (mean over seeds) rises from "
                f"{start:.2f} to "
                + (
                    f"1 at lambda >= {ones[0]:g}"
                    if ones
                    else f"{max(r.worst_accuracy.mean for r in rows):.2f}"
                )
            )
        text += f"; at H = S-1 = {S - 1} " + ", ".join(said)
        if any("stays 0" in s for s in said):
            text += " (the boundary phase)"
    return text + "."


def _objective_claim(data: MitigationsData) -> str:
    """The worst-phase objective, where the data have it."""
    coord = data.coordination
    worst = [r for r in coord if r.variant.get("objective") == "worst-phase"]
    if not worst:
        return ""
    means = {(r.H, r.queries): r for r in coord if not r.variant}
    sharp = [r for r in worst if _tau(r) >= 1]
    clauses = []
    if sharp:
        whole = [r for r in sharp if r.selected_seeds == r.seeds]
        n_whole = sorted({r.seeds for r in whole})
        every = all(_distinct_seeds(r) == r.selected_seeds for r in sharp)
        items = (
            [
                f"{'/'.join(f'{n}/{n}' for n in n_whole)} in "
                f"{_NUMBERS.get(len(whole), len(whole))} groups, lower bound "
                f"{'/'.join(_lower(n) for n in n_whole)}"
            ]
            if whole
            else []
        )
        items += [
            f"H={r.H}, {r.queries}: {_count(r.selected_seeds, r.seeds)} selected, "
            f"{_distinct_seeds(r)}/{r.selected_seeds} distinct"
            + (
                f", lower bound {_lower(r.selected_seeds)}"
                if _distinct_seeds(r) == r.selected_seeds > 0
                else ""
            )
            for r in sharp
            if r.selected_seeds < r.seeds
        ]
        clauses.append(
            f"at tau={'/'.join(sorted({f'{_tau(r):g}' for r in sharp}))} ends distinct in "
            + ("every" if every else "not every")
            + f" selected seed ({'; '.join(items)})"
        )
    soft = [r for r in worst if _tau(r) < 1]
    if soft:
        clauses.append(_unselected_clause(soft))
    for r in soft:
        if r.selected_seeds == 0 and r.worst_accuracy.mean == 1:
            mean = means[(r.H, r.queries)].mean_loss.mean
            loss = r.mean_loss.mean
            clauses.append(
                f"at H={r.H}, {r.queries}, tau={_tau(r):g} the unselected gates answered "
                f"all {_phases(r)} {r.queries} phases (worst accuracy 1) at a "
                f"{'higher' if loss > mean else 'lower'} loss ({loss:.3f} against {mean:.3f} "
                "for the mean flow)"
            )
    return " The worst-phase objective " + "; ".join(clauses) + "."


def _unselected_clause(soft) -> str:
    """What the worst-phase flows at tau < 1 (`soft`, their step budget) ended on."""
    taus = sorted({_tau(r) for r in soft}, reverse=True)
    budget = soft[0].variant
    groups = list(dict.fromkeys((r.H, r.queries) for r in soft))
    rows = {g: [r for r in soft if (r.H, r.queries) == g] for g in groups}
    none = [g for g in groups if all(r.selected_seeds == 0 for r in rows[g])]
    seeds = sorted({r.seeds for r in soft})
    text = (
        f"at tau in {{{', '.join(f'{t:g}' for t in taus)}}} (budget t_max="
        f"{compact(budget['t_max'])}, {budget['max_steps']:,} steps, "
        f"{'/'.join(map(str, seeds))} seeds) the flows ended unselected"
    )
    parts = []
    for H, q in (g for g in groups if g not in none):
        rs = rows[(H, q)]
        n = rs[0].seeds
        if all(_distinct_seeds(r) == r.selected_seeds == r.seeds == n for r in rs):
            parts.append(
                f"H={H}, {q} ({n}/{n} selected and distinct, {_count(n, n).split(' ', 1)[1]})"
            )
        else:
            parts.append(
                f"H={H}, {q} ("
                + ", ".join(
                    f"tau={_tau(r):g}: {r.selected_seeds}/{r.seeds} selected, "
                    f"{_distinct_seeds(r)} distinct"
                    for r in rs
                )
                + ")"
            )
    if parts:
        text += (" except at " if none else " nowhere: ") + _and(parts)
    return text


_NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def claim(data: MitigationsData) -> str:
    """The claim, its settings, seeds, shares, thresholds and losses from `data`."""
    return _settings_claim(data) + _paper_claim(data) + _coordination_claim(data)


def _phases(r) -> str:
    """The number of query phases of a coordination row, in words where short."""
    n = r.S - 1 if r.queries == "within" else r.S
    return _NUMBERS.get(n, str(n))


KINDS = ("learned", "hard optimum", "uniform")
# worst-phase flows often end unselected (stiff at small tau): a smaller budget
WORST_BUDGET = {"t_max": 1e6, "max_steps": 20_000}
TASK = dict(H=2, T=48, N=4096, beta=4.0, gamma=1.0, kappa=1.0, queries="all")
# Seeds per coordination variant: 256 where a claim counts every seed; the worst-phase flows at
# tau < 1, which run to their step budget, keep 64.
COORDINATION_SEEDS, BUDGET_SEEDS = 256, 64
# The overlap penalty's weight just below and just above lambda* of each group.
THRESHOLD_FACTORS = (0.8, 1.2)


def _variants(quick: bool) -> list[dict]:
    if quick:
        return [{}, {"coordination": 0.1}]
    return (
        [{}]
        + [{"coordination": lam} for lam in (0.03, 0.1, 0.3, 1.0)]
        + [
            {"objective": "worst-phase", "tau": tau, **WORST_BUDGET}
            for tau in (1.0, 0.3, 0.1)
        ]
    )


def _seeds_of(variant: dict, quick: bool) -> int:
    if quick:
        return 4
    return BUDGET_SEEDS if variant.get("tau", 1.0) < 1 else COORDINATION_SEEDS


def _coordination(
    quick: bool, shapes, queries, config, runner, task
) -> list[CoordinationRow]:
    """`coordination_table` rows of every variant, each with its seed count (`_seeds_of`), in the
    order group by group, variant by variant."""
    variants = _variants(quick)
    by_seeds: dict[int, list[dict]] = {}
    for v in variants:
        by_seeds.setdefault(_seeds_of(v, quick), []).append(v)
    rows = []
    for n, vs in by_seeds.items():
        rows += coordination_table(
            vs,
            shapes=shapes,
            queries=queries,
            seeds=n,
            base=config,
            runner=runner,
            **task,
        )
    groups = [(H, S, q) for (H, S) in shapes for q in queries]
    return sorted(
        rows,
        key=lambda r: (
            groups.index((r.H, r.S, r.queries)),
            variants.index(r.variant),
        ),
    )


def _group_flows(quick: bool, shapes, queries, config, cache_dir, task) -> None:
    """The mean-objective flows of each group (plain, overlap-penalized and at the threshold
    factors), run together into the cache the tables read: one compiled program per group instead
    of one per kind of variant (`_runs.flow_runs_together`; the same numbers). The worst-phase
    flows keep their own runs: with their 20,000-step budget, a batch of more than 64 lanes
    would compile a second program for its long pass."""
    for (H, S), q in itertools.product(shapes, queries):
        group = mitigation_task(S, S, H=H, queries=q, **task)
        lam = coordination_threshold(group).threshold
        variants = [v for v in _variants(quick) if "objective" not in v] + [
            {"coordination": f * lam} for f in THRESHOLD_FACTORS
        ]
        seeds = [_seeds_of(v, quick) for v in variants[: -len(THRESHOLD_FACTORS)]] + [
            4 if quick else COORDINATION_SEEDS
        ] * len(THRESHOLD_FACTORS)
        configs = [FlowConfig(**{**config.to_dict(), **v}) for v in variants]
        _runs.flow_runs_together(group, configs, seeds, cache_dir)


def _threshold_rows(shapes, queries, seeds, config, runner, task) -> list[ThresholdRow]:
    """Per group: lambda* (`coordination_threshold`) and flows at `THRESHOLD_FACTORS` lambda*."""
    rows = []
    for (H, S), q in itertools.product(shapes, queries):
        ct = coordination_threshold(mitigation_task(S, S, H=H, queries=q, **task))
        variants = [{"coordination": f * ct.threshold} for f in THRESHOLD_FACTORS]
        table = coordination_table(
            variants,
            shapes=((H, S),),
            queries=(q,),
            seeds=seeds,
            base=config,
            runner=runner,
            **task,
        )
        for f, row in zip(THRESHOLD_FACTORS, table):
            lam = f * ct.threshold
            task_q = mitigation_task(S, S, H=H, queries=q, **task)
            strict = [
                c
                for c, t in ct.thresholds.items()
                if t is not None and selection_edges(task_q, c, lam).minimum > 0
            ]
            distinct = row.distinct_fraction
            overlapped = (
                row.selected_seeds
                if distinct is None
                else int(round((1 - distinct) * row.selected_seeds))
            )
            rows.append(
                ThresholdRow(
                    **field_values(row),
                    lambda_star=ct.threshold,
                    lambda_star_lowest=ct.lowest,
                    factor=f,
                    coordination=lam,
                    overlapped_seeds=overlapped,
                    strict_minima=[list(c) for c in strict],
                    overlapped_selections=len(ct.thresholds),
                )
            )
    return rows


def _label(variant: dict) -> str:
    if "coordination" in variant:
        return f"lambda={variant['coordination']:g}"
    if variant.get("objective") == "worst-phase":
        return f"tau={variant['tau']:g}"
    return "mean"


def compute(quick: bool, cache_dir) -> MitigationsData:
    config, seeds = _runs.reduced_config(quick)
    seeds = 4 if quick else seeds

    def runner(task, cfg, n):
        return _runs.flow_runs(task, cfg, n, cache_dir)

    settings = (
        ((4, 4),) if quick else SETTINGS
    )  # quick: the mean flow is shared with the coordination row
    table = mitigation_table(
        settings, seeds=seeds, config=config, runner=runner, **TASK
    )
    shapes, queries = (
        (((2, 4),), ("all",)) if quick else (((2, 4), (3, 4)), ("within", "all"))
    )
    task = {k: v for k, v in TASK.items() if k not in ("H", "queries")}
    _group_flows(quick, shapes, queries, config, cache_dir, task)
    coordination = [
        LabelledCoordinationRow(**field_values(row), label=_label(row.variant))
        for row in _coordination(quick, shapes, queries, config, runner, task)
    ]
    threshold = _threshold_rows(
        shapes, queries, 4 if quick else COORDINATION_SEEDS, config, runner, task
    )
    return _with_paper(
        table,
        coordination,
        threshold,
        {
            "task": "T=L*S=48 positions, H=2, N=4096, beta=4, gamma=1, kappa=1, exact "
            "geometry, queries=all",
            "flow": f"reduced, rho={config.rho}, delta={config.delta}, "
            f"t_max={config.t_max:g}, {seeds} seeds per row",
            "coordination": "W=S=4, H in {2, 3} (quick: 2), queries within and all (quick: all), "
            f"{4 if quick else COORDINATION_SEEDS} seeds per variant "
            f"({4 if quick else BUDGET_SEEDS} for the worst-phase objective at tau < 1)",
            "threshold": "lambda* = coordination_threshold (closed form); flows at "
            f"{' and '.join(f'{f:g}' for f in THRESHOLD_FACTORS)} lambda*, "
            f"{4 if quick else COORDINATION_SEEDS} seeds each",
        },
    )


def paper_comparisons(table: list[MitigationRow]) -> list[PaperComparison]:
    """The paper's settings (`PAPER`) that the mitigation `table` has, each beside our row.

    **Arguments:** `table`: the rows of `mitigation_table` (as stored: `MitigationsData.table`).

    **Returns:** one `PaperComparison` per setting of `PAPER` found in the table, in its order.
    """
    paper = []
    for name, p in PAPER.items():
        ours = next(
            (r for r in table if (r.S, r.W, r.gates) == (p["S"], p["W"], p["gates"])),
            None,
        )
        if ours is not None:
            paper.append(
                PaperComparison(
                    setting=name,
                    S=p["S"],
                    W=p["W"],
                    gates=p["gates"],
                    paper_gap=p["gap"],
                    paper_mean_accuracy=p.get("mean_accuracy"),
                    paper_model=p["model"],
                    controlled=p["controlled"],
                    gap=100 * ours.gap.mean,
                    gap_of_mean_curve=100 * (max(ours.accuracy) - min(ours.accuracy)),
                    mean_accuracy=100 * ours.mean_accuracy.mean,
                )
            )
    return paper


def restated(stored) -> MitigationsData:
    """The figure's data with its comparison with the paper (`paper_comparisons`) and its
    `findings` recomputed from the stored rows (`data/mitigations.json`), without a flow run.

    **Arguments:** `stored`: the stored data (a dict, as read from the JSON).

    **Returns:** a `MitigationsData`.
    """
    table = [MitigationRow.from_dict(r) for r in stored["table"]]
    coordination = [
        LabelledCoordinationRow.from_dict(r) for r in stored["coordination"]
    ]
    threshold = [ThresholdRow.from_dict(r) for r in stored["threshold"]]
    return _with_paper(table, coordination, threshold, dict(stored["parameters"]))


def _with_paper(table, coordination, threshold, parameters) -> MitigationsData:
    """The figure's data from its rows: the comparison with the paper and the findings added."""
    paper = paper_comparisons(table)
    return MitigationsData(
        table=table,
        coordination=coordination,
        threshold=threshold,
        paper=paper,
        parameters=parameters,
        findings=_findings(table, coordination, paper, threshold),
    )


def _num(x) -> str:
    return "n/a" if x is None or x != x else f"{x:.2f}"  # None/NaN: no seed selected


def _distinct_seeds(row) -> int:
    """Seeds whose heads selected pairwise distinct offsets."""
    d = row.distinct_fraction
    return 0 if d is None else int(round(d * row.selected_seeds))


def _findings(table, coordination, paper, threshold) -> str:
    rows = "; ".join(
        f"S={r.S} W={r.W} {r.gates}: gap {r.gap.mean:.2f}+-{r.gap.sd:.2f}, "
        f"mean acc {r.mean_accuracy.mean:.3f}, loss {r.mean_loss.mean:.4f}, "
        f"target prob {r.mean_target_probability.mean:.2e}"
        for r in table
    )
    vs = "; ".join(
        f"{p.setting}: per-seed gap {p.gap:.1f}%, gap of the seed-mean curve "
        f"{p.gap_of_mean_curve:.1f}%, mean acc {p.mean_accuracy:.1f}% (paper gap "
        f"{p.paper_gap}% of {p.paper_model}"
        + (
            f", mean {p.paper_mean_accuracy}%)"
            if p.paper_mean_accuracy is not None
            else ")"
        )
        for p in paper
    )
    co = "; ".join(
        f"H={r.H} {r.queries} {r.label}: distinct {_num(r.distinct_fraction)} "
        f"(argmax keys {r.distinct_key_fraction:.2f}) "
        f"({r.selected_seeds}/{r.seeds} selected), worst acc "
        f"{r.worst_accuracy.mean:.2f}, "
        f"loss {r.mean_loss.mean:.4f}"
        for r in coordination
    )
    th = "; ".join(
        f"H={r.H} {r.queries} lambda*={r.lambda_star:.4f}, "
        f"lambda={r.coordination:.4f} ({r.factor:g} lambda*): overlapped "
        f"{r.overlapped_seeds}/{r.selected_seeds} selected "
        f"({r.selected_seeds}/{r.seeds} selected), strict local minima among the "
        f"{r.overlapped_selections} overlapped selections: {len(r.strict_minima)}"
        for r in threshold
    )
    return (
        f"{rows}. "
        + (f"Against the paper: {vs}. " if vs else "")
        + f"Coordination: {co}. Threshold: {th}"
    )


def tables(data: MitigationsData) -> list[MeasuredTable]:
    """The README's measured numbers: the mitigation table, the paper's gaps, coordination and
    its threshold lambda*."""
    table, coord, paper = data.table, data.coordination, data.paper
    out = [
        MeasuredTable(
            "Mitigation table (exact per-phase measures; learned: mean +- sd over seeds).",
            [
                "S",
                "W",
                "gates",
                "seeds",
                "phase gap",
                "mean accuracy",
                "mean loss",
                "mean target probability",
            ],
            [
                [
                    str(r.S),
                    str(r.W),
                    r.gates,
                    str(r.seeds),
                    f"{r.gap.mean:.2f} +- {r.gap.sd:.2f}",
                    f"{r.mean_accuracy.mean:.3f}",
                    f"{r.mean_loss.mean:.4f}",
                    f"{r.mean_target_probability.mean:.2e}",
                ]
                for r in table
            ],
        )
    ]
    if paper:
        out.append(
            MeasuredTable(
                "Against the paper's gaps on trained models (%), each with the model it comes "
                "from: the paper's controlled family (its table 8) except where marked.",
                [
                    "setting",
                    "per-seed gap",
                    "gap of the seed-mean curve",
                    "mean accuracy",
                    "paper gap",
                    "paper mean accuracy",
                    "paper's model",
                ],
                [
                    [
                        p.setting,
                        f"{p.gap:.1f}",
                        f"{p.gap_of_mean_curve:.1f}",
                        f"{p.mean_accuracy:.1f}",
                        f"{p.paper_gap}",
                        ""
                        if p.paper_mean_accuracy is None
                        else f"{p.paper_mean_accuracy}",
                        p.paper_model
                        + ("" if p.controlled else ": not the controlled family"),
                    ]
                    for p in paper
                ],
            )
        )
    out.append(
        MeasuredTable(
            "Coordination (W=S=4): seeds whose heads selected distinct offsets, among the "
            "selected (Wilson 95%); worst-phase accuracy and population loss, means over seeds.",
            [
                "H",
                "queries",
                "variant",
                "selected",
                "distinct",
                "argmax keys distinct",
                "worst accuracy",
                "loss",
            ],
            [
                [
                    str(r.H),
                    r.queries,
                    r.label,
                    f"{r.selected_seeds}/{r.seeds}",
                    share_text(_distinct_seeds(r), r.selected_seeds)
                    if r.selected_seeds
                    else "n/a",
                    f"{r.distinct_key_fraction:.3f}",
                    f"{r.worst_accuracy.mean:.2f}",
                    f"{r.mean_loss.mean:.4f}",
                ]
                for r in coord
            ],
        )
    )
    out.append(
        MeasuredTable(
            "Overlap penalty at 0.8 and 1.2 lambda* (lambda*: closed form of the edge "
            "derivatives at hard selections with two heads on one offset): seeds that ended "
            "on an overlapped selection (Wilson 95%), and how many overlapped selections are "
            "strict local minima at that lambda.",
            [
                "H",
                "queries",
                "lambda*",
                "lambda",
                "selected",
                "overlapped",
                "strict local minima",
            ],
            [
                [
                    str(r.H),
                    r.queries,
                    f"{r.lambda_star:.4f}",
                    f"{r.coordination:.4f}",
                    f"{r.selected_seeds}/{r.seeds}",
                    share_text(r.overlapped_seeds, r.selected_seeds)
                    if r.selected_seeds
                    else "n/a",
                    f"{len(r.strict_minima)}/{r.overlapped_selections}",
                ]
                for r in data.threshold
            ],
        )
    )
    return out


def _setting_bars(ax, table, key, ylabel, title, scale=1.0):
    settings = list(dict.fromkeys((r.S, r.W) for r in table))
    x = np.arange(len(settings))
    width = 0.27
    for k, kind in enumerate(KINDS):
        rows = {(r.S, r.W): r for r in table if r.gates == kind}
        mean = np.array([getattr(rows[s], key).mean for s in settings]) * scale
        sd = np.array([getattr(rows[s], key).sd for s in settings]) * scale
        # an edge of the bar's colour: a bar of height 0 still shows, as a line at 0
        ax.bar(
            x + (k - 1) * width,
            mean,
            width,
            yerr=sd if kind == "learned" else None,
            capsize=2,
            color=_style.color(k),
            edgecolor=_style.color(k),
            linewidth=1.5,
            label=f"{kind} gates"
            + (" (mean, sd over seeds)" if kind == "learned" else ""),
        )
    for boundary in x[:-1] + 0.5:  # each setting's three bars between two faint lines
        ax.axvline(boundary, color="0.85", lw=0.6, zorder=0)
    ax.set_xlim(x[0] - 0.5, x[-1] + 0.5)
    ax.set_xticks(x, [f"S={s}\nW={w}" for s, w in settings], fontsize=7.5)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return settings, x


# The coordination variants by family, each family its own stretch of the axis: a setting of
# lambda and one of tau are different objectives, not points of one continuum.
FAMILIES = (
    ("mean", "mean"),
    ("lambda", "overlap penalty"),
    ("tau", "worst-phase objective"),
)


def _coordination_positions(labels):
    positions, families, x = {}, [], 0.0
    for prefix, name in FAMILIES:
        members = [lab for lab in labels if lab.split("=")[0] == prefix]
        if not members:
            continue
        families.append((name, x, x + len(members) - 1, members))
        for lab in members:
            positions[lab] = x
            x += 1
        x += 0.6  # a gap between families
    return positions, families


def _lambda_position(lam: float, positions: dict) -> float | None:
    """Where lambda falls on the overlap-penalty stretch of the axis (log-linear between the
    drawn lambdas), or None outside it."""
    known = sorted(
        (float(lab.split("=")[1]), x)
        for lab, x in positions.items()
        if lab.startswith("lambda=")
    )
    if not known:
        return None
    if len(known) == 1:  # one drawn lambda: one unit of the axis per decade around it
        ((lam0, x0),) = known
        x = x0 + np.log10(lam / lam0)
        return float(x) if abs(x - x0) <= 0.5 else None
    if not known[0][0] <= lam <= known[-1][0]:
        return None
    lams, xs = zip(*known)
    return float(np.interp(np.log(lam), np.log(lams), xs))


def _threshold_marks(ax, rows, threshold, groups, positions):
    """lambda* of each query set as a dotted line on the penalty stretch, and the shares of seeds
    with distinct offsets at 0.8 and 1.2 lambda* as open markers."""
    by_group: dict[tuple, list[str]] = {}
    for r in threshold:
        by_group.setdefault((r.H, r.queries), []).append(
            f"{r.overlapped_seeds}/{r.selected_seeds}"
        )
    ax.text(
        0.63,
        0.9,
        "seeds overlapped at "
        + " | ".join(f"{f:g}" for f in THRESHOLD_FACTORS)
        + " lambda*:\n"
        + "\n".join(f"H={H}, {q}: " + " | ".join(v) for (H, q), v in by_group.items()),
        transform=ax.transAxes,
        fontsize=6.5,
        va="top",
    )
    drawn = set()
    for r in threshold:
        x_star = _lambda_position(r.lambda_star, positions)
        if x_star is not None and r.queries not in drawn:
            drawn.add(r.queries)
            ax.axvline(x_star, color="0.4", ls=":", lw=1, zorder=0)
            ax.text(
                x_star,
                0.3,
                f"lambda*={r.lambda_star:.3f} ({r.queries}) ",
                transform=ax.get_xaxis_transform(),
                rotation=90,
                ha="right",
                va="bottom",
                fontsize=6.5,
                color="0.3",
            )
        x = _lambda_position(r.coordination, positions)
        if x is None or (r.H, r.queries) not in groups:
            continue
        g = groups.index((r.H, r.queries))
        ax.plot(
            x + 0.08 * (g - (len(groups) - 1) / 2),
            r.distinct_key_fraction,
            _style.MARKERS[g],
            mfc="w",
            color=_style.color(g + 3),
            label="0.8 and 1.2 lambda* (open)" if r is threshold[0] else None,
        )


def _coordination_panel(ax, rows, key, ylabel, title, threshold=None):
    groups = list(dict.fromkeys((r.H, r.queries) for r in rows))
    labels = list(dict.fromkeys(r.label for r in rows))
    positions, families = _coordination_positions(labels)
    if threshold:
        _threshold_marks(ax, rows, threshold, groups, positions)
    for g, (H, q) in enumerate(groups):
        sel = {r.label: r for r in rows if (r.H, r.queries) == (H, q)}
        for f, (_, _, _, members) in enumerate(families):
            x = np.array([positions[lab] for lab in members])
            if key.startswith("distinct"):
                y = np.array([getattr(sel[lab], key) for lab in members], float)
                err = None
            else:
                spreads = [getattr(sel[lab], key) for lab in members]
                y = np.array([v.mean for v in spreads])
                err = np.array(
                    [
                        [v.mean - v.q25 for v in spreads],
                        [v.q75 - v.mean for v in spreads],
                    ]
                ).clip(0)
            # lines join the settings of one family only
            ax.errorbar(
                x + 0.08 * (g - (len(groups) - 1) / 2),
                y,
                yerr=err,
                fmt=_style.MARKERS[g] + _style.LINESTYLES[g % 4],
                color=_style.color(g + 3),
                capsize=2,
                label=f"H={H}, S=4, queries {q}" if f == 0 else None,
            )
    for name, lo, hi, _ in families:
        ax.text(
            (lo + hi) / 2,
            1.01,
            name,
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="bottom",
            fontsize=7.5,
            style="italic",
        )
    for (_, _, hi, _), (_, lo, _, _) in zip(families, families[1:]):
        ax.axvline((hi + lo) / 2, color="0.8", lw=0.8, zorder=0)
    ax.set_xticks(list(positions.values()), labels=list(positions), rotation=35)
    for tick in ax.get_xticklabels():
        tick.set_ha("right")
        tick.set_fontsize(7.5)
    ax.set_ylabel(ylabel)
    ax.set_title(title, pad=14)


def _model_name(p: PaperComparison) -> str:
    """The paper's model without its task: `DeepSeek-V4.1-Flash`."""
    return p.paper_model.split(" on ")[0]


def draw(data: MitigationsData):
    table, coord, paper = data.table, data.coordination, data.paper
    fig, axes = _style.subplots(2, 3, figsize=(15, 9))
    settings, x = _setting_bars(
        axes[0, 0],
        table,
        "gap",
        "phase gap (max - min accuracy)",
        "phase gap; paper's measured gaps (x)",
    )
    first_other = next((p for p in paper if not p.controlled), None)
    for p in paper:
        i = settings.index((p.S, p.W))
        k = KINDS.index(p.gates)
        # the paper's controlled family (x) apart from another model on another task (+)
        axes[0, 0].plot(
            x[i] + (k - 1) * 0.27,
            p.paper_gap / 100,
            "x" if p.controlled else "+",
            color="k" if p.controlled else "0.45",
            ms=8,
            mew=2,
            label="paper, controlled family"
            if p is paper[0]
            else f"paper: {_model_name(p)}"
            if p is first_other
            else None,
        )
        # the paper's name of the setting, so that a marker is read with its bar
        axes[0, 0].annotate(
            p.setting if p.controlled else f"{p.setting}:\n{_model_name(p)}",
            (x[i] + (k - 1) * 0.27, p.paper_gap / 100),
            xytext=(0, 7),
            textcoords="offset points",
            ha="center",
            fontsize=6.5,
            # another model's label crosses the bars beside it: on white, to be read
            bbox=None
            if p.controlled
            else dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.85),
        )
    learned = {(r.S, r.W): r for r in table if r.gates == "learned"}
    curve_gap = [max(learned[s].accuracy) - min(learned[s].accuracy) for s in settings]
    axes[0, 0].plot(
        x - 0.27,
        curve_gap,
        "o",
        color="k",
        mfc="w",
        ms=6,
        label="gap of the seed-mean accuracy curve",
    )
    axes[0, 0].set_ylim(-0.03, 1.3)
    _setting_bars(
        axes[0, 1],
        table,
        "mean_accuracy",
        "mean accuracy over phases",
        "mean top-1 accuracy; paper's uniform (x)",
    )
    for p in paper:
        if p.paper_mean_accuracy is not None:
            i = settings.index((p.S, p.W))
            axes[0, 1].plot(x[i] + 0.27, p.paper_mean_accuracy / 100, "kx", ms=8, mew=2)
    axes[0, 1].set_ylim(-0.03, 1.12)
    axes[0, 1].text(
        0.98,
        0.97,
        "uniform gates: 0 at every setting (top-1 ties)",
        transform=axes[0, 1].transAxes,
        ha="right",
        va="top",
        fontsize=7.5,
    )
    _setting_bars(
        axes[0, 2],
        table,
        "mean_target_probability",
        "mean target probability (x 1e-4)",
        "target probability, mean over phases",
        scale=1e4,
    )
    axes[0, 0].legend(loc="upper left", fontsize=7, ncol=2)
    _coordination_panel(
        axes[1, 0],
        coord,
        "distinct_key_fraction",
        "share of seeds, heads' key argmax distinct",
        "coordination: heads on distinct offsets (all seeds)",
        threshold=data.threshold,
    )
    _coordination_panel(
        axes[1, 1],
        coord,
        "worst_accuracy",
        "worst-phase accuracy (mean, quartiles)",
        "coordination: worst-phase accuracy",
    )
    _coordination_panel(
        axes[1, 2],
        coord,
        "mean_loss",
        "population loss (mean, quartiles)",
        "coordination: mean loss of the final gates",
    )
    axes[1, 0].set_ylim(-0.05, 1.05)
    axes[1, 1].set_ylim(-0.05, 1.05)
    axes[1, 0].legend(loc="lower right", fontsize=7)
    unselected = sorted({r.label for r in coord if r.selected_seeds < r.seeds})
    if unselected:
        axes[1, 1].text(
            0.02,
            0.6,
            "ended unselected (step or time budget) in some groups:\n"
            + ", ".join(unselected),
            transform=axes[1, 1].transAxes,
            fontsize=7.5,
        )
    fig.suptitle(
        "Mitigations: window W, stride S, uniform gates (top; H=2, T=48) and "
        "coordination of heads (bottom)"
    )
    return fig


FIGURE = Figure(
    "mitigations",
    "Mitigations: window, stride, uniform gates and coordination",
    claim,
    compute,
    draw,
    cost=340,
    tables=tables,
    data=MitigationsData,
)
