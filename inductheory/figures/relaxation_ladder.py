"""The relaxation ladder (docs/trained.md): the trained compressed model from the theorem's
setting, one switch at a time and cumulatively, measured on held-out contexts."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..experiments._ladder import (
    INPUT_DEPENDENT,
    PHASE_UNIFORM,
    SELECTED_MASS,
    SWITCHES,
    LadderSettings,
    RungResult,
    RungSummary,
    ladder_rungs,
    run_ladder,
    train_rung,
)
from ..experiments._measured import Count, MeanInterval
from ..internal._io import cached
from ..internal._progress import announce
from ..internal._records import field_values
from ..model._task import assumptions_silenced
from . import _runs, _style, _trained
from ._figure import Figure, FigureContext, FigureData, MeasuredTable
from ._parameters import RelaxationLadderParameters
from ._stats import (
    mean_interval,
    mean_text,
    share_text,
    wilson_interval,
)
from ._trained import FlowCheck

TASK = dict(L=4, S=3, H=2, N=48, gamma=1.0, beta=4.0, kappa=1.0)
# (seeds, steps) per rung
FULL, QUICK = (32, 400), (4, 200)


def _settings(quick: bool) -> tuple[int, dict]:
    seeds, steps = QUICK if quick else FULL
    return seeds, dict(steps=steps)


def _rung_params(rung, seeds: int, seed: int) -> dict:
    return {
        "kind": "ladder_rung",
        "rung": rung.parameters(),
        "seeds": seeds,
        "seed": seed,
    }


def cached_rung(rung, seeds: int, seed: int = 0, *, cache_dir=None) -> RungResult:
    """`train_rung`, cached by every parameter of the rung."""

    def compute():
        announce(f"training the ladder rung {rung.name}, {seeds} seeds")
        return train_rung(rung, seeds, seed=seed).to_dict()

    return RungResult.from_dict(
        cached(cache_dir, _rung_params(rung, seeds, seed), compute), rung
    )


# The counts of a rung's summary, each given its Wilson 95% interval in the figure's data.
COUNTS = (
    "selected",
    "value_follows_key",
    "input_dependent",
    "distinct",
    "phase_uniform",
    "all_phase_uniform",
)
# The per-seed values whose mean over seeds the figure gives with a bootstrap interval (as
# `<name>_ci`).
MEANS = (
    "phase_gap",
    "mean_accuracy",
    "loss",
    "boundary_accuracy",
    "all_mean_accuracy",
    "all_phase_gap",
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class LadderRung(RungSummary):
    """A rung's `RungSummary` with its intervals: every count of `COUNTS` with its Wilson 95%
    `ci95`; `phase_accuracy`, per within phase the mean accuracy over seeds with its bootstrap
    95% interval; `phase_gap_ci`, `mean_accuracy_ci`, `loss_ci`, `boundary_accuracy_ci`,
    `all_mean_accuracy_ci`, `all_phase_gap_ci`: the same for the per-seed values of `MEANS`;
    `gap_of_mean_curve`: max - min over phases of the seed-mean accuracy curve."""

    phase_accuracy: list[MeanInterval]
    phase_gap_ci: MeanInterval
    mean_accuracy_ci: MeanInterval
    loss_ci: MeanInterval
    boundary_accuracy_ci: MeanInterval
    all_mean_accuracy_ci: MeanInterval
    all_phase_gap_ci: MeanInterval
    gap_of_mean_curve: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class RelaxationLadderData(FigureData):
    """Every rung of the ladder in `ladder_rungs`' order (`rungs`, a `LadderRung` each: the
    theorem rung, the alone, cumulative and control rungs) and `flow_check`, the full flow at
    the theorem rung's setting beside its gradient descent (`FlowCheck`)."""

    rungs: list[LadderRung]
    flow_check: FlowCheck
    parameters: RelaxationLadderParameters


