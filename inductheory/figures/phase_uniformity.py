"""The price of phase-uniformity (docs/theory.md §4, §6): the frontier of mean vs
worst-phase loss over
block-shared gates, with the learned, uniform and coordinated points placed on it."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from ..experiments._frontier import (
    FrontierEnd,
    frontier_mean_at,
    mean_and_worst,
    minimax_end,
    simplex_frontier,
    uniformity_frontier,
)
from ..internal._io import cached
from ..internal._records import Record, optional_field
from ..model._gates import hard_selection, selectable_offsets, uniform_gates
from . import _runs, _style
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._parameters import PhaseUniformityParameters
from ._stats import (
    compact,
    interval_text,
    share_text,
    span_text,
    wilson_interval,
)

S = 4
HEADS = (2, 3)  # H < S - 1 and H = S - 1
COORDINATED = (
    ("coordination", "overlap penalty lambda=0.1", dict(coordination=0.1)),
    (
        "worst_phase",
        "worst-phase objective tau=0.1",
        dict(objective="worst-phase", tau=0.1),
    ),
)

_WORDS = {2: "two", 3: "three", 4: "four"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlacedPoint(Record):
    """Gates placed on the frontier: their `mean` and `worst` phase loss and `above_frontier`,
    mean - F(worst); `seeds`: for the end of flows, how many seeds ended there (None for
    uniform gates and hard selections); `offsets`: for a hard selection, its key offset per head
    (else None)."""

    mean: float
    worst: float
    above_frontier: float
    seeds: int | None = optional_field()
    offsets: list[int] | None = optional_field()


@dataclasses.dataclass(frozen=True, kw_only=True)
class FrontierCurve(Record):
    """The frontier as stored: `bounds`, the augmented Lagrangian's `mean` and `worst` at each
    (B,) and every start's `all_mean`, `all_worst` (B, starts); SLSQP's check `slsqp_mean`,
    `slsqp_worst` (B,); the left `end` (`FrontierEnd`) with `min_worst`, `min_worst_mean`; the
    best mean `unconstrained_mean` at worst phase `unconstrained_worst`. Lists, NaN read back as
    None."""

    bounds: list[float]
    mean: list[float | None]
    worst: list[float | None]
    all_mean: list[list[float]]
    all_worst: list[list[float]]
    min_worst: float
    min_worst_mean: float
    unconstrained_mean: float
    unconstrained_worst: float
    end: FrontierEnd
    slsqp_mean: list[float | None]
    slsqp_worst: list[float | None]


@dataclasses.dataclass(frozen=True, kw_only=True)
class UniformityPanel(Record):
    """One H: its `frontier`, the `uniform` gates, the plain flows' ends (`learned`), the
    coordinated flows' ends by name (`coordinated`: `"coordination"`, `"worst_phase"`), the
    hard selections (`vertices`) and the `price` of uniformity (F at the least worst phase minus
    the best mean)."""

    H: int
    frontier: FrontierCurve
    uniform: PlacedPoint
    learned: list[PlacedPoint]
    coordinated: dict[str, list[PlacedPoint]]
    vertices: list[PlacedPoint]
    price: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class PhaseUniformityData(FigureData):
    """The stride `S` and one `UniformityPanel` per number of heads (`panels`)."""

    S: int
    panels: list[UniformityPanel]
    parameters: PhaseUniformityParameters


def _hits(k: int, n: int) -> str:
    """`k/n` with its Wilson 95% interval to 2 decimals, `[0.86, 1]`."""
    return f"{k}/{n}", interval_text(*wilson_interval(k, n), 2)


def _nearest_vertex(
    worst: float, mean: float, vertices: list[PlacedPoint]
) -> PlacedPoint:
    """The hard selection nearest the point (worst, mean)."""
    return min(vertices, key=lambda v: (v.worst - worst) ** 2 + (v.mean - mean) ** 2)


def _end_text(end: FrontierEnd, H: int) -> str:
    """The left end's gates in words: hard and distinct, or each head's own and shared
    offsets (key mass, and the value mass on the successor)."""
    key, value = np.asarray(end.key), np.asarray(end.value)
    if np.isin(key, (0.0, 1.0)).all() and len(set(key.argmax(1))) == H:
        return "the distinct hard selection"
    shared = np.flatnonzero((key > 0).all(0))
    own = [[o for o in np.flatnonzero(row > 0) if o not in shared] for row in key]
    if len(shared) != 1 or any(len(o) != 1 for o in own):
        return "a soft selection"
    (s,) = shared

    def masses(offsets):
        k = {f"{key[h, o]:.3f}" for h, o in enumerate(offsets)}
        v = {f"{value[h, o + 1]:.3f}" for h, o in enumerate(offsets)}
        return "/".join(sorted(k)), "/".join(sorted(v))

    (k_own, v_own), (k_sh, v_sh) = masses([o[0] for o in own]), masses([s] * H)
    return (
        "neither hard nor symmetric between heads, each head puts key "
        f"{k_own} on an offset of its own (value {v_own} on its successor) and key {k_sh} "
        f"on the offset both heads share (value {v_sh} on its successor)"
    )


def _panel_text(p: UniformityPanel, S: int, rho: float, delta: float) -> str:
    """One H's part of the claim."""
    H, fr, end = p.H, p.frontier, p.frontier.end
    phases = len(end.losses)
    equal = max(end.losses) - min(end.losses) < 1e-9
    hard = _end_text(end, H).startswith("the distinct hard")
    n = end.starts
    slsqp, al = _hits(end.slsqp_hits, n), _hits(end.al_hits, n)
    kkt = end.kkt
    text = f" H={H} {'<' if H < S - 1 else '='} S-1: the end is "
    if hard:
        text += (
            f"{_end_text(end, H)} ({end.worst:.4f}, {end.mean:.4f}), reached from "
            + (
                f"{slsqp[0]} starts ({slsqp[1]}) by both solvers"
                if end.slsqp_hits == end.al_hits
                else f"{slsqp[0]} starts ({slsqp[1]}) by SLSQP and {al[0]} ({al[1]}) by the AL"
            )
            + f", KKT residual {compact(kkt.residual, 1)}"
        )
    else:
        text += (
            f"worst {end.worst:.6f} with "
            + (
                f"all {_WORDS.get(phases, phases)} phases equal"
                if equal
                else "unequal phases"
            )
            + f" (mean {end.mean:.6f}), reached by SLSQP from {slsqp[0]} starts (Wilson 95% "
            f"{slsqp[1]}) and by the AL from {al[0]} ({al[1]}; its best "
            f"{compact(end.al_worst - end.slsqp_worst, 1)} above SLSQP's), KKT residual "
            f"{compact(kkt.residual, 1)} with phase multipliers ("
            + ", ".join(f"{x:.2f}" for x in kkt.phase_multipliers)
            + ")"
            + (
                " and every zero gate entry pushing into its bound"
                if kkt.dual_feasibility == 0
                else ""
            )
            + f": {_end_text(end, H)}."
        )
    if p.price < 1e-9:
        text += ", and F is that single point, so uniformity is free"
    else:
        best = _nearest_vertex(
            fr.unconstrained_worst, fr.unconstrained_mean, p.vertices
        )
        distinct = len(set(best.offsets)) == H
        text += (
            f" F runs from the end to the best mean {fr.unconstrained_mean:.4f} at worst "
            f"{fr.unconstrained_worst:.4f} (a hard selection with "
            + ("distinct heads" if distinct else "heads on one offset")
            + (", one phase uncovered)" if H < phases else ")")
            + f"; making the worst phase as small as possible costs {p.price:.4f} in mean "
            "loss (the price of uniformity: F at the least worst phase minus the best mean)."
        )
    u = p.uniform
    text += (
        f" Uniform gates ({u.worst:.3f}, {u.mean:.3f}) lie {u.above_frontier:.2f} "
        "above F."
        if not hard
        else f"; uniform gates lie {u.above_frontier:.2f} above it"
    )
    return text + _flows_text(p, hard, rho, delta)


