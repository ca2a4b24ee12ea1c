"""Convergence rates of the reduced flow (docs/theory.md §6): escape from the uniform point,
then a 1/t tail."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..flow import _rates
from ..flow._config import FlowConfig
from ..flow._rates import EscapeRates
from ..internal._records import Record, optional_field
from . import _runs, _style
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._parameters import ConvergenceRatesParameters
from ._stats import (
    bootstrap_interval,
    compact,
    interval_text,
    median_interval,
    wilson_interval,
)

SHAPE = dict(L=8, S=4, H=2, N=4096, gamma=1.0, beta=4.0, kappa=1.0)
TAIL_DELTA = 1e-6
FIT_WINDOW = (2e-6, 1e-4)  # 1 - p(t) fitted in (lo, hi]
# At delta <= 1e-6 the selection margin's slope is at its rounding noise when the event fires:
# Newton's root find can stall there (a solver error), bisection cannot. Before the event the
# two give the same steps, hence the same saved trajectories.
ROOT_FINDER = "bisection"
LEVEL = 0.95  # of every interval
BOOTSTRAP = dict(resamples=2000, seed=0)


@dataclasses.dataclass(frozen=True)
class MedianEstimate(Record):
    """A median with its order-statistic interval at `LEVEL`: `median`, `ci` [low, high], its
    exact `coverage` and the sample size `n`."""

    median: float
    ci: list[float]
    coverage: float
    n: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class TailRun(Record):
    """One seed run to the tail: `rho`, `seed`, `status`; for a selected seed also its
    `key_offsets` (H,), the fitted `exponent` of 1 - p(t), the predicted coefficient
    `C_predicted`, `t_times_unselected_last` (t (1 - p) at the last save), `t_final`, the
    initial symmetry-breaking norm `rho_eff` and the escape time `escape_measured` against
    `escape_predicted`; for the drawn seeds (the first three) also the saved times `t` (T,) and
    the unselected mass 1 - p(t) `unselected` (T,)."""

    rho: float
    seed: int
    status: str
    key_offsets: list[int] | None = optional_field()
    t: list[float] | None = optional_field()
    unselected: list[float] | None = optional_field()
    exponent: float | None = optional_field()
    C_predicted: float | None = optional_field()
    t_times_unselected_last: float | None = optional_field()
    t_final: float | None = optional_field()
    rho_eff: float | None = optional_field()
    escape_measured: float | None = optional_field()
    escape_predicted: float | None = optional_field()


@dataclasses.dataclass(frozen=True, kw_only=True)
class TailFit(Record):
    """The tail over a set of seeds: `selected` of `seeds` with its Wilson `selected_ci95`;
    the exponent's `exponent_mean` with its bootstrap `exponent_mean_ci95`, `exponent_min`,
    `exponent_max`, `exponent_std`; t (1 - p) / C as `tail_over_C` (a `MedianEstimate`) with
    `tail_over_C_min`, `tail_over_C_max`; measured / predicted escape time as `escape_ratio`
    with `escape_ratio_min`, `escape_ratio_max`."""

    selected: int
    seeds: int
    selected_ci95: list[float]
    exponent_mean: float
    exponent_mean_ci95: list[float]
    exponent_min: float
    exponent_max: float
    exponent_std: float
    tail_over_C: MedianEstimate
    tail_over_C_min: float
    tail_over_C_max: float
    escape_ratio: MedianEstimate
    escape_ratio_min: float
    escape_ratio_max: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class RhoTailFit(TailFit):
    """The `TailFit` of the seeds started at one `rho`."""

    rho: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class TailSummary(TailFit):
    """The `TailFit` of every seed, with `escape_ratio_median` (the median of `escape_ratio`),
    the log-log slope `time_vs_delta_slope` of the median time to selection against delta with
    its bootstrap `time_vs_delta_slope_ci95`, and `selected_tails` of `tails` (`selected` of
    `seeds` again)."""

    escape_ratio_median: float
    time_vs_delta_slope: float
    time_vs_delta_slope_ci95: list[float]
    selected_tails: int
    tails: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class DeltaRuns(Record):
    """The seeds run to one `delta` (rho = 0.1): `selected` of `seeds` with its Wilson
    `selected_ci95`; over the selected seeds the time to selection's `median` with its
    `median_interval` (a `MedianEstimate`), quartiles `q25`, `q75` and every `t_final`; the
    median tail coefficient `median_C`; t delta / C as `median_t_delta_over_C` and
    `t_delta_over_C` (a `MedianEstimate`)."""

    delta: float
    selected: int
    seeds: int
    selected_ci95: list[float]
    median: float
    median_interval: MedianEstimate
    q25: float
    q75: float
    median_C: float
    median_t_delta_over_C: float
    t_delta_over_C: MedianEstimate
    t_final: list[float]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ConvergenceRatesData(FigureData):
    """The escape `rates` at the uniform point (`EscapeRates`), every seed of the tail runs
    (`tails`, a `TailRun` each), their fit per rho (`per_rho`) and over all (`summary`), and
    the time to selection per delta (`by_delta`, a `DeltaRuns` each)."""

    rates: EscapeRates
    tails: list[TailRun]
    per_rho: list[RhoTailFit]
    by_delta: list[DeltaRuns]
    summary: TailSummary
    parameters: ConvergenceRatesParameters


def _small(x: float) -> str:
    """A rho or delta as the claim writes it: `1e-2`, `0.1`, `0.5`."""
    return compact(x, sci=x < 0.1)


def _grid(values) -> str:
    """A grid of deltas: `{1e-2, ..., 1e-6}` when it steps by decades over more than three
    values, else every value."""
    values = [float(v) for v in values]
    decades = all(np.isclose(a / b, 10) for a, b in zip(values, values[1:]))
    if decades and len(values) > 3:
        return f"{{{_small(values[0])}, ..., {_small(values[-1])}}}"
    return "{" + ", ".join(map(_small, values)) + "}"


def _selects(rows) -> str:
    """Whether every seed of `rows` (with `selected`, `seeds`, `selected_ci95`) selects."""
    return all(r.selected == r.seeds for r in rows)


def claim(data: ConvergenceRatesData) -> str:
    """The claim, its shapes, seeds, grids, saves and selections from `data`."""
    params, summary = data.parameters, data.summary
    per_rho, by_delta = data.per_rho, data.by_delta
    lo, hi = params.fit_window
    n_rho = sorted({r.seeds for r in per_rho})
    n_delta = sorted({r.seeds for r in by_delta})
    exponents = [r.exponent_mean for r in sorted(per_rho, key=lambda r: r.rho)]
    below = all(-1.05 < e < -1 for e in exponents)
    nearer = all(a < b for a, b in zip(exponents, exponents[1:]))
    n, k = summary.seeds, summary.selected
    delta_rows = ", ".join(
        sorted(
            {
                f"{r.selected}/{r.seeds} {interval_text(*r.selected_ci95)}"
                for r in by_delta
            }
        )
    )
    return (
        "Convergence of the reduced flow (docs/theory.md §6). Reduced flows (exact geometry, "
        + params.task_text(", ")
        + f"), the selection time located by {params.root_finder}. Tail: "
        f"{'/'.join(map(str, n_rho))} seeds for each rho in "
        f"{{{', '.join(_small(r.rho) for r in per_rho)}}} ({n} in all), run to delta = "
        f"{_small(params.tail_delta)} with "
        f"{len(data.tails[0].t) - 1} log-spaced saves in [{params.saves_text()}]; "
        + ("every seed selects" if _selects(per_rho) else "not every seed selects")
        + f" (n/n with its Wilson 95% interval under Measured: {k}/{n} "
        f"{interval_text(*summary.selected_ci95)}). The unselected mass 1 - p(t) (largest "
        "mass off the final selection over heads and branches) is fitted on log-log axes over "
        f"1 - p in ({_small(lo)}, {_small(hi)}]: the exponent is "
        + ("close to -1, a little below it" if below else "not just below -1")
        + (
            ", and nearer -1 the larger rho"
            if nearer
            else ", not always nearer -1 the larger rho"
        )
        + " (mean over seeds with a 95% bootstrap interval over seeds, and its range, per rho "
        f"and for all {n} under Measured), and t (1 - p) at the end is compared with the "
        "coefficient C = max_{h,B} sum_{r'} 1/((kappa + 1/N) S Delta g_{r'}) predicted from the "
        "loss gradient gaps Delta g at the selected vertex (inductheory.flow.tail_coefficients; "
        "median ratio with its 95% order-statistic interval). Hence the time to "
        f"delta-selection is about C/delta plus the escape time: delta in "
        f"{_grid([r.delta for r in by_delta])} ({'/'.join(map(str, n_delta))} seeds per "
        f"delta, rho = {_small(params.delta_rho)}; "
        + (
            f"every seed selects at every delta, {delta_rows} each"
            if _selects(by_delta)
            else f"selected: {delta_rows}"
        )
        + ")"
        + _TAIL
    )


_TAIL = (
    ", the median time and median time x delta / C with 95% order-statistic intervals, and "
    "the log-log slope of the median time against delta with a 95% bootstrap interval over "
    "seeds, under Measured. Escape: b = 0 is not a fixed point (key mass drifts off offset "
    "S-1, value mass off offset 0, equally for all phases), but on the symmetry-breaking "
    "directions the Jacobian has the closed-form rate lambda (proofs/escape_rate.py); the time "
    "at which the symmetry-breaking norm of the logits reaches 1 is compared with "
    "log(1/rho_eff)/lambda, rho_eff its initial value (median ratio with its 95% "
    "order-statistic interval under Measured). log(1/rho) enters only through this escape "
    "time, which is why the time to selection hardly depends on rho."
)


def _tail_config(quick: bool, rho: float) -> FlowConfig:
    return FlowConfig(
        dynamics="reduced",
        rho=rho,
        delta=TAIL_DELTA,
        t_max=1e9,
        n_save=80 if quick else 160,
        t_save_min=1.0,
        max_steps=200_000,
        root_finder=ROOT_FINDER,
    )


def _delta_config(delta: float) -> FlowConfig:
    return FlowConfig(
        dynamics="reduced",
        rho=0.1,
        delta=delta,
        t_max=1e9,
        n_save=8,
        max_steps=200_000,
        root_finder=ROOT_FINDER,
    )


def _first_crossing(t, y, level):
    """First time y(t) >= level, log-linear interpolation between saved points (NaN if never)."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    ok = np.isfinite(y) & (t > 0)
    t, y = t[ok], y[ok]
    idx = np.flatnonzero(y >= level)
    if idx.size == 0:
        return float("nan")
    i = idx[0]
    if i == 0:
        return float(t[0])
    w = (level - y[i - 1]) / (y[i] - y[i - 1])
    return float(np.exp(np.log(t[i - 1]) + w * (np.log(t[i]) - np.log(t[i - 1]))))


