"""The mitigations figure's claim, second part: coordination of the heads (the threshold lambda*,
the overlap penalty above and below it, the mean and worst-phase objectives), every number
formatted from the figure's data (`MitigationsData`)."""

from __future__ import annotations

from ._mitigations_claim import NUMBERS, and_list, count_text, lower_bound, phases_word
from ._mitigations_data import MitigationsData, distinct_seeds, lambda_of, tau_of
from ._stats import compact


def coordination_claim(data: MitigationsData) -> str:
    """The coordination part: lambda*, the overlap penalty and the worst-phase objective."""
    coord, threshold = data.coordination, data.threshold
    Hs = sorted({r.H for r in coord})
    queries = list(dict.fromkeys(r.queries for r in coord))
    (S,) = {r.S for r in coord}
    star = {(r.H, r.queries): r.lambda_star for r in threshold}
    lowest = {(r.H, r.queries): r.lambda_star_lowest for r in threshold}
    full = sorted({r.seeds for r in coord if tau_of(r) >= 1})
    budget = sorted({r.seeds for r in coord if tau_of(r) < 1})
    text = (
        f" Coordination (W=S={S}, H "
        + (f"in {{{', '.join(map(str, Hs))}}}" if len(Hs) > 1 else f"= {Hs[0]}")
        + f", queries {and_list(queries)}; {'/'.join(map(str, full))} seeds per variant"
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
        and_list(by_queries(star))
        + f" (H = {and_list(map(str, Hs))}"
        + (
            "; a triple of heads "
            + and_list(
                f"{triple[k]:.3f}" for k in sorted(triple, key=_query_order(queries))
            )
            if triple
            else ""
        )
        + ")."
    )

    # runs above lambda*: the threshold rows above 1 and the penalties above their group's
    above_thr = [r for r in threshold if r.factor > 1]
    penalties = [r for r in coord if lambda_of(r) > 0]
    above_pen = [r for r in penalties if lambda_of(r) > star[(r.H, r.queries)]]
    runs = above_thr + above_pen
    lams = {q: {lambda_of(r) for r in above_pen if r.queries == q} for q in queries}
    common = set.intersection(*lams.values())
    extra = {q: sorted(v - common) for q, v in lams.items() if v - common}
    seeds = sorted({r.seeds for r in runs})
    pooled = sum(r.seeds for r in runs)
    distinct = sum(distinct_seeds(r) for r in runs)
    factors = sorted({r.factor for r in above_thr})
    text += (
        " Above it ("
        + and_list(
            [f"{'/'.join(f'{f:g}' for f in factors)} lambda*"]
            + [f"{x:g}" for x in sorted(common)]
        )
        + "".join(
            f"; with {q} queries also {and_list(f'{x:g}' for x in v)}"
            for q, v in extra.items()
        )
        + ") "
        + (
            f"every seed ended on distinct offsets: {'/'.join(f'{n}/{n}' for n in seeds)} per "
            f"run, Wilson 95% lower bound {'/'.join(lower_bound(n) for n in seeds)}, "
            f"{pooled}/{pooled} pooled over the {len(runs)} runs, lower bound "
            f"{lower_bound(pooled)}."
            if distinct == pooled
            else f"{count_text(distinct, pooled)} seeds ended on distinct offsets, pooled over the "
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
        f"(at {factor:g} lambda*: {and_list(strict)}"
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
        pen = [
            r for r in penalties if r.H == H and lambda_of(r) <= star[(H, r.queries)]
        ]
        stuck = [r for r in thr + pen if _overlapped(r)]
        if not stuck:
            text += f" and no H={H} seed ends there"
            continue
        text += (
            f" and some H={H} seeds end there: "
            + and_list(
                f"{count_text(_overlapped(r), r.selected_seeds)} ({r.queries})"
                for r in thr
            )
            + f" at {factor:g} lambda*"
        )
        for lam in sorted({lambda_of(r) for r in pen}, reverse=True):
            at = [r for r in pen if lambda_of(r) == lam]
            if len(at) == 1:
                (r,) = at
                k, n = distinct_seeds(r), r.selected_seeds
                text += (
                    f", {count_text(_overlapped(r), n)} {r.queries} at lambda={lam:g} "
                    f"({k}/{n} distinct, {count_text(k, n).split(' ', 1)[1]})"
                )
            else:
                text += (
                    f"; lambda={lam:g}: H={H} "
                    + and_list(
                        f"{count_text(distinct_seeds(r), r.selected_seeds)} {r.queries}"
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
    return r.selected_seeds - distinct_seeds(r)


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
        clean = all(distinct_seeds(r) == r.seeds for r in pen2)
        strict = all(len(r.strict_minima) == r.overlapped_selections for r in below2)
        factor = below2[0].factor
        text += (
            " At H=2 "
            + (
                f"no seed ended overlapped at any lambda >= {min(lambda_of(r) for r in pen2):g} "
                f"({'/'.join(f'{n}/{n}' for n in seeds)} distinct per run, lower bound "
                f"{'/'.join(lower_bound(n) for n in seeds)}; "
                if clean
                else "some seeds ended overlapped under the penalty ("
            )
            + f"{count_text(stuck, n_below)} overlapped at {factor:g} lambda*)"
            + (", although the pair is then a strict local minimum." if strict else ".")
        )
    means = {(r.H, r.queries): r for r in coord if not r.variant}
    Hs = sorted({H for H, _ in means})
    parts = []
    for i, H in enumerate(Hs):
        rows = [r for (H2, _), r in means.items() if H2 == H]
        parts.append(
            and_list(
                f"{count_text(distinct_seeds(r), r.selected_seeds)}"
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
                (r for r in penalties if (r.H, r.queries) == (S - 1, q)), key=lambda_of
            )
            start = means[(S - 1, q)].worst_accuracy.mean
            if all(r.worst_accuracy.mean == start for r in rows):
                said.append(f"with {q} queries it stays {start:.2g}")
                continue
            ones = [
                lambda_of(r)
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
    sharp = [r for r in worst if tau_of(r) >= 1]
    clauses = []
    if sharp:
        whole = [r for r in sharp if r.selected_seeds == r.seeds]
        n_whole = sorted({r.seeds for r in whole})
        every = all(distinct_seeds(r) == r.selected_seeds for r in sharp)
        items = (
            [
                f"{'/'.join(f'{n}/{n}' for n in n_whole)} in "
                f"{NUMBERS.get(len(whole), len(whole))} groups, lower bound "
                f"{'/'.join(lower_bound(n) for n in n_whole)}"
            ]
            if whole
            else []
        )
        items += [
            f"H={r.H}, {r.queries}: {count_text(r.selected_seeds, r.seeds)} selected, "
            f"{distinct_seeds(r)}/{r.selected_seeds} distinct"
            + (
                f", lower bound {lower_bound(r.selected_seeds)}"
                if distinct_seeds(r) == r.selected_seeds > 0
                else ""
            )
            for r in sharp
            if r.selected_seeds < r.seeds
        ]
        clauses.append(
            f"at tau={'/'.join(sorted({f'{tau_of(r):g}' for r in sharp}))} ends distinct in "
            + ("every" if every else "not every")
            + f" selected seed ({'; '.join(items)})"
        )
    soft = [r for r in worst if tau_of(r) < 1]
    if soft:
        clauses.append(_unselected_clause(soft))
    for r in soft:
        if r.selected_seeds == 0 and r.worst_accuracy.mean == 1:
            mean = means[(r.H, r.queries)].mean_loss.mean
            loss = r.mean_loss.mean
            clauses.append(
                f"at H={r.H}, {r.queries}, tau={tau_of(r):g} the unselected gates answered "
                f"all {phases_word(r)} {r.queries} phases (worst accuracy 1) at a "
                f"{'higher' if loss > mean else 'lower'} loss ({loss:.3f} against {mean:.3f} "
                "for the mean flow)"
            )
    return " The worst-phase objective " + "; ".join(clauses) + "."


def _unselected_clause(soft) -> str:
    """What the worst-phase flows at tau < 1 (`soft`, their step budget) ended on."""
    taus = sorted({tau_of(r) for r in soft}, reverse=True)
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
        if all(distinct_seeds(r) == r.selected_seeds == r.seeds == n for r in rs):
            parts.append(
                f"H={H}, {q} ({n}/{n} selected and distinct, {count_text(n, n).split(' ', 1)[1]})"
            )
        else:
            parts.append(
                f"H={H}, {q} ("
                + ", ".join(
                    f"tau={tau_of(r):g}: {r.selected_seeds}/{r.seeds} selected, "
                    f"{distinct_seeds(r)} distinct"
                    for r in rs
                )
                + ")"
            )
    if parts:
        text += (" except at " if none else " nowhere: ") + and_list(parts)
    return text
