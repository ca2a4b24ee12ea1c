"""Periodic weak spots (docs/theory.md §9): per-phase accuracy, gate rotation and head
knockout of converged models."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from ..internal._records import Record
from ..model._interventions import (
    knockout_phase_accuracy,
    knockout_phase_losses,
    rotate_gates,
)
from ..model._loss import phase_accuracy, phase_gap, phase_losses
from . import _runs, _style
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._stats import compact, share_text, span_text


@dataclasses.dataclass(frozen=True)
class ConvergedModels(Record):
    """Converged reduced flows of one (H, S): the drawn seeds' `selected` key offsets (seeds
    drawn, H) and per-phase top-1 `accuracy` (seeds drawn, phases), and every seed's phase
    `gap` (seeds,)."""

    H: int
    S: int
    selected: list[list[int]]
    accuracy: list[list[float]]
    gap: list[float]


@dataclasses.dataclass(frozen=True)
class Knockout(Record):
    """Mean-ablation of each head of one model: the per-phase `base_loss` and `base_accuracy`
    without ablation (phases,), and `loss`, `accuracy` with head h ablated (H, phases)."""

    base_loss: list[float]
    base_accuracy: list[float]
    loss: list[list[float]]
    accuracy: list[list[float]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class WeakSpotsData(FigureData):
    """Weak spots: `models`, the `ConvergedModels` of each (H, S); `rotation`, one converged
    model's per-phase accuracy with its gates rotated by delta, by delta (`"0"`, `"1"`, ...);
    `rotation_selected`, that model's key offsets (H,); `knockout`, its `Knockout`."""

    models: list[ConvergedModels]
    rotation: dict[str, list[float]]
    rotation_selected: list[int]
    knockout: Knockout


def _knockout_text(data: WeakSpotsData) -> str:
    """What mean-ablating a head of the rotated model does, with its loss changes from `data`."""
    knock, selected = data.knockout, data.rotation_selected
    base = np.asarray(knock.base_loss)
    change = np.asarray(knock.loss) - base  # (heads, phases)
    own = [change[h, r] for h, r in enumerate(selected)]
    if len(set(selected)) == 1:
        return (
            f"both heads of that model select offset {selected[0]}, so ablating either "
            f"leaves phase {selected[0]} answered at loss +{max(own):.2f}"
        )
    others = [np.delete(change[h], r) for h, r in enumerate(selected)]
    return (
        "mean-ablating one head makes exactly the phase that head selected wrong (loss "
        f"{span_text(own, lambda x: f'+{x:.2f}')} there, changes of at most "
        f"{compact(float(np.max(np.abs(others))), 2)} at the other phases)"
    )


def claim(data: WeakSpotsData) -> str:
    """The claim, its shapes, seeds, shares and knockout losses from `data`."""
    models = data.models
    shapes = ", ".join(f"({m.H},{m.S})" for m in models)
    seeds = {len(m.gap) for m in models}
    below = [m for m in models if m.H < m.S - 1]
    gap_one = sum(int(np.sum(np.asarray(m.gap) == 1)) for m in below)
    text = (
        "Periodic weak spots (docs/theory.md §9), measured on converged reduced flows "
        "(exact geometry, L=8, N=4096, beta=4, gamma=1, kappa=1, rho=0.1, delta=1e-3; "
        f"(H, S) in {{{shapes}}}, {'/'.join(map(str, sorted(seeds)))} seeds each). The "
        f"drawn models ({len(models[0].accuracy)} per (H, S)) answer (top-1 over the "
        "whole vocabulary) exactly the query phases their heads selected and no other. "
        "Over all seeds: with H < S-1 the phase gap is 1 in "
        f"{share_text(gap_one, sum(len(m.gap) for m in below))} seeds over the "
        f"{len(below)} such (H, S) (Wilson 95% interval; some phase is always wrong)"
    )
    for m in models:
        if m.H == m.S - 1:
            gap = np.asarray(m.gap)
            text += (
                f"; at H = S-1 (H={m.H}, S={m.S}) it is 0 in "
                f"{share_text(int(np.sum(gap == 0)), gap.size, 2)} of the seeds (Wilson "
                "95%), the share whose heads selected distinct offsets"
            )
    H, S = len(data.rotation_selected), len(data.rotation) + 1
    return text + (
        f". On one converged model (H={H}, S={S}), rotating the gates by delta moves the "
        "answered phases by delta (a head rotated onto offset S-1 answers no query phase: "
        f"that phase's successor lies in the next block), and {_knockout_text(data)}."
    )


