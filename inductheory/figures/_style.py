"""One matplotlib style for every figure: a colour-blind-safe palette, font sizes and small helpers.

The palette is Okabe & Ito's (distinguishable under the common colour-vision deficiencies); heatmaps
use perceptually uniform colour maps and always get a colour bar; discrete quantities (phases,
offsets, stability regions) are drawn as cells, bars or markers on integer ticks (`phase_axis`,
`discrete_map`), never interpolated.
"""

from __future__ import annotations

import contextlib

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

# Okabe-Ito, ordered so that the first colours are the most distinct from each other.
PALETTE = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#F0E442",
    "#000000",
)
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
SEQUENTIAL = "viridis"  # continuous heatmaps (losses, masses)
DIVERGING = "cividis"  # shares in [0, 1]

RC = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 7.5,
    "figure.titlesize": 11,
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
    "lines.linewidth": 1.4,
    "lines.markersize": 4.5,
    "axes.grid": False,
    "savefig.dpi": 130,
}


def color(i: int) -> str:
    """The i-th palette colour (cycling)."""
    return PALETTE[i % len(PALETTE)]


@contextlib.contextmanager
def context():
    """Draw inside this context so that every figure gets the shared style."""
    with plt.rc_context(RC):
        yield


def colorbar(fig, mappable, ax, label: str, *, ticks=None, ticklabels=None):
    """A colour bar beside `ax` (or a list of axes) with a label, optionally at discrete ticks."""
    cb = fig.colorbar(
        mappable, ax=ax, label=label, ticks=ticks, fraction=0.046, pad=0.03
    )
    if ticklabels is not None:
        cb.ax.set_yticklabels(ticklabels)
    return cb


def discrete_map(colors, labels):
    """(cmap, norm, ticks, labels) for integer categories 0..k-1 drawn with
    `imshow`/`pcolormesh`."""
    k = len(colors)
    return (
        ListedColormap(list(colors)),
        BoundaryNorm(np.arange(-0.5, k), k),
        list(range(k)),
        list(labels),
    )


def phase_axis(
    ax, n: int, axis: str = "x", label: str | None = "query phase r*"
) -> None:
    """Integer ticks 0..n-1 (phases, offsets) on one axis, with a label."""
    setter = ax.set_xticks if axis == "x" else ax.set_yticks
    setter(range(n))
    lim = ax.set_xlim if axis == "x" else ax.set_ylim
    lim(-0.5, n - 0.5)
    if label:
        (ax.set_xlabel if axis == "x" else ax.set_ylabel)(label)


def log_ticks(ax, values, axis: str = "x", fmt="{:g}") -> None:
    """Log axis with ticks exactly at `values`, plain labels, no minor labels (no
    overlapping text)."""
    values = sorted(set(float(v) for v in values))
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_major_locator(FixedLocator(values))
    target.set_major_formatter(
        matplotlib.ticker.FixedFormatter([fmt.format(v) for v in values])
    )
    target.set_minor_locator(NullLocator())
    target.set_minor_formatter(NullFormatter())


def median_quartiles(ax, rows, key: str, *, fmt: str, label: str):
    """Medians of `rows` (records with `median`, `q25`, `q75`) against the field `key`, sorted
    by it, with quartile error bars in the first colour.

    **Returns:** `(rows, x, median)`: the sorted rows and the plotted arrays.

    **Example:** `_style.median_quartiles(ax, data.by_rho, "rho", fmt="o-", label="median")`.
    """
    rows = sorted(rows, key=lambda r: getattr(r, key))
    x = np.array([getattr(r, key) for r in rows])
    med = np.array([r.median for r in rows])
    err = np.array([[r.median - r.q25 for r in rows], [r.q75 - r.median for r in rows]])
    ax.errorbar(x, med, yerr=err, fmt=fmt, capsize=3, color=color(0), label=label)
    return rows, x, med


def legend_below(fig, handles=None, labels=None, ncol: int = 4, **kwargs):
    """One legend for the whole figure, under the panels (never on top of data); needs
    constrained layout."""
    if handles is None:
        handles, labels = [], []
        for ax in fig.axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
    return fig.legend(
        handles, labels, loc="outside lower center", ncol=ncol, frameon=False, **kwargs
    )


def subplots(nrows: int = 1, ncols: int = 1, **kwargs):
    """`plt.subplots` with constrained layout (room for colour bars and outside legends)."""
    return plt.subplots(nrows, ncols, layout="constrained", **kwargs)
