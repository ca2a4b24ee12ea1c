"""Approximate geometry (docs/theory.md §3): hard selection of oracle minimizers and full
flows as eps grows."""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np

from ..experiments._flows import flow_sample
from ..flow._config import FlowConfig
from ..internal._records import Record
from ..model._gates import value_follows_key
from ..model._geometry import make_geometry
from ..model._task import welch_bound
from ..oracle._minimize import OracleMinimizer
from . import _runs, _style
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._parameters import ApproximateGeometryParameters
from ._stats import plural, share_text, wilson_interval

SHAPE = dict(L=4, S=3, H=2, N=240, gamma=1.0, beta=4.0, kappa=1.0)
# Largest d whose flows are padded into one program with the smaller ones: the scores cost
# O(padded d) per token, small next to the logits' O(L S N) up to about this width.
PADDED_DIM_MAX = 128


@dataclasses.dataclass(frozen=True)
class Share(Record):
    """`k` of `n` (contexts or seeds), the `share` k/n and its Wilson 95% interval `ci95`."""

    k: int
    n: int
    share: float
    ci95: list[float]


@dataclasses.dataclass(frozen=True)
class GeometryRow(Record):
    """One dimension `d`: the max and mean coherence of the oracle's geometry
    (`oracle_eps_max`, `oracle_eps_mean`) and of the flows' (`flow_eps_max`, `flow_eps_mean`);
    the oracle contexts whose minimizer is hard (`oracle_hard`) and hard with distinct heads
    (`oracle_hard_distinct`), the flow seeds that end hard (`flow_hard`), each a `Share`; and
    every flow seed's status (`flow_statuses`)."""

    d: int
    oracle_eps_max: float
    oracle_eps_mean: float
    flow_eps_max: float
    flow_eps_mean: float
    oracle_hard: Share
    oracle_hard_distinct: Share
    flow_hard: Share
    flow_statuses: list[str]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ApproximateGeometryData(FigureData):
    """A `GeometryRow` per dimension d (`rows`)."""

    rows: list[GeometryRow]
    parameters: ApproximateGeometryParameters


def _orders(rows: list[GeometryRow], share: str, eps: str) -> bool:
    """Whether the share named `share` never rises as the coherence named `eps` grows over
    the rows."""
    values = [
        getattr(r, share).share for r in sorted(rows, key=lambda r: getattr(r, eps))
    ]
    return all(b <= a for a, b in zip(values, values[1:]))


def _shares(rows: list[GeometryRow], share: str, source: str) -> str:
    """Each row's share as text with its d and max coherence; rows of equal count grouped."""
    groups: dict[str, list] = {}
    key = f"{source}_eps_max"
    for r in rows:
        counted = getattr(r, share)
        groups.setdefault(share_text(counted.k, counted.n), []).append(r)
    return "; ".join(
        f"{text} at d = {', '.join(str(r.d) for r in group)} (max coherence "
        f"{', '.join(f'{getattr(r, key):.2f}' for r in group)})"
        for text, group in groups.items()
    )


def claim(data: ApproximateGeometryData) -> str:
    """The claim, its dimensions, contexts, seeds, shares and coherences from `data`."""
    rows = data.rows
    ordered = [
        _orders(rows, "oracle_hard", f"oracle_eps_{kind}") for kind in ("max", "mean")
    ]
    unselected = sum(r.flow_statuses.count("selected") < r.flow_hard.n for r in rows)
    missed = sum(r.flow_hard.n - r.flow_hard.k for r in rows)
    return (
        "With eps > 0 (docs/theory.md §3): embeddings x_i = sqrt(kappa) u + v_i with random "
        "unit v_i in dimension d - 1, d in {"
        + ", ".join(str(r.d) for r in rows)
        + "}; L=4, S=3, H=2, N=240, beta=4, gamma=1, kappa=1. The figure sets d and draws "
        "one geometry per d for the oracle and another for the flows; the x axes are two "
        "coherences of that very geometry (re-created from the runs' keys): the realized "
        "eps = max_{i != j} |<v_i, v_j>| and the mean coherence mean_{i != j} |<v_i, v_j>| "
        "over all token pairs (Welch bound: the smallest max possible at that d). Oracle "
        f"minimizers: {data.parameters.oracle_text(per='per d')}. "
        f"Full gradient flows: {rows[0].flow_hard.n} seeds per d on one balanced "
        "sample of N/L contexts, rho=0.1, t_max=1e6. Error bars are 95% Wilson intervals "
        "over the contexts or seeds of one geometry per d (they do not cover the spread "
        "between geometries of the same d). Measured: the oracle's minimizer is hard in "
        f"{_shares(rows, 'oracle_hard', 'oracle')}: "
        + (
            "the share never rises with either coherence"
            if all(ordered)
            else "neither coherence orders the shares exactly"
            if not any(ordered)
            else f"the share never rises with the {'max' if ordered[0] else 'mean'} "
            f"coherence, but does with the {'mean' if ordered[0] else 'max'} one"
        )
        + ". Distinct heads (Theorem 1 at eps = 0) hold in "
        f"{_shares(rows, 'oracle_hard_distinct', 'oracle')}"
        + (
            ""
            if _orders(rows, "oracle_hard_distinct", "oracle_eps_max")
            else ": not monotone in the max coherence"
        )
        + f". Full flows end hard in {_shares(rows, 'flow_hard', 'flow')}"
        + (
            f"; the {plural(missed, 'seed')} that did not end hard ran to t_max without "
            "selecting."
            if missed and unselected == sum(r.flow_hard.k < r.flow_hard.n for r in rows)
            else "."
        )
    )


