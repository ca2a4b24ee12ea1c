"""The typed parameters of the figures whose claims read them: one record per figure, its
fields the task's, flow's and training's settings, and `text()` the entries of the figure's
"Parameters." line in figures/README.md (the one place each entry is formatted).

A figure's data store the record as its `parameters` (`FigureData.parameters`); its claim reads
the fields, never the text.
"""

from __future__ import annotations

import dataclasses

from ._figure import FigureParameters
from ._stats import compact


def exponent_text(x: float) -> str:
    """A power of ten or a round number as the parameters write it, one significant digit.

    **Arguments:** `x`: the number.

    **Returns:** its text.

    ```python
    exponent_text(1e-3), exponent_text(50_000)  # ('1e-3', '5e4')
    ```
    """
    mantissa, _, exponent = f"{x:.0e}".partition("e")
    return f"{mantissa}e{int(exponent)}"


def _task_text(task, keys, sep: str = " ") -> str:
    """`k=v` of the task's `keys`, numbers as `compact` writes them (`beta=4`)."""
    return sep.join(
        f"{k}={compact(v) if isinstance(v, float) else v}"
        for k, v in ((k, getattr(task, k)) for k in keys)
    )


class _OracleStarts:
    """The oracle's starts of a record with `restarts` and `vertex_seeds` fields, as text."""

    def restarts_text(self) -> str:
        """`16 restarts + 8 vertex seeds`."""
        return f"{self.restarts} restarts + {self.vertex_seeds} vertex seeds"


