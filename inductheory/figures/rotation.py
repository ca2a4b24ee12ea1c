"""The paper's appendix-H gate rotation on trained models: every offset-specific gate parameter
rotated by delta window offsets, the measured per-phase accuracy against the unrotated curve
shifted by delta, the boundary phase, and the cost in mean accuracy."""

from __future__ import annotations

import equinox as eqx
import numpy as np

from ..internal._io import cached
from ..internal._progress import announce
from ..trained._interventions import rotate_model_gates, shift_r_squared, shifted_curve
from ..trained._measures import measure
from . import _style, _trained
from ._figure import Figure, MeasuredTable
from ._stats import mean_interval, mean_text

RUNGS = ("theorem", "realistic")
SETTING = "W8/S8"
DELTAS = (-3, -2, -1, 1, 2, 3)
# The paper's numbers (docs/trained.md), accuracies as shares: R^2 of its W8/S8 reference model;
# the boundary and mean-drop ranges span all five rotated models (two W12/S12, the W8/S8
# reference and its two seed replicates), not the W8/S8 model alone.
PAPER = {
    "r2": (0.88, 1.00),
    "boundary_rotated_max": 0.029,
    "boundary_unrotated": (0.027, 0.239),
    "mean_drop_points": (3.3, 18.4),
}


def _evaluate(run, cache_dir) -> dict:
    """Per-phase accuracy of every seed of `run`, unrotated and rotated by each delta, on its
    held-out contexts (all query phases), cached."""
    params = {"kind": "rotation", "run": run.parameters(), "deltas": list(DELTAS)}

    def compute():
        announce(f"rotating the gates of {run.seeds} trained models")
        contexts = _trained.held_out_contexts(run)

        @eqx.filter_jit
        def accuracy(models):
            m = eqx.filter_vmap(lambda model: measure(model, contexts))(models)
            return m.phase_accuracy, m.mean_accuracy

        base, mean = accuracy(run.models)
        rotated = [accuracy(rotate_model_gates(run.models, d)) for d in DELTAS]
        return {
            "phase_accuracy": np.asarray(base).tolist(),
            "mean_accuracy": np.asarray(mean).tolist(),
            "rotated_phase_accuracy": [np.asarray(a).tolist() for a, _ in rotated],
            "rotated_mean_accuracy": [np.asarray(m).tolist() for _, m in rotated],
        }

    return cached(cache_dir, params, compute)


def analyze(raw: dict) -> dict:
    """Per delta: R^2 of the measured curve by the shifted one without the boundary phase
    (per seed, and of the seed-mean curves), the boundary phase's accuracy and the drop in
    mean accuracy (points), with bootstrap intervals over seeds."""
    base = np.asarray(raw["phase_accuracy"])  # (seeds, S)
    seeds, S = base.shape
    per_delta = []
    for i, delta in enumerate(DELTAS):
        rot = np.asarray(raw["rotated_phase_accuracy"][i])
        r2 = shift_r_squared(base, rot, delta)
        ok = np.isfinite(r2)
        drop = 100 * (
            np.asarray(raw["mean_accuracy"])
            - np.asarray(raw["rotated_mean_accuracy"][i])
        )
        per_delta.append(
            {
                "delta": delta,
                "r2": r2.tolist(),
                "r2_defined": int(ok.sum()),
                "r2_median": float(np.median(r2[ok])) if ok.any() else float("nan"),
                "r2_min": float(r2[ok].min()) if ok.any() else float("nan"),
                "r2_max": float(r2[ok].max()) if ok.any() else float("nan"),
                "r2_mean": mean_interval(r2[ok]) if ok.any() else None,
                "r2_of_mean_curve": float(
                    shift_r_squared(base.mean(axis=0), rot.mean(axis=0), delta)
                ),
                "boundary": mean_interval(rot[:, -1]),
                "boundary_max": float(rot[:, -1].max()),
                "mean_drop_points": mean_interval(drop),
                "mean_curve": rot.mean(axis=0).tolist(),
                "predicted_mean_curve": shifted_curve(
                    base.mean(axis=0), delta
                ).tolist(),
            }
        )
    return {
        "seeds": int(seeds),
        "S": int(S),
        "mean_curve": base.mean(axis=0).tolist(),
        "boundary_unrotated": mean_interval(base[:, -1]),
        "boundary_unrotated_max": float(base[:, -1].max()),
        "mean_accuracy": mean_interval(raw["mean_accuracy"]),
        "per_delta": per_delta,
    }


