"""The overview figure: the paper's story in four panels, drawn from the other figures' stored
data alone (no computation), `<out>/overview.png` and `.pdf`.

(a) selection under the flow (theorem2_trajectories), (b) the per-phase weak spots it leaves
(weak_spots), (c) where the hard-selection regime ends (regime_boundary), (d) the trained family
beside the paper's table 8 (paper_matrix; each paper number with its model, `PAPER_TABLE8`).

Imports the figures' records through the registry and the paper's table from experiments; only
`reproduce` and the README's picture use it.

```python
from inductheory.figures import overview
overview("figures")  # redraws figures/overview.png and .pdf from figures/data/*.json
```
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..experiments._paper_matrix import PAPER_TABLE8
from . import _style
from ._registry import FIGURES

READABLE = {
    "font.size": 10.5,
    "axes.titlesize": 11,
    "axes.labelsize": 10.5,
    "legend.fontsize": 8.5,
}
READABLE |= {"xtick.labelsize": 9.5, "ytick.labelsize": 9.5}
# The figures whose stored data the overview reads.
SOURCES = ("theorem2_trajectories", "weak_spots", "regime_boundary", "paper_matrix")
# The trained rows beside the paper's: (the matrix's row, the key of its paper row, a label).
TRAINED_ROWS = (
    ("W8/S8 8 KV", "w8s8-8kv", "W8/S8, 8 KV heads"),
    ("W8/S8 1 KV (reference)", "reference-42", "W8/S8, 1 KV head (reference)"),
)
MEASURES = (
    ("mean_accuracy", "mean", "mean acc."),
    ("worst_phase", "worst", "worst phase"),
)
MEASURES += (("gap", "gap", "gap"),)


def _selection(ax, d) -> None:
    run = d.runs["reduced"]
    # (seed, time, branch, head, offset); saves after a seed's end are None
    mass = np.array(run.mass, dtype=float)
    t = np.array(run.t, dtype=float)
    for seed in range(mass.shape[0]):
        for head in range(mass.shape[3]):
            ax.plot(
                t[seed], mass[seed, :, 0, head].max(-1), color=_style.color(head), lw=1
            )
    S = mass.shape[-1]
    ax.axhline(1 / S, color="0.5", ls=":", lw=1)
    ax.text(t[0, 1], 1 / S + 0.03, f"uniform 1/S = 1/{S}", fontsize=8, color="0.35")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("flow time t")
    ax.set_ylabel("largest key-gate mass")
    n = mass.shape[0]
    ax.set_title(
        f"(a) the flow selects one offset per head\n(reduced flow, {n} seeds, 2 heads)"
    )


def _weak_spots(ax, d) -> None:
    model = next(m for m in d.models if m.H == 2 and m.S == 4)
    acc = np.asarray(model.accuracy)  # (model, phase)
    cmap, norm, ticks, labels = _style.discrete_map(
        ("#D55E00", "#0072B2"), ("wrong", "right")
    )
    ax.imshow(acc, cmap=cmap, norm=norm, aspect="auto")
    for i, selected in enumerate(model.selected):
        for j in range(acc.shape[1]):
            ax.text(
                j,
                i,
                "right" if acc[i, j] else "weak",
                ha="center",
                va="center",
                color="w",
            )
        ax.text(acc.shape[1] - 0.4, i, f" keys at {selected}", va="center", fontsize=8)
    _style.phase_axis(ax, acc.shape[1])
    ax.set_yticks(range(acc.shape[0]), [f"model {i + 1}" for i in range(acc.shape[0])])
    ax.set_title(
        f"(b) phases no head selected fail\n(H={model.H}, S={model.S}, top-1 per phase)"
    )


def _regime(ax, d) -> None:
    for i, series in enumerate(d.oracle[:3]):
        b = [x for x in series.boundary if x.bracketed]
        beta = np.array([x.beta for x in b])
        predicted = [x.predicted for x in b]
        c = _style.color(i)
        ax.plot(beta, predicted, "-", color=c)
        ax.text(beta[-1] + 0.3, predicted[-1], f"L={series.L}", color=c, va="center")
        low = np.array([x.N_below for x in b], float)
        high = np.array([x.N_star for x in b], float)
        ax.vlines(beta, low, high, color=c, lw=5, alpha=0.5)
    _style.log_ticks(ax, [32, 64, 128, 256, 512], axis="y")
    ax.set_ylim(28, 900)  # room for the labels above the lines
    ax.set_xlim(right=max(x.beta for s in d.oracle[:3] for x in s.boundary) + 2)
    ax.set_xlabel("beta")
    ax.set_ylabel("vocabulary size N")
    ax.text(
        0.03,
        0.95,
        "hard selection above each line,\nmixtures below",
        transform=ax.transAxes,
        va="top",
    )
    ax.set_title(
        "(c) where hard selection ends (H=2, gamma=1)\n"
        "lines: closed form N*(beta); bars: oracle brackets"
    )


def _trained(ax, d) -> None:
    width = 0.2
    x = np.arange(len(MEASURES))
    for i, (row, paper_key, label) in enumerate(TRAINED_ROWS):
        measured = d.rows[row]
        paper = PAPER_TABLE8[paper_key]
        ours = [100 * getattr(measured, m).mean for m, _, _ in MEASURES]
        err = np.array(
            [
                [100 * getattr(measured, m).ci95[k] for m, _, _ in MEASURES]
                for k in (0, 1)
            ]
        )
        theirs = [getattr(paper, p) for _, p, _ in MEASURES]
        c = _style.color(i)
        pos = x + (2 * i - 1.5) * width
        ax.bar(pos, ours, width, color=c, label=f"ours: {label}")
        # a bootstrap interval need not hold the mean of its seeds: bars reach what it covers
        below = np.clip(np.subtract(ours, err[0]), 0, None)
        above = np.clip(err[1] - ours, 0, None)
        ax.errorbar(pos, ours, yerr=[below, above], fmt="none", ecolor="k")
        ax.bar(
            pos + width,
            theirs,
            width,
            color=c,
            alpha=0.35,
            hatch="//",
            # the paper's model in full (its table 8 names it), wrapped to the panel
            label=textwrap.fill(f"paper: {paper.model}", 46),
        )
        for p, v, text in [
            *zip(pos, np.maximum(ours, err[1]), (f"{v:.1f}" for v in ours)),
            *zip(pos + width, theirs, map(str, theirs)),
        ]:
            ax.text(p, v + 2, text, ha="center", fontsize=7.5, rotation=90, va="bottom")
    ax.set_xticks(x, [name for _, _, name in MEASURES])
    ax.set_ylim(0, 150)
    ax.set_ylabel("percent")
    ax.legend(loc="upper left", frameon=False, fontsize=7.5, ncol=1)
    seeds = d.analysis.headline.compressed_seeds
    ax.set_title(
        f"(d) trained family vs the paper's table 8\n(ours: {seeds} seeds, 95% intervals)"
    )


def draw_overview(data: Mapping[str, Any]):
    """The overview figure from the stored data of `SOURCES` (records or the dicts of
    `data/<name>.json`, by name).

    **Arguments:**
    - `data`: at least the figures of `SOURCES`.

    **Returns:** the matplotlib figure (four panels, 2 x 2).
    """
    missing = [name for name in SOURCES if name not in data]
    if missing:
        raise ValueError(
            f"draw_overview: data must hold {list(SOURCES)}; missing {missing}"
        )
    records = {name: FIGURES[name].record(data[name]) for name in SOURCES}
    fig, axes = _style.subplots(2, 2, figsize=(9.5, 7.4))
    _selection(axes[0, 0], records["theorem2_trajectories"])
    _weak_spots(axes[0, 1], records["weak_spots"])
    _regime(axes[1, 0], records["regime_boundary"])
    _trained(axes[1, 1], records["paper_matrix"])
    return fig


def overview(out: str | Path = "figures") -> Path:
    """Draw `<out>/overview.png` and `.pdf` again from `<out>/data/*.json` (nothing computed).

    **Arguments:**
    - `out`: a figures folder holding `data/<name>.json` for every name of `SOURCES`.

    **Returns:** the path of the PNG.
    """
    import matplotlib.pyplot as plt

    from ._reproduce import _save

    out = Path(out)
    missing = [n for n in SOURCES if not (out / "data" / f"{n}.json").exists()]
    if missing:
        raise ValueError(
            f"overview: out must hold data/<name>.json for {missing} ({out})"
        )
    data = {n: json.loads((out / "data" / f"{n}.json").read_text()) for n in SOURCES}
    # larger type than the figures': the overview is read at README width
    with _style.context(), plt.rc_context(READABLE):
        fig = draw_overview(data)
        _save(fig, out / "overview")
    plt.close(fig)
    return out / "overview.png"


__all__ = ["SOURCES", "draw_overview", "overview"]
