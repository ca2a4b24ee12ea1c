"""Typed results of `run_flow`: the sample, the per-seed arrays and the across-seed summary.

Each result is a frozen dataclass with named fields and a `to_dict()` giving the JSON-able dict
that the CLI prints and the caches store (the same keys and values as before these types).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..flow._config import FlowConfig
from ..flow._solution import OUTCOMES, STATUSES
from ..internal._records import Record, field_values, optional_field
from ..model._task import Task

# The summary's wall-clock fields: not results (they differ between runs of the same numbers).
TIMING_KEYS = ("wall_s", "first_chunk_s_including_compile")

# The per-seed statistics of the dynamics saved along the trajectory (and at the end, in `final`).
TRAJECTORY_STATISTICS = (
    "mass",
    "worst",
    "loss",
    "static_offsets",
    "avg_offsets",
    "biases",
)


@dataclasses.dataclass(frozen=True)
class FlowSample:
    """The fixed sample of contexts and the geometry of a full-dynamics `run_flow`.

    **Fields:**
    - `M`: contexts actually used (`sample_size`); `M_requested`: the configured M.
    - `sample`: `"balanced"` or `"iid"`.
    - `geometry`: the geometry's class name; `dim`: its dimension; `eps_realized`: its realized
      error.
    """

    M: int
    M_requested: int
    sample: str
    geometry: str
    dim: int
    eps_realized: Any

    def to_dict(self) -> dict:
        """The fields as a dict, in field order."""
        return field_values(self)


@dataclasses.dataclass(frozen=True)
class SeedResults:
    """Per-seed numpy arrays of `run_flow`, each with a leading seed axis.

    **Fields:**
    - `t`: save times (seeds, n_save + 1), NaN after the end of each flow.
    - `mass`, `worst`, `loss`, `static_offsets`, `avg_offsets`, `biases`: the statistics of the
      dynamics at the save times (seeds, n_save + 1, ...).
    - `final`: the same statistics at the end time, by name (seeds, ...).
    - `t_final`, `key_offsets`, `value_offsets`, `selected`, `status`, `num_steps`,
      `num_accepted_steps`, `num_rejected_steps`: as in `FlowSolution`.
    - `state`: reduced dynamics only, the final state b (seeds, H, 2, W); else None (the full
      state is too large to keep for many seeds).
    - `reduced_selected`: full dynamics under exact geometry only, the selection of the reduced
      flow from the exact projection of the same start (seeds, H); else None.

    **Example:** `run.per_seed.selected[run.per_seed.status == Status.SELECTED]`.
    """

    t: np.ndarray
    mass: np.ndarray
    worst: np.ndarray
    loss: np.ndarray
    static_offsets: np.ndarray
    avg_offsets: np.ndarray
    biases: np.ndarray
    final: dict
    t_final: np.ndarray
    key_offsets: np.ndarray
    value_offsets: np.ndarray
    selected: np.ndarray
    status: np.ndarray
    num_steps: np.ndarray
    num_accepted_steps: np.ndarray
    num_rejected_steps: np.ndarray
    state: np.ndarray | None = None
    reduced_selected: np.ndarray | None = None

    @classmethod
    def from_dict(cls, arrays: dict) -> SeedResults:
        """The typed form of the flat dict of `one_lane` outputs (`FlowSolution.to_dict`).

        **Arguments:**
        - `arrays`: every field by name (`state` and `reduced_selected` optional).

        **Returns:** a `SeedResults`; an unknown or missing name raises `ValueError`.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(arrays) - names
        missing = names - set(arrays) - {"state", "reduced_selected"}
        if unknown or missing:
            raise ValueError(
                f"per-seed arrays: unknown {sorted(unknown)}, missing {sorted(missing)}"
            )
        return cls(**arrays)

    def to_dict(self) -> dict:
        """The flat dict of arrays: `t`, each statistic, `final`, the outcomes and, when present,
        `state` and `reduced_selected`."""
        out = {"t": self.t}
        out.update({k: getattr(self, k) for k in TRAJECTORY_STATISTICS})
        out["final"] = self.final
        out.update({k: getattr(self, k) for k in OUTCOMES})
        if self.state is not None:
            out["state"] = self.state
        if self.reduced_selected is not None:
            out["reduced_selected"] = self.reduced_selected
        return out


