"""Mitigations of periodic weak spots: window, stride, uniform gates and coordination.

For each (stride S, window W) the table compares three kinds of block-shared gates on the same task:
learned gates (the end of reduced gradient flows from many seeds), the best shared hard selection
(exhaustive enumeration of one-hot key and value gates per head) and uniform gates, by their exact
per-phase accuracy, loss and target probability (docs/theory.md §9, §10). The coordination table
does the same for flows that descend the overlap-penalized or worst-phase objective (`Objective`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..flow._config import FlowConfig
from ..flow._solution import Status
from ..internal._records import Record, optional_field
from ..model._gates import SharedGates, shared_gates_from_logits, uniform_gates
from ..model._loss import phase_accuracy, phase_losses
from ..model._task import Task, _require_real, assumptions_silenced, quiet_task
from ._flows import NoSelectionWarning, run_flow, selected_distinct_fraction
from ._measured import Spread
from ._results import FlowOutcomes

# The paper's measurements on trained models (per-phase accuracy over query phases, in %), each
# with the `model` it comes from; `controlled`: a model of the paper's controlled family (its
# table 8), which the others are not, so that only those are ordered against each other.
PAPER = {
    "W8/S8": {
        "S": 8,
        "W": 8,
        "gates": "learned",
        "gap": 75.3,
        "model": "W8/S8, 1 KV head, scalar gate, K/V separate, seed 42 (the reference)",
        "controlled": True,
    },
    "W8/S4": {
        "S": 4,
        "W": 8,
        "gates": "learned",
        "gap": 39.8,
        "model": "W8/S4 (overlapping), 1 KV head",
        "controlled": True,
    },
    "W8/S6": {
        "S": 6,
        "W": 8,
        "gates": "learned",
        "gap": 31.9,
        "model": "W8/S6 (overlapping), 1 KV head",
        "controlled": True,
    },
    "uniform": {
        "S": 8,
        "W": 8,
        "gates": "uniform",
        "gap": 19.2,
        "mean_accuracy": 12.5,
        "model": "uniform averaging instead of gates",
        "controlled": True,
    },
    "S=2": {
        "S": 2,
        "W": 8,
        "gates": "learned",
        "gap": 6.09,
        "model": "DeepSeek-V4.1-Flash on the 128K needle task",
        "controlled": False,
    },
}

# (S, W) of the table: W in {S, 3S/2, 2S} for S in {2, 4, 8}, and the paper's W = 8 at S in
# {2, 4, 6, 8}.
SETTINGS = (
    (2, 2),
    (2, 3),
    (2, 4),
    (2, 8),
    (4, 4),
    (4, 6),
    (4, 8),
    (6, 8),
    (8, 8),
    (8, 12),
    (8, 16),
)


def mitigation_task(
    S: int,
    W: int,
    *,
    H: int = 2,
    T: int = 48,
    N: int = 4096,
    beta: float = 4.0,
    gamma: float = 1.0,
    kappa: float = 1.0,
    queries: str = "all",
) -> Task:
    """The task of one (S, W) setting: L = T/S entries, so that every stride sees T positions.

    **Arguments:**
    - `S`, `W`: stride and window, S <= W <= T.
    - `H`, `T`, `N`, `beta`, `gamma`, `kappa`: shared by every setting; T must be a multiple of S.
    - `queries`: `"all"` (every phase, with the boundary phase S-1) or `"within"`.

    **Returns:** a `Task` (warnings for settings outside the theorems silenced).
    """
    if T % S:
        raise ValueError(f"T = {T} must be a multiple of the stride S = {S}")
    return quiet_task(
        L=T // S,
        S=S,
        H=H,
        N=N,
        beta=beta,
        gamma=gamma,
        kappa=kappa,
        W=W,
        queries=queries,
    )


@dataclasses.dataclass(frozen=True)
class GateMeasures(Record):
    """Exact per-phase measures of one shared gate and their summaries (`gate_measures`).

    **Fields:**
    - `accuracy`, `loss`, `target_probability`: per query phase (P,), numpy arrays.
    - `gap`: max - min accuracy; `mean_accuracy`, `worst_accuracy`: mean and min accuracy.
    - `mean_loss`: the population loss; `mean_target_probability`: the mean of
      `target_probability`.
    """

    accuracy: np.ndarray
    loss: np.ndarray
    target_probability: np.ndarray
    gap: float
    mean_accuracy: float
    worst_accuracy: float
    mean_loss: float
    mean_target_probability: float


def gate_measures(task: Task, gates: SharedGates) -> GateMeasures:
    """Exact per-phase measures of shared gates and their summaries.

    With per-phase accuracy $a_p \\in \\{0, 1\\}$ (top-1, ties wrong), loss $\\ell_p$ and target
    probability $q_p = e^{-\\ell_p}$ over the P query phases: gap $= \\max_p a_p - \\min_p
    a_p$, mean
    accuracy $\\frac1P \\sum_p a_p$, worst accuracy $\\min_p a_p$, mean loss $\\frac1P
    \\sum_p \\ell_p$ (the
    population loss) and mean target probability $\\frac1P \\sum_p q_p$.

    **Arguments:**
    - `task`: exact-geometry task.
    - `gates`: `SharedGates` of shape (H, W).

    **Returns:** a `GateMeasures`: numpy `accuracy`, `loss`, `target_probability` (P,), and float
    `gap`, `mean_accuracy`, `worst_accuracy`, `mean_loss`, `mean_target_probability`.
    """
    acc = np.asarray(phase_accuracy(task, gates), float)
    loss = np.asarray(phase_losses(task, gates), float)
    prob = np.exp(-loss)
    return GateMeasures(
        accuracy=acc,
        loss=loss,
        target_probability=prob,
        gap=float(acc.max() - acc.min()),
        mean_accuracy=float(acc.mean()),
        worst_accuracy=float(acc.min()),
        mean_loss=float(loss.mean()),
        mean_target_probability=float(prob.mean()),
    )


def hard_gate_choices(H: int, W: int) -> np.ndarray:
    """Every shared hard gate up to the order of heads: (n, H, 2) (key offset, value offset)
    per head.

    Each head picks one of the $W^2$ pairs (key at $i$, value at $j$); heads are
    interchangeable, so the
    multisets of H pairs are enumerated: $\\binom{W^2 + H - 1}{H}$ choices.
    """
    pairs = list(itertools.product(range(W), repeat=2))
    return np.array(
        list(itertools.combinations_with_replacement(pairs, H)), dtype=int
    ).reshape(-1, H, 2)


def best_hard_selection(
    task: Task, *, batch_size: int = 4096
) -> tuple[SharedGates, np.ndarray, float]:
    """The shared hard gate of least population loss, by exhaustive enumeration
    (`hard_gate_choices`).

    $\\min$ over one-hot $p^K_h = e_{i_h}$, $p^V_h = e_{j_h}$ of $\\frac1P \\sum_p \\ell_p$
    (exact, `phase_losses`);
    ties go to the first choice in enumeration order. A vertex of the gate simplices, not
    necessarily the
    minimum over all shared gates (compare with the learned gates' loss).

    **Arguments:**
    - `task`: exact-geometry task (any W, queries).
    - `batch_size`: choices evaluated at once.

    **Returns:** `(gates, choice, loss)`: the gates, their (H, 2) offsets and their population loss.
    """
    choices = hard_gate_choices(task.H, task.W)
    eye = jnp.eye(task.W)

    def loss_of(c):
        return jnp.mean(
            phase_losses(task, SharedGates(key=eye[c[:, 0]], value=eye[c[:, 1]]))
        )

    losses = np.asarray(
        jax.lax.map(loss_of, jnp.asarray(choices), batch_size=batch_size)
    )
    best = int(np.argmin(losses))
    c = choices[best]
    return SharedGates(key=eye[c[:, 0]], value=eye[c[:, 1]]), c, float(losses[best])


def _seed_spread(values) -> Spread:
    """A measure's spread over seeds, without the range (the tables' columns)."""
    return Spread.of(values, extremes=False)


@dataclasses.dataclass(frozen=True)
class MitigationRow(Record):
    """One row of `mitigation_table`: one kind of gate at one (S, W).

    **Fields:**
    - `S`, `W`, `L`, `H`: the task; `gates`: `"learned"`, `"hard optimum"` or `"uniform"`.
    - `seeds`: gates measured (1 for a deterministic gate).
    - `accuracy`, `loss`, `target_probability`: per phase, means over seeds (lists, (P,)).
    - `gap`, `mean_accuracy`, `worst_accuracy`, `mean_loss`, `mean_target_probability`: their
      `Spread` over seeds.
    - `selections`: learned rows only, seeds per selection (sorted offsets per head, `"0,2"`;
      -1: none), most common first; `status`: learned rows only, seeds per status label.
    - `choice`: hard-optimum rows only, the (key, value) offsets per head (H, 2).
    """

    S: int
    W: int
    L: int
    H: int
    gates: str
    seeds: int
    accuracy: list[float]
    loss: list[float]
    target_probability: list[float]
    gap: Spread
    mean_accuracy: Spread
    worst_accuracy: Spread
    mean_loss: Spread
    mean_target_probability: Spread
    selections: dict[str, int] | None = optional_field()
    status: dict[str, int] | None = optional_field()
    choice: list[list[int]] | None = optional_field()


def _row(task: Task, kind: str, measures: list[GateMeasures], **extra) -> MitigationRow:
    """One table row from per-seed `gate_measures` (one entry for a deterministic gate)."""

    def per_phase(name):  # mean over seeds
        return np.mean([getattr(m, name) for m in measures], axis=0).tolist()

    def spread(name):
        return _seed_spread([getattr(m, name) for m in measures])

    return MitigationRow(
        S=task.S,
        W=task.W,
        L=task.L,
        H=task.H,
        gates=kind,
        seeds=len(measures),
        accuracy=per_phase("accuracy"),
        loss=per_phase("loss"),
        target_probability=per_phase("target_probability"),
        gap=spread("gap"),
        mean_accuracy=spread("mean_accuracy"),
        worst_accuracy=spread("worst_accuracy"),
        mean_loss=spread("mean_loss"),
        mean_target_probability=spread("mean_target_probability"),
        **extra,
    )


def default_runner(task: Task, config: FlowConfig, seeds: int) -> FlowOutcomes:
    """`run_flow`'s per-seed outcomes (the tables read `final_biases`, `selected`, `status`)."""
    with assumptions_silenced(), warnings.catch_warnings():
        # the tables show a cell without selected seeds as such
        warnings.simplefilter("ignore", NoSelectionWarning)
        return FlowOutcomes.of(run_flow(task, config, seeds), trajectories=False)


