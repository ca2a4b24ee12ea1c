"""The outcome of one gradient flow: a typed solution with a named status."""

from __future__ import annotations

import enum

import equinox as eqx
import numpy as np
from jaxtyping import Array, Float, Int, PyTree


class Status(enum.IntEnum):
    """How a flow ended. Stored as its integer inside jit; shown by name everywhere else.

    - `SELECTED`: every head delta-selected (the selection Event fired).
    - `T_MAX`: reached `t_max` without selection.
    - `MAX_STEPS`: the solver's step budget ran out.
    - `NONFINITE`: state, vector field or statistics not finite at the end.
    - `SOLVER_ERROR`: any other solver failure.
    """

    SELECTED = 0
    T_MAX = 1
    MAX_STEPS = 2
    NONFINITE = 3
    SOLVER_ERROR = 4

    @property
    def label(self) -> str:
        """The lower-case name used in JSON and tables (`"selected"`, `"t_max"`, ...)."""
        return self.name.lower()


# Status labels in code order: `STATUSES[code]`.
STATUSES = tuple(s.label for s in Status)


def status_names(codes) -> np.ndarray:
    """Labels of an array of status codes (same shape, dtype str)."""
    codes = np.asarray(codes)
    return np.asarray(STATUSES, dtype=object)[codes].astype(str)


# The per-flow outcome fields after the trajectory, in the order of `FlowSolution.to_dict`.
OUTCOMES = (
    "t_final",
    "key_offsets",
    "value_offsets",
    "selected",
    "status",
    "num_steps",
    "num_accepted_steps",
    "num_rejected_steps",
)


class FlowSolution(eqx.Module):
    """One flow (or a batch of flows, with leading axes on every field), from `integrate`.

    **Fields:**
    - `t`: save times (n_save + 1,), t = 0 first; NaN after the end of the integration.
    - `trajectory`: each statistic of the dynamics at the save times (leading time axis; NaN after
      the end).
    - `final`: the statistics at the end time.
    - `t_final`: the end time (the selection time when `status` is `SELECTED`).
    - `state`: the final state.
    - `key_offsets`, `value_offsets`: per head, the offset whose worst-case key (value)
      mass is >= 1 - delta at the end, or -1.
    - `selected`: per head, the offset r it delta-selects (key at r, value at r + 1), or -1.
    - `status`: a `Status` code.
    - `num_steps`, `num_accepted_steps`, `num_rejected_steps`: solver statistics.
    """

    t: Float[Array, "*batch saves"]
    trajectory: dict
    final: dict
    t_final: Float[Array, "*batch"]
    state: PyTree
    key_offsets: Int[Array, "*batch heads"]
    value_offsets: Int[Array, "*batch heads"]
    selected: Int[Array, "*batch heads"]
    status: Int[Array, "*batch"]
    num_steps: Int[Array, "*batch"]
    num_accepted_steps: Int[Array, "*batch"]
    num_rejected_steps: Int[Array, "*batch"]

    def status_names(self) -> np.ndarray:
        """The status of each flow by name (`"selected"`, `"t_max"`, ...)."""
        return status_names(self.status)

    def to_dict(self, *, state: bool = True) -> dict:
        """A flat dict of arrays: `t`, each trajectory statistic, `final`, and every other field."""
        out = {"t": self.t, **self.trajectory, "final": self.final}
        out.update({name: getattr(self, name) for name in OUTCOMES})
        if state:
            out["state"] = self.state
        return out


__all__ = ["FlowSolution", "STATUSES", "Status", "status_names"]