def _flows_text(p: UniformityPanel, hard: bool, rho: float, delta: float) -> str:
    """Where the plain and coordinated flows of one H end."""
    fr, end = p.frontier, p.frontier.end
    learned = p.learned
    total = sum(g.seeds for g in learned)
    coord, worst = (
        p.coordinated["coordination"][0],
        p.coordinated["worst_phase"][0],
    )
    if hard:
        at_end = [g for g in learned if g.worst - end.worst < 0.01]
        rest = [g for g in learned if g not in at_end]
        k = sum(g.seeds for g in at_end)
        text = "; plain flows reach it"
        if at_end:
            within = span_text(
                [g.above_frontier for g in at_end], lambda x: compact(x, 2)
            )
            text += f" (within {within}) in {k}/{total} seeds ({_hits(k, total)[1]})"
        else:
            text += f" in 0/{total} seeds ({_hits(0, total)[1]})"
        if rest:
            text += (
                " and otherwise leave a phase uncovered (worst "
                f"{span_text([g.worst for g in rest], lambda x: f'{x:.2f}')}, mean only "
                f"{span_text([g.above_frontier for g in rest], lambda x: f'{x:.3f}')} "
                "above F)"
            )
        both = [coord, worst]
        reach = all(g.worst - end.worst < 0.01 for g in both)
        seeds = {g.seeds for g in both}
        n = seeds.pop() if len(seeds) == 1 else None
        return text + (
            f"; both coordinations {'reach' if reach else 'do not both reach'} it in "
            + (f"{n}/{n} seeds ({_hits(n, n)[1]}; " if n else "their seeds (")
            + f"within {compact(coord.above_frontier, 2)} and "
            f"{compact(worst.above_frontier, 2)})."
        )
    phases = len(end.losses)
    rows = []
    for g in learned:
        v = _nearest_vertex(g.worst, g.mean, p.vertices)
        rows.append((g, len(set(v.offsets)) == len(v.offsets)))
    at_best = all(abs(g.worst - fr.unconstrained_worst) < 0.01 for g in learned)
    text = (
        " Plain reduced flows ("
        + f"rho={compact(rho)}, delta={compact(delta)}"
        + f", {total} seeds) "
        + ("all end at the mean-optimal end: " if at_best else "end: ")
        + ", ".join(
            f"{g.seeds}/{total} ({_hits(g.seeds, total)[1]}) with "
            + ("distinct heads" if distinct else "both heads on one offset")
            + f" ({compact(g.above_frontier, 1)} above"
            + (" F, the flow stops within delta of the vertex)" if i == 0 else ")")
            for i, (g, distinct) in enumerate(rows)
        )
        + "."
    )
    ends = abs(coord.worst - fr.unconstrained_worst) < 0.01
    n_c, n_w = coord.seeds, worst.seeds
    text += (
        f" The overlap penalty lambda=0.1 ({n_c}/{n_c} seeds, {_hits(n_c, n_c)[1]}) "
        + (
            f"ends there too ({compact(coord.above_frontier, 1)} above): with "
            f"{_WORDS.get(p.H, p.H)} heads it cannot cover "
            f"{_WORDS.get(phases, phases)} phases."
            if ends
            else f"ends at ({coord.worst:.3f}, {coord.mean:.3f})."
        )
        + f" The worst-phase objective tau=0.1 ({n_w}/{n_w} seeds, {_hits(n_w, n_w)[1]}) "
        f"moves along F to ({worst.worst:.3f}, {worst.mean:.3f}), "
        f"{worst.above_frontier:.3f} above it: "
        f"{fr.unconstrained_worst - worst.worst:.2f} off the worst phase for "
        f"{worst.mean - fr.unconstrained_mean:.2f} of mean loss."
    )
    return text


