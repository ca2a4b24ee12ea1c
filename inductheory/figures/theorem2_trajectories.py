"""Theorem 2 (docs/theory.md §6-§7): gradient flow of the linear gate class selects one
offset per head."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from matplotlib.lines import Line2D

from ..internal._records import Record
from ..model._gates import value_follows_key
from . import _runs, _style
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._stats import compact, median_interval, share_text, span_text

BRANCHES = ("key", "value")


@dataclasses.dataclass(frozen=True)
class FlowTrajectories(Record):
    """One flow's seeds: the task and flow configuration (their `to_dict()`), the sample size
    `M` (None for the reduced flow), and per seed the save times `t` (seeds, T), gate mass
    `mass` (seeds, T, H, 2, S), selected `key_offsets` and `value_offsets` (seeds, H), the time
    `t_final` and `status` of the end, and the loss along the flow `loss` (seeds, T)."""

    task: dict[str, Any]
    config: dict[str, Any]
    M: int | None
    t: Any
    mass: Any
    key_offsets: Any
    value_offsets: Any
    t_final: Any
    status: list[str]
    loss: Any

    @property
    def selected_count(self) -> int:
        """Seeds that reached delta-selection."""
        return int(np.sum(np.asarray(self.status) == "selected"))


# the flows' labels, in the order the figure shows them
FLOWS = ("reduced", "full")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Theorem2Data(FigureData):
    """The reduced and the full flow's trajectories, by label (`"reduced"`, `"full"`)."""

    runs: dict[str, FlowTrajectories]

    def in_order(self) -> list[tuple[str, FlowTrajectories]]:
        """The runs by label, reduced first (whatever the dict's order: stored JSON sorts it)."""
        return [(label, self.runs[label]) for label in FLOWS]


def claim(data: Theorem2Data) -> str:
    """The claim, every measured number (seeds, selections, times) from `data`."""
    reduced, full = data.runs["reduced"], data.runs["full"]
    task, config = reduced.task, reduced.config
    t = np.concatenate([reduced.t_final, full.t_final])
    selected = [share_text(r.selected_count, len(r.status)) for r in (reduced, full)]
    every = share_text(sum(r.selected_count for r in (reduced, full)), t.size)
    panels = min(3, len(reduced.status), len(full.status))
    return (
        "Theorem 2 (docs/theory.md §7), checked numerically, not proved, at one setting: "
        f"L={task['L']}, S={task['S']}, H={task['H']}, beta={compact(task['beta'])}, "
        f"gamma={compact(task['gamma'])}, kappa={compact(task['kappa'])}, exact geometry, "
        f"ball-uniform init of radius rho={compact(config['rho'])}, "
        f"delta={compact(config['delta'])}. The reduced flow (exact on span(m), "
        f"N={task['N']}; {len(reduced.status)} seeds) and the full d-dimensional flow on "
        f"a balanced sample (N={full.task['N']}, M={full.M} contexts; "
        f"{len(full.status)} seeds) both reach delta-selection in every seed (reduced "
        f"{selected[0]} and full {selected[1]}, Wilson 95% intervals): every head ends with "
        "key mass >= 1-delta on one offset r and value mass >= 1-delta on r+1, with the "
        "same gates for every window (exactly for the reduced flow; up to small differences "
        "for the full flow, measured in the next figure). Both show the same course (a "
        "plateau near uniform gates, then a fast selection ending in delta-selection at "
        f"t = {span_text(t, lambda x: compact(x, 2, True))} in every seed: "
        f"{every}; per-seed times under Measured); different heads may select the same r. "
        f"Panels show the first {panels} seeds."
    )


def compute(context: FigureContext) -> Theorem2Data:
    quick = context.quick
    runs = {}
    for label, (task, config, seeds) in zip(FLOWS, _runs.theorem2_setups(quick)):
        r = _runs.flow_runs(task, config, seeds, context.cache, trajectories=True)
        runs[label] = FlowTrajectories(
            task=task.to_dict(),
            config=config.to_dict(),
            M=r.sample.get("M"),
            t=r.t,
            mass=r.mass,
            key_offsets=r.key_offsets,
            value_offsets=r.value_offsets,
            t_final=r.t_final,
            status=r.status,
            loss=r.loss,
        )
    return Theorem2Data(
        runs=runs,
        parameters={
            k: f"L={v.task['L']} S={v.task['S']} H={v.task['H']} N={v.task['N']} "
            f"beta={v.task['beta']} rho={v.config['rho']} delta={v.config['delta']}"
            + (f" M={v.M}" if v.M else "")
            for k, v in runs.items()
        },
        findings="; ".join(
            f"{k}: {v.selected_count}/{len(v.status)} seeds reached delta-selection with "
            f"value offset = key offset + 1"
            for k, v in runs.items()
        ),
    )


