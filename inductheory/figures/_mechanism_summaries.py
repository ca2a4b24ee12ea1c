"""What the paper's mechanism measures come to per matrix row (`paper_mechanisms`): the final
gates' effective offsets and peaks (the paper's Figure 5a and 5b), head knockout (Figure 4) and
gate rotation (appendix H), each summarized over seeds from a row's `MechanismMeasures`."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..experiments._measured import Count
from ..internal._records import Record
from ..trained._interventions import shift_correlation
from ._stats import spearman, wilson_count

# A gate is statically concentrated where its static effective offsets are at most this,
# and input-dependent where its static ones are at least half the window and its average
# ones at most this (docs/theory.md §9).
CONCENTRATED = 2.0
# A knocked-out head damages a phase where that phase's accuracy falls by at least this.
DAMAGE = 0.05
# Bootstrap resamples (over seeds) of the Spearman correlation's interval.
RESAMPLES = 1000
KEY, VALUE = 0, 1


def _fold(curve, S: int) -> np.ndarray:
    """Per-phase curves (..., period) averaged over the phases of one offset mod S."""
    c = np.asarray(curve, float)
    return c.reshape(*c.shape[:-1], -1, S).mean(axis=-2)


_share = wilson_count


@dataclasses.dataclass(frozen=True)
class KeyGateOffsets(Record):
    """The final key gates' `static` and `avg` effective offsets, one per (seed, layer, KV
    head, channel)."""

    static: list[float]
    avg: list[float]


@dataclasses.dataclass(frozen=True)
class GatePeaks(Record):
    """Per (seed, layer, KV head, channel): the peak offset of the `key` and of the `value`
    gate, and whether both are statically concentrated (`both_concentrated`)."""

    key: list[int]
    value: list[int]
    both_concentrated: list[bool]


@dataclasses.dataclass(frozen=True, kw_only=True)
class GateSummary(Record):
    """Figure 5a and 5b over a row's final gates (`gate_summary`).

    **Fields:**
    - `key_gates`: key gates counted (seeds x layers x KV heads x channels).
    - `static_concentrated`, `input_dependent` (of the key gates), `value_follows_key` (of the
      pairs with both gates concentrated): `Count`s with Wilson 95% intervals.
    - `covered_phases_per_seed`: distinct phases the concentrated key gates of each seed answer.
    - `initial_static`, `initial_avg`: mean effective offsets at the first trajectory point.
    - `final_key` (`KeyGateOffsets`), `peaks` (`GatePeaks`).
    - `trajectory_steps` (points,), `key_trajectories` (key gates, points, 2): static and
      average effective offsets of every key gate during training.
    """

    key_gates: int
    static_concentrated: Count
    input_dependent: Count
    value_follows_key: Count
    covered_phases_per_seed: list[int]
    initial_static: float
    initial_avg: float
    final_key: KeyGateOffsets
    peaks: GatePeaks
    trajectory_steps: list[int]
    key_trajectories: list


@dataclasses.dataclass(frozen=True, kw_only=True)
class KnockoutSummary(Record):
    """Figure 4 over every query head of every layer (`knockout_summary`).

    **Fields:**
    - `heads`: query heads knocked out (seeds x layers x query heads).
    - `damaging` (heads whose largest per-phase loss is >= `DAMAGE`), `aligned` (damaging
      heads whose largest loss falls on the phase their KV head's key gate answers): `Count`s.
    - `chance`: the alignment a damaging head would have by chance; `spread_median`: median
      number of phases a damaging head damages; `top_share_mean`: mean share of its loss on
      its worst phase.
    - `spearman_static_drop`, `spearman_ci95`: Spearman correlation of key-gate static offsets
      with the largest loss, and its interval over resampled seeds.
    - `largest_by_layer` (layers,), `largest`, `key_static` (heads,): largest losses and the
      heads' key-gate static offsets; `mean_drop` (layers, query heads, S): loss per phase
      mod S, mean over seeds.
    """

    heads: int
    damaging: Count
    aligned: Count
    chance: float
    spread_median: float
    top_share_mean: float
    spearman_static_drop: float
    spearman_ci95: list[float]
    largest_by_layer: list[float]
    largest: list[float]
    key_static: list[float]
    mean_drop: list


@dataclasses.dataclass(frozen=True, kw_only=True)
class RotationSummary(Record):
    """One rotation intervention (`rotation_summary`), phases folded mod S.

    **Fields:**
    - `deltas`: the rotations.
    - `r_squared` (seeds, deltas): squared correlation of each rotated curve with the
      unrotated one shifted by delta, boundary phase out (`shift_correlation`);
      `r_squared_median`, `r_squared_range` over the finite ones, `undefined` the others (a
      flat curve).
    - `kept` (seeds, deltas): the accuracy kept, rotated mean over unrotated mean (every
      phase); `kept_median`, `kept_range`.
    - `boundary_unrotated`, `boundary_rotated_max`: boundary-phase accuracy unrotated (mean)
      and rotated (largest); `mean_unrotated`, `mean_rotated`: mean accuracy.
    - `seed_base` (seeds, S), `seed_rotated` (seeds, deltas, S): the curves per seed;
      `base` (S,), `rotated` (deltas, S): their means over seeds.
    """

    deltas: list[int]
    r_squared: list
    r_squared_median: float
    r_squared_range: list[float]
    undefined: int
    kept: list
    kept_median: float
    kept_range: list[float]
    boundary_unrotated: float
    boundary_rotated_max: float
    mean_unrotated: float
    mean_rotated: float
    seed_base: list
    seed_rotated: list
    base: list[float]
    rotated: list


@dataclasses.dataclass(frozen=True, kw_only=True)
class MechanismRow(Record):
    """One matrix row's mechanism measures: its `kv_heads`, `mean_accuracy` (over seeds and
    phases), `gates`, `knockout`, the paper's `rotation` (gate maps and biases alone) and
    another intervention, `joint_rotation` (the per-offset payload maps moved with them: the
    whole offset-specific compressor relabelled)."""

    kv_heads: int
    mean_accuracy: float
    gates: GateSummary
    knockout: KnockoutSummary
    rotation: RotationSummary
    joint_rotation: RotationSummary


def covered_phases(peak, static) -> list[int]:
    """Per seed, the distinct phases (offset = phase mod S) that its statically concentrated
    key gates answer, from the final gates' `peak` and `static` effective offsets (seeds,
    layers, branches, kv, channels): the paper's coverage (Figure 4) in gate peaks."""
    peak, static = np.asarray(peak), np.asarray(static)
    concentrated = static[:, :, KEY] <= CONCENTRATED
    return [
        len(set(peak[s, :, KEY][concentrated[s]].tolist()))
        for s in range(peak.shape[0])
    ]


