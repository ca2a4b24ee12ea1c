"""Theorem 1 (docs/theory.md §7): the best query-agnostic (oracle) compressor, and where
hard selection stops."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..experiments._regime import (
    BoundaryBracket,
    LogThresholdFit,
    log_boundary,
    regime_map,
)
from ..internal._records import Record
from ..oracle._minimize import OracleMinimizer
from . import _runs, _style
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._parameters import Theorem1Parameters
from ._stats import compact, grid_text, plural, span_text

BRANCHES = ("key", "value")


@dataclasses.dataclass(frozen=True)
class OracleExample(Record):
    """One example panel: the grid point (`N`, `beta`), the best minimizer's gates `key` and
    `value` (H, L, S), its loss `best_loss` against the best vertex's `best_vertex_loss`, and
    whether it is a hard selection (`hard_selection`) with distinct heads (`distinct_heads`)."""

    N: int
    beta: float
    key: Any
    value: Any
    best_loss: float
    best_vertex_loss: float
    hard_selection: bool
    distinct_heads: bool


# the example panels' labels, in the order the figure shows them
EXAMPLES = ("inside", "outside")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Theorem1Data(FigureData):
    """The regime map over `N_grid` x `beta_grid` and its example panels.

    **Fields:**
    - `examples`: an `OracleExample` by label, `"inside"` and `"outside"` the regime.
    - `N_grid`, `beta_grid`: the grid's vocabulary sizes and betas.
    - `share_hard_distinct`, `gap`: per grid point (beta, N), the share of contexts whose best
      minimizer is a hard selection with distinct heads, and how far its loss lies below the
      best vertex's.
    - `boundary`: per beta, its `BoundaryBracket` (`beta`, `N_star`, `N_below`, `bracketed`).
    - `fit`: the `LogThresholdFit` (`slope`, `intercept`, `n`), or None with fewer than two
      closed brackets.
    """

    examples: dict[str, OracleExample]
    N_grid: list[int]
    beta_grid: list[float]
    share_hard_distinct: list[list[float]]
    gap: list[list[float]]
    boundary: list[BoundaryBracket]
    fit: LogThresholdFit | None
    parameters: Theorem1Parameters

    def in_order(self) -> list[tuple[str, OracleExample]]:
        """The examples by label, inside the regime first (whatever the dict's order: stored
        JSON sorts it)."""
        return [(label, self.examples[label]) for label in EXAMPLES]


def claim(data: Theorem1Data) -> str:
    """The claim, its grid, restarts, hard points, gaps and brackets from `data`."""
    hard = np.asarray(data.share_hard_distinct) == 1.0  # (beta, N)
    gap = np.asarray(data.gap, float)[~hard]
    N = np.asarray(data.N_grid)
    above = all((N[row] >= b.N_star).all() for row, b in zip(hard, data.boundary))
    restarts = data.parameters.restarts_text()
    refined = data.parameters.refined_text()
    return (
        "Theorem 1 (docs/theory.md §7), checked numerically, not proved, at L=4, S=4, H=2, "
        f"gamma=1, kappa=1, exact geometry, over N in {grid_text(data.N_grid)} and beta "
        f"in {grid_text(data.beta_grid)} ({len(data.N_grid)} x "
        f"{len(data.beta_grid)} points), one context per point (all contexts are "
        f"equivalent under exact geometry), best of {restarts}: for N above a boundary "
        "N*(beta) the best minimizer found is a hard selection (key e_r, value e_{r+1}) "
        "with distinct heads in every block; below it the optimum spreads mass and beats "
        f"every vertex (example panels; hard with distinct heads at {int(hard.sum())} of "
        f"the {hard.size} grid points, "
        + ("all of them" if above else "not all of them")
        + f" above the boundary, the other {gap.size} beat the best vertex by "
        f"{span_text(gap, lambda x: compact(x, 2), ' to ')}; map under Measured). N* is bracketed "
        "on the grid"
        + (f" ({refined})" if refined else "")
        + " and log N* is fitted linearly in beta from the closed brackets "
        f"({plural(data.fit.n, 'bracket')}; slope and intercept under Measured): "
        "the hard-selection "
        + (
            "regime shrinks as beta grows."
            if data.fit.slope > 0
            else "regime does not shrink as beta grows."
        )
    )


def compute(context: FigureContext) -> Theorem1Data:
    quick = context.quick
    refine = 0 if quick else 2  # bisection steps of the boundary in log N
    config = OracleMinimizer(restarts=8 if quick else 32)
    shape = dict(L=4, S=4, H=2, gamma=1.0, kappa=1.0)
    N_grid = [16, 64, 256] if quick else [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    beta_grid = [6.0, 10.0] if quick else [4.0, 6.0, 8.0, 10.0, 12.0]
    regime = regime_map(
        _runs.task_of(**shape, N=N_grid[-1], beta=beta_grid[0]),
        N_grid,
        beta_grid,
        config=config,
        directory=context.cache,
        refine=refine,
    )
    by_point = {(int(p.task.N), float(p.task.beta)): p for p in regime.points}
    share = [
        [by_point[(N, beta)].share_hard_distinct for N in N_grid] for beta in beta_grid
    ]
    examples = {}
    for label, (N, beta) in {
        "inside": (256, 6.0) if quick else (1024, 4.0),
        "outside": (16, 10.0) if quick else (16, 8.0),
    }.items():
        point = _runs.oracle_point(
            _runs.task_of(**shape, N=N, beta=beta), config, context.cache
        )  # a grid point: cached
        ctx = point.contexts[0]
        examples[label] = OracleExample(
            N=N,
            beta=beta,
            key=ctx.key_gates,
            value=ctx.value_gates,
            best_loss=point.best_loss,
            best_vertex_loss=point.best_vertex_loss,
            hard_selection=point.hard_selection,
            distinct_heads=point.distinct_heads,
        )
    boundary, fit = list(regime.boundary), regime.fit
    return Theorem1Data(
        examples=examples,
        N_grid=N_grid,
        beta_grid=beta_grid,
        share_hard_distinct=share,
        gap=[[by_point[(N, beta)].gap for N in N_grid] for beta in beta_grid],
        boundary=boundary,
        fit=fit,
        parameters=Theorem1Parameters(
            restarts=config.restarts, vertex_seeds=8, refine=refine
        ),
        findings="boundary N*(beta) in (N_below, N*]: "
        + ", ".join(f"beta={b.beta}: ({b.N_below}, {b.N_star}]" for b in boundary)
        + (f"; log N* ~ {fit.intercept:.2f} + {fit.slope:.3f} beta" if fit else ""),
    )


def draw(data: Theorem1Data):
    fig = _style.plt.figure(figsize=(15, 7.8), layout="constrained")
    grid = fig.add_gridspec(2, 3, width_ratios=[1, 1, 1.3])
    gate_axes, im = [], None
    for col, (label, ex) in enumerate(data.in_order()):
        for row, branch in enumerate(BRANCHES):
            ax = fig.add_subplot(grid[row, col])
            gate_axes.append(ax)
            p = np.asarray(getattr(ex, branch), float)  # (H, L, S)
            H, L, S = p.shape
            im = ax.imshow(
                p.reshape(H * L, S),
                vmin=0,
                vmax=1,
                cmap=_style.SEQUENTIAL,
                aspect="auto",
                interpolation="nearest",
            )
            ax.set_yticks(
                range(H * L),
                [f"head {h}, block {l}" for h in range(H) for l in range(L)],
                fontsize=7,
            )
            _style.phase_axis(ax, S, label="offset r")
            ax.set_title(
                f"{label} the regime: N={ex.N}, beta={ex.beta:g}, {branch} gates\n"
                f"hard={ex.hard_selection}, distinct heads={ex.distinct_heads}"
            )
    # below the gates: the regime map's beta axis keeps its room; one colour map for both, which
    # both read on [0, 1]
    fig.colorbar(
        im,
        ax=gate_axes,
        location="bottom",
        label="gate mass p(r)",
        fraction=0.04,
        pad=0.02,
        shrink=0.6,
    )
    ax = fig.add_subplot(grid[:, 2])
    share = np.asarray(data.share_hard_distinct, float)
    N_grid, beta_grid = data.N_grid, data.beta_grid
    mesh = ax.imshow(
        share,
        origin="lower",
        aspect="auto",
        cmap=_style.SEQUENTIAL,
        vmin=0,
        vmax=1,
        extent=(-0.5, len(N_grid) - 0.5, -0.5, len(beta_grid) - 0.5),
        interpolation="nearest",
    )
    ax.set_xticks(range(len(N_grid)), [str(n) for n in N_grid], rotation=45)
    ax.set_yticks(range(len(beta_grid)), [f"{b:g}" for b in beta_grid])
    # boundary at the geometric middle of its bracket (N_below, N*], in grid-index coordinates
    logs, idx = np.log(N_grid), np.arange(len(N_grid))
    xs, ys = [], []
    for i, b in enumerate(data.boundary):
        if b.N_star is not None:
            xs.append(
                float(np.interp(log_boundary(b), logs, idx))
                - (0.5 if b.N_below is None else 0.0)
            )
            ys.append(i)
    order = np.argsort(ys)
    ax.plot(
        np.asarray(xs)[order],
        np.asarray(ys)[order],
        "o-",
        color=_style.color(1),
        lw=2,
        label="boundary N*(beta)",
    )
    _style.colorbar(fig, mesh, ax, "share of contexts: hard with distinct heads")
    fit = data.fit
    ax.set_title(
        "regime map"
        + (f"; fit log N* = {fit.intercept:.2f} + {fit.slope:.3f} beta" if fit else "")
    )
    ax.set_xlabel("vocabulary size N")
    ax.set_ylabel("beta")
    ax.legend(loc="upper left")
    return fig


def tables(data: Theorem1Data) -> list[MeasuredTable]:
    """The regime map (hard with distinct heads, or how far the optimum found lies below the
    best vertex) and the boundary brackets with the fit."""
    betas, Ns = data.beta_grid, data.N_grid
    share, gap = np.asarray(data.share_hard_distinct), np.asarray(data.gap)
    grid = [
        [str(N)]
        + [
            "hard" if share[j, i] == 1.0 else f"{gap[j, i]:.2g} below"
            for j in range(len(betas))
        ]
        for i, N in enumerate(Ns)
    ]
    brackets = [
        [
            f"{b.beta:g}",
            str(b.N_below),
            str(b.N_star),
            "yes" if b.bracketed else "no",
        ]
        for b in data.boundary
    ]
    fit = data.fit
    return [
        MeasuredTable(
            "Best minimizer found per grid point (one context each): 'hard' = hard selection "
            "with distinct heads; otherwise how far its loss lies below the best vertex's.",
            ["N", *(f"beta={b:g}" for b in betas)],
            grid,
        ),
        MeasuredTable(
            "Boundary brackets N*(beta) in (N_below, N*]"
            + (
                f"; fit over the {fit.n} closed brackets: log N* ~ {fit.intercept:.2f} + "
                f"{fit.slope:.3f} beta."
                if fit
                else "."
            ),
            ["beta", "N_below", "N*", "closed"],
            brackets,
        ),
    ]


FIGURE = Figure(
    "theorem1_oracle",
    "Theorem 1: the best query-agnostic compressor, and where that stops",
    claim,
    compute,
    draw,
    cost=25,
    tables=tables,
    data=Theorem1Data,
)