def claim(data: PhaseUniformityData) -> str:
    """The claim, its starts, bounds, ends, frontier, placed points and seeds from `data`."""
    params = data.parameters
    S = data.S
    panels = data.panels
    bounds, starts = params.bounds, params.starts
    plain, coordinated = params.seeds, params.coordinated_seeds
    (n_end,) = {p.frontier.end.starts for p in panels}
    agree = max(
        float(np.max(np.abs(np.subtract(p.frontier.mean, p.frontier.slsqp_mean))))
        for p in panels
    )
    solved = all(np.isfinite(p.frontier.mean).all() for p in panels)
    monotone = all(
        (np.diff(np.asarray(p.frontier.mean)[np.argsort(p.frontier.bounds)]) <= 0).all()
        for p in panels
    )
    text = (
        "Exact per-phase losses of block-shared gates (docs/theory.md §4, §9), "
        + params.task_text(("L", "S", "N", "beta", "gamma"), ", ")
        + ". Left end of the frontier (the least achievable worst-phase loss): min over gates "
        "of max_p l_p by two solvers, SLSQP on the simplices and the library's augmented "
        f"Lagrangian (AL) in logits, {n_end} starts each drawn independently per head and "
        "branch, the best polished by Newton on its KKT equations and checked by them "
        "(inductheory.experiments.minimax_end). The frontier F(c) = min mean loss subject to "
        f"worst-phase loss <= c, by the AL with BFGS from {starts} starts per bound (the end "
        f"and the best-mean gates start every bound; {bounds} grid bounds plus the worst phase "
        f"of every placed point; H in {{{', '.join(str(p.H) for p in panels)}}}, "
        f"{plain}/{coordinated} flow seeds), checked at every bound by SLSQP on the simplices; "
        + ("every bound was solved, " if solved else "not every bound was solved, ")
        + f"the two solvers agree within {compact(agree, 1)} at every bound and F is "
        + ("non-increasing." if monotone else "not monotone.")
    )
    return text + "".join(_panel_text(p, S, params.rho, params.delta) for p in panels)