def _intervals(s: RungSummary) -> LadderRung:
    """Wilson intervals of the counts and bootstrap intervals (over seeds) of the means."""
    counts = {
        key: dataclasses.replace(c, ci95=list(wilson_interval(c.k, c.n)))
        for key, c in ((key, getattr(s, key)) for key in COUNTS)
    }
    acc = np.asarray(s.per_seed.phase_accuracy)
    means = {key + "_ci": mean_interval(getattr(s.per_seed, key)) for key in MEANS}
    summary = field_values(s)
    return LadderRung(
        **summary
        | counts
        | means
        | dict(
            phase_accuracy=[mean_interval(acc[:, j]) for j in range(acc.shape[1])],
            gap_of_mean_curve=float(acc.mean(axis=0).max() - acc.mean(axis=0).min()),
        )
    )


def compute(context: FigureContext) -> RelaxationLadderData:
    quick = context.quick
    seeds, settings = _settings(quick)
    with assumptions_silenced():
        task = _runs.task_of(**TASK)
    rungs = ladder_rungs(task, **settings)
    result = run_ladder(
        rungs,
        seeds,
        runner=lambda r, n, seed: cached_rung(r, n, seed, cache_dir=context.cache),
    )
    announce(f"summarizing {len(rungs)} rungs (bootstrap intervals over seeds)")
    summaries = [_intervals(s) for s in result.summaries()]
    trained = summaries[0].per_seed
    flow = _trained.theorem_flow(rungs[0], seeds, context.cache).beside(
        trained.key_offsets, trained.value_offsets
    )
    return RelaxationLadderData(
        rungs=summaries,
        flow_check=flow,
        parameters=RelaxationLadderParameters(
            **TASK,
            queries=task.queries,
            seeds=seeds,
            **field_values(LadderSettings(**settings)),
            rho=rungs[0].train_config.rho,
            selected_mass=SELECTED_MASS,
            input_dependent=INPUT_DEPENDENT,
            phase_uniform=PHASE_UNIFORM,
        ),
        findings=_findings(summaries, flow),
    )


def _findings(summaries: list[LadderRung], flow: FlowCheck) -> str:
    parts = [
        f"{s.label}: mass {s.gate_mass.key.mean:.2f}/"
        f"{s.gate_mass.value.mean:.2f}, gap {s.phase_gap_ci.mean:.2f}, "
        f"acc {s.mean_accuracy_ci.mean:.2f}"
        for s in summaries
    ]
    return (
        f"flow check: {flow.selected}/{len(flow.status)} selected, "
        f"{flow.agrees} agree; " + "; ".join(parts)
    )


def _by_kind(rungs):
    """x positions: the theorem rung at 0 on both lines, switch i at i + 1, the control one
    further; `(alone, cumulative, control)` as lists of (x, summary)."""
    theorem = next(s for s in rungs if s.kind == "theorem")
    alone = [(0, theorem)] + [
        (SWITCHES.index(s.switches[-1]) + 1, s) for s in rungs if s.kind == "alone"
    ]
    cumulative = [(0, theorem)] + [
        (SWITCHES.index(s.switches[-1]) + 1, s) for s in rungs if s.kind == "cumulative"
    ]
    control = [(len(SWITCHES) + 1, s) for s in rungs if s.kind == "control"]
    return alone, cumulative, control


SERIES = (("alone", 0, "o-"), ("cumulative", 1, "s--"), ("control", 3, "D"))


def _ticks(ax):
    labels = (
        ["theorem"]
        + [
            {
                "minibatch": "minibatch\nSGD",
                "adam": "Adam",
                "approximate": "approx.\ngeometry",
                "learned": "learned\nemb., maps",
                "gate_bias": "gate\nbias",
                "local": "exact local\nbranch",
                "layers": "two\nlayers",
            }[w]
            for w in SWITCHES
        ]
        + ["bias-only\ngates\n(control)"]
    )
    ax.set_xticks(range(len(labels)), labels, fontsize=6.5)
    ax.set_xlim(-0.5, len(labels) - 0.5)