def draw(data: Theorem2Data):
    runs = data.runs
    n_seeds = min(3, *(len(r.status) for r in runs.values()))
    fig, axes = _style.subplots(
        2 * len(runs),
        n_seeds,
        figsize=(3.6 * n_seeds, 2.5 * 2 * len(runs)),
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    H = S = 0
    for row, (label, run) in enumerate(data.in_order()):
        t, mass = (
            np.asarray(run.t, float),
            np.asarray(run.mass, float),
        )  # (seeds, T), (seeds, T, H, 2, S)
        H, S = mass.shape[2], mass.shape[4]
        for s in range(n_seeds):
            ok = np.isfinite(t[s]) & (t[s] > 0)
            for b, branch in enumerate(BRANCHES):
                ax = axes[2 * row + b, s]
                for h in range(H):
                    for r in range(S):
                        ax.plot(
                            t[s, ok],
                            mass[s, ok, h, b, r],
                            color=_style.color(r),
                            ls=_style.LINESTYLES[h % 4],
                        )
                ax.set_xscale("log")
                key, value = run.key_offsets[s], run.value_offsets[s]
                ax.set_title(
                    f"{label} flow, seed {s}: {branch} gates\nselected key r={key}, value r={value}"
                )
                ax.set_ylim(-0.03, 1.03)
                ax.set_ylabel(f"{branch} mass p(r)")
    for ax in axes[-1]:
        ax.set_xlabel("time t")
    handles = [
        Line2D([], [], color=_style.color(r), label=f"offset r={r}") for r in range(S)
    ]
    handles += [
        Line2D([], [], color="0.3", ls=_style.LINESTYLES[h % 4], label=f"head {h}")
        for h in range(H)
    ]
    _style.legend_below(
        fig, handles, [h.get_label() for h in handles], ncol=len(handles)
    )
    fig.suptitle(
        "Theorem 2: gate mass per offset along gradient flow (colour = offset, line style = head)"
    )
    return fig


def _median_text(t) -> str:
    m = median_interval(t)
    return f"{m.median:.0f} [{m.low:.0f}, {m.high:.0f}] ({100 * m.coverage:.1f}%)"


def tables(data: Theorem2Data) -> list[MeasuredTable]:
    """Per flow: the share of seeds that delta-selected with value = key + 1 (Wilson 95%), and
    each seed's selection and time to delta-selection."""
    summary, seeds = [], []
    for label, run in data.in_order():
        status = np.asarray(run.status)
        keys, values = np.asarray(run.key_offsets), np.asarray(run.value_offsets)
        ok = (status == "selected") & value_follows_key(keys, values)
        t = np.asarray(run.t_final, float)
        summary.append(
            [
                label,
                f"N={run.task['N']}" + (f", M={run.M}" if run.M else ""),
                share_text(int(ok.sum()), ok.size),
                _median_text(t),
            ]
        )
        seeds += [
            [label, str(i), str(k), str(v), run.status[i], f"{t[i]:.0f}"]
            for i, (k, v) in enumerate(zip(keys.tolist(), values.tolist()))
        ]
    return [
        MeasuredTable(
            "Seeds that reached delta-selection with value offset = key offset + 1 "
            "(Wilson 95% interval), and the time to delta-selection: median and the "
            "order-statistic interval of the median with its exact coverage (with so few "
            "seeds the range, below 95% for 4 seeds or fewer).",
            ["flow", "sample", "selected, value = key + 1", "time to selection"],
            summary,
        ),
        MeasuredTable(
            "Every seed's selected offsets per head.",
            ["flow", "seed", "key offsets", "value offsets", "status", "time"],
            seeds,
        ),
    ]


FIGURE = Figure(
    "theorem2_trajectories",
    "Theorem 2: gradient flow selects one offset per head",
    claim,
    compute,
    draw,
    cost=10,
    tables=tables,
    data=Theorem2Data,
)