def _frontier_sizes(quick: bool) -> tuple[int, int, int]:
    """The frontier's bounds, its starts per bound and the left end's starts."""
    return (6, 8, 8) if quick else (16, 32, 24)


def _frontier(task, quick, cache_dir, placed) -> FrontierCurve:
    """The left end (two solvers, KKT-checked), the AL frontier at every bound and SLSQP's
    check of it at every bound, cached together."""
    n_bounds, starts, end_starts = _frontier_sizes(quick)
    placed = sorted(set(placed))
    params = {
        "kind": "uniformity_frontier",
        "task": task.to_dict(),
        "n_bounds": n_bounds,
        "starts": starts,
        "end_starts": end_starts,
        "placed": placed,
        "seed": 0,
        "algorithm": "AL-BFGS v6 (minimax end by SLSQP + AL, KKT-polished; "
        "one AL program; SLSQP check)",
    }

    def run():
        end = minimax_end(task, starts=end_starts, seed=0)
        fr = uniformity_frontier(
            task,
            n_bounds=n_bounds,
            starts=starts,
            upper=max(placed),
            extra_bounds=placed,
            end=end,
        )
        check = simplex_frontier(task, fr.bounds, warm=[end.gates])
        return FrontierCurve(
            bounds=fr.bounds.tolist(),
            mean=fr.mean.tolist(),
            worst=fr.worst.tolist(),
            all_mean=fr.all_mean.tolist(),
            all_worst=fr.all_worst.tolist(),
            min_worst=fr.min_worst,
            min_worst_mean=fr.min_worst_mean,
            unconstrained_mean=fr.unconstrained_mean,
            unconstrained_worst=fr.unconstrained_worst,
            end=end,
            slsqp_mean=check.mean.tolist(),
            slsqp_worst=check.worst.tolist(),
        ).to_dict()

    return FrontierCurve.from_dict(cached(cache_dir, params, run))


def _points(task, run) -> list[tuple[float, float, int]]:
    """(mean, worst) of every seed's final gates, grouped to 3 decimals (flows stop within
    delta = 1e-3 of a vertex): distinct points (mean, worst, seeds ending there)."""
    pts = [
        mean_and_worst(task, _runs.converged_gates(run, i))
        for i in range(len(run.final_biases))
    ]
    rounded = {}
    for m, w in pts:
        key = (round(m, 3), round(w, 3))
        rounded.setdefault(key, [m, w, 0])[2] += 1
    return [(m, w, n) for m, w, n in sorted(rounded.values())]


