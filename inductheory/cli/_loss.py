"""`inductheory loss`: population loss and per-phase accuracy of block-shared gates.

Exact geometry (default): the closed form of docs/theory.md §4. Approximate geometry
(`--eps` or `--d`)
or `--contexts M`: Monte Carlo over M sampled contexts (every query enumerated) on the realized
geometry, seeded by `--seed`.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from ..internal._memory import (
    MemoryEstimate,
    check_memory,
    closed_form_bytes,
    contexts_bytes,
    geometry_bytes,
    loss_bytes,
    shared_gates_bytes,
    with_total,
)
from ..internal._records import field_values
from ..model._contexts import sample_contexts
from ..model._gates import (
    SharedGates,
    hard_selection,
    selectable_offsets,
    uniform_gates,
)
from ..model._geometry import make_geometry
from ..model._loss import (
    monte_carlo_phase_accuracy,
    monte_carlo_phase_losses,
    phase_accuracy,
    phase_gap,
    phase_losses,
)
from ..model._task import Task
from ._common import (
    CLIError,
    _parse_int,
    add_json_argument,
    add_task_arguments,
    format_table,
    print_json,
    require_finite,
    require_token_ids,
    task_from_args,
)
from ._declare import Option, add_options, count, prose, switch

# Contexts per batch of the Monte Carlo estimate (bounds memory: one row of N logits per query).
MC_BATCH = 32
MC_DEFAULT_CONTEXTS = 256


def add_gate_arguments(p) -> None:
    """The gates a loss is computed for: `--select` offsets or `--uniform`, and `--tied`
    (shared by `loss` and `sweep loss`)."""
    which = p.add_mutually_exclusive_group(required=True)
    add_options(
        which,
        Option(
            "--select", "comma-separated offset selected by each head, e.g. 0,2", str
        ),
        switch("--uniform", "every head averages all offsets"),
    )
    add_options(
        p,
        switch(
            "--tied",
            "one gate per head for key and value: --select names the offset (0..W-1) "
            "both branches hold",
        ),
    )


HELP = (
    "population loss of block-shared gates (exact closed form, or Monte Carlo "
    "for eps > 0)"
)
DESCRIPTION = prose(
    """
    Population loss, per-phase loss and top-1 accuracy of block-shared gates. Exact
    geometry: the closed form of docs/theory.md §4. Approximate geometry (--eps or --d)
    or --contexts: Monte Carlo over M sampled contexts on the realized geometry (--seed
    draws geometry and contexts).
    """
)


def register(sub) -> None:
    p = sub.add_parser("loss", help=HELP, description=DESCRIPTION)
    add_task_arguments(p)
    add_gate_arguments(p)
    add_options(
        p,
        count(
            "--contexts",
            1,
            None,
            "Monte Carlo over this many sampled contexts (default: exact closed form under "
            f"exact geometry, {MC_DEFAULT_CONTEXTS} under approximate geometry)",
        ),
    )
    p.set_defaults(seed=None)  # explicit --seed is only meaningful for Monte Carlo
    add_json_argument(p)
    p.set_defaults(func=run)


def _parse_select(text: str, H: int, W: int, tied: bool = False) -> list[int]:
    items = text.split(",")
    if text.strip() == "" or any(x.strip() == "" for x in items):
        raise CLIError(
            f"--select must be comma-separated integers with no empty item, got {text!r}"
        )
    top = selectable_offsets(W, tied) - 1
    span = "0..W-1" if tied else "0..W-2"
    try:
        offsets = [_parse_int(x, "--select offset", 0, top) for x in items]
    except Exception as err:  # argparse.ArgumentTypeError from the validator
        if "integer" in str(err):
            raise CLIError(
                f"--select must be comma-separated integers, got {text!r}"
            ) from None
        raise CLIError(
            f"{err} (offsets {span} = 0..{top}{', tied gates' if tied else ''}; W = S "
            "unless --W is given)"
        ) from None
    if len(offsets) != H:
        raise CLIError(
            f"--select must name one offset per head (H = {H}), got {len(offsets)}"
        )
    return offsets


def gates_from_args(args, task) -> tuple[SharedGates, str]:
    """The shared gates of `--select` / `--uniform` (with `--tied`) and their label."""
    if args.uniform:
        return uniform_gates(task.H, task.W), "uniform"
    offsets = _parse_select(args.select, task.H, task.W, args.tied)
    if args.tied:
        eye = np.eye(task.W)[offsets]
        return SharedGates(key=eye, value=eye), f"tied select {offsets}"
    return hard_selection(task.W, offsets), f"select {offsets}"


@dataclasses.dataclass(frozen=True)
class LossResult:
    """What `inductheory loss` reports: the per-phase loss and accuracy of one set of gates.

    **Fields:**
    - `task`: the task; `gates`: the gates' label (`"uniform"`, `"select [0, 2]"`, ...).
    - `method`: `"exact"` (closed form) or `"monte_carlo"`.
    - `monte_carlo`: Monte Carlo only, `{contexts, seed, eps_realized, dim}`; else None.
    - `phases`: the query phases; `phase_loss`, `phase_target_probability`, `phase_accuracy`:
      per phase.
    - `population_loss`, `mean_accuracy`: their means; `phase_gap`: of the accuracies.

    **Example:** `loss_result(Task(L=4, S=4, H=2, N=4096), *gates, None).to_dict()`.
    """

    task: Task
    gates: str
    method: str
    monte_carlo: dict | None
    phases: list
    population_loss: float
    phase_loss: list
    phase_target_probability: list
    phase_accuracy: list
    mean_accuracy: float
    phase_gap: float

    def to_dict(self) -> dict:
        """The JSON report: the fields in order, `monte_carlo` only for Monte Carlo."""
        out = field_values(self)
        out["task"] = self.task.to_dict()
        if self.monte_carlo is None:
            del out["monte_carlo"]
        return out


def loss_command_bytes(task: Task, contexts: int | None) -> MemoryEstimate:
    """The memory of `inductheory loss`, by part, before anything is built: the shared gates and
    the closed form (`contexts` None) or the Monte Carlo estimate over `contexts` contexts (its
    geometry, contexts and one batch's logits with their backward copies)."""
    parts = {"gates": shared_gates_bytes(task.H, task.W)}
    if contexts is None:
        parts["closed_form"] = closed_form_bytes(task.H, task.W)
        return with_total(**parts)
    columns = task.L * task.S + 1 if task.exact else task.N
    return with_total(
        **parts,
        geometry=geometry_bytes(task.N, task.eps, task.d),
        contexts=contexts_bytes(contexts, task.L, task.S),
        loss=loss_bytes(min(contexts, MC_BATCH), task.L, task.W, task.H, columns),
    )


def loss_result(
    task: Task, gates: SharedGates, label: str, monte_carlo: tuple[int, int] | None
) -> LossResult:
    """The loss report of `gates` (labelled `label`) at `task`.

    **Arguments:**
    - `task`, `gates`, `label`: the task, its shared gates and their label.
    - `monte_carlo`: `(contexts M, seed)` for the Monte Carlo estimate, None for the closed form.

    **Returns:** a `LossResult`.
    """
    mc = None
    if monte_carlo is not None:
        M, seed = monte_carlo
        check_memory(loss_command_bytes(task, M), "loss (Monte Carlo)")
        key = jax.random.key(seed)
        geometry = make_geometry(task, jax.random.fold_in(key, 3))
        contexts = sample_contexts(jax.random.fold_in(key, 2), task, M)
        bs = min(M, MC_BATCH)
        losses = np.asarray(
            monte_carlo_phase_losses(task, geometry, gates, contexts, batch_size=bs)
        )
        acc = np.asarray(
            monte_carlo_phase_accuracy(task, geometry, gates, contexts, batch_size=bs)
        )
        mc = {
            "contexts": M,
            "seed": seed,
            "eps_realized": float(geometry.eps),
            "dim": int(geometry.dim),
        }
    else:
        losses = np.asarray(phase_losses(task, gates))
        acc = np.asarray(phase_accuracy(task, gates))
    return LossResult(
        task=task,
        gates=label,
        method="exact" if mc is None else "monte_carlo",
        monte_carlo=mc,
        phases=list(range(task.n_phases)),
        population_loss=float(losses.mean()),
        phase_loss=losses.tolist(),
        phase_target_probability=np.exp(-losses).tolist(),
        phase_accuracy=acc.tolist(),
        mean_accuracy=float(acc.mean()),
        phase_gap=float(phase_gap(acc)),
    )


def run(args) -> int:
    task = task_from_args(args)
    monte_carlo = not task.exact or args.contexts is not None
    if args.seed is not None and not monte_carlo:
        raise CLIError(
            "--seed only applies to Monte Carlo (--eps, --d or --contexts); the closed "
            "form is exact"
        )
    contexts = (args.contexts or MC_DEFAULT_CONTEXTS) if monte_carlo else None
    # before the H x W gates are built (H = 1e8: gigabytes)
    check_memory(loss_command_bytes(task, contexts), "loss")
    gates, label = gates_from_args(args, task)
    if monte_carlo:
        require_token_ids(task, "Monte Carlo")
    result = loss_result(
        task,
        gates,
        label,
        (args.contexts or MC_DEFAULT_CONTEXTS, args.seed or 0) if monte_carlo else None,
    )
    report = result.to_dict()
    require_finite(report, "the loss")
    if args.json:
        print_json(report)
        return 0
    print(f"task: {task.to_dict()}")
    print(f"gates: {label}")
    if monte_carlo:
        mc = result.monte_carlo
        print(
            f"Monte Carlo over {mc['contexts']} contexts (seed {mc['seed']}), realized "
            f"eps = {mc['eps_realized']:.4g}, "
            f"d = {mc['dim']}"
        )
    print(f"population loss: {result.population_loss:.10g}")
    losses, acc = np.asarray(result.phase_loss), np.asarray(result.phase_accuracy)
    rows = [
        (r, f"{losses[r]:.6g}", f"{np.exp(-losses[r]):.4g}", f"{acc[r]:.4g}")
        for r in range(task.n_phases)
    ]
    print(format_table(["phase r*", "loss", "P(target)", "top-1"], rows))
    print(f"mean accuracy {result.mean_accuracy:.4f}, phase gap {result.phase_gap:.4f}")
    return 0