def coherence(embeddings, kappa: float) -> tuple[float, float]:
    """(max, mean) over token pairs i != j of |<x_i, x_j> - kappa|, i.e. of |<v_i, v_j>| for
    x_i = sqrt(kappa) u + v_i with v_i orthogonal to u; the max is the realized eps
    (`measure_eps`)."""
    E = np.asarray(embeddings, dtype=np.float64)
    gram = np.abs(E @ E.T - kappa)
    off = ~np.eye(E.shape[0], dtype=bool)
    return float(gram[off].max()), float(gram[off].mean())


def _share(flags) -> Share:
    flags = np.asarray(flags, bool)
    k, n = int(flags.sum()), int(flags.size)
    lo, hi = wilson_interval(k, n)
    return Share(k=k, n=n, share=k / n, ci95=[lo, hi])


def compute(context: FigureContext) -> ApproximateGeometryData:
    quick = context.quick
    dims = [16, 128] if quick else [12, 16, 24, 32, 64, 1024]
    # BFGS, the method the data were measured with
    oracle_config = OracleMinimizer(method="bfgs", restarts=8)
    flow_config = FlowConfig(
        dynamics="full", rho=0.1, delta=1e-3, t_max=1e6, n_save=4, M=1
    )
    contexts, seeds = (2, 2) if quick else (24, 20)
    seed = 0
    tasks = [_runs.task_of(**SHAPE, d=d) for d in dims]
    # the flows of every d up to PADDED_DIM_MAX share one compiled program (padded to their
    # largest d, the same runs up to rounding); larger d run on their own
    flows = {}
    for group in (
        [t for t in tasks if t.d <= PADDED_DIM_MAX],
        [t for t in tasks if t.d > PADDED_DIM_MAX],
    ):
        if group:
            runs = _runs.padded_flow_runs(
                group, flow_config, seeds, context.cache, seed=seed
            )
            flows.update({t.d: run for t, run in zip(group, runs)})
    rows = []
    for d, task in zip(dims, tasks):
        point = _runs.oracle_point(
            task, oracle_config, context.cache, contexts=contexts, seeds=4, seed=seed
        )
        flow = flows[d]
        # the very geometries of the runs, re-created from their keys (checked against the
        # stored eps)
        oracle_geometry = make_geometry(
            task, jax.random.split(jax.random.key(seed), 3)[0]
        )
        flow_geometry = flow_sample(task, flow_config, seed)[0]
        o_max, o_mean = coherence(oracle_geometry.embeddings, task.kappa)
        f_max, f_mean = coherence(flow_geometry.embeddings, task.kappa)
        assert math.isclose(o_max, point.eps, rel_tol=1e-5), (o_max, point.eps)
        assert math.isclose(f_max, flow.sample["eps_realized"], rel_tol=1e-5), (
            f_max,
            flow.sample["eps_realized"],
        )
        status = np.asarray(flow.status)
        keys, values = (
            np.asarray(flow.key_offsets),
            np.asarray(flow.value_offsets),
        )
        flow_hard = (status == "selected") & value_follows_key(keys, values)
        records = point.contexts
        rows.append(
            GeometryRow(
                d=d,
                oracle_eps_max=o_max,
                oracle_eps_mean=o_mean,
                flow_eps_max=f_max,
                flow_eps_mean=f_mean,
                oracle_hard=_share([r.hard_selection for r in records]),
                oracle_hard_distinct=_share([r.distinct_heads for r in records]),
                flow_hard=_share(flow_hard),
                flow_statuses=flow.status,
            )
        )

    def fmt(s):
        return f"{s.k}/{s.n} [{s.ci95[0]:.2f}, {s.ci95[1]:.2f}]"

    return ApproximateGeometryData(
        rows=rows,
        parameters=ApproximateGeometryParameters(
            dims=dims, contexts=contexts, restarts=oracle_config.restarts, seeds=seeds
        ),
        findings="; ".join(
            f"d={r.d}: oracle (eps max {r.oracle_eps_max:.2f}, mean "
            f"{r.oracle_eps_mean:.3f}) hard "
            f"{fmt(r.oracle_hard)}, hard+distinct {fmt(r.oracle_hard_distinct)}; "
            "flow (eps max "
            f"{r.flow_eps_max:.2f}, mean {r.flow_eps_mean:.3f}) hard {fmt(r.flow_hard)}"
            for r in rows
        ),
    )


