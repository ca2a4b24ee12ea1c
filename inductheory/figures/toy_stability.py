"""The two-head toy (docs/theory.md §8): where the uniform point is unstable, and what the
flow does there."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from ..internal._records import Record
from ..toy._toy import (
    ToyConfig,
    corner_losses,
    escape_rate_grid,
    escape_rates,
    split_advantage,
    symmetric_stability_boundary,
    toy_flow,
    toy_loss,
)
from . import _style
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._parameters import ToyStabilityParameters
from ._stats import compact

GAMMA = 1.0
LS = (4, 8, 64)  # panels of the stability diagram
MAIN_L = 8
BETA_RANGE = (0.25, 32.0)
K_RANGE = (1e-2, 1e12)
# Landscapes: one point where both directions are unstable, one where the symmetric one is stable.
LANDSCAPES = ((4.0, 100.0), (16.0, 100.0))
MARKED = (
    ("a", 4.0, 100.0),
    ("b", 16.0, 100.0),
    ("c", 4.0, 1.0),
)  # points marked on the L=8 diagram
STARTS = [
    (0.52, 0.50),
    (0.50, 0.48),
    (0.45, 0.44),
    (0.55, 0.57),
    (0.3, 0.62),
    (0.7, 0.35),
    (0.2, 0.25),
    (0.8, 0.9),
    (0.56, 0.56),
    (0.42, 0.42),
]
REGIONS = ("both stable", "splitting (1,-1) unstable only", "both unstable")
REGION_COLORS = ("#CC79A7", "#E69F00", "#56B4E9")


@dataclasses.dataclass(frozen=True)
class StabilityDiagram(Record):
    """The stability diagram of one `L`: `region` (beta, K), the number of unstable directions
    at each grid point (0, 1: the splitting one only, 2: both); the closed-form curve
    `boundary_K` K*(beta) at the curve's betas; `beta_0`, below which the symmetric direction is
    unstable at every K; and the grid points where the curve agrees with the rates' signs
    (`boundary_agrees_with_signs`) of all `grid_points`."""

    L: int
    region: list[list[int]]
    boundary_K: Any
    beta_0: float
    boundary_agrees_with_signs: int
    grid_points: int


@dataclasses.dataclass(frozen=True)
class ToyLandscape(Record):
    """One loss landscape: the toy's `config` (its `to_dict()`), the `loss` on the grid
    (p1, p2), the flows' `trajectories` (starts, times, 2), how many flows end with the heads
    split (`ends_split`), and the escape rates at p = 1/2 (`escape_symmetric`,
    `escape_antisymmetric`)."""

    config: dict[str, Any]
    loss: Any
    trajectories: list
    ends_split: int
    escape_symmetric: float
    escape_antisymmetric: float


@dataclasses.dataclass(frozen=True)
class RateCut(Record):
    """The escape rates along K at one `beta` (L = MAIN_L): `symmetric` and `antisymmetric`
    (one per K of the cut), and the closed-form `K_star`."""

    beta: float
    symmetric: Any
    antisymmetric: Any
    K_star: float


@dataclasses.dataclass(frozen=True)
class MarkedPoint(Record):
    """A point marked on the L = MAIN_L diagram: its `label`, `beta`, `K` and escape rates
    (`symmetric`, `antisymmetric`)."""

    label: str
    beta: float
    K: float
    symmetric: float
    antisymmetric: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToyStabilityData(FigureData):
    """The two-head toy's stability diagrams, landscapes and rate cuts.

    **Fields:**
    - `gamma`; the diagrams' grid `betas` x `Ks` and the curve's `curve_betas`.
    - `diagrams`: a `StabilityDiagram` per L of `LS`.
    - `grid`: the landscapes' p axis; `t`: the flows' save times.
    - `landscapes`: a `ToyLandscape` per point of `LANDSCAPES`.
    - `cut_K`, `cuts`: the K axis of the rate cuts and a `RateCut` per beta.
    - `marked`: a `MarkedPoint` per point of `MARKED`.
    - `corner_same`, `corner_opposite`, `split_advantage`: the corner losses (both heads on the
      same offset, on opposite ones) and their difference, at the first landscape.
    """

    gamma: float
    betas: Any
    Ks: Any
    curve_betas: Any
    diagrams: list[StabilityDiagram]
    grid: Any
    t: Any
    landscapes: list[ToyLandscape]
    cut_K: Any
    cuts: list[RateCut]
    marked: list[MarkedPoint]
    corner_same: float
    corner_opposite: float
    split_advantage: float
    parameters: ToyStabilityParameters


def _beta0(x: float) -> str:
    """beta_0 as the claim writes it: 0.64, 2.0, 19.1."""
    return f"{x:.2f}" if x < 1 else f"{x:.1f}"


def _landscape_text(land: ToyLandscape, panel: str) -> str:
    """Where the flows of one landscape end, with the stability of its two directions."""
    c, n, split = land.config, len(land.trajectories), land.ends_split
    sym, anti = land.escape_symmetric > 0, land.escape_antisymmetric > 0
    state = (
        "both directions unstable"
        if sym and anti
        else "symmetric direction stable"
        if anti
        else "both directions stable"
    )
    ends = (
        "every flow ends with the heads split"
        if split == n
        else f"{n - split} of the {n} end with both heads on the same offset"
    )
    return f"at beta {c['beta']:g} (panel {panel}, {state}) {ends}"


def claim(data: ToyStabilityData) -> str:
    """The claim, its grid, beta_0, K*, corners and flows from `data`."""
    diagrams, lands = data.diagrams, data.landscapes
    Ls = [d.L for d in diagrams]
    anti_everywhere = all(min(map(min, d.region)) >= 1 for d in diagrams)
    agree = all(d.boundary_agrees_with_signs == d.grid_points for d in diagrams)
    main_L = data.parameters.L
    starts = {len(land.trajectories) for land in lands}
    (K,) = {land.config["K"] for land in lands}
    first, *rest = [_landscape_text(land, p) for land, p in zip(lands, "abcdefgh")]
    return (
        "The two-head toy (docs/theory.md §8) at the uniform point p = (1/2, 1/2), from the "
        f"closed-form escape rates of the logit gradient flow, for gamma = {data.gamma:g}, "
        f"L in {{{', '.join(map(str, Ls))}}}, beta in [{min(data.betas):g}, "
        f"{max(data.betas):g}] and K in [{compact(min(data.Ks), sci=True)}, "
        f"{compact(max(data.Ks), sci=True)}] ({len(data.betas)} x {len(data.Ks)} grid "
        "points per L). The antisymmetric direction (1,-1), heads splitting, is "
        + ("unstable everywhere" if anti_everywhere else "not unstable everywhere")
        + " on this range (its rate is > 0 iff e^{gamma/2} < L - 1). The symmetric direction "
        "(1,1), both heads moving to the same offset, is unstable only for K > K*(beta) = "
        "e^{2 beta a} (2 beta a (1-a)/(1-2a) - 1), a = A(1/2) (checked symbolically in "
        "proofs/toy.py; the coloured regions are the direct signs of the rates and "
        + (
            "agree with the curve at every grid point"
            if agree
            else "disagree with the curve"
        )
        + "): for beta <= beta_0 = (1-2a)/(2a(1-a)) ("
        + _and_text([_beta0(d.beta_0) for d in diagrams])
        + f" for L = {', '.join(map(str, Ls))}) at every K, above beta_0 only for K > K*(beta), "
        f"which grows like e^{{2 beta a}} (L={main_L}: K* = "
        + ", ".join(
            f"{compact(c.K_star, 2, sci=c.K_star >= 1000)} at beta {c.beta:g}"
            for c in data.cuts
        )
        + "). Below the curve p = 1/2 is a saddle, "
        + ("never a local minimum" if anti_everywhere else "not always")
        + f" on this range. Flows ({'/'.join(map(str, sorted(starts)))} fixed starts, a chosen "
        f"set rather than a random sample, each listed under Measured; L={main_L}, "
        f"K={K:g}): {first}, since the split corners beat the same corner by only "
        f"{data.split_advantage:.3f}, an O(1/K) effect against an O(1) sharpening gain; "
        + "; ".join(rest)
        + ", and flows started on the diagonal first return towards p = 1/2 before rounding "
        "errors grow along the splitting direction."
    )


def _and_text(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _config(beta, K, L=MAIN_L):
    return ToyConfig(beta=float(beta), gamma=GAMMA, L=L, K=float(K))


def _landscape(beta, K, n, ts):
    config = _config(beta, K)
    grid = np.linspace(0.0, 1.0, n)
    P1, P2 = np.meshgrid(grid, grid, indexing="ij")
    loss = np.asarray(
        toy_loss(config, jnp.stack([jnp.asarray(P1), jnp.asarray(P2)], axis=-1))
    )
    trajectories = [
        np.asarray(toy_flow(config, jnp.asarray(p0), jnp.asarray(ts))).tolist()
        for p0 in STARTS
    ]
    sym, anti = escape_rates(config)
    ends = np.rint(np.asarray([t[-1] for t in trajectories]))
    return ToyLandscape(
        config=config.to_dict(),
        loss=loss,
        trajectories=trajectories,
        ends_split=int(np.sum(ends[:, 0] != ends[:, 1])),
        escape_symmetric=float(sym),
        escape_antisymmetric=float(anti),
    )


def compute(context: FigureContext) -> ToyStabilityData:
    quick = context.quick
    n_beta, n_K, n_curve, n_grid = (33, 29, 100, 41) if quick else (129, 113, 400, 101)
    betas = np.linspace(*BETA_RANGE, n_beta)
    Ks = np.geomspace(*K_RANGE, n_K)
    curve_betas = np.linspace(*BETA_RANGE, n_curve)
    diagrams = []
    for L in LS:
        sym, anti = escape_rate_grid(
            jnp.asarray(betas)[:, None], jnp.asarray(Ks)[None, :], gamma=GAMMA, L=L
        )
        sym, anti = np.asarray(sym), np.asarray(anti)
        if np.any((sym > 0) & ~(anti > 0)):
            raise AssertionError(
                "a symmetric-only unstable point: contradicts proofs/toy.py"
            )
        k_star = np.asarray(
            symmetric_stability_boundary(jnp.asarray(betas), gamma=GAMMA, L=L)
        )
        agree = (sym > 0) == (Ks[None, :] > k_star[:, None])
        a = float(np.exp(GAMMA / 2) / (np.exp(GAMMA / 2) + L - 1))
        diagrams.append(
            StabilityDiagram(
                L=L,
                region=(
                    (anti > 0).astype(int) + (sym > 0).astype(int)
                ).tolist(),  # (beta, K)
                boundary_K=np.asarray(
                    symmetric_stability_boundary(
                        jnp.asarray(curve_betas), gamma=GAMMA, L=L
                    )
                ),
                beta_0=(1 - 2 * a) / (2 * a * (1 - a)),
                boundary_agrees_with_signs=int(agree.sum()),
                grid_points=int(agree.size),
            )
        )
    ts = np.concatenate([[0.0], np.geomspace(1e-2, 1e5, 60 if quick else 200)])
    landscapes = [_landscape(beta, K, n_grid, ts) for beta, K in LANDSCAPES]
    cut_K = np.geomspace(*K_RANGE, 97 if quick else 241)
    cuts = []
    for beta in sorted({b for b, _ in LANDSCAPES}):
        sym, anti = escape_rate_grid(beta, jnp.asarray(cut_K), gamma=GAMMA, L=MAIN_L)
        cuts.append(
            RateCut(
                beta=beta,
                symmetric=np.asarray(sym),
                antisymmetric=np.asarray(anti),
                K_star=float(symmetric_stability_boundary(beta, gamma=GAMMA, L=MAIN_L)),
            )
        )
    main = _config(*LANDSCAPES[0])
    same, opposite = corner_losses(main)
    marked = []
    for label, beta, K in MARKED:
        sym, anti = escape_rates(_config(beta, K))
        marked.append(
            MarkedPoint(
                label=label,
                beta=beta,
                K=K,
                symmetric=float(sym),
                antisymmetric=float(anti),
            )
        )
    main_diagram = diagrams[LS.index(MAIN_L)]
    return ToyStabilityData(
        gamma=GAMMA,
        betas=betas,
        Ks=Ks,
        curve_betas=curve_betas,
        diagrams=diagrams,
        grid=np.linspace(0.0, 1.0, n_grid),
        t=ts,
        landscapes=landscapes,
        cut_K=cut_K,
        cuts=cuts,
        marked=marked,
        corner_same=float(same),
        corner_opposite=float(opposite),
        split_advantage=float(split_advantage(main)),
        parameters=ToyStabilityParameters(
            gamma=GAMMA,
            Ls=list(LS),
            beta_range=list(BETA_RANGE),
            n_beta=n_beta,
            K_range=list(K_RANGE),
            n_K=n_K,
            landscapes=[list(bk) for bk in LANDSCAPES],
            L=MAIN_L,
        ),
        findings="boundary agrees with the signs of the rates at "
        + ", ".join(
            f"L={d.L}: {d.boundary_agrees_with_signs}/{d.grid_points}" for d in diagrams
        )
        + " grid points; beta_0 "
        + ", ".join(f"L={d.L}: {d.beta_0:.3g}" for d in diagrams)
        + f"; L={MAIN_L}: K*(beta) "
        + ", ".join(f"beta={c.beta:g}: {c.K_star:.4g}" for c in cuts)
        + "; escape rates (symmetric, antisymmetric) at "
        + ", ".join(
            f"{m.label} (beta={m.beta:g}, K={m.K:g}): ({m.symmetric:.4g}, "
            f"{m.antisymmetric:.4g})"
            for m in marked
        )
        + "; flows ending with the heads split: "
        + ", ".join(
            f"beta={land.config['beta']:g} K={land.config['K']:g}: "
            f"{land.ends_split}/{len(STARTS)}"
            for land in landscapes
        )
        + f"; corners at beta={main.beta:g}, K={main.K:g}: same {float(same):.5f}, opposite "
        f"{float(opposite):.5f}, split advantage {float(split_advantage(main)):.3g}"
        + (
            ""
            if main_diagram.boundary_agrees_with_signs == main_diagram.grid_points
            else " (DISAGREES)"
        ),
    )


def _diagram(ax, data: ToyStabilityData, d: StabilityDiagram):
    betas, Ks = np.asarray(data.betas, float), np.asarray(data.Ks, float)
    cmap, norm, _, _ = _style.discrete_map(REGION_COLORS, REGIONS)
    mesh = ax.pcolormesh(
        betas,
        Ks,
        np.asarray(d.region).T,
        cmap=cmap,
        norm=norm,
        shading="nearest",
        rasterized=True,
    )
    cb_betas, k_star = (
        np.asarray(data.curve_betas, float),
        np.asarray(d.boundary_K, float),
    )
    show = np.isfinite(k_star) & (k_star > 0)
    ax.plot(cb_betas[show], k_star[show], "k-", lw=1.6, label="K*(beta), closed form")
    ax.axvline(d.beta_0, color="k", ls=":", lw=1, label="beta_0")
    ax.set_yscale("log")
    ax.set_ylim(Ks[0], Ks[-1])
    ax.set_xlim(betas[0], betas[-1])
    ax.set_xlabel("beta")
    ax.set_ylabel("competing mass K")
    ax.set_title(f"L={d.L}, gamma={data.gamma:g}: stability of p=(1/2,1/2)")
    return mesh


def _landscape_panel(ax, fig, data: ToyStabilityData, land: ToyLandscape, label):
    grid, loss = np.asarray(data.grid, float), np.asarray(land.loss, float)
    cs = ax.contourf(grid, grid, loss.T, levels=30, cmap=_style.SEQUENTIAL)
    _style.colorbar(fig, cs, ax, "toy loss")
    for traj in land.trajectories:
        traj = np.asarray(traj, float)
        ax.plot(traj[:, 0], traj[:, 1], "w-", lw=1.0)
        ax.plot(traj[0, 0], traj[0, 1], "wo", ms=3)
        ax.plot(
            traj[-1, 0],
            traj[-1, 1],
            "*",
            color=_style.color(4),
            ms=11,
            mec="k",
            mew=0.5,
            clip_on=False,
            zorder=5,
        )
    c = land.config
    ax.set_xlabel("p1 (head 1 key weight on offset 0)")
    ax.set_ylabel("p2 (head 2 key weight on offset 0)")
    ax.set_title(
        f"({label}) loss and flows (o start, * end), beta={c['beta']:g} K={c['K']:g} L={c['L']}\n"
        f"rates: symmetric {land.escape_symmetric:.3g}, antisymmetric "
        f"{land.escape_antisymmetric:.3g}"
    )
    ax.set_aspect("equal")


def draw(data: ToyStabilityData):
    fig, axes = _style.subplots(2, 3, figsize=(15, 9.2))
    for i, d in enumerate(data.diagrams):
        mesh = _diagram(axes[0, i], data, d)
        if d.L == MAIN_L:
            for m in data.marked:
                axes[0, i].plot(m.beta, m.K, "o", color="w", mec="k", ms=6)
                axes[0, i].annotate(
                    m.label,
                    (m.beta, m.K),
                    xytext=(5, 4),
                    textcoords="offset points",
                    fontsize=9,
                    fontweight="bold",
                )
    _, _, ticks, labels = _style.discrete_map(REGION_COLORS, REGIONS)
    _style.colorbar(
        fig,
        mesh,
        list(axes[0]),
        "direct sign of the escape rates",
        ticks=ticks,
        ticklabels=[r.replace(" (", "\n(") for r in labels],
    )
    axes[0, 0].legend(loc="upper left", framealpha=0.9)
    for j, (land, label) in enumerate(zip(data.landscapes, ("a", "b"))):
        _landscape_panel(axes[1, j], fig, data, land, label)
    ax = axes[1, 2]
    K = np.asarray(data.cut_K, float)
    for j, cut in enumerate(data.cuts):
        c = _style.color(j)
        ax.plot(
            K,
            np.asarray(cut.antisymmetric, float),
            "--",
            color=c,
            label=f"beta={cut.beta:g}: antisymmetric (1,-1)",
        )
        ax.plot(
            K,
            np.asarray(cut.symmetric, float),
            "-",
            color=c,
            label=f"beta={cut.beta:g}: symmetric (1,1)",
        )
        if cut.K_star > 0:
            ax.axvline(cut.K_star, color=c, ls=":", lw=1)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("competing mass K (dotted: K*)")
    ax.set_ylabel("escape rate at p=(1/2,1/2) (> 0: unstable)")
    ax.set_title(f"escape rates along K, L={MAIN_L}, gamma={data.gamma:g}")
    ax.legend(loc="center right")
    fig.suptitle(
        "Two-head toy: sharpening is fast, splitting is slow, and the symmetric "
        "direction is stable "
        "below K*(beta)"
    )
    return fig


def _corner(p) -> str:
    """The corner a toy flow ended at, e.g. '(1, 0)'."""
    return "(" + ", ".join(str(round(x)) for x in p) + ")"


def tables(data: ToyStabilityData) -> list[MeasuredTable]:
    """The stability diagrams (agreement of the curve with the rate signs, beta_0), K*(beta),
    the rates at the marked points, and where every toy flow ended."""
    diagrams = [
        [
            str(d.L),
            f"{d.boundary_agrees_with_signs} of {d.grid_points}",
            f"{d.beta_0:.3g}",
        ]
        for d in data.diagrams
    ]
    cuts = [[f"{c.beta:g}", f"{c.K_star:.4g}"] for c in data.cuts]
    marked = [
        [
            m.label,
            f"{m.beta:g}",
            f"{m.K:g}",
            f"{m.symmetric:.4g}",
            f"{m.antisymmetric:.4g}",
        ]
        for m in data.marked
    ]
    lands = data.landscapes
    flows = []
    for i in range(len(lands[0].trajectories)):
        start = lands[0].trajectories[i][0]
        ends = [_corner(land.trajectories[i][-1]) for land in lands]
        flows.append([f"({start[0]:.2f}, {start[1]:.2f})", *ends])
    labels = [f"beta={land.config['beta']:g}" for land in lands]
    split = ", ".join(
        f"{lab}: {land.ends_split} of {len(flows)}" for lab, land in zip(labels, lands)
    )
    return [
        MeasuredTable(
            "Stability diagrams: grid points where the curve K*(beta) agrees with the direct "
            "signs of the escape rates (every point of the grid), and beta_0.",
            ["L", "agreeing grid points", "beta_0"],
            diagrams,
        ),
        MeasuredTable(f"K*(beta) at L={MAIN_L}.", ["beta", "K*"], cuts),
        MeasuredTable(
            f"Escape rates at the marked points (L={MAIN_L}); > 0 is unstable.",
            ["point", "beta", "K", "symmetric (1,1)", "antisymmetric (1,-1)"],
            marked,
        ),
        MeasuredTable(
            f"Toy flows at K={lands[0].config['K']:g}, L={MAIN_L}: start p and the corner "
            "reached ((1, 0) and (0, 1): heads split; (0, 0) and (1, 1): same offset); "
            f"ending split: {split}. "
            f"Corner losses at beta={lands[0].config['beta']:g}: same "
            f"{data.corner_same:.5f}, opposite {data.corner_opposite:.5f} (split "
            f"advantage {data.split_advantage:.3g}).",
            ["start p", *(f"end, {lab}" for lab in labels)],
            flows,
        ),
    ]


FIGURE = Figure(
    "toy_stability",
    "The two-head toy: where p = 1/2 is unstable, and splitting is slow",
    claim,
    compute,
    draw,
    cost=5,
    tables=tables,
    data=ToyStabilityData,
)