def compute(quick: bool, cache_dir) -> dict:
    task = _trained.paper_task(8, 8, quick=quick)
    rungs = {}
    for name in RUNGS:
        run = _trained.paper_run(SETTING, name, quick=quick, cache_dir=cache_dir)
        raw = _evaluate(run, cache_dir)
        rungs[name] = {"raw": raw, "summary": analyze(raw)}
    return {
        "rungs": rungs,
        "deltas": list(DELTAS),
        "paper": PAPER,
        "parameters": {
            "task": f"L={task.L}, S={task.S}, W={task.W}, H={task.H}, N={task.N}, "
            f"beta={task.beta:g}, gamma={task.gamma:g}, kappa={task.kappa:g}, "
            f"queries={task.queries}",
            "runs": f"the shared {SETTING} runs of the paper protocol (figures/_trained.py), "
            f"rungs {', '.join(RUNGS)}",
            "rotation": "c_{h,o} and b_{h,o} of both branches -> those of offset "
            "(o - delta) mod W (jnp.roll by delta); measured on each run's held-out "
            "contexts, every query phase",
            "r2": "1 - SS_res / SS_tot of the rotated curve by the unrotated one shifted by "
            "delta (no fit), boundary phase S-1 left out; undefined for a flat curve",
        },
        "findings": _findings(rungs),
    }


def _findings(rungs) -> str:
    parts = []
    for name, r in rungs.items():
        s = r["summary"]
        d = s["per_delta"]
        parts.append(
            f"{name}: R^2 medians {min(x['r2_median'] for x in d):.2f}-"
            f"{max(x['r2_median'] for x in d):.2f}, boundary rotated <= "
            f"{max(x['boundary']['mean'] for x in d):.3f} (unrotated "
            f"{s['boundary_unrotated']['mean']:.3f}), mean drop "
            f"{min(x['mean_drop_points']['mean'] for x in d):.1f}-"
            f"{max(x['mean_drop_points']['mean'] for x in d):.1f} points"
        )
    return "; ".join(parts)