def gate_summary(m, W: int) -> GateSummary:
    """Figure 5a and 5b counts over every (seed, layer, KV head) of a row's final gates."""
    static, avg, peak = (np.asarray(m.static), np.asarray(m.avg), np.asarray(m.peak))
    # (seeds, layers, branches, kv, channels): pool channels with the gates
    key_static, key_avg = static[:, :, KEY], avg[:, :, KEY]
    concentrated = key_static <= CONCENTRATED
    input_dependent = (key_static >= W / 2) & (key_avg <= CONCENTRATED)
    both = concentrated & (static[:, :, VALUE] <= CONCENTRATED)
    follows = both & (peak[:, :, VALUE] == peak[:, :, KEY] + 1)
    covered = covered_phases(peak, static)
    trajectory = np.asarray(m.trajectory)  # (seeds, points, layers, B, kv, g, 2)
    return GateSummary(
        key_gates=int(key_static.size),
        static_concentrated=_share(concentrated.sum(), key_static.size),
        input_dependent=_share(input_dependent.sum(), key_static.size),
        value_follows_key=_share(follows.sum(), both.sum()),
        covered_phases_per_seed=covered,
        initial_static=float(trajectory[:, 0, :, :, :, :, 0].mean()),
        initial_avg=float(trajectory[:, 0, :, :, :, :, 1].mean()),
        final_key=KeyGateOffsets(
            static=key_static.reshape(-1).tolist(), avg=key_avg.reshape(-1).tolist()
        ),
        peaks=GatePeaks(
            key=peak[:, :, KEY].reshape(-1).tolist(),
            value=peak[:, :, VALUE].reshape(-1).tolist(),
            both_concentrated=both.reshape(-1).tolist(),
        ),
        trajectory_steps=np.asarray(m.trajectory_steps).tolist(),
        # key gates only: (seeds * layers * kv * channels, points, 2)
        key_trajectories=np.moveaxis(trajectory[:, :, :, KEY], 1, -2)
        .reshape(-1, trajectory.shape[1], 2)
        .tolist(),
    )