def _median_interval(values) -> MedianEstimate:
    """`median_interval` at `LEVEL` as the data store it."""
    m = median_interval(values, LEVEL)
    n = int(np.asarray(values).size)
    return MedianEstimate(median=m.median, ci=[m.low, m.high], coverage=m.coverage, n=n)


def _bootstrap_interval(groups, statistic) -> list[float]:
    """`bootstrap_interval` at this figure's `LEVEL` and `BOOTSTRAP` settings."""
    return bootstrap_interval(groups, statistic, level=LEVEL, **BOOTSTRAP)


def _tail_fit(rows: list[TailRun], fit=TailFit, **extra) -> TailFit:
    """Exponent (mean, bootstrap interval, range), t(1-p)/C and escape ratio (medians with
    order-statistic intervals) over the selected seeds of `rows`; shares with Wilson intervals.
    A `fit` subclass of `TailFit` takes its other fields from `extra`."""
    good = [r for r in rows if r.status == "selected"]
    ex = np.array([r.exponent for r in good])
    ratio_c = np.array([r.t_times_unselected_last / r.C_predicted for r in good])
    ratio_e = np.array([r.escape_measured / r.escape_predicted for r in good])
    return fit(
        selected=len(good),
        seeds=len(rows),
        selected_ci95=list(wilson_interval(len(good), len(rows))),
        exponent_mean=float(ex.mean()),
        exponent_mean_ci95=_bootstrap_interval([ex], np.mean),
        exponent_min=float(ex.min()),
        exponent_max=float(ex.max()),
        exponent_std=float(ex.std()),
        tail_over_C=_median_interval(ratio_c),
        tail_over_C_min=float(ratio_c.min()),
        tail_over_C_max=float(ratio_c.max()),
        escape_ratio=_median_interval(ratio_e),
        escape_ratio_min=float(ratio_e.min()),
        escape_ratio_max=float(ratio_e.max()),
        **extra,
    )