def draw(data: dict):
    names = [n for n, _ in _trained.ordered_rungs(data, RUNGS)]
    fig, axes = _style.subplots(len(names), 3, figsize=(15, 4.4 * len(names)))
    axes = np.atleast_2d(axes)
    lo_r2, hi_r2 = PAPER["r2"]
    for row, name in enumerate(names):
        s = data["rungs"][name]["summary"]
        S, n = s["S"], s["seeds"]
        ax = axes[row, 0]
        ax.plot(range(S), s["mean_curve"], "k-", lw=2, label="unrotated")
        for i, d in enumerate(s["per_delta"]):
            if abs(d["delta"]) != 1:
                continue
            c = _style.color(i)
            ax.plot(
                range(S),
                d["mean_curve"],
                "o-",
                color=c,
                label=f"rotated {d['delta']:+d}",
            )
            ax.plot(
                range(S),
                d["predicted_mean_curve"],
                "x:",
                color=c,
                label=f"predicted shift {d['delta']:+d}",
            )
        ax.axvspan(S - 1.5, S - 0.5, color="0.9", zorder=0)
        ax.text(S - 1, 1.0, "boundary", ha="center", va="top", fontsize=7)
        _style.phase_axis(ax, S)
        ax.set_ylim(-0.03, 1.05)
        ax.set_ylabel("accuracy (mean over seeds)")
        ax.set_title(f"{name} rung, {n} seeds: seed-mean curves (delta = +-1)")
        ax.legend(fontsize=6.5)

        ax = axes[row, 1]
        ax.axhspan(lo_r2, hi_r2, color="0.88", zorder=0, label="paper W8/S8: 0.88-1.00")
        rng = np.random.default_rng(0)
        for i, d in enumerate(s["per_delta"]):
            r2 = np.asarray(d["r2"], float)
            r2 = r2[np.isfinite(r2)]
            ax.scatter(
                i + rng.uniform(-0.15, 0.15, r2.size),
                np.clip(r2, -1, None),
                s=8,
                color=_style.color(0),
                alpha=0.5,
                label="per seed (clipped at -1)" if i == 0 else None,
            )
            ax.plot(
                [i],
                [max(d["r2_median"], -1.0)],
                "kD",
                ms=5,
                label="median (clipped at -1)" if i == 0 else None,
            )
        ax.set_xticks(
            range(len(s["per_delta"])), [f"{d['delta']:+d}" for d in s["per_delta"]]
        )
        ax.set_xlabel("rotation delta")
        ax.set_ylabel("R^2 of measured vs shifted curve (boundary out)")
        ax.set_ylim(-1.05, 1.05)
        ax.set_title("predicted shift vs measured curve")
        ax.legend(fontsize=6.5, loc="lower left")

        ax = axes[row, 2]
        xs = [0] + [d["delta"] for d in s["per_delta"]]
        b = [s["boundary_unrotated"]] + [d["boundary"] for d in s["per_delta"]]
        y = np.array([v["mean"] for v in b])
        lo, hi = np.array([v["ci95"] for v in b]).T
        ax.errorbar(
            xs,
            y,
            yerr=np.clip([y - lo, hi - y], 0, None),
            fmt="o",
            capsize=3,
            color=_style.color(3),
            label="boundary-phase accuracy",
        )
        ax.axhline(
            PAPER["boundary_rotated_max"],
            color="0.5",
            ls=":",
            lw=1,
            label="paper, five models: <= 0.029 rotated",
        )
        ax.set_ylim(-0.005, max(0.05, 1.15 * float(np.max(hi))))
        ax.set_xlabel("rotation delta (0: unrotated)")
        ax.set_ylabel("boundary-phase accuracy (bootstrap 95%)")
        ax2 = ax.twinx()
        drops = [d["mean_drop_points"] for d in s["per_delta"]]
        yd = np.array([v["mean"] for v in drops])
        dlo, dhi = np.array([v["ci95"] for v in drops]).T
        ax2.errorbar(
            [d["delta"] for d in s["per_delta"]],
            yd,
            yerr=np.clip([yd - dlo, dhi - yd], 0, None),
            fmt="s",
            capsize=3,
            color=_style.color(1),
            label="drop in mean accuracy (points)",
        )
        for bound in PAPER["mean_drop_points"]:
            ax2.axhline(bound, color=_style.color(1), ls="--", lw=0.8)
        ax2.set_ylabel(
            "drop in mean accuracy (points); dashed: paper's five models 3.3-18.4"
        )
        ax.set_title("boundary phase and cost of the rotation")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=6.5, loc="upper left")
    fig.suptitle(
        f"Gate rotation (appendix H) on trained models, {SETTING}: offset o takes the gate "
        "parameters of offset o - delta"
    )
    return fig


