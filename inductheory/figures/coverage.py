"""Coverage (docs/theory.md §7): do the heads of a converged flow split the offsets, and how
long does selection take?"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..experiments._flows import independent_distinct_baseline
from ..internal._records import Record
from . import _runs, _style
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._parameters import CoverageParameters
from ._stats import compact, quartile_median_coverage, share_text, span_text

N = 4096  # the vocabulary of every flow here (`_runs.BASE`)


@dataclasses.dataclass(frozen=True)
class DistinctShare(Record):
    """One (H, S): the share of seeds whose heads selected pairwise distinct offsets
    (`distinct_fraction`, among the selected), its independent-uniform `baseline`, and the
    share of seeds that selected (`selected_fraction`)."""

    H: int
    S: int
    distinct_fraction: float
    baseline: float
    selected_fraction: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class SelectionTimes(Record):
    """Time to delta-selection over seeds: `median` and quartiles `q25`, `q75`."""

    median: float
    q25: float
    q75: float

    @classmethod
    def of(cls, t, **at) -> SelectionTimes:
        """The times `t` (one per seed), at the setting `at` (a subclass's fields)."""
        t = np.asarray(t, float)
        return cls(
            **at,
            median=float(np.median(t)),
            q25=float(np.quantile(t, 0.25)),
            q75=float(np.quantile(t, 0.75)),
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class TimesAtRho(SelectionTimes):
    """`SelectionTimes` at the init radius `rho`."""

    rho: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class TimesAtKappa(SelectionTimes):
    """`SelectionTimes` at the shared component `kappa`."""

    kappa: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class CoverageData(FigureData):
    """Distinct offsets per (H, S) (`distinct`: `DistinctShare`s) and the time to selection at
    S=4, H=2 against rho (`by_rho`) and kappa (`by_kappa`)."""

    distinct: list[DistinctShare]
    by_rho: list[TimesAtRho]
    by_kappa: list[TimesAtKappa]
    parameters: CoverageParameters


def compute(context: FigureContext) -> CoverageData:
    quick = context.quick
    config, seeds = _runs.reduced_config(quick)
    shapes = (
        [(2, 4), (3, 4)]
        if quick
        else [(2, 3), (2, 4), (3, 4), (2, 6), (3, 6), (4, 6), (5, 6)]
    )
    distinct = []
    for H, S in shapes:
        run = _runs.flow_runs(
            _runs.task_of(**_runs.BASE, S=S, H=H), config, seeds, context.cache
        )
        distinct.append(
            DistinctShare(
                H=H,
                S=S,
                distinct_fraction=run.summary["distinct_fraction"],
                baseline=independent_distinct_baseline(H, S),
                selected_fraction=run.summary["selected_fraction"],
            )
        )
    rhos = [1e-3, 1e-1] if quick else [1e-4, 1e-3, 1e-2, 1e-1, 0.5]
    kappas = [0.5, 1.0, 2.0] if quick else [0.25, 0.5, 1.0, 2.0, 4.0]

    def t_final(task, cfg):
        return _runs.flow_runs(task, cfg, seeds, context.cache).t_final

    base = {**_runs.BASE, "S": 4, "H": 2}
    by_rho = [
        TimesAtRho.of(
            t_final(_runs.task_of(**base), _runs.reduced_config(quick, rho=rho)[0]),
            rho=rho,
        )
        for rho in rhos
    ]
    by_kappa = [
        TimesAtKappa.of(t_final(_runs.task_of(**{**base, "kappa": k}), config), kappa=k)
        for k in kappas
    ]
    return CoverageData(
        distinct=distinct,
        by_rho=by_rho,
        by_kappa=by_kappa,
        parameters=CoverageParameters(delta=config.delta, seeds=seeds),
        findings="distinct fraction vs independent-uniform baseline: "
        + ", ".join(
            f"H={d.H},S={d.S}: {d.distinct_fraction:.2f} vs {d.baseline:.2f}"
            for d in distinct
        )
        + "; median time to selection "
        + ", ".join(f"rho={r.rho}: {r.median:.0f}" for r in by_rho)
        + "; "
        + ", ".join(f"kappa={r.kappa}: {r.median:.0f}" for r in by_kappa),
    )


def _times(ax, rows, key):
    _, x, med = _style.median_quartiles(
        ax, rows, key, fmt="o-", label="median, quartiles"
    )
    _style.log_ticks(ax, x)
    ax.set_ylabel("time to delta-selection")
    return x, med


def draw(data: CoverageData):
    fig, axes = _style.subplots(1, 3, figsize=(14, 4.4))
    d = data.distinct
    idx = np.arange(len(d))
    ax = axes[0]
    ax.bar(
        idx - 0.2,
        [x.distinct_fraction for x in d],
        0.4,
        color=_style.color(0),
        label="gradient flow",
    )
    ax.bar(
        idx + 0.2,
        [x.baseline for x in d],
        0.4,
        color=_style.color(4),
        label="independent uniform choices",
    )
    ax.set_xticks(idx, [f"H={x.H}\nS={x.S}" for x in d])
    ax.set_xlabel("heads H and stride S")
    ax.set_ylabel("share of seeds with distinct offsets")
    ax.set_ylim(0, 1.12)
    ax.legend(loc="upper right", ncol=2, fontsize=7)
    ax.set_title("heads need not split the offsets")
    ax = axes[1]
    _times(ax, data.by_rho, "rho")
    ax.set_xlabel("init radius rho")
    ax.set_title("time to selection vs rho (S=4, H=2)")
    ax = axes[2]
    x, med = _times(ax, data.by_kappa, "kappa")
    ax.set_yscale("log")
    N = 4096
    ref = med[np.argmin(np.abs(x - 1.0))] * (1 + 1 / N) / (x + 1 / N)
    ax.plot(x, ref, "k--", lw=0.9, label="t(kappa=1) (1 + 1/N) / (kappa + 1/N)")
    ax.set_xlabel("shared component kappa")
    ax.set_title("time to selection vs kappa (S=4, H=2)")
    ax.legend(loc="upper right")
    return fig


def _quartile_confidence(n: int) -> str:
    """How surely the quartiles of n values bound their median, as text (`1 - 1e-15`, `0.92`)."""
    cover = quartile_median_coverage(n)
    # a miss probability below 1e-4 as its power of ten (float rounding hides its digits)
    if cover > 0.9999:
        return f"1 - 1e-{math.floor(-math.log10(1 - cover))}"
    return f"{cover:.3f}"


def _rate_scaled(row: TimesAtKappa) -> float:
    """A `by_kappa` row's median time times the reduced flow's rate kappa + 1/N."""
    return row.median * (row.kappa + 1 / N)


def claim(data: CoverageData) -> str:
    """The claim, its shapes, shares, quartiles and times from `data`."""
    n = data.parameters.seeds
    distinct = data.distinct
    excess = [d.distinct_fraction - d.baseline for d in distinct]
    above = sum(e >= 0 for e in excess)
    largest = distinct[int(np.argmax(excess))]
    example = next((d for d in distinct if (d.H, d.S) == (2, 4)), distinct[0])
    by_rho = sorted(data.by_rho, key=lambda r: r.rho)
    apart = all(a.q75 < b.q25 for a, b in zip(by_rho[1:], by_rho))
    kappas = [r.kappa for r in data.by_kappa]

    def share(d: DistinctShare) -> str:
        return share_text(round(d.distinct_fraction * n), n)

    return (
        "Checked on reduced flows (exact geometry, L=8, N=4096, beta=4, gamma=1, rho=0.1, "
        f"delta=1e-3, {n} seeds per point): gradient flow does not enforce complementary "
        "coverage. For (H, S) in {"
        + ", ".join(f"({d.H},{d.S})" for d in distinct)
        + "} the share of seeds whose heads selected pairwise distinct offsets is within "
        f"{math.ceil(100 * max(map(abs, excess))) / 100:.2f} of the share for independent "
        "uniform choices of offsets ("
        + (
            "at or above it for every shape"
            if above == len(distinct)
            else f"at or above it for {above} of the {len(distinct)} shapes"
        )
        + "; every share with its Wilson 95% interval under Measured, e.g. "
        f"{share(example)} at H={example.H}, S={example.S} against "
        f"{example.baseline:.3f}"
        + (
            ""
            if largest is example
            else f"; the largest excess {share(largest)} at H={largest.H}, "
            f"S={largest.S} against {largest.baseline:.3f}"
        )
        + "), so phases stay uncovered. At S=4, H=2 the median time to delta-selection (bars and "
        f"Measured: quartiles over the {n} seeds, which as order statistics bound the median "
        f"with confidence above {_quartile_confidence(n)}, and "
        + ("do not overlap" if apart else "overlap in places")
        + " between neighbouring rho) grows only slowly as rho shrinks (by "
        f"{100 * (by_rho[0].median / by_rho[-1].median - 1):.0f}% from "
        f"rho={compact(by_rho[-1].rho)} to {compact(by_rho[0].rho)}: medians "
        f"{by_rho[-1].median:.0f} and {by_rho[0].median:.0f}) and scales as "
        f"1/(kappa + 1/N) for kappa in [{min(kappas):g}, {max(kappas):g}], the rate of the "
        "reduced flow (docs/theory.md §6): median x (kappa + 1/N) lies in "
        f"{span_text([_rate_scaled(r) for r in data.by_kappa], lambda x: f'{x:.0f}')} at "
        f"the {len(kappas)} kappa."
    )


def tables(data: CoverageData) -> list[MeasuredTable]:
    """Distinct-offset shares (Wilson 95% intervals) against the independent-choice baseline,
    and the quartiles of the time to delta-selection against rho and kappa."""
    n = data.parameters.seeds
    distinct = []
    for d in data.distinct:
        # the share is over the seeds that selected (all of them where selected_fraction = 1)
        n_sel = round(d.selected_fraction * n)
        distinct.append(
            [
                f"H={d.H}, S={d.S}",
                share_text(n_sel, n),
                share_text(round(d.distinct_fraction * n_sel), n_sel),
                f"{d.baseline:.3f}",
            ]
        )
    quartiles = (
        f"{n} seeds each; the quartiles bound the median with confidence at least "
        f"{_quartile_confidence(n)}, as order statistics"
    )

    def times(rows, key, scaled):
        return [
            [f"{getattr(r, key):g}", f"{r.median:.0f}", f"{r.q25:.0f}..{r.q75:.0f}"]
            + ([f"{_rate_scaled(r):.0f}"] if scaled else [])
            for r in rows
        ]

    return [
        MeasuredTable(
            f"Seeds ({n} per shape) that delta-selected, and the share of them whose heads "
            "selected pairwise distinct offsets (Wilson 95% intervals), against independent "
            "uniform choices.",
            ["heads, stride", "selected", "distinct offsets", "independent baseline"],
            distinct,
        ),
        MeasuredTable(
            f"Time to delta-selection at S=4, H=2 against the init radius rho ({quartiles}).",
            ["rho", "median", "quartiles"],
            times(data.by_rho, "rho", False),
        ),
        MeasuredTable(
            f"Time to delta-selection at S=4, H=2, N={N} against kappa ({quartiles}): the "
            "reduced flow's rate is kappa + 1/N.",
            ["kappa", "median", "quartiles", "median x (kappa + 1/N)"],
            times(data.by_kappa, "kappa", True),
        ),
    ]


FIGURE = Figure(
    "coverage",
    "Coverage: do heads split the offsets?",
    claim,
    compute,
    draw,
    cost=40,
    tables=tables,
    data=CoverageData,
)