def compute(context: FigureContext) -> PhaseUniformityData:
    quick = context.quick
    config, seeds = _runs.reduced_config(quick)
    few = 8 if quick else 32
    n_bounds, starts, end_starts = _frontier_sizes(quick)
    panels = []
    heads = (
        HEADS[:1] if quick else HEADS
    )  # quick: H = 2 only (each setting compiles once)
    for H in heads:
        task = _runs.task_of(**{**_runs.BASE, "S": S, "H": H})
        # the learned and coordinated flows together: those of one compiled program run as one
        # batch (the same numbers as one run each)
        configs = [
            _runs.reduced_config(quick, **change)[0] for *_, change in COORDINATED
        ]
        runs = _runs.flow_runs_together(
            task, [config, *configs], [seeds] + [few] * len(configs), context.cache
        )
        learned = _points(task, runs[0])
        coordinated = {
            name: _points(task, run) for (name, *_), run in zip(COORDINATED, runs[1:])
        }
        u_mean, u_worst = mean_and_worst(task, uniform_gates(H, S))
        vertices = []
        for offsets in itertools.product(range(selectable_offsets(S)), repeat=H):
            if list(offsets) == sorted(offsets):  # heads are interchangeable
                m, w = mean_and_worst(task, hard_selection(S, np.asarray(offsets)))
                vertices.append((list(offsets), m, w))
        # the frontier is also solved at the worst phase of every placed point
        placed = (
            [u_worst]
            + [w for _, w, _ in learned]
            + [w for v in coordinated.values() for _, w, _ in v]
            + [w for *_, w in vertices]
        )
        fr = _frontier(task, quick, context.cache, placed)

        def point(mean, worst, fr=fr, **extra):  # with its height above the frontier
            above = float(mean - frontier_mean_at(fr, worst))
            return PlacedPoint(mean=mean, worst=worst, above_frontier=above, **extra)

        def flow_points(points):
            return [point(m, w, seeds=n) for m, w, n in points]

        panels.append(
            UniformityPanel(
                H=H,
                frontier=fr,
                uniform=point(u_mean, u_worst),
                learned=flow_points(learned),
                coordinated={k: flow_points(v) for k, v in coordinated.items()},
                vertices=[point(m, w, offsets=o) for o, m, w in vertices],
                # F at the smallest worst phase found (the constrained solve or the soft-max
                # solve) minus the best mean
                price=float(
                    np.nanmin(np.asarray([fr.min_worst_mean, fr.mean[0]], float))
                )
                - fr.unconstrained_mean,
            )
        )
    return PhaseUniformityData(
        S=S,
        panels=panels,
        parameters=PhaseUniformityParameters(
            **{k: _runs.BASE[k] for k in ("L", "N", "beta", "gamma", "kappa")},
            S=S,
            Hs=list(heads),
            end_starts=end_starts,
            bounds=n_bounds,
            starts=starts,
            rho=config.rho,
            delta=config.delta,
            seeds=seeds,
            coordinated_seeds=few,
        ),
        findings="; ".join(
            f"H={p.H}: frontier from (worst {p.frontier.min_worst:.4f}, mean "
            f"{p.frontier.unconstrained_mean + p.price:.4f}) "
            f"to (worst {p.frontier.unconstrained_worst:.4f}, mean "
            f"{p.frontier.unconstrained_mean:.4f}), "
            f"price of uniformity {p.price:.4f}; uniform "
            f"({p.uniform.worst:.4f}, {p.uniform.mean:.4f}), "
            f"{p.uniform.above_frontier:.4f} above; learned "
            + ", ".join(f"({q.worst:.4f}, {q.mean:.4f}) x{q.seeds}" for q in p.learned)
            + "; "
            + "; ".join(
                f"{name}: "
                + ", ".join(f"({q.worst:.4f}, {q.mean:.4f}) x{q.seeds}" for q in pts)
                for name, pts in p.coordinated.items()
            )
            for p in panels
        ),
    )


def _vector(v):
    return "(" + ", ".join(f"{x:.6f}" for x in v) + ")"