def _series(ax, data, value, *, label, offset=0.0, marker=None, err=None, color=None):
    """One measure along the ladder, alone and cumulative (and the control), with error bars
    `err(summary) -> (low, high)`."""
    for (kind, c, fmt), points in zip(SERIES, _by_kind(data.rungs)):
        if not points:
            continue
        x = np.array([p[0] for p in points]) + offset * (1 if kind != "alone" else -1)
        y = np.array([value(p[1]) for p in points])
        yerr = None
        if err is not None:
            lo, hi = np.array([err(p[1]) for p in points]).T
            yerr = np.clip([y - lo, hi - y], 0, None)
        f = fmt if marker is None else marker + fmt[1:]
        ax.errorbar(
            x,
            y,
            yerr=yerr,
            fmt=f,
            capsize=2,
            color=_style.color(c if color is None else color + c),
            label=f"{label}, {kind}",
            mfc="w" if kind == "control" else None,
        )


def _ci(key):
    return lambda s: getattr(s, key).ci95


def draw(data: RelaxationLadderData):
    fig, axes = _style.subplots(2, 3, figsize=(16, 9))
    n = data.rungs[0].seeds
    ax = axes[0, 0]
    for b, branch in enumerate(("key", "value")):
        _series(
            ax,
            data,
            lambda s, br=branch: getattr(s.gate_mass, br).mean,
            label=f"{branch} gate",
            offset=0.08 * (2 * b - 1),
            marker="o^"[b],
            err=lambda s, br=branch: (
                getattr(s.gate_mass, br).min,
                getattr(s.gate_mass, br).max,
            ),
            color=2 * b,
        )
    W = data.rungs[0].W
    ax.axhline(1 / W, color="0.6", ls=":", lw=1)
    ax.text(0, 1 / W, " uniform 1/W", fontsize=7, va="bottom", color="0.4")
    ax.axhline(SELECTED_MASS, color="0.6", ls="--", lw=0.8)
    ax.set_ylabel("mean gate mass on the argmax offset")
    ax.set_title("selection: argmax gate mass (mean; bars: min-max over heads, seeds)")
    ax.set_ylim(0, 1.05)

    ax = axes[0, 1]
    _series(
        ax,
        data,
        lambda s: s.value_follows_key.k / s.value_follows_key.n,
        label="value = key + 1 (heads)",
        err=_ci("value_follows_key"),
        offset=0.06,
    )
    _series(
        ax,
        data,
        lambda s: s.distinct.k / s.distinct.n,
        label="heads on distinct keys (seeds)",
        err=_ci("distinct"),
        marker="^",
        color=4,
        offset=0.06,
    )
    base = data.rungs[0].distinct_baseline
    ax.axhline(base, color="0.5", ls=":", lw=1)
    ax.text(0, base, " independent baseline", fontsize=7, va="bottom", color="0.4")
    ax.set_ylabel("share (Wilson 95%)")
    ax.set_title("value offset = key offset + 1; distinct heads")
    ax.set_ylim(-0.03, 1.08)

    ax = axes[0, 2]
    for (kind, c, fmt), points in zip(SERIES, _by_kind(data.rungs)):
        for x, s in points:
            st = np.asarray(s.per_seed.static_offsets).ravel()
            av = np.asarray(s.per_seed.avg_offsets).ravel()
            ax.scatter(
                st.mean(),
                av.mean(),
                marker=fmt[0],
                color=_style.color(c),
                s=30,
                facecolors="w" if kind == "control" else None,
                label=f"rung mean, {kind}" if x == points[-1][0] else None,
            )
            ax.annotate(
                str(x),
                (st.mean(), av.mean()),
                xytext=(3, 3),
                textcoords="offset points",
                fontsize=6.5,
                color=_style.color(c),
            )
    ax.plot([1, W], [1, W], color="0.6", lw=0.8, ls=":")
    ax.set_xlim(0.95, W + 0.05)
    ax.set_ylim(0.95, W + 0.05)
    ax.set_xlabel("static effective offsets exp H(E_j p_j)")
    ax.set_ylabel("average effective offsets E_j exp H(p_j)")
    ax.set_title("Figure 5a measure (mean over heads, branches, seeds; number = rung)")
    lines = [
        f"{x}: input-dep. {s.input_dependent.k}/{s.input_dependent.n}"
        for x, s in _by_kind(data.rungs)[1][1:]
    ]
    ax.text(
        0.98,
        0.02,
        "cumulative, branches with\nstatic - avg >= "
        f"{INPUT_DEPENDENT}:\n" + "\n".join(lines),
        transform=ax.transAxes,
        fontsize=6.5,
        ha="right",
        va="bottom",
    )

    ax = axes[1, 0]
    _series(
        ax,
        data,
        lambda s: s.phase_gap_ci.mean,
        label="per-seed phase gap",
        err=lambda s: s.phase_gap_ci.ci95,
    )
    _series(
        ax,
        data,
        lambda s: s.gap_of_mean_curve,
        label="gap of the seed-mean curve",
        marker="x",
        color=5,
    )
    _series(
        ax,
        data,
        lambda s: s.all_phase_gap_ci.mean,
        label="per-seed gap, all queries (boundary phase in)",
        err=lambda s: s.all_phase_gap_ci.ci95,
        marker="v",
        color=4,
    )
    ax.set_ylabel("phase gap (max - min accuracy)")
    ax.set_title("phase gap (mean over seeds, bootstrap 95%)")
    ax.set_ylim(-0.03, 1.05)

    ax = axes[1, 1]
    rows = (
        [s for _, s in _by_kind(data.rungs)[0]]
        + [s for _, s in _by_kind(data.rungs)[1][1:]]
        + [s for _, s in _by_kind(data.rungs)[2]]
    )
    grid = np.array(
        [
            [p.mean for p in s.phase_accuracy] + [s.boundary_accuracy_ci.mean]
            for s in rows
        ]
    )
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for (i, j), v in np.ndenumerate(grid):
        ax.text(
            j,
            i,
            f"{v:.2f}",
            ha="center",
            va="center",
            fontsize=6,
            color="w" if v < 0.6 else "k",
        )
    S = grid.shape[1]
    ax.set_xticks(
        range(S),
        [str(j) for j in range(S - 1)] + [f"{S - 1}\n(boundary,\nall queries)"],
    )
    ax.set_yticks(
        range(len(rows)),
        [
            ("" if s.kind == "alone" or s.kind == "theorem" else "") + s.label
            for s in rows
        ],
        fontsize=6,
    )
    ax.axhline(len(SWITCHES) + 0.5, color="w", lw=1.5)
    ax.axhline(2 * len(SWITCHES) + 0.5, color="w", lw=1.5)
    ax.set_xlabel("query phase")
    ax.set_title(
        "per-phase accuracy, mean over seeds (rows: theorem, alone, + cumulative)"
    )
    _style.colorbar(fig, im, ax, "accuracy")

    ax = axes[1, 2]
    _series(
        ax,
        data,
        lambda s: s.mean_accuracy_ci.mean,
        label="mean accuracy",
        err=lambda s: s.mean_accuracy_ci.ci95,
    )
    _series(
        ax,
        data,
        lambda s: s.boundary_accuracy_ci.mean,
        label="boundary phase (all queries)",
        err=lambda s: s.boundary_accuracy_ci.ci95,
        marker="v",
        color=4,
    )
    ax.set_ylabel("top-1 accuracy (bootstrap 95% over seeds)")
    ax.set_title("mean accuracy (within) and boundary-phase accuracy")
    ax.set_ylim(-0.03, 1.05)
    for a in (axes[0, 0], axes[0, 1], axes[1, 0], axes[1, 2]):
        _ticks(a)
        a.legend(fontsize=6, loc="center left", framealpha=0.7)
    axes[0, 2].legend(fontsize=6.5, loc="upper left")
    fig.suptitle(
        f"Relaxation ladder: L=4, S=3, H=2, N=48, {n} seeds per rung, "
        "measured on held-out contexts"
    )
    return fig