def _log_slope(deltas, *times) -> float:
    """Least-squares slope of log(median time) against log(delta)."""
    return float(
        np.polyfit(np.log(deltas), np.log([np.median(t) for t in times]), 1)[0]
    )


def compute(context: FigureContext) -> ConvergenceRatesData:
    quick = context.quick
    task = _runs.task_of(**SHAPE)
    rates = _rates.reduced_escape_rates(task)
    rhos = [1e-3, 1e-1] if quick else [1e-4, 1e-3, 1e-2, 1e-1, 0.5]
    seeds = 3 if quick else 16
    tails = []
    for rho in rhos:
        run = _runs.flow_runs(
            task, _tail_config(quick, rho), seeds, context.cache, trajectories=True
        )
        t, mass = np.asarray(run.t, float), np.asarray(run.mass, float)
        for i in range(seeds):
            keys = np.asarray(run.key_offsets[i])
            if run.status[i] != "selected":
                tails.append(TailRun(rho=rho, seed=i, status=run.status[i]))
                continue
            y = _rates.unselected_mass(mass[i], keys)
            slope, _ = _rates.fit_decay_exponent(
                t[i], y, y_min=FIT_WINDOW[0], y_max=FIT_WINDOW[1]
            )
            breaking = _rates.breaking_norm(np.log(mass[i]))
            C = float(_rates.tail_coefficients(task, keys).max())
            last = np.flatnonzero(np.isfinite(y))[-1]
            drawn = i < 3  # only the drawn seeds keep their trajectories
            tails.append(
                TailRun(
                    rho=rho,
                    seed=i,
                    status="selected",
                    key_offsets=keys.tolist(),
                    t=t[i].tolist() if drawn else None,
                    unselected=y.tolist() if drawn else None,
                    exponent=slope,
                    C_predicted=C,
                    t_times_unselected_last=float(t[i][last] * y[last]),
                    t_final=float(run.t_final[i]),
                    rho_eff=float(breaking[0]),
                    escape_measured=_first_crossing(t[i], breaking, 1.0),
                    escape_predicted=float(_rates.escape_time(task, breaking[0])),
                )
            )
    deltas = [1e-2, 1e-3, 1e-4] if quick else [1e-2, 1e-3, 1e-4, 1e-5, 1e-6]
    d_seeds = 8 if quick else 64
    by_delta, times = [], []
    for delta in deltas:
        run = _runs.flow_runs(task, _delta_config(delta), d_seeds, context.cache)
        ok = np.asarray(run.status) == "selected"
        tf = np.asarray(run.t_final, float)[ok]
        C = np.array(
            [
                _rates.tail_coefficients(task, k).max()
                for k in np.asarray(run.key_offsets)[ok]
            ]
        )
        times.append(tf)
        by_delta.append(
            DeltaRuns(
                delta=delta,
                selected=int(ok.sum()),
                seeds=d_seeds,
                selected_ci95=list(wilson_interval(int(ok.sum()), d_seeds)),
                median=float(np.median(tf)),
                median_interval=_median_interval(tf),
                q25=float(np.quantile(tf, 0.25)),
                q75=float(np.quantile(tf, 0.75)),
                median_C=float(np.median(C)),
                median_t_delta_over_C=float(np.median(tf * delta / C)),
                t_delta_over_C=_median_interval(tf * delta / C),
                t_final=tf.tolist(),
            )
        )
    every = _tail_fit(tails)
    slope_dt = _log_slope(deltas, *times)
    summary = _tail_fit(
        tails,
        TailSummary,
        escape_ratio_median=every.escape_ratio.median,
        time_vs_delta_slope=slope_dt,
        time_vs_delta_slope_ci95=_bootstrap_interval(
            times, lambda *t: _log_slope(deltas, *t)
        ),
        selected_tails=every.selected,
        tails=every.seeds,
    )
    per_rho = [
        _tail_fit([r for r in tails if r.rho == rho], RhoTailFit, rho=rho)
        for rho in rhos
    ]
    s = summary
    tail_config = _tail_config(quick, rhos[0])
    return ConvergenceRatesData(
        rates=rates,
        tails=tails,
        per_rho=per_rho,
        by_delta=by_delta,
        summary=summary,
        parameters=ConvergenceRatesParameters(
            **SHAPE,
            rhos=rhos,
            tail_seeds=seeds,
            tail_delta=TAIL_DELTA,
            save_range=[tail_config.t_save_min, tail_config.t_max],
            fit_window=list(FIT_WINDOW),
            deltas=deltas,
            delta_rho=_delta_config(deltas[0]).rho,
            delta_seeds=d_seeds,
            root_finder=ROOT_FINDER,
            level=LEVEL,
            resamples=BOOTSTRAP["resamples"],
            bootstrap_seed=BOOTSTRAP["seed"],
        ),
        findings=(
            f"escape rates lambda sym {rates.sym:.4f}, anti {rates.anti:.4f}; "
            f"exponent of 1-p(t) {s.exponent_mean:.4f} "
            f"[{s.exponent_mean_ci95[0]:.4f}, {s.exponent_mean_ci95[1]:.4f}] "
            f"(range {s.exponent_min:.4f}..{s.exponent_max:.4f}, "
            f"{s.selected}/{s.seeds} seeds selected); "
            f"t(1-p) at the end / predicted C median {s.tail_over_C.median:.4f} "
            f"(range {s.tail_over_C_min:.4f}..{s.tail_over_C_max:.4f}); measured / "
            f"predicted escape time median {s.escape_ratio.median:.2f} (range "
            f"{s.escape_ratio_min:.2f}..{s.escape_ratio_max:.2f}); median time to "
            f"selection vs delta: slope {slope_dt:.3f}, "
            + ", ".join(
                f"delta={r.delta:g}: {r.median:.4g} (t delta / C = "
                f"{r.median_t_delta_over_C:.3f}, {r.selected}/{r.seeds})"
                for r in by_delta
            )
        ),
    )