def _learned(
    task: Task, run: FlowOutcomes
) -> tuple[list[GateMeasures], np.ndarray, np.ndarray]:
    """Per-seed measures of a flow batch's final gates, its selections and statuses (as
    Status values)."""
    status = np.array([Status[s.upper()] for s in run.status])
    measures = [
        gate_measures(task, shared_gates_from_logits(jnp.asarray(b)))
        for b in run.final_biases
    ]
    return measures, np.asarray(run.selected), status


def _selection_counts(selected) -> dict[str, int]:
    """How many seeds ended at each selection (sorted offsets per head, -1: none), most
    common first."""
    counts: dict[str, int] = {}
    for s in np.asarray(selected):
        k = ",".join(str(r) for r in sorted(s.tolist()))
        counts[k] = counts.get(k, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def mitigation_table(
    settings=SETTINGS,
    *,
    seeds: int = 256,
    config: FlowConfig | None = None,
    runner=None,
    **task_params,
) -> list[MitigationRow]:
    """Per-phase accuracy, loss and target probability of learned, best hard and uniform
    shared gates.

    For each (S, W) of `settings` on `mitigation_task(S, W, **task_params)`: learned gates
    are the final
    gates $\\mathrm{softmax}(b)$ of `seeds` reduced flows (`config`, default
    `FlowConfig(rho=0.1, delta=1e-3, t_max=1e7, max_steps=200_000)`), the best hard gate is
    `best_hard_selection` (least population loss among one-hot gates) and uniform gates are
    $p^K_h = p^V_h = 1/W$. Every measure is exact (`gate_measures`).

    **Arguments:**
    - `settings`: (S, W) pairs.
    - `seeds`: flows per setting.
    - `config`: reduced-flow configuration.
    - `runner`: `runner(task, config, seeds)` returning a `FlowOutcomes` (or any object with its
      per-seed `final_biases` (seeds, H, 2, W), `selected` and `status` names); default
      `run_flow`'s, the figure passes a cached one.
    - `task_params`: `H`, `T`, `N`, `beta`, `gamma`, `kappa`, `queries` of `mitigation_task`.

    **Returns:** a list of `MitigationRow`, three per setting (`gates` = "learned", "hard
    optimum", "uniform"): `S`, `W`, `L`, `H`, `seeds`, per-phase `accuracy`, `loss`,
    `target_probability` (means over seeds), and `gap`, `mean_accuracy`, `worst_accuracy`,
    `mean_loss`, `mean_target_probability` as a `Spread` (mean, sd, q25, median, q75) over seeds.
    Learned rows add `selections` (seed counts per selected offsets) and `status` counts; hard
    rows add `choice` ((key, value) offset per head).
    """
    config = config or FlowConfig(
        dynamics="reduced", rho=0.1, delta=1e-3, t_max=1e7, n_save=8, max_steps=200_000
    )
    runner = runner or default_runner
    rows = []
    for S, W in settings:
        task = mitigation_task(S, W, **task_params)
        measures, selected, status = _learned(task, runner(task, config, seeds))
        rows.append(
            _row(
                task,
                "learned",
                measures,
                selections=_selection_counts(selected),
                status={s.label: int(np.sum(status == s)) for s in Status},
            )
        )
        gates, choice, _ = best_hard_selection(task)
        rows.append(
            _row(
                task,
                "hard optimum",
                [gate_measures(task, gates)],
                choice=choice.tolist(),
            )
        )
        rows.append(
            _row(task, "uniform", [gate_measures(task, uniform_gates(task.H, W))])
        )
    return rows


@dataclasses.dataclass(frozen=True)
class CoordinationRow(Record):
    """One row of `coordination_table`: one variant's flows on one (H, S, queries) group.

    **Fields:**
    - `H`, `S`, `queries`: the task (W = S); `variant`: the `FlowConfig` changes, by name.
    - `seeds`, `selected_seeds`: flows run, and those that selected.
    - `distinct_fraction`: among the selected seeds, the share whose heads selected pairwise
      distinct offsets (`selected_distinct_fraction`; NaN when none selected, None once read
      back from JSON).
    - `distinct_key_fraction`: among all seeds, the share whose heads' largest key gates are
      pairwise distinct.
    - `status`: seeds per status label.
    - `worst_accuracy`, `mean_accuracy`, `gap`, `mean_loss`: their `Spread` over seeds.
    """

    H: int
    S: int
    queries: str
    variant: dict[str, Any]
    seeds: int
    selected_seeds: int
    distinct_fraction: float | None
    distinct_key_fraction: float
    status: dict[str, int]
    worst_accuracy: Spread
    mean_accuracy: Spread
    gap: Spread
    mean_loss: Spread


def coordination_table(
    variants,
    *,
    shapes=((2, 4), (3, 4)),
    queries=("within", "all"),
    seeds: int = 64,
    base: FlowConfig | None = None,
    runner=None,
    **task_params,
) -> list[CoordinationRow]:
    """What coordination does to reduced flows: coverage, worst-phase accuracy and mean loss.

    For each (H, S) of `shapes`, query set and variant (FlowConfig changes, e.g.
    `{"coordination": 0.1}`
    or `{"objective": "worst-phase", "tau": 0.1}`) on `mitigation_task(S, S, H=H, queries=q)`: the
    distinct fraction (seeds whose heads selected pairwise distinct offsets, among the seeds that
    selected; `selected_distinct_fraction`), the fraction of all seeds whose heads' largest
    key gates
    $\\arg\\max_o p^K_h(o)$ are pairwise distinct (flows that end unselected included), the
    worst-phase
    accuracy $\\min_p a_p$ and the population loss $\\frac1P \\sum_p \\ell_p$ of each seed's
    final gates
    (the mean loss, not the objective descended).

    **Arguments:**
    - `variants`: dicts of `FlowConfig` fields applied to `base`.
    - `shapes`: (H, S) pairs, W = S.
    - `queries`: query sets.
    - `seeds`, `runner`, `task_params`: as for `mitigation_table`.

    **Returns:** a list of `CoordinationRow`: `H`, `S`, `queries`, `variant`, `seeds`,
    `selected_seeds`, `distinct_fraction`, `distinct_key_fraction`, `status` counts, and
    `worst_accuracy`, `mean_accuracy`, `gap`, `mean_loss` as a `Spread` over seeds.
    """
    base = base or FlowConfig(
        dynamics="reduced", rho=0.1, delta=1e-3, t_max=1e7, n_save=8, max_steps=200_000
    )
    runner = runner or default_runner
    rows = []
    for (H, S), q in itertools.product(shapes, queries):
        task = mitigation_task(S, S, H=H, queries=q, **task_params)
        for variant in variants:
            config = FlowConfig(**{**base.to_dict(), **variant})
            run = runner(task, config, seeds)
            measures, selected, status = _learned(task, run)
            key_argmax = np.argmax(
                np.asarray(run.final_biases)[:, :, 0], axis=-1
            )  # (seeds, H)
            spread = {
                name: _seed_spread([getattr(m, name) for m in measures])
                for name in ("worst_accuracy", "mean_accuracy", "gap", "mean_loss")
            }
            rows.append(
                CoordinationRow(
                    H=H,
                    S=S,
                    queries=q,
                    variant=dict(variant),
                    seeds=seeds,
                    selected_seeds=int(np.sum(status == Status.SELECTED)),
                    distinct_fraction=selected_distinct_fraction(selected, status),
                    distinct_key_fraction=float(
                        np.mean([len(set(k)) == H for k in key_argmax])
                    ),
                    status={s.label: int(np.sum(status == s)) for s in Status},
                    **spread,
                )
            )
    return rows


@dataclasses.dataclass(frozen=True)
class SelectionEdges:
    """Edge derivatives of the overlap-penalized mean loss at a shared hard selection
    (`selection_edges`).

    Each (H, W) array holds, for head h and entry o, the derivative of
    $J = \\bar L + \\lambda\\,\\mathrm{overlap}(p^K)$ along the edge that moves mass t from the
    head's vertex entry to o, at t = 0 (NaN at the vertex entry itself).

    - `key_loss`: the loss side of the key edges; the same for every o.
    - `key_slope`: the penalty side of the key edges per unit of lambda, $2 (n_o - n_{r_h} + 1)$.
    - `value`: the value edges (the penalty does not see value gates).
    - `coordination`: the lambda of `key`; `key` = `key_loss` + lambda `key_slope`.
    - `threshold`: $\\lambda^*$, the least $\\texttt{key\\_loss}/(-\\texttt{key\\_slope})$ over
      the key edges with a negative slope (inf when no two heads share an offset).
    """

    offsets: tuple[int, ...]
    coordination: float
    key_loss: np.ndarray
    key_slope: np.ndarray
    value: np.ndarray
    threshold: float

    @property
    def key(self) -> np.ndarray:
        return self.key_loss + self.coordination * self.key_slope

    @property
    def minimum(self) -> float:
        """The smallest edge derivative: > 0 a strict local minimum, < 0 not a local minimum."""
        return float(min(np.nanmin(self.key), np.nanmin(self.value)))


def _logsumexp(s, log_mult) -> float:
    x = np.asarray(s, float) + np.log(np.asarray(log_mult, float))
    m = x.max()
    return float(m + np.log(np.exp(x - m).sum()))


def selection_edges(task: Task, offsets, coordination: float = 0.0) -> SelectionEdges:
    """Edge derivatives of the overlap-penalized mean loss at a shared hard selection, in closed
    form.

    The selection: head h has $p^K_h = e_{r_h}$, $p^V_h = e_{r_h+1}$ ($r_h \\le S-2$; heads may
    share an offset), W = S, exact geometry; $n_r$ heads have key offset r and $m_o = n_{o-1}$
    heads value offset o ($m_0 = 0$). The objective is
    $J = \\frac1P \\sum_{p} \\ell_p + \\lambda \\sum_{h \\ne h'} \\langle p^K_h, p^K_{h'}
    \\rangle$ over the P query phases (`Objective("mean", coordination=lambda)`). With
    $A_1 = e^\\gamma/(e^\\gamma + L - 1)$, $\\bar A_1 = (1 - A_1)/(L-1)$, the heads with key at the
    query's phase p attend $A_1$ to its block and $\\bar A_1$ to each other one, every other head
    $1/L$ to all, so a query at phase p sees the logits
    $\\beta n_p A_1$ (its block, offset p+1), $\\beta n_p \\bar A_1$ (the L-1 other blocks, offset
    p+1), $\\beta m_o / L$ (every block, offset $o \\ne p+1$) and 0 (the $K = N - LS$ tokens
    outside), with partition function $Z_p$ and softmax probabilities $\\pi$ (the boundary phase
    S-1 of `queries="all"` has $n_{S-1} = 0$ and its target, offset 0 of the next block, at logit
    0).

    Key edges of head h at r (n = n_r), to any o != r: the loss depends on $p^K_h$ only through
    $p^K_h(p)$ at each phase p, and at o != r every block's logits stay tied, so

    $\\partial_{o} - \\partial_{r} = \\frac{\\gamma\\beta}{P} A_1 (1 - A_1) \\big[1 - (e^{\\beta n
    A_1} - e^{\\beta n \\bar A_1})/Z_r\\big] + 2\\lambda (n_o - n_r + 1)$.

    The loss side is > 0; the penalty side is negative exactly toward an offset holding fewer
    other heads than r. Value edges of head h at r, to o != r+1, with $C_p(o)$ the total
    probability of offset o's column (all blocks) at phase p and $t_p$ the target offset:

    $\\frac{\\beta}{P} \\big[\\pi_r(o) - A_1 \\pi_{r,\\mathrm{own}}(r+1) - (L-1) \\bar A_1
    \\pi_{r,\\mathrm{oth}}(r+1) + A_1 + \\frac1L \\sum_{p \\ne r} (C_p(o) - 1\\{o = t_p\\} -
    C_p(r+1))\\big]$.

    At a vertex of a product of simplices every feasible direction is a nonnegative combination
    of edges and the first-order change is the same combination of edge derivatives, so the
    selection is a strict local minimum of J when every edge derivative is > 0 and none when one
    is < 0. Only the key edges depend on lambda, linearly, so for a selection whose value edges
    are > 0 the set of lambda where it is a strict local minimum is $[0, \\lambda^*)$ with

    $\\lambda^* = \\min_{r: n_r \\ge 2} \\frac{k(n_r)}{2 (n_r - 1 - \\min_o n_o)}$,

    k the loss side above (derivation and symbolic check: proofs/coordination_threshold.py). For
    N large the bracket tends to 1: $\\lambda^* \\to \\gamma\\beta A_1(1 - A_1) / (2P(n-1))$.

    **Arguments:**
    - `task`: exact geometry, W = S (`queries` "within" or "all").
    - `offsets`: one key offset per head, in 0..S-2.
    - `coordination`: lambda >= 0.

    **Returns:** a `SelectionEdges`.

    ```python
    task = mitigation_task(4, 4, H=3, queries="within")
    selection_edges(task, [0, 0, 1]).threshold  # ~ 0.106
    ```
    """
    task.require_exact("the closed-form edge derivatives")
    if task.W != task.S:
        raise ValueError(f"selection_edges needs W = S, got W={task.W}, S={task.S}")
    L, S, H, W = task.L, task.S, task.H, task.W
    r_h = np.asarray(offsets).reshape(-1)
    if r_h.size != H or np.any(np.mod(r_h, 1) != 0):
        raise ValueError(
            f"offsets must be {H} integers (one per head), got {r_h.tolist()}"
        )
    r_h = r_h.astype(int)
    if np.any((r_h < 0) | (r_h > S - 2)):
        raise ValueError(f"offsets must lie in 0..S-2 = 0..{S - 2}, got {r_h.tolist()}")
    coordination = _require_real("coordination", coordination)
    if coordination < 0:
        raise ValueError(f"coordination must be >= 0, got {coordination}")
    beta, gamma = float(task.beta), float(task.gamma)
    K = float(task.n_outside)
    e = math.exp(gamma)
    # a keyed head puts A1 on the query's own block and Ab1 on each of the L-1 others
    A1 = e / (e + L - 1)
    Ab1 = (1 - A1) / (L - 1)
    n = np.bincount(r_h, minlength=W)  # heads per key offset
    m = np.concatenate([[0], n[:-1]])  # heads per value offset
    phases = range(task.n_phases)
    P = len(phases)
    col, own, oth, target = {}, {}, {}, {}
    # Per phase p: the distinct logits and how many tokens carry each (`mult`), so that the
    # partition function is one log-sum-exp over a few groups instead of the N tokens; `col`
    # is each offset's total probability, `own`/`oth` the target column split by block.
    for p in phases:
        covered = p <= S - 2  # the boundary phase S-1: no head keys on it
        # heads not keyed on p attend 1/L to every block: every offset o gets beta m_o / L
        s_shared = beta * m / L
        if covered:
            s = np.concatenate([s_shared, [beta * n[p] * A1, beta * n[p] * Ab1, 0.0]])
            mult = np.concatenate([np.full(W, L), [1, L - 1, K]])
            mult[p + 1] = 0  # offset p+1 splits into the query's block and the others
        else:
            s = np.concatenate([s_shared, [0.0]])
            mult = np.concatenate([np.full(W, L), [K]])
        # a zero multiplicity (offset p+1, split out above) is log 0 = -inf: no tokens
        with np.errstate(divide="ignore"):
            logZ = _logsumexp(s, mult)
        prob = np.exp(s - logZ)
        col[p] = prob[:W] * L
        target[p] = p + 1 if covered else 0
        if covered:
            own[p], oth[p] = prob[W], prob[W + 1]
            col[p][p + 1] = own[p] + (L - 1) * oth[p]
    key_loss = np.full((H, W), np.nan)
    key_slope = np.full((H, W), np.nan)
    value = np.full((H, W), np.nan)
    for h, r in enumerate(r_h):
        # the loss side of every key edge of head h (the docstring's bracket: own - oth is
        # (e^{beta n A1} - e^{beta n Ab1}) / Z_r); it is the same toward every o != r because
        # at o the blocks' logits stay tied
        k = gamma * beta / P * A1 * (1 - A1) * (1 - (own[r] - oth[r]))
        for o in range(W):
            if o != r:
                key_loss[h, o] = k
                key_slope[h, o] = 2.0 * (n[o] - n[r] + 1)
            if o != r + 1:
                # moving value mass to o changes the logits of the phases where head h is
                # unkeyed (weight 1/L per block) and, at its own phase r, the target column
                rest = sum(
                    col[p][o] - (o == target[p]) - col[p][r + 1]
                    for p in phases
                    if p != r
                )
                value[h, o] = (
                    beta
                    / P
                    * (
                        col[r][o] / L
                        - A1 * own[r]
                        - (L - 1) * Ab1 * oth[r]
                        + A1
                        + rest / L
                    )
                )
    # lambda* of this selection: only key edges with a negative penalty slope can turn
    # negative as lambda grows, each at key_loss / -key_slope
    down = key_slope < 0
    threshold = (
        float(np.min(key_loss[down] / -key_slope[down])) if down.any() else math.inf
    )
    return SelectionEdges(
        tuple(int(r) for r in r_h), coordination, key_loss, key_slope, value, threshold
    )


def overlapped_selections(task: Task) -> list[tuple[int, ...]]:
    """Every shared hard selection (key offsets in 0..S-2, sorted, up to the order of heads)
    in which two heads share an offset."""
    return [
        c
        for c in itertools.combinations_with_replacement(range(task.S - 1), task.H)
        if len(set(c)) < task.H
    ]


@dataclasses.dataclass(frozen=True)
class CoordinationThreshold:
    """Where overlapped hard selections stop being local minima (`coordination_threshold`).

    - `threshold`: $\\lambda^*$ of the task, the largest threshold among the overlapped
      selections that are strict local minima at small lambda (value edges > 0).
    - `lowest`: the smallest of those thresholds.
    - `selection`: the selection with the largest threshold.
    - `thresholds`: {selection: its lambda*} over every overlapped selection; None where a value
      edge is <= 0 (no local minimum at any lambda).
    """

    threshold: float
    lowest: float
    selection: tuple[int, ...]
    thresholds: dict


def coordination_threshold(task: Task) -> CoordinationThreshold:
    """$\\lambda^*$: above it no shared hard selection with two heads on one offset is a local
    minimum of the overlap-penalized mean loss; below it every such selection whose value edges
    are > 0 is a strict local minimum for lambda under its own threshold (`selection_edges`).

    **Arguments:**
    - `task`: exact geometry, W = S, H >= 2.

    **Returns:** a `CoordinationThreshold`.

    ```python
    coordination_threshold(mitigation_task(4, 4, H=3, queries="within")).threshold  # ~ 0.106
    ```
    """
    if task.H < 2:
        raise ValueError(f"coordination_threshold needs H >= 2 heads, got H={task.H}")
    thresholds = {}
    for c in overlapped_selections(task):
        edges = selection_edges(task, c)
        thresholds[c] = edges.threshold if np.nanmin(edges.value) > 0 else None
    live = {c: v for c, v in thresholds.items() if v is not None}
    if not live:
        return CoordinationThreshold(0.0, 0.0, (), thresholds)
    best = max(live, key=live.get)
    return CoordinationThreshold(live[best], min(live.values()), best, thresholds)


__all__ = [
    "PAPER",
    "SETTINGS",
    "CoordinationRow",
    "CoordinationThreshold",
    "GateMeasures",
    "MitigationRow",
    "SelectionEdges",
    "Spread",
    "best_hard_selection",
    "coordination_table",
    "coordination_threshold",
    "gate_measures",
    "hard_gate_choices",
    "mitigation_table",
    "mitigation_task",
    "overlapped_selections",
    "selection_edges",
]