def tables(data: PhaseUniformityData) -> list[MeasuredTable]:
    """Per panel: the left end's gates, the end by two solvers with its KKT residuals and the
    price, the frontier at every bound by both solvers, and the placed points."""
    out = []
    for p in data.panels:
        H, fr = p.H, p.frontier
        e, kkt = fr.end, fr.end.kkt
        out.append(
            MeasuredTable(
                f"H={H}: gates at the left end (least worst-phase loss), per head",
                ["head", "key p^K (offsets 0..3)", "value p^V (offsets 0..3)"],
                [[str(h), _vector(e.key[h]), _vector(e.value[h])] for h in range(H)],
            )
        )
        n = e.starts
        out.append(
            MeasuredTable(
                f"H={H}: the left end by two solvers, {n} starts each (hits: starts ending "
                f"within {e.tol:g} of the polished worst phase, Wilson 95%), and the price",
                ["quantity", "value"],
                [
                    ["worst-phase loss (polished)", f"{e.worst:.10f}"],
                    ["mean loss", f"{e.mean:.10f}"],
                    ["per-phase losses", _vector(e.losses)],
                    [
                        "SLSQP on the simplices: best worst phase",
                        f"{e.slsqp_worst:.10f}",
                    ],
                    ["augmented Lagrangian in logits: best", f"{e.al_worst:.10f}"],
                    ["AL - SLSQP", f"{e.al_worst - e.slsqp_worst:+.1e}"],
                    ["SLSQP hits", share_text(e.slsqp_hits, n)],
                    ["AL hits", share_text(e.al_hits, n)],
                    [
                        "KKT residual (stationarity, dual, complementarity, primal)",
                        f"{kkt.residual:.1e} ({kkt.stationarity:.1e}, "
                        f"{kkt.dual_feasibility:.1e}, {kkt.complementarity:.1e}, "
                        f"{kkt.primal_feasibility:.1e})",
                    ],
                    ["phase multipliers", _vector(kkt.phase_multipliers)],
                    [
                        "best mean (right end): worst, mean",
                        f"{fr.unconstrained_worst:.6f}, {fr.unconstrained_mean:.8f}",
                    ],
                    [
                        "price of uniformity F(least worst) - best mean",
                        f"{p.price:.6f}",
                    ],
                ],
            )
        )
        starts = len(fr.all_mean[0])
        rows = [
            [
                f"{c:.6f}",
                f"{m:.9f}",
                f"{w:.6f}",
                f"{ms:.9f}",
                f"{m - ms:+.1e}",
            ]
            for c, m, w, ms in zip(fr.bounds, fr.mean, fr.worst, fr.slsqp_mean)
        ]
        out.append(
            MeasuredTable(
                f"H={H}: frontier F(c) at every bound ({len(rows)} bounds; augmented "
                f"Lagrangian from {starts} starts per bound, SLSQP continued along the bounds)",
                [
                    "bound c",
                    "F(c), AL",
                    "worst phase at F",
                    "F(c), SLSQP",
                    "AL - SLSQP",
                ],
                rows,
            )
        )
        total = sum(q.seeds for q in p.learned)
        rows = [
            ["uniform gates", "-", *_placed_row(p.uniform)],
            *[
                ["plain flow", share_text(q.seeds, total), *_placed_row(q)]
                for q in p.learned
            ],
        ]
        for name, label in COORDINATED_LABELS:
            pts = p.coordinated[name]
            n_seeds = sum(q.seeds for q in pts)
            rows += [
                [label, share_text(q.seeds, n_seeds), *_placed_row(q)] for q in pts
            ]
        rows += [
            [f"hard selection {tuple(v.offsets)}", "-", *_placed_row(v)]
            for v in p.vertices
        ]
        out.append(
            MeasuredTable(
                f"H={H}: placed points, height above F at their worst phase (seeds: the "
                "share of a run's seeds ending there, Wilson 95%)",
                ["point", "seeds", "worst", "mean", "above F"],
                rows,
            )
        )
    return out


def _placed_row(q: PlacedPoint) -> list[str]:
    return [f"{q.worst:.4f}", f"{q.mean:.4f}", f"{q.above_frontier:.1e}"]