def _interval(ci, digits: int, fmt: str = "f") -> str:
    return f"[{ci[0]:.{digits}{fmt}}, {ci[1]:.{digits}{fmt}}]"


def _median_text(m: MedianEstimate, digits: int, fmt: str = "f") -> str:
    """A `_median_interval` as `median [low, high]`, marked * when its coverage is below `LEVEL`
    (too few seeds: the interval is then the range)."""
    mark = "" if m.coverage >= LEVEL else "*"
    return f"{m.median:.{digits}{fmt}} {_interval(m.ci, digits, fmt)}{mark}"


def _share_text(k: int, n: int, ci) -> str:
    return f"{k}/{n} {_interval(ci, 2)}"


def _with_note(caption: str, rows: list[list[str]]) -> str:
    """The caption, with the meaning of * when a cell has it."""
    if any(cell.endswith("*") for row in rows for cell in row):
        caption += (
            f"; * too few seeds for a {LEVEL:.0%} order-statistic interval: the range"
        )
    return caption


def tables(data: ConvergenceRatesData) -> list[MeasuredTable]:
    """The tail fit per rho and over all seeds, the time to selection per delta, the rates."""
    s, rates = data.summary, data.rates
    pct = f"{LEVEL:.0%}"
    rows = [
        [
            label,
            _share_text(r.selected, r.seeds, r.selected_ci95),
            f"{r.exponent_mean:.4f} {_interval(r.exponent_mean_ci95, 4)}",
            f"{r.exponent_min:.4f}..{r.exponent_max:.4f}",
            _median_text(r.tail_over_C, 4),
            _median_text(r.escape_ratio, 3),
        ]
        for label, r in [(f"{r.rho:g}", r) for r in data.per_rho] + [("all", s)]
    ]
    per_rho = data.per_rho[0].seeds
    tail = MeasuredTable(
        _with_note(
            f"Tail to delta = {TAIL_DELTA:g}, {per_rho} seeds per rho, {s.seeds} in all "
            f"({pct} intervals: Wilson for the share selected, bootstrap over seeds for the "
            "mean exponent, order statistics for medians)",
            rows,
        ),
        [
            "rho",
            "selected",
            "exponent of 1 - p: mean",
            "exponent range",
            "t (1 - p) / C at the end: median",
            "escape time measured / predicted: median",
        ],
        rows,
    )
    rows = [
        [
            f"{r.delta:g}",
            _share_text(r.selected, r.seeds, r.selected_ci95),
            _median_text(r.median_interval, 4, "g"),
            f"{r.q25:.4g}..{r.q75:.4g}",
            _median_text(r.t_delta_over_C, 3),
        ]
        for r in data.by_delta
    ]
    lo, hi = s.time_vs_delta_slope_ci95
    delta = MeasuredTable(
        _with_note(
            f"Time to delta-selection, rho = 0.1, {data.by_delta[0].seeds} seeds per "
            f"delta: log-log slope of the median time against delta "
            f"{s.time_vs_delta_slope:.3f} [{lo:.3f}, {hi:.3f}] (bootstrap over seeds); "
            f"{pct} intervals, Wilson for shares, order statistics for medians",
            rows,
        ),
        ["delta", "selected", "median time", "quartiles", "median t delta / C"],
        rows,
    )
    escape = MeasuredTable(
        "Escape rates at the uniform point (closed form, proofs/escape_rate.py)",
        ["mode", "lambda"],
        [
            ["head-symmetric", f"{rates.sym:.6f}"],
            ["head-antisymmetric", f"{rates.anti:.6f}"],
            ["escape (the larger)", f"{rates.rate:.6f}"],
        ],
    )
    return [tail, delta, escape]


