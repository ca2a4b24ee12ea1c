"""Mitigations: window, stride, uniform gates and coordination, beside the paper's numbers.

The computation and the figure's record live here; its data types in `_mitigations_data`, its
claim in `_mitigations_claim` (the table and the paper) and `_mitigations_coordination`, its
picture and measured tables in `_mitigations_draw`.
"""

from __future__ import annotations

import itertools

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
from ..internal._records import field_values
from . import _runs
from ._figure import Figure, FigureContext
from ._mitigations_claim import paper_claim, settings_claim
from ._mitigations_coordination import coordination_claim
from ._mitigations_data import (
    THRESHOLD_FACTORS,
    LabelledCoordinationRow,
    MitigationsData,
    PaperComparison,
    ThresholdRow,
)
from ._mitigations_draw import draw_mitigations, tables
from ._parameters import MitigationsParameters

# worst-phase flows often end unselected (stiff at small tau): a smaller budget
WORST_BUDGET = {"t_max": 1e6, "max_steps": 20_000}
TASK = dict(H=2, T=48, N=4096, beta=4.0, gamma=1.0, kappa=1.0, queries="all")
# Seeds per coordination variant: 256 where a claim counts every seed; the worst-phase flows at
# tau < 1, which run to their step budget, keep 64.
COORDINATION_SEEDS, BUDGET_SEEDS = 256, 64


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


def compute(context: FigureContext) -> MitigationsData:
    quick = context.quick
    config, seeds = _runs.reduced_config(quick)
    seeds = 4 if quick else seeds

    def runner(task, cfg, n):
        return _runs.flow_runs(task, cfg, n, context.cache)

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
    _group_flows(quick, shapes, queries, config, context.cache, task)
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
        MitigationsParameters(
            **{k: v for k, v in TASK.items() if k != "queries"},
            rho=config.rho,
            delta=config.delta,
            t_max=config.t_max,
            seeds=seeds,
            coordination_seeds=4 if quick else COORDINATION_SEEDS,
            budget_seeds=4 if quick else BUDGET_SEEDS,
            threshold_factors=list(THRESHOLD_FACTORS),
        ),
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
    parameters = MitigationsParameters.from_dict(stored["parameters"])
    return _with_paper(table, coordination, threshold, parameters)


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


def claim(data: MitigationsData) -> str:
    """The claim, its settings, seeds, shares, thresholds and losses from `data`: the mitigation
    table and the paper (`_mitigations_claim`), then coordination (`_mitigations_coordination`)."""
    return settings_claim(data) + paper_claim(data) + coordination_claim(data)


def draw(data: MitigationsData):
    """The figure (`_mitigations_draw.draw_mitigations`): the table's gaps, accuracies and
    losses beside the paper's, and coordination by variant."""
    return draw_mitigations(data)


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
