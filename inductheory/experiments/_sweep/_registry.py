"""The registry of sweep kinds by public name."""

from __future__ import annotations

from ._flow import FlowSweep
from ._kind import AbstractSweepKind
from ._loss import LossSweep
from ._matrix import MatrixSweep
from ._oracle import OracleSweep
from ._train import TrainSweep

# The kinds of `sweep(kind, ...)` and of `inductheory sweep KIND`, by public name.
SWEEP_KINDS: dict[str, type[AbstractSweepKind]] = {
    cls.name: cls
    for cls in (LossSweep, FlowSweep, OracleSweep, TrainSweep, MatrixSweep)
}
KINDS = tuple(SWEEP_KINDS)


def sweep_kind(name: str) -> AbstractSweepKind:
    """The registered sweep kind called `name` (a key of `SWEEP_KINDS`).

    **Arguments:**
    - `name`: `"loss"`, `"flow"`, `"oracle"`, `"train"` or `"matrix"`.

    **Returns:** an instance of the kind's class.

    ```python
    sweep_kind("oracle").grid_names  # ("N", "gamma", "beta", "kappa")
    ```
    """
    if not isinstance(name, str) or name not in SWEEP_KINDS:
        raise ValueError(f"kind must be one of {tuple(SWEEP_KINDS)}, got {name!r}")
    return SWEEP_KINDS[name]()


__all__ = [
    "KINDS",
    "SWEEP_KINDS",
    "sweep_kind",
]