def compute(context: FigureContext) -> WeakSpotsData:
    quick = context.quick
    shapes = (
        [(1, 4), (2, 4)] if quick else [(1, 4), (2, 4), (3, 4), (2, 6), (3, 6), (3, 8)]
    )
    config, seeds = _runs.reduced_config(quick)
    shown = 3  # converged models drawn per (H, S)
    models = []
    for H, S in shapes:
        task = _runs.task_of(**_runs.BASE, S=S, H=H)
        run = _runs.flow_runs(task, config, seeds, context.cache)
        curves = [
            np.asarray(phase_accuracy(task, _runs.converged_gates(run, i))).tolist()
            for i in range(seeds)
        ]
        models.append(
            ConvergedModels(
                H=H,
                S=S,
                selected=run.selected[:shown],
                accuracy=curves[:shown],
                gap=[float(phase_gap(jnp.asarray(c))) for c in curves],
            )
        )
    # rotation and knockout on one converged model
    H, S = (2, 4) if quick else (2, 6)
    task = _runs.task_of(**_runs.BASE, S=S, H=H)
    run = _runs.flow_runs(task, config, seeds, context.cache)
    gates = _runs.converged_gates(run, 0)
    rotation = {
        str(d): np.asarray(phase_accuracy(task, rotate_gates(gates, d))).tolist()
        for d in range(0, S - 1)
    }
    knockout = Knockout(
        base_loss=np.asarray(phase_losses(task, gates)).tolist(),
        base_accuracy=np.asarray(phase_accuracy(task, gates)).tolist(),
        loss=[
            np.asarray(knockout_phase_losses(task, gates, [h])).tolist()
            for h in range(H)
        ],
        accuracy=[
            np.asarray(knockout_phase_accuracy(task, gates, [h])).tolist()
            for h in range(H)
        ],
    )
    mean_gap = {f"H={m.H},S={m.S}": float(np.mean(m.gap)) for m in models}
    return WeakSpotsData(
        models=models,
        rotation=rotation,
        rotation_selected=run.selected[0],
        knockout=knockout,
        parameters={
            "task": "L=8 N=4096 beta=4 gamma=1 kappa=1",
            "flow": f"reduced, rho={config.rho}, delta={config.delta}, {seeds} seeds per (H,S)",
        },
        findings="mean phase gap over seeds "
        + ", ".join(f"{k}: {v:.2f}" for k, v in mean_gap.items()),
    )


def _accuracy_map(ax, fig, rows, labels, n_phases, title):
    """Heatmap of per-phase accuracy (rows x phases), NaN (no such phase) in grey."""
    grid = np.full((len(rows), n_phases), np.nan)
    for i, row in enumerate(rows):
        grid[i, : len(row)] = row
    cmap = _style.plt.get_cmap(_style.DIVERGING).with_extremes(bad="0.88")
    im = ax.imshow(
        grid, vmin=0, vmax=1, cmap=cmap, aspect="auto", interpolation="nearest"
    )
    ax.set_yticks(range(len(rows)), labels)
    _style.phase_axis(ax, n_phases)
    ax.set_title(title)
    _style.colorbar(fig, im, ax, "top-1 accuracy")
    return im


