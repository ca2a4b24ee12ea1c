"""Mitigations of periodic weak spots: window, stride, uniform gates and coordination.

For each (stride S, window W) the table compares three kinds of block-shared gates on the same task:
learned gates (the end of reduced gradient flows from many seeds), the best shared hard selection
(exhaustive enumeration of one-hot key and value gates per head) and uniform gates, by their exact
per-phase accuracy, loss and target probability (docs/theory.md §9, §10). The coordination table
does the same for flows that descend the overlap-penalized or worst-phase objective (`Objective`).
"""

from __future__ import annotations

import itertools
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ..flow._config import FlowConfig
from ..flow._solution import Status
from ..model._gates import SharedGates, shared_gates_from_logits, uniform_gates
from ..model._loss import phase_accuracy, phase_losses
from ..model._task import Task, assumptions_silenced, quiet_task
from ._flows import NoSelectionWarning, run_flow, selected_distinct_fraction

# The paper's measurements on trained models (per-phase accuracy over query phases, in %).
PAPER = {
    "W8/S8": {"S": 8, "W": 8, "gates": "learned", "gap": 75.3},
    "W8/S4": {"S": 4, "W": 8, "gates": "learned", "gap": 39.8},
    "W8/S6": {"S": 6, "W": 8, "gates": "learned", "gap": 31.9},
    "uniform": {"S": 8, "W": 8, "gates": "uniform", "gap": 19.2, "mean_accuracy": 12.5},
    "S=2": {"S": 2, "W": 8, "gates": "learned", "gap": 6.09},
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


def gate_measures(task: Task, gates: SharedGates) -> dict:
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

    **Returns:** dict of numpy values: `accuracy`, `loss`, `target_probability` (P,), and `gap`,
    `mean_accuracy`, `worst_accuracy`, `mean_loss`, `mean_target_probability`.
    """
    acc = np.asarray(phase_accuracy(task, gates), float)
    loss = np.asarray(phase_losses(task, gates), float)
    prob = np.exp(-loss)
    return {
        "accuracy": acc,
        "loss": loss,
        "target_probability": prob,
        "gap": float(acc.max() - acc.min()),
        "mean_accuracy": float(acc.mean()),
        "worst_accuracy": float(acc.min()),
        "mean_loss": float(loss.mean()),
        "mean_target_probability": float(prob.mean()),
    }


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


def _spread(values) -> dict:
    """Mean, sd and quartiles over seeds."""
    v = np.asarray(values, float)
    q = np.quantile(v, [0.25, 0.5, 0.75])
    return {
        "mean": float(v.mean()),
        "sd": float(v.std()),
        "q25": float(q[0]),
        "median": float(q[1]),
        "q75": float(q[2]),
    }


def _row(task: Task, kind: str, measures: list[dict], **extra) -> dict:
    """One table row from per-seed `gate_measures` (one entry for a deterministic gate)."""
    row = {
        "S": task.S,
        "W": task.W,
        "L": task.L,
        "H": task.H,
        "gates": kind,
        "seeds": len(measures),
    }
    for name in ("accuracy", "loss", "target_probability"):
        row[name] = np.mean(
            [m[name] for m in measures], axis=0
        ).tolist()  # per phase, mean over seeds
    for name in (
        "gap",
        "mean_accuracy",
        "worst_accuracy",
        "mean_loss",
        "mean_target_probability",
    ):
        row[name] = _spread([m[name] for m in measures])
    return {**row, **extra}


def default_runner(task: Task, config: FlowConfig, seeds: int) -> dict:
    """`run_flow`'s per-seed `final_biases`, `selected` and `status` (the shape the tables read)."""
    with assumptions_silenced(), warnings.catch_warnings():
        # the tables show a cell without selected seeds as such
        warnings.simplefilter("ignore", NoSelectionWarning)
        ps = run_flow(task, config, seeds).per_seed
    return {
        "final_biases": ps.final["biases"],
        "selected": ps.selected,
        "status": ps.status,
    }


def _learned(task: Task, run: dict) -> tuple[list[dict], np.ndarray, np.ndarray]:
    """Per-seed measures of a flow batch's final gates, its selections and statuses (as
    Status values)."""
    status = np.array(
        [
            s if isinstance(s, (int, np.integer)) else Status[s.upper()]
            for s in run["status"]
        ]
    )
    measures = [
        gate_measures(task, shared_gates_from_logits(jnp.asarray(b)))
        for b in run["final_biases"]
    ]
    return measures, np.asarray(run["selected"]), status


def _selection_counts(selected) -> dict:
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
) -> list[dict]:
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
    - `runner`: `runner(task, config, seeds)` returning a dict with per-seed `final_biases`
      (seeds, H, 2, W),
      `selected` and `status` (default `run_flow`; the figure passes a cached one).
    - `task_params`: `H`, `T`, `N`, `beta`, `gamma`, `kappa`, `queries` of `mitigation_task`.

    **Returns:** a list of rows (dicts), three per setting (`gates` = "learned", "hard optimum",
    "uniform"): `S`, `W`, `L`, `H`, `seeds`, per-phase `accuracy`, `loss`,
    `target_probability` (means
    over seeds), and `gap`, `mean_accuracy`, `worst_accuracy`, `mean_loss`,
    `mean_target_probability`
    as {mean, sd, q25, median, q75} over seeds. Learned rows add `selections` (seed counts
    per selected
    offsets) and `status` counts; hard rows add `choice` ((key, value) offset per head).
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


def coordination_table(
    variants,
    *,
    shapes=((2, 4), (3, 4)),
    queries=("within", "all"),
    seeds: int = 64,
    base: FlowConfig | None = None,
    runner=None,
    **task_params,
) -> list[dict]:
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

    **Returns:** a list of rows: `H`, `S`, `queries`, `variant`, `seeds`, `selected_seeds`,
    `distinct_fraction`, `distinct_key_fraction`, `status` counts, and `worst_accuracy`,
    `mean_accuracy`, `gap`, `mean_loss` as {mean, sd, q25, median, q75} over seeds.
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
                np.asarray(run["final_biases"])[:, :, 0], axis=-1
            )  # (seeds, H)
            row = {
                "H": H,
                "S": S,
                "queries": q,
                "variant": dict(variant),
                "seeds": seeds,
                "selected_seeds": int(np.sum(status == Status.SELECTED)),
                "distinct_fraction": selected_distinct_fraction(selected, status),
                "distinct_key_fraction": float(
                    np.mean([len(set(k)) == H for k in key_argmax])
                ),
                "status": {s.label: int(np.sum(status == s)) for s in Status},
            }
            for name in ("worst_accuracy", "mean_accuracy", "gap", "mean_loss"):
                row[name] = _spread([m[name] for m in measures])
            rows.append(row)
    return rows


__all__ = [
    "PAPER",
    "SETTINGS",
    "best_hard_selection",
    "coordination_table",
    "gate_measures",
    "hard_gate_choices",
    "mitigation_table",
    "mitigation_task",
]