@dataclasses.dataclass(frozen=True, kw_only=True)
class CoverageParameters(FigureParameters):
    """The coverage figure's reduced flows: `delta` and `seeds` per point."""

    delta: float
    seeds: int

    def text(self) -> dict[str, str]:
        return {
            "task": "L=8 N=4096 beta=4 gamma=1 (S=4 H=2 for the times)",
            "flow": f"reduced, delta={self.delta}, {self.seeds} seeds per point",
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class EffectiveOffsetsParameters(FigureParameters):
    """The effective-offsets figure's task (`L`, `S`, `H`, `N`, `beta`), its full flows (`rho`,
    `M` balanced contexts, `seeds`) and the approximate-geometry flows (`approximate_N`,
    `approximate_d`, the realized `approximate_eps`, `approximate_M`, `approximate_seeds`)."""

    L: int
    S: int
    H: int
    N: int
    beta: float
    rho: float
    M: int
    seeds: int
    approximate_N: int
    approximate_d: int
    approximate_eps: float
    approximate_M: int
    approximate_seeds: int

    def text(self) -> dict[str, str]:
        return {
            "task": f"L={self.L} S={self.S} H={self.H} N={self.N} beta={self.beta}",
            "flow": f"full, rho={self.rho}, M={self.M} balanced contexts, {self.seeds} seeds",
            "approximate": f"same flow and shape, N={self.approximate_N}, "
            f"d={self.approximate_d} (realized eps {self.approximate_eps:.2f}), "
            f"M={self.approximate_M} balanced contexts, {self.approximate_seeds} seeds",
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class PhaseUniformityParameters(FigureParameters):
    """The phase-uniformity figure's task (`L`, `S`, `N`, `beta`, `gamma`, `kappa`, the head
    counts `Hs`), the left end's `end_starts`, the frontier's `bounds` x `starts` and the
    reduced flows (`rho`, `delta`, `seeds` plain, `coordinated_seeds`)."""

    L: int
    S: int
    N: int
    beta: float
    gamma: float
    kappa: float
    Hs: list[int]
    end_starts: int
    bounds: int
    starts: int
    rho: float
    delta: float
    seeds: int
    coordinated_seeds: int

    def task_text(
        self, keys=("L", "S", "N", "beta", "gamma", "kappa"), sep: str = " "
    ) -> str:
        """`L=8 S=4 ...` of `keys` (joined by `sep`)."""
        return _task_text(self, keys, sep)

    def text(self) -> dict[str, str]:
        return {
            "task": f"{self.task_text()}, H in {{{', '.join(map(str, self.Hs))}}}",
            "left end": "min over gates of the worst phase by SLSQP on the simplices and by "
            f"the augmented Lagrangian in logits, {self.end_starts} starts each, the best "
            "Newton-polished on its KKT equations",
            "frontier": f"augmented Lagrangian + BFGS, {self.bounds} bounds x {self.starts} "
            "starts (plus the placed points' worst phases); SLSQP on the simplices at every "
            "bound as a check",
            "flows": f"reduced, rho={self.rho}, delta={self.delta}; plain {self.seeds} "
            f"seeds, coordinated {self.coordinated_seeds} seeds",
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class RegimeBoundaryParameters(_OracleStarts, FigureParameters):
    """The regime-boundary figure's oracle (`S`, `kappa`, `restarts`, `vertex_seeds`,
    `bisection_steps`) and reduced flows (the `series` label, `seeds`, `rho`, `delta`,
    `t_max`, `max_steps`)."""

    S: int
    kappa: float
    restarts: int
    vertex_seeds: int
    bisection_steps: int
    series: str
    seeds: int
    rho: float
    delta: float
    t_max: float
    max_steps: int

    def flow_text(self) -> str:
        """`rho=0.1, delta=1e-3, t_max=1e7`."""
        return (
            f"rho={self.rho}, delta={exponent_text(self.delta)}, "
            f"t_max={exponent_text(self.t_max)}"
        )

    def text(self) -> dict[str, str]:
        return {
            "oracle": f"S={self.S} kappa={compact(self.kappa)}, exact geometry; "
            f"{self.restarts_text()}; {self.bisection_steps} bisection steps",
            "flow": f"reduced, {self.series}, {self.seeds} seeds, {self.flow_text()}, "
            f"max_steps={exponent_text(self.max_steps)}; criterion: at least half of the "
            "seeds delta-select with distinct heads",
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class ConvergenceRatesParameters(FigureParameters):
    """The convergence-rates figure's task (`L`, `S`, `H`, `N`, `beta`, `gamma`, `kappa`), its
    tail flows (`rhos`, `tail_seeds` each, run to `tail_delta` with saves in `save_range`,
    fitted over 1 - p in `fit_window`), its delta flows (`deltas` at `delta_rho`,
    `delta_seeds` each), the `root_finder` and the intervals' `level` and bootstrap
    (`resamples`, `bootstrap_seed`)."""

    L: int
    S: int
    H: int
    N: int
    beta: float
    gamma: float
    kappa: float
    rhos: list[float]
    tail_seeds: int
    tail_delta: float
    save_range: list[float]
    fit_window: list[float]
    deltas: list[float]
    delta_rho: float
    delta_seeds: int
    root_finder: str
    level: float
    resamples: int
    bootstrap_seed: int

    def task_text(self, sep: str = " ") -> str:
        """`L=8 S=4 H=2 N=4096 beta=4 gamma=1 kappa=1` (joined by `sep`)."""
        return _task_text(self, ("L", "S", "H", "N", "beta", "gamma", "kappa"), sep)

    def saves_text(self) -> str:
        """`1, 1e9`: the first and the last save."""
        return ", ".join(compact(x) for x in self.save_range)

    def text(self) -> dict[str, str]:
        lo, hi = self.fit_window
        return {
            "task": f"{self.task_text()}, reduced flow",
            "tail": f"rho in {self.rhos}, {self.tail_seeds} seeds each, "
            f"delta={self.tail_delta}, saves in [{self.saves_text()}], exponent fitted over "
            f"1-p in ({lo}, {hi})",
            "delta": f"delta in {self.deltas}, rho={self.delta_rho}, {self.delta_seeds} "
            "seeds each",
            "root_finder": self.root_finder,
            "intervals": f"{self.level:.0%}: Wilson for shares, order statistics for "
            f"medians, percentile bootstrap over seeds ({self.resamples} resamples, seed "
            f"{self.bootstrap_seed}) for the mean exponent and the slope",
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToyStabilityParameters(FigureParameters):
    """The toy figure's stability diagrams (`gamma`, panels `Ls`, `beta_range` in `n_beta`
    points, `K_range` in `n_K` log-spaced points) and its `landscapes` ([beta, K] each, at
    `L`)."""

    gamma: float
    Ls: list[int]
    beta_range: list[float]
    n_beta: int
    K_range: list[float]
    n_K: int
    landscapes: list[list[float]]
    L: int

    def text(self) -> dict[str, str]:
        (b0, b1), (k0, k1) = self.beta_range, self.K_range
        return {
            "diagram": f"gamma={self.gamma}, L in {list(self.Ls)}, beta in [{b0}, {b1}] "
            f"({self.n_beta} points), K in [{k0:g}, {k1:g}] ({self.n_K} points, log)",
            "landscapes": "; ".join(
                f"beta={b} K={k:g} L={self.L}" for b, k in self.landscapes
            ),
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class BoundaryParameters(FigureParameters):
    """The boundary figure's task (`S`, `H`), reduced flows (`rho`, `delta`, `seeds` per W)
    and oracle (`oracle_L`, `oracle_H`, `restarts`, `steps`)."""

    S: int
    H: int
    rho: float
    delta: float
    seeds: int
    oracle_L: int
    oracle_H: int
    restarts: int
    steps: int

    def text(self) -> dict[str, str]:
        return {
            "task": f"L=8 S={self.S} H={self.H} N=4096 beta=4 gamma=1 kappa=1 queries=all",
            "flow": f"reduced, rho={self.rho}, delta={self.delta}, {self.seeds} seeds per W",
            "oracle": f"L={self.oracle_L} S={self.S} H={self.oracle_H} queries=all, "
            f"restarts={self.restarts}, steps={self.steps}, 8 vertex seeds",
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class MitigationsParameters(FigureParameters):
    """The mitigations figure's task (`T`, `H`, `N`, `beta`, `gamma`, `kappa`), reduced flows
    (`rho`, `delta`, `t_max`, `seeds` per row), coordination flows (`coordination_seeds` per
    variant, `budget_seeds` for the worst-phase objective) and threshold flows (at
    `threshold_factors` x lambda*)."""

    T: int
    H: int
    N: int
    beta: float
    gamma: float
    kappa: float
    rho: float
    delta: float
    t_max: float
    seeds: int
    coordination_seeds: int
    budget_seeds: int
    threshold_factors: list[float]

    def task_text(self) -> str:
        """`N=4096, beta=4, gamma=1, kappa=1`."""
        return _task_text(self, ("N", "beta", "gamma", "kappa"), ", ")

    def text(self) -> dict[str, str]:
        factors = " and ".join(f"{f:g}" for f in self.threshold_factors)
        return {
            "task": f"T=L*S={self.T} positions, H={self.H}, {self.task_text()}, exact "
            "geometry, queries=all",
            "flow": f"reduced, rho={self.rho}, delta={self.delta}, t_max={self.t_max:g}, "
            f"{self.seeds} seeds per row",
            "coordination": "W=S=4, H in {2, 3} (quick: 2), queries within and all (quick: "
            f"all), {self.coordination_seeds} seeds per variant ({self.budget_seeds} for the "
            "worst-phase objective at tau < 1)",
            "threshold": "lambda* = coordination_threshold (closed form); flows at "
            f"{factors} lambda*, {self.coordination_seeds} seeds each",
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class RelaxationLadderParameters(FigureParameters):
    """The relaxation ladder's task (`L`, `S`, `H`, `N`, `beta`, `gamma`, `kappa`, `queries`),
    its training (`seeds` per rung, and `LadderSettings`' fields: `steps`, `lr`, `M`,
    `batch`, `adam_lr`, `approximate_d`, `d`, `local_window`, `eval_contexts`), the flow's
    `rho` and the measures' thresholds (`selected_mass`, `input_dependent`,
    `phase_uniform`)."""

    L: int
    S: int
    H: int
    N: int
    beta: float
    gamma: float
    kappa: float
    queries: str
    seeds: int
    steps: int
    lr: float
    M: int
    batch: int
    adam_lr: float
    approximate_d: int
    d: int
    local_window: int
    eval_contexts: int
    rho: float
    selected_mass: float
    input_dependent: float
    phase_uniform: float

    def task_text(self) -> str:
        """`L=4, S=3 (W=S), H=2, N=48, beta=4, gamma=1, kappa=1` and the queries (`queries`:
        how they are written)."""
        return (
            f"L={self.L}, S={self.S} (W=S), "
            + _task_text(self, ("H", "N", "beta", "gamma", "kappa"), ", ")
            + f", queries={self.queries}"
        )

    def rungs_text(self) -> str:
        """`32 seeds per rung, 400 steps`."""
        return f"{self.seeds} seeds per rung, {self.steps} steps"

    def measured_text(self) -> str:
        """`64 held-out contexts per seed`."""
        return f"{self.eval_contexts} held-out contexts per seed"

    def text(self) -> dict[str, str]:
        return {
            "task": self.task_text(),
            "training": f"{self.rungs_text()}; theorem rung: "
            f"gradient descent, lr={self.lr}, the full flow's balanced sample of M={self.M} "
            f"contexts, rho={self.rho}",
            "switches": f"minibatch: {self.batch} fresh contexts a step; Adam: "
            f"lr={self.adam_lr}; approximate geometry: d={self.approximate_d}; learned "
            f"embeddings, maps and unembedding: d={self.d}; gate bias: <c, x> + b; exact "
            f"local branch: w={self.local_window}; two layers",
            "measures": f"{self.measured_text()}; selected: argmax "
            f"mass >= {self.selected_mass}; input-dependent: static - avg >= "
            f"{self.input_dependent}; phase-uniform: per-seed gap <= {self.phase_uniform}; "
            "boundary phase: the within-trained models evaluated with queries=all",
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class Theorem1Parameters(_OracleStarts, FigureParameters):
    """The Theorem 1 figure's minimizer (`restarts`, `vertex_seeds`) and the boundary's
    bisection steps (`refine`; 0: the grid's bracket as it is)."""

    restarts: int
    vertex_seeds: int
    refine: int

    def refined_text(self) -> str:
        """`refined by 2 bisection steps in log N` (empty without refinement)."""
        return (
            f"refined by {self.refine} bisection steps in log N" if self.refine else ""
        )

    def text(self) -> dict[str, str]:
        refined = self.refined_text()
        return {
            "task": "L=4 S=4 H=2 gamma=1 kappa=1, exact geometry",
            "minimizer": f"active-set Newton, {self.restarts_text()}",
            "boundary": "smallest grid N from which every larger N is hard with distinct "
            "heads" + (f", {refined}" if refined else ""),
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class ApproximateGeometryParameters(FigureParameters):
    """The approximate-geometry figure's dimensions `dims`, oracle (`contexts` per d,
    `restarts`) and full flows (`seeds` per d)."""

    dims: list[int]
    contexts: int
    restarts: int
    seeds: int

    def oracle_text(self, per: str = "of one geometry per d") -> str:
        """`24 contexts of one geometry per d, 8 restarts + 4 best vertices as starts`."""
        return (
            f"{self.contexts} contexts {per}, {self.restarts} restarts + 4 best vertices "
            "as starts"
        )

    def text(self) -> dict[str, str]:
        return {
            "task": "L=4 S=3 H=2 N=240 beta=4 gamma=1 kappa=1, approximate geometry "
            f"through d ({', '.join(map(str, self.dims))})",
            "oracle": self.oracle_text(),
            "flow": f"full, rho=0.1, balanced sample of N/L contexts, {self.seeds} seeds "
            "of one geometry per d, t_max=1e6",
            "intervals": "95% Wilson score intervals of each share (binomial over contexts "
            "or seeds)",
        }