def tables(data: RelaxationLadderData) -> list[MeasuredTable]:
    """Per rung: gates (mass, shares, effective offsets) and accuracy (gap, phases,
    boundary, mean, loss), with their intervals; and the flow check."""
    rungs = data.rungs
    n = rungs[0].seeds

    def name(s):
        return s.label if s.kind != "cumulative" else s.label

    gates = MeasuredTable(
        f"Gates on held-out contexts, {n} seeds per rung (kinds: theorem, alone, cumulative "
        "'+', control); mass: mean [min, max] over heads and seeds; shares with Wilson 95%.",
        [
            "rung",
            "kind",
            "key mass",
            "value mass",
            f"selected (mass >= {SELECTED_MASS})",
            "value = key + 1",
            "distinct heads (baseline)",
            "static / avg offsets (key; value)",
            "input-dependent",
        ],
        [
            [
                name(s),
                s.kind,
                f"{s.gate_mass.key.mean:.3f} "
                f"[{s.gate_mass.key.min:.3f}, {s.gate_mass.key.max:.3f}]",
                f"{s.gate_mass.value.mean:.3f} "
                f"[{s.gate_mass.value.min:.3f}, {s.gate_mass.value.max:.3f}]",
                _share(s.selected),
                _share(s.value_follows_key),
                _share(s.distinct) + f" ({s.distinct_baseline:.2f})",
                "; ".join(
                    f"{static.mean:.2f} / {avg.mean:.2f}"
                    for static, avg in (
                        (s.static_offsets.key, s.avg_offsets.key),
                        (s.static_offsets.value, s.avg_offsets.value),
                    )
                ),
                _share(s.input_dependent),
            ]
            for s in rungs
        ],
    )
    S = len(rungs[0].phase_accuracy) + 1
    accuracy = MeasuredTable(
        f"Accuracy on held-out contexts, {n} seeds per rung: means over seeds with bootstrap "
        "95% intervals; phase-uniform: seeds with per-seed gap <= "
        f"{PHASE_UNIFORM} (Wilson 95%); boundary phase {S - 1}: the within-trained models "
        "evaluated with queries=all.",
        [
            "rung",
            "kind",
            *(f"phase {j}" for j in range(S - 1)),
            "per-seed gap",
            "gap of mean curve",
            "phase-uniform seeds",
            f"boundary phase {S - 1}",
            "gap, all queries",
            "phase-uniform, all queries",
            "mean accuracy",
            "loss",
            "CPU s",
        ],
        [
            [
                name(s),
                s.kind,
                *(mean_text(p) for p in s.phase_accuracy),
                mean_text(s.phase_gap_ci),
                f"{s.gap_of_mean_curve:.2f}",
                _share(s.phase_uniform),
                mean_text(s.boundary_accuracy_ci),
                mean_text(s.all_phase_gap_ci),
                _share(s.all_phase_uniform),
                mean_text(s.mean_accuracy_ci),
                mean_text(s.loss_ci, 3),
                f"{s.cpu_s:.0f}",
            ]
            for s in rungs
        ],
    )
    f = data.flow_check
    keys = sorted(
        {(tuple(k), tuple(v)) for k, v in zip(f.key_offsets, f.value_offsets)}
    )
    flow = MeasuredTable(
        f"The theorem rung against the full flow at the same task, sample and seeds, "
        f"t_max = steps * lr = {f.t_max:g}, delta = {f.delta:g}.",
        [
            "flow seeds selected",
            "same key and value offsets as gradient descent",
            "flow offsets (keys; values)",
        ],
        [
            [
                share_text(f.selected, len(f.status)),
                share_text(f.agrees, len(f.status)),
                ", ".join(f"{list(k)}; {list(v)}" for k, v in keys),
            ]
        ],
    )
    return [gates, accuracy, flow]