def tables(data: dict) -> list[MeasuredTable]:
    """Per rung and delta: R^2 (median, range, mean), boundary phase and mean-accuracy drop."""
    rows = []
    for name, r in _trained.ordered_rungs(data, RUNGS):
        s = r["summary"]
        rows.append(
            [
                name,
                "0 (unrotated)",
                "-",
                "-",
                "-",
                mean_text(s["boundary_unrotated"], 3),
                f"{s['boundary_unrotated_max']:.3f}",
                f"mean accuracy {mean_text(s['mean_accuracy'], 3)}",
            ]
        )
        for d in s["per_delta"]:
            rows.append(
                [
                    name,
                    f"{d['delta']:+d}",
                    f"{d['r2_median']:.2f} [{d['r2_min']:.2f}, {d['r2_max']:.2f}] "
                    f"({d['r2_defined']}/{s['seeds']} defined)",
                    mean_text(d["r2_mean"]) if d["r2_mean"] else "-",
                    f"{d['r2_of_mean_curve']:.2f}",
                    mean_text(d["boundary"], 3),
                    f"{d['boundary_max']:.3f}",
                    mean_text(d["mean_drop_points"], 1),
                ]
            )
    n = next(iter(data["rungs"].values()))["summary"]["seeds"]
    return [
        MeasuredTable(
            f"Gate rotation at {SETTING}, {n} seeds per rung, held-out contexts, every query "
            "phase; R^2 without the boundary phase: per-seed median [min, max], mean with "
            "bootstrap 95% over seeds, and of the seed-mean curves; boundary phase and drop "
            "in mean accuracy: mean over seeds (bootstrap 95%). Paper (W8/S8): R^2 "
            "0.88-1.00, boundary <= 0.029 rotated (0.027-0.239 unrotated), mean drop "
            "3.3-18.4 points.",
            [
                "rung",
                "delta",
                "R^2 per seed: median [range]",
                "R^2 mean",
                "R^2 of mean curves",
                "boundary accuracy",
                "boundary max over seeds",
                "drop in mean accuracy (points)",
            ],
            rows,
        )
    ]


CLAIM = (
    "Gate rotation, the paper's appendix-H protocol (docs/theory.md §9, §11)"
    ", on the shared W8/S8 runs of the paper "
    "protocol (figures/_trained.py: exact geometry, L=3, S=W=8, H=2, N=48, beta=4, every "
    "query phase; the theorem rung, gradient descent for 1000 steps at lr=8, and the "
    "realistic rung, every switch of the ladder; 32 seeds each, quick mode 4 seeds and fewer "
    "steps): every c_{h,o} and b_{h,o} of both branches takes the value of offset (o - delta) "
    "mod 8, delta in +-1, +-2, +-3, and per-phase accuracy is measured on the run's 64 "
    "held-out contexts per seed. R^2 = 1 - SS_res/SS_tot (no fit) of the rotated curve by the "
    "unrotated curve shifted by delta, the boundary phase 7 left out. Theorem rung (two hard "
    "heads on distinct phases, mean accuracy 0.25 in 32/32 seeds [0.89, 1]): R^2 = 1 at "
    "every delta in "
    "32/32 seeds [0.89, 1]; the boundary phase is never answered, unrotated or rotated "
    "(accuracy 0 in 32/32 seeds [0.89, 1]); mean accuracy drops by 2.3 to 4.7 points, the "
    "seeds in which "
    "a key lands on offset 7 losing that head's phase. Realistic rung (key gates peaking at "
    "offsets 1 and 2, value gates at 5 and 6): the predicted shift fails, median R^2 0.63 "
    "(range 0.27 to 0.86) at delta -1, 0.18 at +1, -0.01 at -2, -0.36 at -3 and below -6 at "
    "+2 and +3, where the value peaks wrap past offset 7; the boundary phase is answered at "
    "0.040 [0.035, 0.045] unrotated and from 0.014 to 0.203 [0.188, 0.218] (delta +2) "
    "rotated; mean accuracy 0.134 [0.129, 0.139] drops by 1.4 to 9.6 points. Beside the paper "
    "(its W8/S8 reference: R^2 0.88 to 1.00; over its five rotated models, two W12/S12, the "
    "W8/S8 reference and two seed replicates: boundary at most 2.9% rotated, 2.7 to 23.9% "
    "unrotated, mean drop 3.3 to 18.4 points): the theorem rung shifts exactly as "
    "predicted, with a drop at the low end of the paper's range and a boundary phase at 0 "
    "throughout; the realistic rung shows the paper's cost but not its shift, and rotation "
    "raises its boundary phase."
)


FIGURE = Figure(
    "rotation",
    "Gate rotation on trained models (the paper's appendix H)",
    CLAIM,
    compute,
    draw,
    cost=40,
    tables=tables,
)
