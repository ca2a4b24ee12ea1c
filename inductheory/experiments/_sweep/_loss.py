"""The loss sweep: the exact population loss of fixed shared gates at every grid point."""

from __future__ import annotations

from typing import ClassVar

import jax
import numpy as np

from ...internal._lanes import padded_size, shard_lanes
from ...internal._memory import (
    BACKWARD_COPIES,
    F64,
    MemoryEstimate,
    check_memory,
    loss_bytes,
    with_total,
)
from ...model._gates import SharedGates
from ...model._loss import check_gate_shape, phase_accuracy, phase_gap, phase_losses
from ...model._task import Task
from ._checks import TASK_FIELDS, check_grid_points
from ._kind import AbstractSweepKind
from ._spec import _padded, _stacked_tasks

# Grid points per block of a loss sweep (a fixed shape: every block is padded to it).
LOSS_BLOCK = 256


class LossSweep(AbstractSweepKind):
    """The exact population loss of fixed shared gates at every grid point.

    At each task $p$: the loss $\\mathcal{L}_p(g)$ of the gates $g$ (closed form, exact geometry),
    its per-phase terms, the per-phase accuracy and the phase gap. Grid: task fields.

    ```python
    ds = sweep("loss", Task(L=4, S=4, H=2, N=1024), {"beta": [1, 4]},
               gates=hard_selection(4, [0, 2]))
    ```
    """

    name: ClassVar[str] = "loss"
    description: ClassVar[str] = "exact loss and per-phase accuracy of shared gates"
    grid_names: ClassVar[tuple[str, ...]] = TASK_FIELDS
    variables: ClassVar[dict[str, tuple[str, ...]]] = {
        "loss": (),
        "phase_loss": ("phase",),
        "phase_accuracy": ("phase",),
        "phase_gap": (),
    }
    labels: ClassVar[dict[str, tuple[str, ...]]] = {}
    point_keys: ClassVar[tuple[str, ...]] = (
        "loss",
        "phase_loss",
        "phase_accuracy",
        "phase_gap",
    )
    table_keys: ClassVar[tuple[str, ...]] = ("loss", "phase_accuracy", "phase_gap")

    def prepare(self, task, *, config, gates, seeds, contexts, vertex_starts):
        task.require_exact("sweep('loss') (the closed form of shared gates)")
        if gates is None:
            raise ValueError(
                "sweep('loss') needs gates (e.g. hard_selection(S, offsets))"
            )
        if not isinstance(gates, SharedGates):
            raise TypeError(
                "gates must be SharedGates (e.g. hard_selection(S, offsets)), got "
                f"{type(gates).__name__}"
            )
        check_gate_shape(task, gates)
        # before the gates become the spec's JSON lists (a Python float each)
        check_memory(loss_point_bytes(task), "sweep loss (one grid point)")
        extra = {
            "gates_key": np.asarray(gates.key).tolist(),
            "gates_value": np.asarray(gates.value).tolist(),
        }
        return {}, extra, 0

    def check_points(self, task, grid, config):
        check_grid_points(task, grid)

    def default_block(self, grid, seeds):
        return LOSS_BLOCK

    def looped_names(self, spec):
        return ()

    def block_points(self, spec):
        return spec.block

    def compute_block(self, spec, points):
        n = len(points)
        points = _padded(points, spec.block)
        tasks = shard_lanes(
            _stacked_tasks(spec, _padded(points, padded_size(len(points))))
        )
        gates = SharedGates(
            key=np.asarray(spec.extra["gates_key"]),
            value=np.asarray(spec.extra["gates_value"]),
        )
        out = jax.device_get(_loss_map(tasks, gates))
        return {name: np.asarray(value)[:n] for name, value in out.items()}

    def block_bytes(self, spec):
        t = spec.task
        L, W, H = t["L"], t.get("W", t["S"]), t["H"]
        # the closed form, no gradient: one row of L*S + 1 logits per query and the heads' outputs
        per_point = loss_bytes(1, L, W, H, L * t["S"] + 1) // BACKWARD_COPIES
        return with_total(logits=padded_size(self.block_points(spec)) * per_point)

    def coordinates(self, spec):
        return {}

    def attributes(self, spec):
        return {}


# Bytes of one number in a JSON-able Python list: the float object and its slot in the list.
LIST_FLOAT = 32


def loss_point_bytes(task: Task) -> MemoryEstimate:
    """Memory of one point of a loss sweep, by part and `total`, before anything is built: the
    shared gates (H x W, key and value) as arrays and as the spec's JSON lists, and the closed
    form's logits (`LossSweep.block_bytes` of one point). A huge H is refused at once (the gates
    alone of H = 1e8 are gigabytes)."""
    cells = 2 * task.H * task.W
    logits = loss_bytes(1, task.L, task.W, task.H, task.L * task.S + 1)
    return with_total(
        gates=F64 * cells,
        gates_record=LIST_FLOAT * cells,
        logits=logits // BACKWARD_COPIES,
    )


@jax.jit
def _loss_map(tasks, gates):
    def one(task):
        losses, accuracy = phase_losses(task, gates), phase_accuracy(task, gates)
        return {
            "loss": losses.mean(),
            "phase_loss": losses,
            "phase_accuracy": accuracy,
            "phase_gap": phase_gap(accuracy),
        }

    return jax.vmap(one)(tasks)


__all__ = [
    "LossSweep",
    "loss_point_bytes",
]