def knockout_summary(m, S: int, kv_heads: int) -> KnockoutSummary:
    """Figure 4 on every query head of every layer: the largest per-phase accuracy drop, the
    phases it damages, whether its largest drop falls on the phase its KV head's key gate
    peak answers (offset r answers phase r mod S), and its key gate's static offsets."""
    channels = np.asarray(m.peak).shape[-1]
    if channels != 1:
        raise ValueError(
            f"knockout_summary: the key gates have {channels} channels (vector gates); a head's "
            "alignment with its key gate's peak is defined for scalar gates only"
        )
    change = (
        np.asarray(m.knockout_accuracy) - np.asarray(m.base_accuracy)[:, None, None]
    )
    drop = -_fold(change, S)  # (seeds, layers, Q, S): accuracy lost per offset class
    seeds, layers, Q, _ = drop.shape
    group = Q // kv_heads
    kv_of = np.arange(Q) // group
    key_peak = np.asarray(m.peak)[:, :, KEY, :, 0][:, :, kv_of]  # (seeds, layers, Q)
    key_static = np.asarray(m.static)[:, :, KEY, :, 0][:, :, kv_of]
    largest = drop.max(axis=-1)
    where = drop.argmax(axis=-1)
    damaging = largest >= DAMAGE
    aligned = damaging & (where == key_peak)
    # chance of alignment for a damaging head: one over the phases (mod S) whose accuracy
    # could fall by DAMAGE at all (a phase the model never answers cannot be damaged)
    able = (_fold(m.base_accuracy, S) >= DAMAGE).sum(axis=-1)  # (seeds,)
    chance = np.broadcast_to(1.0 / np.maximum(able, 1)[:, None, None], damaging.shape)
    spread = (drop >= DAMAGE).sum(axis=-1)
    positive = np.clip(drop, 0, None)
    total = positive.sum(axis=-1)
    top_share = np.where(
        total > 0, positive.max(axis=-1) / np.where(total > 0, total, 1), 0
    )
    rho = spearman(key_static.reshape(-1), largest.reshape(-1))
    rng = np.random.default_rng(0)
    boot = []
    for _ in range(RESAMPLES):
        s = rng.integers(0, seeds, seeds)
        boot.append(spearman(key_static[s].reshape(-1), largest[s].reshape(-1)))
    boot = np.asarray(boot)
    boot = boot[np.isfinite(boot)]
    return KnockoutSummary(
        heads=int(largest.size),
        damaging=_share(damaging.sum(), largest.size),
        aligned=_share(aligned.sum(), damaging.sum()),
        chance=float(chance[damaging].mean()) if damaging.any() else 1.0 / S,
        spread_median=float(np.median(spread[damaging])) if damaging.any() else 0.0,
        top_share_mean=float(top_share[damaging].mean()) if damaging.any() else 0.0,
        spearman_static_drop=rho,
        spearman_ci95=[
            float(np.percentile(boot, 2.5)),
            float(np.percentile(boot, 97.5)),
        ]
        if boot.size
        else [float("nan")] * 2,
        largest_by_layer=largest.mean(axis=(0, 2)).tolist(),
        largest=largest.reshape(-1).tolist(),
        key_static=key_static.reshape(-1).tolist(),
        mean_drop=drop.mean(axis=0).tolist(),  # (layers, Q, S)
    )


def _median_range(values: np.ndarray) -> tuple[float, list[float], int]:
    """Median and [min, max] of the finite `values`, and how many are not finite."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return float("nan"), [float("nan")] * 2, int(values.size)
    return (
        float(np.median(finite)),
        [float(finite.min()), float(finite.max())],
        int(values.size - finite.size),
    )


def rotation_summary(
    base_phase_accuracy, rotated_accuracy, deltas, S: int
) -> RotationSummary:
    """Appendix H: the rotated per-phase curves (folded mod S) against the unrotated curve
    shifted by delta, the squared correlation over the phases but the boundary one
    (`shift_correlation`), and the accuracy kept."""
    base = _fold(base_phase_accuracy, S)  # (seeds, S)
    rotated = _fold(rotated_accuracy, S)  # (seeds, deltas, S)
    deltas = np.asarray(deltas).tolist()
    r2 = np.stack(
        [shift_correlation(base, rotated[:, i], d) for i, d in enumerate(deltas)],
        axis=1,
    )
    mean = base.mean(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        kept = np.where(
            mean > 0, rotated.mean(axis=-1) / np.where(mean > 0, mean, 1), np.nan
        )
    r2_median, r2_range, undefined = _median_range(r2)
    kept_median, kept_range, _ = _median_range(kept)
    return RotationSummary(
        deltas=deltas,
        r_squared=r2.tolist(),
        r_squared_median=r2_median,
        r_squared_range=r2_range,
        undefined=undefined,
        kept=kept.tolist(),
        kept_median=kept_median,
        kept_range=kept_range,
        boundary_unrotated=float(base[:, S - 1].mean()),
        boundary_rotated_max=float(rotated[:, :, S - 1].max()),
        mean_unrotated=float(base.mean()),
        mean_rotated=float(rotated.mean()),
        seed_base=base.tolist(),
        seed_rotated=rotated.tolist(),
        base=base.mean(axis=0).tolist(),
        rotated=rotated.mean(axis=0).tolist(),
    )