NAMES = dict(
    minibatch="minibatch SGD",
    adam="Adam",
    approximate="approximate geometry",
    learned="the learned switch",
    gate_bias="the gate bias",
    local="the exact local branch",
    layers="two layers",
)


def _share(c: Count) -> str:
    return share_text(c.k, c.n)


def _shares(rungs: list[LadderRung], key: str) -> str:
    """One share when every rung has it, else the range of counts."""
    counts = {(getattr(r, key).k, getattr(r, key).n) for r in rungs}
    if len(counts) == 1:
        return share_text(*counts.pop())
    ks = [k for k, _ in counts]
    return f"{min(ks)}-{max(ks)} of {max(n for _, n in counts)}"


def _rung_name(r: LadderRung) -> str:
    if r.kind == "theorem":
        return "the theorem rung"
    name = NAMES[r.switches[-1]]
    return f"{name} alone" if r.kind == "alone" else f"the cumulative rung + {name}"


def _names(rungs: list[LadderRung]) -> str:
    names = [_rung_name(r).removesuffix(" alone") for r in rungs]
    text = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return text + (" alone" if rungs[-1].kind == "alone" else "")


def _mass(r: LadderRung) -> str:
    key, value = (f"{getattr(r.gate_mass, b).mean:.2f}" for b in ("key", "value"))
    return (
        f"mean mass {key}"
        if key == value
        else f"mean mass {key} (keys), {value} (values)"
    )


