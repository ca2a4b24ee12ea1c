"""The paper's Figure 5a in the idealized model: static vs average effective number of
offsets (docs/theory.md §9)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from matplotlib.lines import Line2D

from ..internal._records import Record
from . import _runs, _style
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._parameters import EffectiveOffsetsParameters
from ._stats import compact, plural

BRANCHES = ("key", "value")


@dataclasses.dataclass(frozen=True)
class ApproximateFlows(Record):
    """The full flows under approximate geometry: per seed the save times `t` (seeds, T), the
    `static` and `avg` effective numbers of offsets (seeds, T, H, 2) and the `status`; the
    vocabulary `N`, dimension `d` and realized `eps` of the geometry; the largest
    `max_static_avg_difference` |static - avg| over seeds, times, heads and gates."""

    t: Any
    static: Any
    avg: Any
    N: int
    d: int
    eps: float
    status: list[str]
    max_static_avg_difference: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class EffectiveOffsetsData(FigureData):
    """The full flows under exact geometry with `S` offsets: per seed the save times `t`
    (seeds, T) and the `static` and `avg` effective numbers of offsets (seeds, T, H, 2), their
    largest `max_static_avg_difference`; and the same flows under approximate geometry
    (`approximate`)."""

    t: Any
    static: Any
    avg: Any
    S: int
    max_static_avg_difference: float
    approximate: ApproximateFlows
    parameters: EffectiveOffsetsParameters


def claim(data: EffectiveOffsetsData) -> str:
    """The claim, its sizes, seeds and largest differences from `data`."""
    p, approx = data.parameters, data.approximate
    return (
        "Along the full gradient flow of the linear gate class (exact geometry, L=8, "
        f"S={data.S}, H=2, N={p.N}, beta=4, gamma=1, rho=0.1, "
        f"M={p.M} balanced contexts, {plural(len(data.static), 'seed')}) the static "
        "effective number of offsets exp(H(E[alpha])) and the average one E[exp(H(alpha))] "
        "(docs/theory.md §9, measured on the training contexts) both fall from "
        f"S={data.S} to 1 for key and value gates, and they coincide along the whole "
        "trajectory: their largest difference over seeds, heads, gates and saved times is "
        f"{compact(data.max_static_avg_difference, 2)} (under Measured), largest at t=0 "
        "and shrinking as the flow proceeds. This is a property of exact geometry, not a "
        "finding about training: the tokens share only the mean direction m, so the only "
        "input-dependent part of a linear gate's score is one coordinate per token, which "
        "stays at the size of the initialization; the gates are static, and the "
        "concentration is static selection, not input-dependent concentration (which would "
        "show as static near S with average near 1). Under approximate geometry (eps > 0: "
        f"same flow with N={approx.N}, d={approx.d}, realized eps "
        f"{approx.eps:.2f}, {plural(len(approx.status), 'seed')}) the two separate by "
        f"at most {compact(approx.max_static_avg_difference, 2)}, most during the "
        "selection and less after it: in this setting linear gates stay nearly static too, "
        "so the figure does not reproduce the paper's input-dependent concentration (both "
        "measures are taken on the training contexts, not on held-out windows)."
    )


def _approximate_setup(quick: bool):
    """A full flow under approximate geometry (eps > 0), where gates could depend on the input."""
    task = _runs.task_of(
        L=8, S=4, H=2, N=128 if quick else 256, gamma=1.0, beta=4.0, kappa=1.0, d=32
    )
    return task, _runs.theorem2_setups(quick)[1][1], 1 if quick else 2


def compute(context: FigureContext) -> EffectiveOffsetsData:
    quick = context.quick
    task, config, seeds = _runs.theorem2_setups(quick)[1]
    r = _runs.flow_runs(task, config, seeds, context.cache, trajectories=True)
    static, avg = (
        np.asarray(r.static_offsets, float),
        np.asarray(r.avg_offsets, float),
    )
    difference = float(np.nanmax(np.abs(static - avg)))
    a_task, a_config, a_seeds = _approximate_setup(quick)
    ra = _runs.flow_runs(a_task, a_config, a_seeds, context.cache, trajectories=True)
    a_difference = float(
        np.nanmax(
            np.abs(
                np.asarray(ra.static_offsets, float) - np.asarray(ra.avg_offsets, float)
            )
        )
    )
    approximate = ApproximateFlows(
        t=ra.t,
        static=ra.static_offsets,
        avg=ra.avg_offsets,
        N=a_task.N,
        d=a_task.d,
        eps=ra.sample["eps_realized"],
        status=ra.status,
        max_static_avg_difference=a_difference,
    )
    return EffectiveOffsetsData(
        t=r.t,
        static=r.static_offsets,
        avg=r.avg_offsets,
        S=task.S,
        max_static_avg_difference=difference,
        approximate=approximate,
        parameters=EffectiveOffsetsParameters(
            L=task.L,
            S=task.S,
            H=task.H,
            N=task.N,
            beta=task.beta,
            rho=config.rho,
            M=r.sample["M"],
            seeds=seeds,
            approximate_N=a_task.N,
            approximate_d=a_task.d,
            approximate_eps=approximate.eps,
            approximate_M=ra.sample["M"],
            approximate_seeds=a_seeds,
        ),
        findings=f"start (static, avg) ~ ({static[:, 0].mean():.2f}, "
        f"{avg[:, 0].mean():.2f}) of S={task.S}; "
        f"end max static {_runs.last_finite(static).max():.4f}, max avg "
        f"{_runs.last_finite(avg).max():.4f}; "
        f"max |static - avg| over seeds, heads, gates and times {difference:.2g}: "
        "static concentration; "
        f"approximate geometry (eps {approximate.eps:.2f}): max |static - avg| "
        f"{a_difference:.2g}",
    )


def _worst_difference(t, static, avg, b):
    """(times, max over seeds and heads of |static - avg|) of branch b, at the saved times t > 0."""
    tt = t[0]  # the saved times are the same for every seed (NaN after a seed stopped)
    branch_diff = np.abs(static - avg)[..., b]  # (seeds, T, H)
    saved = np.any(np.isfinite(branch_diff), axis=(0, 2))
    worst = np.full(tt.shape, np.nan)
    worst[saved] = np.nanmax(branch_diff[:, saved], axis=(0, 2))
    keep = saved & np.isfinite(tt) & (tt > 0) & (worst > 0)
    return tt[keep], worst[keep]


def draw(data: EffectiveOffsetsData):
    t = np.asarray(data.t, float)
    static, avg = (
        np.asarray(data.static, float),
        np.asarray(data.avg, float),
    )  # (seeds, T, H, 2)
    S = data.S
    seeds, _, H, _ = static.shape
    fig, axes = _style.subplots(2, 2, figsize=(10, 7.5))
    for b, branch in enumerate(BRANCHES):
        ax = axes[0, b]
        for s in range(seeds):
            ok = np.isfinite(t[s]) & (t[s] > 0)
            for h in range(H):
                c = _style.color(h)
                ax.plot(t[s, ok], static[s, ok, h, b], "-", color=c, alpha=0.8)
                ax.plot(
                    t[s, ok],
                    avg[s, ok, h, b],
                    "o",
                    color=c,
                    mfc="none",
                    ms=3.5,
                    alpha=0.8,
                )
        ax.set_xscale("log")
        ax.set_ylim(0.9, S + 0.1)
        ax.set_xlabel("time t")
        ax.set_ylabel("effective number of offsets")
        ax.set_title(f"{branch} gates: static (line) and average (circles)")
    ax = axes[1, 0]
    for s in range(seeds):
        for h in range(H):
            for b in range(2):
                x, y = static[s, :, h, b], avg[s, :, h, b]
                ok = np.isfinite(x) & np.isfinite(y)
                ax.plot(
                    x[ok], y[ok], _style.LINESTYLES[b], color=_style.color(h), alpha=0.7
                )
                ax.plot(x[ok][-1], y[ok][-1], "*", color=_style.color(h), ms=9)
    ax.plot([1, S], [1, S], "k:", lw=0.8)
    ax.fill_between([S - 0.6, S + 0.1], 0.9, 1.6, color="0.85", zorder=0)
    ax.text(
        S - 0.3,
        1.25,
        "input-\ndependent\n(not reached)",
        ha="center",
        va="center",
        fontsize=7,
    )
    ax.set_xlim(0.9, S + 0.1)
    ax.set_ylim(0.9, S + 0.1)
    ax.set_xlabel("static exp(H(E[alpha]))")
    ax.set_ylabel("average E[exp(H(alpha))]")
    ax.set_title("the paper's Fig. 5a plane (* = end; grey: eps > 0 run)")
    ax = axes[1, 1]
    runs = [("exact", t, static, avg, (2, 3))]
    approx = data.approximate
    a_static, a_avg = (
        np.asarray(approx.static, float),
        np.asarray(approx.avg, float),
    )
    runs.append(
        (
            f"eps={approx.eps:.2f} (d={approx.d}, N={approx.N})",
            np.asarray(approx.t, float),
            a_static,
            a_avg,
            (7, 5),
        )
    )
    for s in range(a_static.shape[0]):  # into the plane as well
        for h in range(a_static.shape[2]):
            for b in range(2):
                x, y = a_static[s, :, h, b], a_avg[s, :, h, b]
                ok = np.isfinite(x) & np.isfinite(y)
                axes[1, 0].plot(
                    x[ok], y[ok], _style.LINESTYLES[b], color="0.35", lw=0.8
                )
    maxima = []
    for label, tr, st, av, c in runs:
        for b, branch in enumerate(BRANCHES):
            tt, worst = _worst_difference(tr, st, av, b)
            ax.plot(
                tt,
                worst,
                _style.LINESTYLES[b],
                marker=_style.MARKERS[b],
                color=_style.color(c[b]),
                ms=3.5,
                label=f"{label}: {branch} gates",
            )
        maxima.append(f"{label.split(' ')[0]}: {np.nanmax(np.abs(st - av)):.1e}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time t")
    ax.set_ylabel("max |static - average| over seeds, heads")
    ax.set_title("largest |static - average| per time (" + "; ".join(maxima) + ")")
    ax.legend(loc="lower left")
    handles = [
        Line2D([], [], color=_style.color(h), label=f"head {h}") for h in range(H)
    ]
    handles += [
        Line2D(
            [],
            [],
            color="0.3",
            ls=_style.LINESTYLES[b],
            label=f"{br} gates (lower left)",
        )
        for b, br in enumerate(BRANCHES)
    ]
    _style.legend_below(
        fig, handles, [h.get_label() for h in handles], ncol=len(handles)
    )
    fig.suptitle(
        "Static vs average effective number of offsets along the full flow (top: exact geometry)"
    )
    return fig


def tables(data: EffectiveOffsetsData) -> list[MeasuredTable]:
    """Static and average effective numbers of offsets at the start and the end of the flows,
    and their largest difference, per geometry and gate branch."""
    approx = data.approximate
    runs = [
        ("exact", data.static, data.avg),
        (
            f"approximate (d={approx.d}, eps {approx.eps:.2f})",
            approx.static,
            approx.avg,
        ),
    ]
    rows = []
    for label, static, avg in runs:
        static, avg = (
            np.asarray(static, float),
            np.asarray(avg, float),
        )  # (seeds, T, H, 2)
        end_static, end_avg = _runs.last_finite(static), _runs.last_finite(avg)
        for b, branch in enumerate(BRANCHES):
            rows.append(
                [
                    label,
                    str(static.shape[0]),
                    branch,
                    f"{static[:, 0, :, b].mean():.2f}, {avg[:, 0, :, b].mean():.2f}",
                    f"{end_static[..., b].max():.4f}, {end_avg[..., b].max():.4f}",
                    f"{np.nanmax(np.abs(static - avg)[..., b]):.2g}",
                ]
            )
    return [
        MeasuredTable(
            f"Effective number of offsets (of S={data.S}) on the training contexts: static "
            "exp(H(E[alpha])) and average E[exp(H(alpha))]; start = mean over seeds and heads "
            "at t=0, end = largest over seeds and heads at the last saved time, largest "
            "abs(static - avg) over seeds, heads and saved times.",
            [
                "geometry",
                "seeds",
                "gates",
                "start (static, avg)",
                "end (static, avg)",
                "max abs(static - avg)",
            ],
            rows,
        )
    ]


FIGURE = Figure(
    "effective_offsets",
    "The paper's Figure 5a in the idealized model",
    claim,
    compute,
    draw,
    cost=35,
    tables=tables,
    data=EffectiveOffsetsData,
)