def _series(ax, rows, x_key: str, prefix: str, y_key: str, i: int, label: str):
    """One share with its 95% interval against one coherence, points sorted by x; the series are
    shifted sideways by a few points (not in data units) so that equal shares do not hide
    each other."""
    from matplotlib.transforms import offset_copy

    pts = sorted(
        ((getattr(r, f"{prefix}_eps_{x_key}"), getattr(r, y_key)) for r in rows),
        key=lambda p: p[0],
    )
    x = np.array([p[0] for p in pts])
    y = np.array([p[1].share for p in pts])
    lo = np.array([p[1].ci95[0] for p in pts])
    hi = np.array([p[1].ci95[1] for p in pts])
    shift = offset_copy(ax.transData, fig=ax.figure, x=4.0 * (i - 1), units="points")
    bars = ax.errorbar(
        x,
        y,
        yerr=[y - lo, hi - y],
        fmt=_style.MARKERS[i],
        linestyle=_style.LINESTYLES[i],
        color=_style.color(i),
        capsize=3,
        label=label,
    )
    for artist in (
        bars.get_children()
    ):  # shifted after creation, so that the data limits stay in data units
        artist.set_transform(shift)


def draw(data: ApproximateGeometryData):
    rows = data.rows
    n_ctx, n_seeds = rows[0].oracle_hard.n, rows[0].flow_hard.n
    fig, axes = _style.subplots(
        1, 3, figsize=(15, 4.8), gridspec_kw={"width_ratios": [1.3, 1.3, 1]}
    )
    series = (
        ("oracle", "oracle_hard", f"oracle minimizer is hard ({n_ctx} contexts)"),
        (
            "oracle",
            "oracle_hard_distinct",
            f"oracle minimizer is hard, distinct heads ({n_ctx} contexts)",
        ),
        ("flow", "flow_hard", f"full flow ends hard ({n_seeds} seeds)"),
    )
    for ax, x_key, xlabel in (
        (axes[0], "max", "realized max coherence eps = max_{i != j} |<v_i, v_j>|"),
        (axes[1], "mean", "mean coherence mean_{i != j} |<v_i, v_j>|"),
    ):
        for i, (prefix, y_key, label) in enumerate(series):
            _series(ax, rows, x_key, prefix, y_key, i, label)
        ax.set_xlabel(xlabel + " of the geometry")
        ax.set_ylim(-0.05, 1.08)
        ax.grid(alpha=0.3)
        ax.set_title(
            f"share hard vs {x_key} coherence (points sorted by x; 95% Wilson intervals)"
        )
    axes[0].set_ylabel("share of contexts (oracle) / seeds (flow)")
    axes[0].legend(loc="lower left")
    ax = axes[2]
    rows_d = sorted(rows, key=lambda r: r.d)
    d = np.array([r.d for r in rows_d])
    ax.plot(
        d,
        [r.oracle_eps_max for r in rows_d],
        "o-",
        color=_style.color(0),
        label="max, oracle geometry",
    )
    ax.plot(
        d,
        [r.flow_eps_max for r in rows_d],
        "^--",
        color=_style.color(2),
        label="max, flow geometry",
    )
    ax.plot(
        d,
        [r.oracle_eps_mean for r in rows_d],
        "o-",
        color=_style.color(0),
        mfc="white",
        label="mean, oracle geometry",
    )
    ax.plot(
        d,
        [r.flow_eps_mean for r in rows_d],
        "^--",
        color=_style.color(2),
        mfc="white",
        label="mean, flow geometry",
    )
    N = SHAPE["N"]
    ax.plot(
        d,
        [welch_bound(N, int(x) - 1) for x in d],
        "k:",
        label="Welch bound (smallest possible max)",
    )
    _style.log_ticks(ax, d)
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel("embedding dimension d (set by the figure)")
    ax.set_ylabel("coherence")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"coherence of each geometry vs d (N={N} tokens)")
    ax.legend(loc="upper right")
    return fig


def tables(data: ApproximateGeometryData) -> list[MeasuredTable]:
    """Per d: both geometries' coherences and the shares of hard (and distinct) oracle contexts
    and hard-ending flows, with their Wilson 95% intervals."""

    def share(s):
        return share_text(s.k, s.n)

    rows = [
        [
            str(r.d),
            f"{r.oracle_eps_max:.2f}, {r.oracle_eps_mean:.3f}",
            share(r.oracle_hard),
            share(r.oracle_hard_distinct),
            f"{r.flow_eps_max:.2f}, {r.flow_eps_mean:.3f}",
            share(r.flow_hard),
        ]
        for r in data.rows
    ]
    return [
        MeasuredTable(
            "Oracle contexts and flow seeds of one geometry per d: coherences (realized eps = "
            "max, and mean, over token pairs) and shares with Wilson 95% intervals.",
            [
                "d",
                "oracle eps (max, mean)",
                "oracle hard",
                "oracle hard + distinct",
                "flow eps (max, mean)",
                "flow ends hard",
            ],
            rows,
        )
    ]


FIGURE = Figure(
    "approximate_geometry",
    "Approximate geometry: hard selection as eps grows",
    claim,
    compute,
    draw,
    cost=255,
    tables=tables,
    data=ApproximateGeometryData,
)
