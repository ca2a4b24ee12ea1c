"""`inductheory loss`: exact population loss and per-phase accuracy of block-shared gates."""

from __future__ import annotations

import numpy as np

from .._gates import hard_selection, uniform_gates
from .._loss import phase_accuracy, phase_gap, phase_losses
from ._common import add_json_argument, add_task_arguments, format_table, print_json, task_from_args


def register(sub) -> None:
    p = sub.add_parser(
        "loss",
        help="exact population loss of block-shared gates (exact geometry)",
        description="Exact population loss, per-phase loss and top-1 accuracy of block-shared gates under "
        "exact geometry (closed form of THEORY.md §4).",
    )
    add_task_arguments(p)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--select", type=str, help="comma-separated offset selected by each head, e.g. 0,2")
    which.add_argument("--uniform", action="store_true", help="every head averages all offsets")
    add_json_argument(p)
    p.set_defaults(func=run)


def _parse_select(text: str, H: int) -> list[int]:
    try:
        offsets = [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise ValueError(f"--select must be comma-separated integers, got {text!r}") from None
    if len(offsets) != H:
        raise ValueError(f"--select must name one offset per head (H = {H}), got {len(offsets)}")
    return offsets


def run(args) -> int:
    task = task_from_args(args)
    if not task.exact:
        raise ValueError("the closed-form loss needs exact geometry: drop --eps/--d")
    if args.uniform:
        gates, label = uniform_gates(task.H, task.S), "uniform"
    else:
        offsets = _parse_select(args.select, task.H)
        gates, label = hard_selection(task.S, offsets), f"select {offsets}"
    losses = np.asarray(phase_losses(task, gates))
    acc = np.asarray(phase_accuracy(task, gates))
    result = {
        "task": task.to_dict(),
        "gates": label,
        "population_loss": float(losses.mean()),
        "phase_loss": losses.tolist(),
        "phase_accuracy": acc.tolist(),
        "mean_accuracy": float(acc.mean()),
        "phase_gap": float(phase_gap(acc)),
    }
    if args.json:
        print_json(result)
        return 0
    print(f"task: {task.to_dict()}")
    print(f"gates: {label}")
    print(f"population loss: {result['population_loss']:.10g}")
    rows = [(r, f"{losses[r]:.6f}", f"{acc[r]:.0f}") for r in range(task.S - 1)]
    print(format_table(["phase r*", "loss", "top-1"], rows))
    print(f"mean accuracy {result['mean_accuracy']:.4f}, phase gap {result['phase_gap']:.4f}")
    return 0
