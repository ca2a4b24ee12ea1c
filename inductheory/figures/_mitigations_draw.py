"""The mitigations figure's picture and measured tables, drawn from its data alone."""

from __future__ import annotations

import numpy as np

from . import _style
from ._figure import MeasuredTable
from ._mitigations_data import (
    KINDS,
    THRESHOLD_FACTORS,
    MitigationsData,
    PaperComparison,
    distinct_seeds,
)
from ._stats import share_text


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
                    share_text(distinct_seeds(r), r.selected_seeds)
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


def draw_mitigations(data: MitigationsData):
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