@dataclasses.dataclass(frozen=True)
class FlowSummary:
    """The across-seed summary of `run_flow`.

    The distinct fraction and the histogram cover only the seeds whose flow selected (status
    `SELECTED`); `selected_seeds` says how many.

    **Fields:**
    - `seeds`, `devices`: seeds run and devices sharded over.
    - `selected_seeds`, `failed_seeds`: seeds that selected, and that failed (`FAILURES`).
    - `selected_fraction`: selected seeds / seeds.
    - `value_is_key_plus_one_fraction`: share of seeds whose every head has value = key + 1.
    - `distinct_fraction`: share of the selected seeds with pairwise distinct offsets (NaN if none).
    - `distinct_baseline_independent_uniform`: the same share for independent uniform choices.
    - `offset_histogram`: counts (H, selectable offsets) over the selected seeds.
    - `status_counts`: seeds per status label.
    - `wall_s`, `first_chunk_s_including_compile`: timings in seconds.
    - `same_selection_as_reduced_fraction`: full dynamics under exact geometry only (else None),
      share of seeds selecting as the reduced flow from the same projected start.
    """

    seeds: int
    devices: int
    selected_seeds: int
    failed_seeds: int
    selected_fraction: float
    value_is_key_plus_one_fraction: float
    distinct_fraction: float
    distinct_baseline_independent_uniform: float
    offset_histogram: np.ndarray
    status_counts: dict
    wall_s: float
    first_chunk_s_including_compile: float
    same_selection_as_reduced_fraction: float | None = None

    def to_dict(self) -> dict:
        """The fields as a dict in field order; `same_selection_as_reduced_fraction` only when
        set."""
        out = field_values(self)
        if self.same_selection_as_reduced_fraction is None:
            del out["same_selection_as_reduced_fraction"]
        return out


@dataclasses.dataclass(frozen=True)
class FlowRun:
    """The result of `run_flow`: every parameter, the per-seed arrays and their summary.

    **Fields:**
    - `task`, `config`: the task and flow configuration.
    - `seed`: the base seed.
    - `sample`: the sample of contexts (full dynamics), or None (reduced dynamics).
    - `per_seed`: the per-seed arrays (`SeedResults`).
    - `summary`: the across-seed summary (`FlowSummary`).

    ```python
    run = run_flow(Task(L=8, S=4, H=2, N=4096), FlowConfig(), 8)
    run.summary.distinct_fraction, run.per_seed.selected
    json_text = to_json(run.to_dict())
    ```
    """

    task: Task
    config: FlowConfig
    seed: int
    sample: FlowSample | None
    per_seed: SeedResults
    summary: FlowSummary

    def to_dict(self) -> dict:
        """`task`, `config` (their `to_dict()`), `seed`, `sample` (`{}` for the reduced dynamics),
        `per_seed` and `summary`, as dicts."""
        return {
            "task": self.task.to_dict(),
            "config": self.config.to_dict(),
            "seed": self.seed,
            "sample": {} if self.sample is None else self.sample.to_dict(),
            "per_seed": self.per_seed.to_dict(),
            "summary": self.summary.to_dict(),
        }


@dataclasses.dataclass(frozen=True)
class FlowOutcomes(Record):
    """What the figures keep of a `FlowRun` (and cache): per-seed outcomes, the summary without
    timings, the sample, and with `trajectories=True` the statistics along the flow.

    **Fields:** `selected`, `key_offsets`, `value_offsets`, `t_final` as in `SeedResults`
    (leading seed axis); `status`: each seed's status name; `final_biases`, `final_loss`: the
    final state's biases and loss per seed; `summary`: `FlowSummary.to_dict()` without its
    timings; `sample`: `FlowSample.to_dict()` (`{}` for the reduced dynamics); `t`, `mass`,
    `static_offsets`, `avg_offsets`, `loss`: the trajectories, or None.
    """

    selected: Any
    key_offsets: Any
    value_offsets: Any
    t_final: Any
    status: list[str]
    final_biases: Any
    final_loss: Any
    summary: dict[str, Any]
    sample: dict[str, Any]
    t: Any = optional_field()
    mass: Any = optional_field()
    static_offsets: Any = optional_field()
    avg_offsets: Any = optional_field()
    loss: Any = optional_field()

    @classmethod
    def of(cls, run, trajectories: bool) -> FlowOutcomes:
        """The outcomes of `run` (a `FlowRun`), with its trajectories if `trajectories`."""
        ps, out = run.per_seed, run.to_dict()
        traced = (
            dict(
                t=ps.t,
                mass=ps.mass,
                static_offsets=ps.static_offsets,
                avg_offsets=ps.avg_offsets,
                loss=ps.loss,
            )
            if trajectories
            else {}
        )
        return cls(
            selected=ps.selected,
            key_offsets=ps.key_offsets,
            value_offsets=ps.value_offsets,
            t_final=ps.t_final,
            status=[STATUSES[s] for s in np.asarray(ps.status)],
            final_biases=ps.final["biases"],
            final_loss=ps.final["loss"],
            summary={k: v for k, v in out["summary"].items() if k not in TIMING_KEYS},
            sample=out["sample"],
            **traced,
        )


__all__ = ["FlowOutcomes", "FlowRun", "FlowSample", "FlowSummary", "SeedResults"]
