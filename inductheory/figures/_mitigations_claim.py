"""The mitigations figure's claim, first part: the mitigation table (window, stride, uniform
gates) and the comparison with the paper's gaps, every number formatted from the figure's data
(`MitigationsData`); the words for counts and intervals that the coordination part
(`_mitigations_coordination`) shares."""

from __future__ import annotations

import math

from ._mitigations_data import MitigationsData
from ._stats import (
    compact,
    interval_text,
    kendall_tau,
    share_text,
    span_text,
    wilson_interval,
)


def lower_bound(n: int) -> str:
    """The Wilson 95% lower bound of n/n, to 2 decimals below 100 trials, 3 below 1000, else 4."""
    digits = 2 if n < 100 else 3 if n < 1000 else 4
    return f"{wilson_interval(n, n)[0]:.{digits}f}"


def count_text(k: int, n: int) -> str:
    """`k/n [low, high]` (Wilson 95%), 3 decimals where an end lies within 0.05 of 0 or 1 (from
    20 trials on), else 2."""
    lo, hi = wilson_interval(k, n)
    near = (lo < 0.05 or hi > 0.95) and n >= 20
    return f"{k}/{n} {interval_text(lo, hi, 3 if near else 2)}"


def sci_span(values) -> str:
    """A range of small numbers on one power of ten: `2.9-3.0e-4`."""
    e = math.floor(math.log10(max(values)))
    return span_text([v / 10**e for v in values], lambda x: f"{x:.1f}") + f"e{e}"


def and_list(items) -> str:
    """`a`, `a and b`, `a, b and c`."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def pair_text(S, W) -> str:
    """A setting as the claim writes it: `(4,8)`."""
    return f"({S},{W})"


# Small counts in words.
NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def phases_word(r) -> str:
    """The number of query phases of a coordination row, in words where short."""
    n = r.S - 1 if r.queries == "within" else r.S
    return NUMBERS.get(n, str(n))


def settings_claim(data: MitigationsData) -> str:
    """The mitigation table's part of the claim."""
    table, p = data.table, data.parameters
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
            f"{'/'.join(lower_bound(n) for n in seeds)})"
            + (
                f", {total}/{total} in all (lower bound {lower_bound(total)})"
                if len(learned) > 1
                else ""
            )
        )
    else:
        sel = f"selected: {share_text(selected, total)} seeds (Wilson 95%)"
    text = (
        "Exact per-phase measures (docs/theory.md §9, §10) on exact-geometry tasks with T "
        f"= L*S = {T} positions, H={H}, {p.task_text()} and all queries (the boundary phase "
        "S-1 included), "
        f"for (S, W) in {{{', '.join(pair_text(S, W) for S, W in settings)}}}. Learned gates: the "
        f"final gates of {'/'.join(map(str, seeds))} reduced flows per setting (rho="
        f"{compact(p.rho)}, delta={compact(p.delta)}; {sel}); hard optimum: the one-hot "
        "shared gate of least population loss, by exhaustive enumeration of key and value "
        "offsets of both heads (a vertex, not shown to be optimal among all gates); uniform "
        "gates 1/W. "
    )
    if gap_one == total:
        text += (
            "Every learned seed has phase gap 1 at every setting "
            f"({total}/{total}, Wilson 95% lower bound {lower_bound(total)}; "
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
        + f" target probability ({sci_span(p_uniform)} against {sci_span(p_other)})."
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
            + ", ".join(pair_text(r.S, r.W) for r, _ in collapsed)
            + f" all {'/'.join(map(str, counts))} seeds put both heads on one offset"
            + (
                " ("
                + ", ".join(pair_text(r.S, r.W) for r in boundary)
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


def paper_claim(data: MitigationsData) -> str:
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
        + ", ".join(f"{and_list(f'S={S}' for S in Ss)} {g}%" for g, Ss in curve.items())
        + ")."
        + "".join(
            f" Not of that family, so outside that order: the paper's {p.setting} number, "
            f"{compact(p.paper_gap)}, is the largest phase gap of {p.paper_model} (ours at "
            f"S={p.S}, W={p.W}: per-seed gap {p.gap:.0f}%, seed-mean curve "
            f"{p.gap_of_mean_curve:.0f}%)."
            for p in others
        )
    )