def draw(data: ConvergenceRatesData):
    fig, axes = _style.subplots(1, 3, figsize=(15, 4.6))
    tails = [r for r in data.tails if r.status == "selected"]
    rhos = sorted({r.rho for r in tails})
    ax = axes[0]
    for j, rho in enumerate(rhos):
        for k, r in enumerate([r for r in tails if r.rho == rho and r.t is not None]):
            t, y = (
                np.array(r.t, dtype=float),
                np.array(r.unselected, dtype=float),
            )  # JSON null -> nan
            ok = np.isfinite(y) & (t > 0)
            ax.loglog(
                t[ok],
                y[ok],
                color=_style.color(j),
                lw=0.9,
                alpha=0.8,
                label=f"rho={rho:g}" if k == 0 else None,
            )
    C = np.median([r.C_predicted for r in tails])
    tt = np.geomspace(1e3, 1e7, 20)
    ax.loglog(tt, C / tt, "k--", lw=1.2, label=f"C/t, C={C:.2f} (vertex gradient gaps)")
    s = data.summary
    ax.set_title(
        f"1 - p(t): fitted exponent {s.exponent_mean:.3f} "
        f"({s.exponent_min:.3f}..{s.exponent_max:.3f}, {s.selected} seeds)"
    )
    ax.set_xlabel("flow time t")
    ax.set_ylabel("1 - p(t), mass off the final selection")
    ax.set_ylim(1e-7, 1.5)
    ax.set_xlim(0.8, 1e8)
    ax.legend(loc="lower left", fontsize=7)
    ax = axes[1]
    for j, rho in enumerate(rhos):
        pts = [
            (np.log(1 / r.rho_eff), r.escape_measured) for r in tails if r.rho == rho
        ]
        ax.plot(
            *zip(*sorted(pts)),
            _style.MARKERS[j % len(_style.MARKERS)],
            color=_style.color(j),
            ms=4,
            ls="none",
            label=f"rho={rho:g}",
        )
    x = np.linspace(0, max(np.log(1 / r.rho_eff) for r in tails) * 1.05, 50)
    lam = data.rates.rate
    ax.plot(x, x / lam, "k--", lw=1.2, label=f"log(1/rho_eff)/lambda, lambda={lam:.4f}")
    ax.set_xlabel("log(1/rho_eff), rho_eff = initial symmetry-breaking norm")
    ax.set_ylabel("time the symmetry-breaking norm reaches 1")
    ax.set_title("escape from the uniform point: measured vs linearized")
    ax.legend(loc="upper left", fontsize=7)
    ax = axes[2]
    by_delta = sorted(data.by_delta, key=lambda r: r.delta)
    _, d, _ = _style.median_quartiles(
        ax,
        by_delta,
        "delta",
        fmt="o",
        label="median, quartiles over seeds",
    )
    Cd = np.array([r.median_C for r in by_delta])
    ax.loglog(d, Cd / d, "k--", lw=1.2, label="C/delta (tail prediction)")
    ax.set_xlabel("selection tolerance delta")
    ax.set_ylabel("time to delta-selection")
    ax.set_title(
        "time to selection ~ C/delta (log-log slope "
        f"{s.time_vs_delta_slope:.3f} {_interval(s.time_vs_delta_slope_ci95, 3)}), "
        "rho=0.1"
    )
    ax.legend(loc="upper right", fontsize=7)
    return fig


FIGURE = Figure(
    "convergence_rates",
    "Convergence rates: escape from uniform gates, then a 1/t tail",
    claim,
    compute,
    draw,
    cost=25,
    tables=tables,
    data=ConvergenceRatesData,
)
