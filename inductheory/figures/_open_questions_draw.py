"""The drawing of figure `open_questions` (from its data alone): the boundary per seed of
every local-window row, the path's previous-token attention against the boundary with its
causal checks, the training loss of the seeds against the no-boundary reader's, and the
coordination sweep."""

from __future__ import annotations

import numpy as np

from . import _style
from ._open_questions import path_seeds, row_label, task_label


def _boundary_panel(ax, local) -> None:
    labels = []
    for i, r in enumerate(local):
        b = 100 * np.asarray(r.boundary.boundary)
        x = i + np.linspace(-0.15, 0.15, b.size)
        marker = "o" if r.steps <= min(q.steps for q in local) else "D"
        color = _style.color(0 if r.vocab is None else 1)
        ax.scatter(x, b, color=color, marker=marker, s=14)
        a = r.boundary.answered
        ax.annotate(f"{a.k}/{a.n}", (i, 103), ha="center", fontsize=7, color="0.3")
        labels.append(f"w={r.local_window}\n{task_label(r.vocab)}\n{r.steps:,}")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=6.5)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_ylim(-3, 110)
    ax.set_ylabel("boundary-phase accuracy per seed (%)")
    ax.set_title("The boundary with an exact local window (seeds answering)")


def _path_panel(ax, local) -> None:
    rows = [r for r in local if r.previous_mass_per_seed is not None]
    for k, r in enumerate(rows):
        c = _style.color(k)
        marker = "o" if r.vocab is None else "s"
        ax.scatter(
            r.previous_mass_per_seed,
            100 * np.asarray(r.boundary.boundary),
            color=c,
            marker=marker,
            s=18,
            label=row_label(r),
        )
        ax.scatter(
            r.previous_mass_per_seed,
            100 * np.asarray(r.closed_boundary_per_seed),
            color=c,
            marker=marker,
            facecolors="none",
            s=18,
        )
    seeds = path_seeds(local).answered
    for x, b, k in zip(seeds["previous"], seeds["boundary"], seeds["reader"]):
        ax.annotate(
            "",
            (x, 100 * k),
            (x, 100 * b),
            arrowprops=dict(arrowstyle="->", color="0.4", lw=0.8),
        )
    ax.set_xlabel("previous-token attention mass (first layer, largest head)")
    ax.set_ylabel(
        "boundary accuracy (%)\nopen: window closed; arrow: the reader head knocked out"
    )
    ax.set_ylim(-3, 105)
    ax.set_title("The path: previous-token attention and the causal checks")
    ax.legend(fontsize=5.5, ncol=2)


def _curve_panel(ax, local) -> None:
    """The training loss of every seed of the rows with a window at the longest budget,
    answering seeds drawn solid, beside the no-boundary reader's loss."""
    longest = max(r.steps for r in local)
    rows = [r for r in local if r.steps == longest and r.local_window]
    for k, r in enumerate(rows):
        c = _style.color(k)
        for curve, answered in zip(
            r.curve_per_seed, r.boundary.answered_per_seed(), strict=True
        ):
            ax.plot(
                r.curve_steps,
                curve,
                color=c,
                lw=1.2 if answered else 0.6,
                ls="-" if answered else ":",
            )
        ax.axhline(r.no_boundary_loss, color=c, lw=0.8, ls="--")
        ax.plot([], [], color=c, label=f"{row_label(r)} (dashed: no-boundary reader)")
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("training loss (nats); solid: seeds that answer the boundary")
    ax.set_title("When the path forms: a second drop below the no-boundary reader")
    ax.legend(fontsize=5.5)


def _coordination_panel(ax, coordination, value, scale, title) -> None:
    weights = sorted({p.overlap_penalty for p in coordination})
    for k, kv in enumerate(sorted({p.kv_heads for p in coordination})):
        pts = [p for p in coordination if p.kv_heads == kv]
        # one column per weight (evenly spaced: 0 has no place on a log axis)
        x = np.array([weights.index(p.overlap_penalty) for p in pts])
        m = [value(p) for p in pts]
        ax.errorbar(
            x + 0.1 * k,
            [scale * v.mean for v in m],
            yerr=np.array(
                [
                    [scale * (v.mean - v.ci95[0]), scale * (v.ci95[1] - v.mean)]
                    for v in m
                ]
            ).T,
            color=_style.color(k),
            marker=_style.MARKERS[k],
            capsize=3,
            label=f"{kv} KV heads",
        )
    ax.set_xticks(range(len(weights)))
    ax.set_xticklabels([f"{w:g}" for w in weights])
    ax.set_xlabel("overlap penalty lambda")
    ax.set_title(title)
    ax.legend(fontsize=7)


def draw_open_questions(data):
    import matplotlib.pyplot as plt

    with _style.context():
        fig, axes = plt.subplots(2, 3, figsize=(16, 9.5))
        _boundary_panel(axes[0, 0], data.local)
        _path_panel(axes[0, 1], data.local)
        _curve_panel(axes[0, 2], data.local)
        for ax, value, scale, title, label in (
            (
                axes[1, 0],
                lambda p: p.covered,
                1,
                "Phases the key gates answer",
                f"distinct phases (of S = {data.S})",
            ),
            (
                axes[1, 1],
                lambda p: p.worst_within,
                100,
                "Worst within-window phase",
                "accuracy (%)",
            ),
            (
                axes[1, 2],
                lambda p: p.mean,
                100,
                "Mean accuracy: the price",
                "accuracy (%)",
            ),
        ):
            _coordination_panel(ax, data.coordination, value, scale, title)
            ax.set_ylabel(label)
        axes[1, 0].set_ylim(-0.3, data.S + 0.3)
        axes[1, 1].set_ylim(-3, 105)
        axes[1, 2].set_ylim(-3, 105)
        fig.tight_layout()
    return fig