def draw(data: WeakSpotsData):
    models = data.models
    fig, axes = _style.subplots(
        2, 2, figsize=(11, 8.5), gridspec_kw={"height_ratios": [1.6, 1]}
    )
    rows, labels = [], []
    for m in models:
        for s, (curve, sel) in enumerate(zip(m.accuracy, m.selected)):
            rows.append(curve)
            labels.append(
                f"H={m.H} S={m.S} seed {s}: r={','.join(str(r) for r in sel)}"
            )
    n_phases = max(len(r) for r in rows)
    _accuracy_map(
        axes[0, 0],
        fig,
        rows,
        labels,
        n_phases,
        "converged models (3 seeds per H, S):\naccuracy per phase; r = heads' selected offsets",
    )
    axes[0, 0].tick_params(axis="y", labelsize=6.5)
    ax = axes[0, 1]
    names = [f"H={m.H}\nS={m.S}" for m in models]
    gaps = [np.mean(m.gap) for m in models]
    x = np.arange(len(models))
    ax.bar(x, gaps, 0.6, color=[_style.color(i) for i in range(len(models))])
    for i, g in enumerate(gaps):
        ax.text(i, g + 0.02, f"{g:.2f}", ha="center", va="bottom", fontsize=7.5)
    ax.set_xticks(x, names)
    ax.set_ylim(0, 1.15)
    ax.set_xlabel("heads H and stride S")
    ax.set_ylabel("mean phase gap (max - min accuracy)")
    ax.set_title(f"phase gap, mean over {len(models[0].gap)} seeds per (H, S)")
    rot = data.rotation
    deltas = sorted(rot, key=int)
    _accuracy_map(
        axes[1, 0],
        fig,
        [rot[d] for d in deltas],
        [f"delta={d}" for d in deltas],
        len(rot[deltas[0]]),
        f"gate rotation of one model (selected r={data.rotation_selected})",
    )
    axes[1, 0].set_ylabel("rotation")
    ax = axes[1, 1]
    ko = data.knockout
    base = np.asarray(ko.base_loss, float)
    width = 0.8 / len(ko.loss)
    for h, losses in enumerate(ko.loss):
        ax.bar(
            np.arange(len(base)) + (h - (len(ko.loss) - 1) / 2) * width,
            np.asarray(losses, float) - base,
            width,
            color=_style.color(h),
            label=f"knock out head {h}",
        )
    ax.axhline(0, color="k", lw=0.8)
    _style.phase_axis(ax, len(base))
    ax.set_ylabel("per-phase loss change")
    ax.set_title("mean-ablation of one head (same model)")
    ax.legend(loc="upper right")
    fig.suptitle("Periodic weak spots in the idealized model")
    return fig


def _phases(accuracy) -> str:
    """The query phases a model answers (top-1 accuracy 1), e.g. '0, 2', or 'none'."""
    answered = [str(q) for q, a in enumerate(accuracy) if a == 1.0]
    return ", ".join(answered) if answered else "none"


def tables(data: WeakSpotsData) -> list[MeasuredTable]:
    """The phase gap over seeds per (H, S) (Wilson 95% intervals), the drawn models, and the
    rotation and knockout of one converged model."""
    gaps, drawn = [], []
    for m in data.models:
        gap = np.asarray(m.gap, float)
        gaps.append(
            [
                f"H={m.H}, S={m.S}",
                str(gap.size),
                share_text(int(np.sum(gap == 1.0)), gap.size),
                share_text(int(np.sum(gap == 0.0)), gap.size),
                f"{gap.mean():.2f}",
            ]
        )
        drawn += [
            [f"H={m.H}, S={m.S}", str(i), ", ".join(map(str, sel)), _phases(acc)]
            for i, (sel, acc) in enumerate(zip(m.selected, m.accuracy))
        ]
    selected = ", ".join(map(str, data.rotation_selected))
    # by rotation, whatever the dict's order (stored JSON sorts its keys as text)
    rotation = [[d, _phases(data.rotation[d])] for d in sorted(data.rotation, key=int)]
    k = data.knockout
    base = np.asarray(k.base_loss, float)
    knockout = [
        ["none", _phases(k.base_accuracy), ", ".join(f"{x:.4f}" for x in base)]
    ] + [
        [
            str(h),
            _phases(acc),
            ", ".join(f"{x - b:+.4f}" for x, b in zip(loss, base)),
        ]
        for h, (acc, loss) in enumerate(zip(k.accuracy, k.loss))
    ]
    return [
        MeasuredTable(
            "Phase gap (max minus min per-phase top-1 accuracy) of every converged seed "
            "(Wilson 95% intervals).",
            ["heads, stride", "seeds", "gap 1", "gap 0", "mean gap"],
            gaps,
        ),
        MeasuredTable(
            "The drawn models: selected key offset per head and the query phases answered.",
            ["heads, stride", "seed", "key offsets", "phases answered"],
            drawn,
        ),
        MeasuredTable(
            f"Gate rotation of seed 0 (key offsets {selected}) by delta: the phases answered.",
            ["delta", "phases answered"],
            rotation,
        ),
        MeasuredTable(
            "Mean-ablating one head of the same model: the phases answered and the change "
            "of the per-phase loss (first row: the loss without ablation).",
            ["ablated head", "phases answered", "per-phase loss (change)"],
            knockout,
        ),
    ]


FIGURE = Figure(
    "weak_spots",
    "Periodic weak spots: per-phase accuracy of converged models",
    claim,
    compute,
    draw,
    cost=45,
    tables=tables,
    data=WeakSpotsData,
)