def claim(data: RelaxationLadderData) -> str:
    """The claim, its settings, the flow check and every rung's shares and means from `data`."""
    rungs, flow, par = data.rungs, data.flow_check, data.parameters
    theorem = [r for r in rungs if r.kind == "theorem"]
    alone = theorem + [r for r in rungs if r.kind == "alone"]
    cumulative = [r for r in rungs if r.kind == "cumulative"]
    full = ("selected", "value_follows_key", "distinct")
    kept = [
        r
        for r in alone
        if all(getattr(r, c).k == getattr(r, c).n for c in full)
        and all(p.mean == 1 for p in r.phase_accuracy)
    ]
    N = par.N
    n_flow = len(flow.status)
    text = (
        "The trained compressed model (docs/trained.md; beyond docs/theory.md §10) on "
        + par.task_text().replace("queries=within", "within queries")
        + f"; {par.rungs_text()}, measured on {par.measured_text()}. Theorem rung: "
        f"gradient descent, lr={par.lr}, on the full flow's balanced sample (M={par.M}); "
        f"switches: minibatch of {par.batch} fresh contexts, Adam lr={par.adam_lr}, "
        f"approximate geometry d={par.approximate_d}, learned embeddings, maps and "
        f"unembedding d={par.d}, a per-offset "
        "gate bias, an exact local branch "
        f"w={par.local_window}, two layers; each alone and "
        "cumulatively; a control with bias-only gates on the cumulative learned rung. The "
        "boundary phase is measured by evaluating the within-trained models with queries=all "
        f"(no retraining). Measured: the full flow at the same task, sample and seeds, "
        f"t={flow.t_max:g}, delta={flow.delta:.2g}, selects in "
        f"{share_text(flow.selected, n_flow)} seeds on the offsets gradient descent "
        f"reaches ({share_text(flow.agrees, n_flow)} agree)."
    )
    if kept:
        text += (
            f" {_names(kept)[0].upper()}{_names(kept)[1:]} "
            f"{'keeps' if len(kept) == 1 else 'keep'} hard selection "
            f"({_shares(kept, 'selected')} branches with argmax mass >= {SELECTED_MASS}), "
            f"value = key + 1 ({_shares(kept, 'value_follows_key')} heads), distinct heads "
            f"({_shares(kept, 'distinct')} seeds, independent baseline "
            f"{kept[0].distinct_baseline:.2f}) and accuracy 1 on every within phase."
        )
    broken = next((r for r in alone if r.phase_uniform.k < r.phase_uniform.n), None)
    if broken is not None:
        text += (
            f" {_rung_name(broken)[0].upper()}{_rung_name(broken)[1:]} first breaks the "
            f"phase-uniformity of the within phases: {_share(broken.phase_uniform)} seeds "
            f"phase-uniform (per-seed gap <= {PHASE_UNIFORM}), distinct heads "
            f"{_share(broken.distinct)}, mean accuracy {mean_text(broken.mean_accuracy_ci)}"
        )
    for r in alone:
        offsets = {tuple(k) for k in r.per_seed.key_offsets}
        if r.distinct.k == 0 and len(offsets) == 1 and len(set(*offsets)) == 1:
            gap1 = sum(g == 1 for g in r.per_seed.phase_gap)
            text += (
                f"; {_rung_name(r)} puts both heads on offset {offsets.pop()[0]} (distinct "
                f"{_share(r.distinct)}), gap 1 in {share_text(gap1, r.seeds)} seeds"
            )
    text += "."
    soft = next((r for r in cumulative if r.selected.k < r.selected.n / 2), None)
    dep = next((r for r in cumulative if r.input_dependent.k > 0), None)
    if soft is not None:
        text += (
            f" Selection first turns soft on {_rung_name(soft)} (branches with mass >= "
            f"{SELECTED_MASS}: {_share(soft.selected)}; {_mass(soft)})"
        )
    if dep is not None:
        earlier = rungs[: rungs.index(dep)] + [r for r in rungs if r.kind == "control"]
        none_before = all(r.input_dependent.k == 0 for r in earlier)
        text += (
            (
                " and there first input-dependent"
                if dep is soft
                else f"; first input-dependent on {_rung_name(dep)}"
            )
            + f" (static - avg >= {INPUT_DEPENDENT} offsets: "
            f"{_share(dep.input_dependent)}"
            + (
                f", {_shares(earlier, 'input_dependent')} on every earlier rung and on the "
                "bias-only control"
                if none_before
                else ""
            )
            + f"), with value = key + 1 in {_share(dep.value_follows_key)} heads and "
            f"distinct heads in {_share(dep.distinct)} seeds at mean accuracy "
            f"{mean_text(dep.mean_accuracy_ci)}."
        )
    elif soft is not None:
        text += "."
    learned = next(r for r in alone if r.switches == ["learned"])
    if learned.loss_ci.mean > math.log(N):
        text += (
            " The learned switch alone, under the theorem's gradient descent step, does not "
            f"train (loss {learned.loss_ci.mean:.2f} above ln N = {math.log(N):.2f}, "
            f"{_mass(learned)})."
        )
    worst = max(r.boundary_accuracy_ci.mean for r in rungs)
    return text + (
        " No rung answers the boundary phase: its mean accuracy is at most "
        f"{math.ceil(100 * worst) / 100:.2f} on every rung, and with all queries "
        f"{_shares(rungs, 'all_phase_uniform')} seeds are phase-uniform"
        + (" on every rung" if len({r.all_phase_uniform.k for r in rungs}) == 1 else "")
        + ". Every rung was trained on within queries only, so its loss never contained the "
        "boundary phase: this says nothing about whether a model trained on it answers it "
        "(the figure paper_matrix trains with the boundary phase in the loss)."
    )


FIGURE = Figure(
    "relaxation_ladder",
    "The relaxation ladder: from the theorem to a trained model",
    claim,
    compute,
    draw,
    cost=230,
    tables=tables,
    data=RelaxationLadderData,
)