def _placed(p: UniformityPanel):
    """(label, marker, colour, points) of everything placed on the frontier."""
    total = sum(q.seeds for q in p.learned)
    out = [
        ("hard selections", "s", "0.5", p.vertices),
        ("uniform gates", "X", _style.color(3), [p.uniform]),
        (f"learned (plain flow, {total} seeds)", "o", _style.color(0), p.learned),
    ]
    for j, (name, label) in enumerate(COORDINATED_LABELS):
        pts = p.coordinated[name]
        out.append(
            (
                f"{label} ({sum(q.seeds for q in pts)} seeds)",
                "^D"[j],
                _style.color(1 + j),
                pts,
            )
        )
    return out


COORDINATED_LABELS = tuple((name, label) for name, label, _ in COORDINATED)


def draw(data: PhaseUniformityData):
    panels = data.panels
    fig, axes = _style.subplots(
        2, len(panels), figsize=(6.8 * len(panels), 9), squeeze=False
    )
    for i, p in enumerate(panels):
        fr = p.frontier
        ax = axes[0, i]
        ax.plot(
            np.ravel(fr.all_worst),
            np.ravel(fr.all_mean),
            ".",
            color="0.8",
            ms=2,
            label="every start of the constrained solves",
        )
        ok = np.isfinite(np.asarray(fr.mean, float))
        ax.plot(
            np.asarray(fr.worst, float)[ok],
            np.asarray(fr.mean, float)[ok],
            "-",
            color="k",
            lw=1.4,
            label=f"frontier F(c) ({ok.sum()}/{ok.size} bounds solved)",
        )
        e = fr.end
        ax.scatter(
            [e.worst],
            [e.mean],
            marker="*",
            color="k",
            s=160,
            zorder=4,
            label=f"left end ({' and '.join(e.agreed)}; KKT residual "
            f"{e.kkt.residual:.0e})",
        )
        for label, marker, colour, pts in _placed(p):
            counts = [1 if q.seeds is None else q.seeds for q in pts]
            ax.scatter(
                [q.worst for q in pts],
                [q.mean for q in pts],
                marker=marker,
                color=colour,
                s=[30 + 60 * np.sqrt(c / max(counts)) for c in counts],
                edgecolors="k",
                linewidths=0.5,
                zorder=3,
                alpha=0.85,
                label=label,
            )
        ax.set_xlabel("worst-phase loss max_p l_p")
        ax.set_ylabel("mean loss over phases")
        kind = "H < S-1" if p.H < data.S - 1 else "H = S-1"
        ax.set_title(
            f"H={p.H}, S={data.S} ({kind}): price of uniformity {p.price:.4f}\n"
            f"(mean at the smallest worst phase minus the best mean)"
        )
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi + 0.7 * (hi - lo))  # room above the points for the legend
        ax.legend(loc="upper right", fontsize=7)
        ax = axes[1, i]
        for label, marker, colour, pts in _placed(p):
            ax.scatter(
                [q.worst for q in pts],
                [q.above_frontier for q in pts],
                marker=marker,
                color=colour,
                s=40,
                edgecolors="k",
                linewidths=0.5,
                zorder=3,
                alpha=0.85,
                label=label,
            )
        ax.axhline(0, color="k", lw=1)
        ax.set_yscale("symlog", linthresh=1e-4)
        gaps = [q.above_frontier for *_, pts in _placed(p) for q in pts]
        ax.set_ylim(min(-2e-4, 3 * min(gaps)), 3 * max(gaps))
        ax.set_xlabel("worst-phase loss max_p l_p")
        ax.set_ylabel("mean - F(worst)  (0: on the frontier)")
        ax.set_title(
            f"H={p.H}: height above the frontier (F solved at each point's worst phase)"
        )
    fig.suptitle(
        "Mean vs worst-phase loss over block-shared gates\n(L=8, N=4096, beta=4, "
        "gamma=1; exact §4 losses)"
    )
    return fig


FIGURE = Figure(
    "phase_uniformity",
    "The price of phase-uniformity: mean vs worst-phase loss",
    claim,
    compute,
    draw,
    cost=105,
    tables=tables,
    data=PhaseUniformityData,
)
