"""The paper's mitigation table on trained models: window, stride and uniform averaging at the
theorem's rung, the realistic rung and a full-attention baseline, beside the paper's numbers and
the idealized `mitigations` figure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..experiments._mitigations import PAPER
from ..experiments._paper_matrix import PAPER_TABLE8
from ..model._positions import query_positions
from . import _style, _trained
from ._figure import Figure, MeasuredTable
from ._stats import bootstrap_interval, interval_text, mean_interval, share_text

# The paper's worst phase (percent) of an 8-KV-head W8/S8 model and of its full-attention
# baseline (docs/theory.md §11).
PAPER_WORST = {"compressed": 9.9, "baseline": 58.4}
# Which of the paper's models each setting's gap comes from (experiments._paper_matrix).
PAPER_MODELS = {
    "W8/S8": "paper: W8/S8 reference, 1 KV head, seed 42",
    "W8/S4": "paper: W8/S4, 1 KV head",
    "W8/S6": "paper: W8/S6, 1 KV head",
    "uniform": "paper: uniform averaging",
    "S=2": "paper: DeepSeek-V4.1-Flash, 128K needle task (not its controlled family)",
}
# The rungs of the table, in order.
ROWS = ("theorem", "realistic", "baseline")
# The relaxation ladder's cumulative rungs from the theorem rung to the realistic one, in order.
LADDER = ("theorem",) + _trained.CUMULATIVE + ("realistic",)
# Quick mode: the ends of the paper's ordering.
QUICK_SETTINGS = ("W8/S8", "S=2")
# The committed data of the idealized figure (read, never recomputed here).
IDEALIZED = (
    Path(__file__).resolve().parents[2] / "figures" / "data" / "mitigations.json"
)


def kendall_tau(values, reference) -> dict:
    """Kendall's tau-a between two rankings of the same items.

    **Arguments:**
    - `values`, `reference`: numbers per item (equal length >= 2).

    **Returns:** a dict: `tau` = (concordant - discordant) / pairs, `concordant`, `discordant`,
    `ties` (pairs tied in either ranking, counted in neither), `pairs`.

    ```python
    kendall_tau([3, 2, 1], [30, 20, 10])["tau"]  # 1.0
    ```
    """
    a, b = np.asarray(values, float), np.asarray(reference, float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(
            "values and reference must be 1-d of one length >= 2, got shapes "
            f"{a.shape} and {b.shape}"
        )
    i, j = np.triu_indices(a.size, 1)
    s = np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])
    c, d = int(np.sum(s > 0)), int(np.sum(s < 0))
    return dict(
        tau=(c - d) / i.size,
        concordant=c,
        discordant=d,
        ties=int(i.size - c - d),
        pairs=int(i.size),
    )


def ordering(values: dict, reference: dict) -> dict:
    """How a measured ordering of settings compares with a reference one.

    **Arguments:**
    - `values`: a number per setting name.
    - `reference`: a number per setting name (the same names).

    **Returns:** a dict: `order` and `reference_order` (names by decreasing value), Kendall's
    tau and its pair counts (`kendall_tau`), and `same` (the two orders equal).

    ```python
    ordering({"a": 1, "b": 2}, {"a": 5, "b": 3})["tau"]  # -1.0
    ```
    """
    if set(values) != set(reference):
        raise ValueError("values and reference must name the same settings")
    names = list(reference)
    order = sorted(names, key=lambda n: -values[n])
    ref = sorted(names, key=lambda n: -reference[n])
    tau = kendall_tau([values[n] for n in names], [reference[n] for n in names])
    return dict(order=order, reference_order=ref, same=order == ref, **tau)


def phase_summary(accuracy, loss) -> dict:
    """The mitigation measures of one (setting, rung) from per-seed per-phase accuracies.

    **Arguments:**
    - `accuracy`: (seeds, S) top-1 accuracy per query phase (the boundary phase S-1 last).
    - `loss`: (seeds,) held-out loss.

    **Returns:** a JSON-able dict: `curve` (the seed-mean accuracy per phase, with bootstrap
    intervals), `gap_of_mean_curve` (its max - min), `per_seed_gap`, `mean_accuracy`,
    `worst_of_mean_curve` (value and phase), `per_seed_worst` (each seed's lowest phase),
    `boundary` (phase S-1) and `loss` (means over seeds with bootstrap 95% intervals), and the
    per-seed values.
    """
    acc = np.asarray(accuracy, float)
    curve = acc.mean(axis=0)
    gaps = acc.max(axis=1) - acc.min(axis=1)
    return dict(
        seeds=int(acc.shape[0]),
        curve=[mean_interval(acc[:, r]) for r in range(acc.shape[1])],
        gap_of_mean_curve=_gap(acc),
        per_seed_gap=mean_interval(gaps),
        mean_accuracy=mean_interval(acc.mean(axis=1)),
        worst_of_mean_curve={"value": float(curve.min()), "phase": int(curve.argmin())},
        per_seed_worst=mean_interval(acc.min(axis=1)),
        boundary=mean_interval(acc[:, -1]),
        loss=mean_interval(loss),
        per_seed={"phase_accuracy": acc.tolist(), "loss": np.asarray(loss).tolist()},
    )


def _gap(accuracy) -> float:
    """The gap (max - min) of the seed-mean curve of (seeds, S) accuracies."""
    curve = np.asarray(accuracy, float).mean(axis=0)
    return float(curve.max() - curve.min())


def ladder_orderings(accuracy: dict, paper: dict) -> list[dict]:
    """Per rung of the ladder, the seed-mean curve's gap at each setting and its ordering
    against the paper's, with bootstrap 95% intervals over seeds (resampled within each
    setting, `bootstrap_interval`).

    **Arguments:**
    - `accuracy`: `{rung: {setting: (seeds, S) accuracies}}`, rungs in the ladder's order.
    - `paper`: the paper's gap per setting.

    **Returns:** per rung a JSON-able dict: `rung`, `gaps` (`{setting: {"value", "ci95"}}`),
    `ordering` (`ordering` of the gaps), `tau_ci95` and `changed` (its order differs from
    the previous rung's; False for the first).
    """
    names = list(paper)
    out = []
    for rung, acc in accuracy.items():
        acc = [np.asarray(acc[n], float) for n in names]
        seeds = [np.arange(a.shape[0]) for a in acc]
        gaps = {
            n: {
                "value": _gap(a),
                "ci95": bootstrap_interval([i], lambda j, a=a: _gap(a[j.astype(int)])),
            }
            for n, a, i in zip(names, acc, seeds)
        }

        def tau(*idx, acc=acc):
            g = [_gap(a[j.astype(int)]) for a, j in zip(acc, idx)]
            return kendall_tau(g, [paper[n] for n in names])["tau"]

        o = ordering({n: g["value"] for n, g in gaps.items()}, paper)
        out.append(
            dict(
                rung=rung,
                gaps=gaps,
                ordering=o,
                tau_ci95=bootstrap_interval(seeds, tau),
                changed=bool(out) and o["order"] != out[-1]["ordering"]["order"],
            )
        )
    return out


def _idealized() -> dict | None:
    """The idealized figure's rows of the paper's settings (its committed data), in percent."""
    if not IDEALIZED.exists():
        return None
    rows = json.loads(IDEALIZED.read_text())["paper"]
    return {
        r["setting"]: {k: r[k] for k in ("gap", "gap_of_mean_curve", "mean_accuracy")}
        for r in rows
    }


def compute(quick: bool, cache_dir) -> dict:
    names = QUICK_SETTINGS if quick else [s.name for s in _trained.PAPER_SETTINGS]
    settings = [_trained.paper_setting(n) for n in names]
    run = dict(quick=quick, cache_dir=cache_dir)
    baseline = _trained.paper_run(settings[0].name, "baseline", **run)
    correct = _trained.run_correct(baseline)
    positions = query_positions(baseline.task.L, baseline.task.S, "all")
    rows, flow = [], None
    for s in settings:
        for rung in ROWS:
            if rung == "baseline":
                acc = _trained.phase_accuracy_by_position(correct, positions, s.S)
                loss = np.asarray(baseline.measures.loss)
            else:
                m = _trained.paper_measures(s, rung, **run)
                acc, loss = m.phase_accuracy, m.loss
                if rung == "theorem" and s.name == "W8/S8":
                    r = _trained.paper_run(s, rung, **run)
                    flow = _trained.flow_check(
                        _trained.paper_rung("theorem", r.task, quick=quick),
                        r,
                        cache_dir,
                    )
                    m = r.measures
                    flow["heads"] = r.task.H
                    flow["trained_value_follows_key"] = int(np.sum(m.value_follows_key))
                    flow["trained_key_mass"] = float(np.mean(m.argmax_mass[..., 0]))
                    flow["trained_value_mass"] = float(np.mean(m.argmax_mass[..., 1]))
            rows.append(
                dict(
                    setting=s.name,
                    S=s.S,
                    W=s.W,
                    gates=s.gates,
                    rung=rung,
                    **phase_summary(acc, loss),
                )
            )
    paper = {n: PAPER[n]["gap"] for n in names}
    orderings = {}
    for rung in ROWS:
        mine = [r for r in rows if r["rung"] == rung]
        orderings[rung] = {
            "gap_of_mean_curve": ordering(
                {r["setting"]: r["gap_of_mean_curve"] for r in mine}, paper
            ),
            "per_seed_gap": ordering(
                {r["setting"]: r["per_seed_gap"]["mean"] for r in mine}, paper
            ),
        }
    accuracy = {rung: {} for rung in LADDER}
    for r in rows:
        if r["rung"] in accuracy:
            accuracy[r["rung"]][r["setting"]] = r["per_seed"]["phase_accuracy"]
    for s in settings:
        for rung in _trained.CUMULATIVE:
            m = _trained.paper_measures(s, rung, **run)
            accuracy[rung][s.name] = m.phase_accuracy
    ladder = ladder_orderings(accuracy, paper)
    idealized = _idealized()
    if idealized is not None:
        ideal = {n: idealized[n]["gap_of_mean_curve"] for n in names}
        orderings["idealized"] = {"gap_of_mean_curve": ordering(ideal, paper)}
    f = _trained.FULL if not quick else _trained.QUICK
    steps = _trained.QUICK_STEPS if quick else _trained.STEPS
    return {
        "rows": rows,
        "orderings": orderings,
        "ladder": ladder,
        "flow_check": flow,
        "paper": {n: dict(PAPER[n]) for n in names},
        "paper_worst": PAPER_WORST,
        "idealized": idealized,
        "parameters": {
            "task": f"T = {_trained.POSITIONS} positions, N={_trained.TASK['N']}, "
            f"H={_trained.TASK['H']}, beta={_trained.TASK['beta']:g}, gamma=1, kappa=1, "
            "exact geometry, queries=all",
            "settings": ", ".join(names),
            "training": f"{_trained.QUICK_SEEDS if quick else _trained.SEEDS} seeds per run; "
            f"theorem rung: gradient descent lr={f['lr']:g}, {steps['theorem']} steps on the "
            f"full flow's balanced sample M={f['M']}; realistic and baseline: Adam "
            f"lr={f['adam_lr']:g}, {steps['trained']} steps, {f['batch']} fresh contexts a "
            f"step, d={f['d']}; the ladder's cumulative rungs between them: gradient "
            f"descent before Adam ({steps['theorem']} steps), Adam after "
            f"({steps['trained']} steps)",
            "measures": f"{f['eval_contexts']} held-out contexts per seed; baseline phases: "
            "its queries grouped by position mod the setting's S",
        },
        "findings": _findings(rows, orderings)
        + "; ladder: "
        + _ladder_findings(ladder),
    }


def _findings(rows, orderings) -> str:
    parts = [
        f"{r['setting']} {r['rung']}: gap of mean curve {r['gap_of_mean_curve']:.2f}, "
        f"per-seed gap {r['per_seed_gap']['mean']:.2f}, acc {r['mean_accuracy']['mean']:.3f}, "
        f"worst {r['worst_of_mean_curve']['value']:.3f}"
        for r in rows
    ]
    taus = [
        f"{rung}: tau {o['gap_of_mean_curve']['tau']:.2f}"
        for rung, o in orderings.items()
    ]
    return (
        "; ".join(parts)
        + "; orderings vs paper (gap of mean curve): "
        + ", ".join(taus)
    )


def _ladder_findings(ladder) -> str:
    return "; ".join(
        f"{r['rung']}: tau {r['ordering']['tau']:.2f} "
        f"{interval_text(*r['tau_ci95'])}, order {' > '.join(r['ordering']['order'])}"
        for r in ladder
    )


LABELS = {
    "theorem": "theorem rung",
    "realistic": "realistic rung",
    "baseline": "full attention",
}
COLORS = {"paper": 7, "idealized": 4, "theorem": 0, "realistic": 1, "baseline": 2}


def _row(data, setting, rung):
    return next(
        r for r in data["rows"] if r["setting"] == setting and r["rung"] == rung
    )


def _settings(data) -> list[str]:
    """The data's settings in the paper's order (JSON keeps keys sorted)."""
    return [n for n in PAPER if n in data["paper"]]


def draw(data: dict):
    names = _settings(data)
    ladder = data.get("ladder")
    fig = _style.plt.figure(figsize=(16, 9 if ladder is None else 13.5))
    outer = fig.add_gridspec(
        2 if ladder is None else 3,
        1,
        height_ratios=(1.15, 1) if ladder is None else (1.15, 1, 1),
        hspace=0.45,
    )
    top_grid = outer[0].subgridspec(1, 3, width_ratios=(1.7, 1, 1), wspace=0.25)
    bottom_grid = outer[1].subgridspec(1, len(names), wspace=0.3)
    top = [fig.add_subplot(top_grid[0, i]) for i in range(3)]
    x = np.arange(len(names))
    width = 0.16

    ax = top[0]
    ax.bar(
        x - 2 * width,
        [data["paper"][n]["gap"] / 100 for n in names],
        width,
        color=_style.color(COLORS["paper"]),
        label="paper (each setting's own model)",
    )
    if data["idealized"] is not None:
        ax.bar(
            x - width,
            [data["idealized"][n]["gap_of_mean_curve"] / 100 for n in names],
            width,
            color=_style.color(COLORS["idealized"]),
            label="idealized flows (mitigations figure)",
        )
    for k, rung in enumerate(ROWS):
        rows = [_row(data, n, rung) for n in names]
        ax.bar(
            x + k * width,
            [r["gap_of_mean_curve"] for r in rows],
            width,
            color=_style.color(COLORS[rung]),
            label=f"{LABELS[rung]}: seed-mean curve",
        )
        per = np.array([r["per_seed_gap"]["mean"] for r in rows])
        lo, hi = np.array([r["per_seed_gap"]["ci95"] for r in rows]).T
        ax.errorbar(
            x + k * width,
            per,
            yerr=np.clip([per - lo, hi - per], 0, None),
            fmt="_",
            ms=10,
            color="k",
            capsize=2,
            label="per-seed gap (mean, bootstrap 95%)" if k == 0 else None,
        )
    ax.set_xticks(x, names)
    ax.set_ylim(0, 1.45)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel("phase gap (max - min accuracy)")
    ax.set_title("phase gap: bars the seed-mean curve's, ticks the per-seed mean")
    ax.legend(fontsize=6, loc="upper center", ncol=2)

    for ax, key, title in (
        (top[1], "mean_accuracy", "mean accuracy (bootstrap 95%)"),
        (
            top[2],
            "per_seed_worst",
            "worst phase: per seed (markers), seed-mean curve (x)",
        ),
    ):
        for k, rung in enumerate(ROWS):
            rows = [_row(data, n, rung) for n in names]
            y = np.array([r[key]["mean"] for r in rows])
            lo, hi = np.array([r[key]["ci95"] for r in rows]).T
            ax.errorbar(
                x + (k - 1) * 0.12,
                y,
                yerr=np.clip([y - lo, hi - y], 0, None),
                fmt=_style.MARKERS[k],
                capsize=2,
                color=_style.color(COLORS[rung]),
                label=LABELS[rung],
            )
            if key == "per_seed_worst":
                ax.scatter(
                    x + (k - 1) * 0.12,
                    [r["worst_of_mean_curve"]["value"] for r in rows],
                    marker="x",
                    color=_style.color(COLORS[rung]),
                )
        ax.set_xticks(x, names)
        ax.set_title(title)
        ax.set_ylim(-0.03, 1.03)
    top[1].scatter(
        [names.index("uniform")] if "uniform" in names else [],
        [data["paper"]["uniform"]["mean_accuracy"] / 100] if "uniform" in names else [],
        marker="*",
        s=80,
        color=_style.color(COLORS["paper"]),
        label="paper: uniform 12.5%",
        zorder=5,
    )
    if data["idealized"] is not None:
        top[1].scatter(
            x,
            [data["idealized"][n]["mean_accuracy"] / 100 for n in names],
            marker="d",
            color=_style.color(COLORS["idealized"]),
            label="idealized flows",
        )
    top[1].set_ylabel("top-1 accuracy")
    top[1].legend(fontsize=6.5)
    w = data["paper_worst"]
    for key, ls in (("compressed", "--"), ("baseline", ":")):
        top[2].axhline(w[key] / 100, color=_style.color(COLORS["paper"]), ls=ls, lw=0.9)
        top[2].text(
            len(names) - 0.5,
            w[key] / 100,
            f"paper W8/S8 {key}: {w[key]}%",
            fontsize=6.5,
            ha="right",
            va="bottom",
        )
    top[2].legend(fontsize=6.5, loc="center left")

    for i, n in enumerate(names):
        ax = fig.add_subplot(bottom_grid[0, i])
        for k, rung in enumerate(ROWS):
            r = _row(data, n, rung)
            y = np.array([c["mean"] for c in r["curve"]])
            lo, hi = np.array([c["ci95"] for c in r["curve"]]).T
            ph = np.arange(y.size)
            ax.errorbar(
                ph + (k - 1) * 0.1,
                y,
                yerr=np.clip([y - lo, hi - y], 0, None),
                fmt=_style.MARKERS[k] + _style.LINESTYLES[k],
                color=_style.color(COLORS[rung]),
                capsize=1.5,
                label=LABELS[rung],
            )
        S = data["paper"][n]["S"]
        ax.set_xticks(range(S), [str(j) for j in range(S - 1)] + [f"{S - 1}\nbdry"])
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("query phase")
        ax.set_title(f"{n}: per-phase accuracy (seed mean, 95%)", fontsize=8)
        if i == 0:
            ax.set_ylabel("top-1 accuracy")
            ax.legend(fontsize=6.5)
    if ladder is not None:
        _draw_ladder(fig, outer[2], ladder, names)
    n_seeds = data["rows"][0]["seeds"]
    fig.suptitle(
        f"The paper's mitigations on trained models ({data['parameters']['task']}; "
        f"{n_seeds} seeds per run)"
    )
    return fig


def _draw_ladder(fig, cell, ladder, names):
    """The ladder's cumulative rungs: the seed-mean gap per setting and Kendall's tau."""
    grid = cell.subgridspec(1, 2, width_ratios=(1.6, 1), wspace=0.2)
    gaps, taus = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    x = np.arange(len(ladder))
    labels = [
        _trained.rung_label(r["rung"]).replace(" (every switch)", "") for r in ladder
    ]
    labels = [t.split(",")[0].split(" (")[0] for t in labels]  # short tick labels
    for k, n in enumerate(names):
        y = np.array([r["gaps"][n]["value"] for r in ladder])
        lo, hi = np.array([r["gaps"][n]["ci95"] for r in ladder]).T
        gaps.errorbar(
            x + (k - (len(names) - 1) / 2) * 0.07,
            y,
            yerr=np.clip([y - lo, hi - y], 0, None),
            fmt=_style.MARKERS[k % len(_style.MARKERS)] + "-",
            color=_style.color(k),
            capsize=1.5,
            lw=0.9,
            label=n,
        )
    gaps.set_xticks(x, labels, rotation=20, ha="right", fontsize=7)
    gaps.set_ylim(-0.03, 1.03)
    gaps.set_ylabel("gap of seed-mean curve")
    gaps.set_title(
        "cumulative ladder (each rung adds a switch): gap per setting (bootstrap 95%)",
        fontsize=8,
    )
    gaps.legend(fontsize=6.5, ncol=len(names), loc="upper right")
    y = np.array([r["ordering"]["tau"] for r in ladder])
    lo, hi = np.array([r["tau_ci95"] for r in ladder]).T
    taus.errorbar(
        x,
        y,
        yerr=np.clip([y - lo, hi - y], 0, None),
        fmt="o-",
        color="k",
        capsize=2,
    )
    for i, r in enumerate(ladder):
        if r["changed"]:
            taus.axvline(i - 0.5, color=_style.color(3), ls=":", lw=0.9)
    taus.axhline(0, color="0.6", lw=0.6)
    taus.set_xticks(x, labels, rotation=20, ha="right", fontsize=7)
    taus.set_ylim(-1.05, 1.05)
    taus.set_ylabel("Kendall tau-a vs paper")
    taus.set_title(
        "order of gaps vs paper's: tau (bootstrap 95%); dotted: order changes",
        fontsize=8,
    )


def _ci_text(m: dict, digits: int = 2, scale: float = 1.0) -> str:
    lo, hi = m["ci95"]
    return f"{scale * m['mean']:.{digits}f} {interval_text(scale * lo, scale * hi, digits)}"


def tables(data: dict) -> list[MeasuredTable]:
    """The mitigation table per setting and rung beside the paper and the idealized figure;
    the orderings; the theorem rung's flow check."""
    names = _settings(data)
    n = data["rows"][0]["seeds"]
    ideal = data["idealized"]
    rows = []
    for name in names:
        p = data["paper"][name]
        paper_acc = p.get("mean_accuracy")
        rows.append(
            [
                name,
                PAPER_MODELS[name],
                f"{p['gap']:g}",
                "",
                "" if paper_acc is None else f"{paper_acc:g}",
                # the reference's own worst phase (the 9.9 of the caption is the 8-KV model's)
                f"{PAPER_TABLE8['reference-42'].worst:g}" if name == "W8/S8" else "",
                "",
                "",
                "",
            ]
        )
        if ideal is not None:
            i = ideal[name]
            rows.append(
                [
                    name,
                    "idealized flows (mitigations)",
                    f"{i['gap_of_mean_curve']:.1f}",
                    f"{i['gap']:.1f}",
                    f"{i['mean_accuracy']:.1f}",
                    "",
                    "",
                    "",
                    "",
                ]
            )
        for rung in ROWS:
            r = _row(data, name, rung)
            w = r["worst_of_mean_curve"]
            rows.append(
                [
                    name,
                    LABELS[rung],
                    f"{100 * r['gap_of_mean_curve']:.1f}",
                    _ci_text(r["per_seed_gap"], 1, 100),
                    _ci_text(r["mean_accuracy"], 1, 100),
                    f"{100 * w['value']:.1f} (phase {w['phase']})",
                    _ci_text(r["per_seed_worst"], 1, 100),
                    _ci_text(r["boundary"], 1, 100),
                    _ci_text(r["loss"], 3),
                ]
            )
    main = MeasuredTable(
        f"Mitigations on trained models, {n} seeds per run, percentages; per-seed values are "
        "means over seeds with bootstrap 95% intervals; the baseline (one run) is grouped by "
        "position mod each setting's S; each paper row is the model it names (its W8/S8 row "
        "the 1-KV-head reference; the 8-KV-head W8/S8 model's worst phase is "
        f"{data['paper_worst']['compressed']}%, its full-attention baseline's "
        f"{data['paper_worst']['baseline']}%).",
        [
            "setting",
            "model",
            "gap of seed-mean curve",
            "per-seed gap",
            "mean accuracy",
            "worst phase of mean curve",
            "per-seed worst phase",
            "boundary phase S-1",
            "loss",
        ],
        rows,
    )
    paper_order = " > ".join(
        next(iter(data["orderings"].values()))["gap_of_mean_curve"]["reference_order"]
    )
    order_rows = []
    # a fixed order: stored data come back with their keys sorted
    for rung in sorted(data["orderings"], key=(*ROWS, "idealized").index):
        for key, v in data["orderings"][rung].items():
            order_rows.append(
                [
                    LABELS.get(rung, "idealized flows (mitigations)"),
                    key.replace("_", " "),
                    " > ".join(v["order"]),
                    f"{v['tau']:.2f} ({v['concordant']} concordant, {v['discordant']} "
                    f"discordant, {v['ties']} tied of {v['pairs']} pairs)",
                    "yes" if v["same"] else "no",
                ]
            )
    orders = MeasuredTable(
        f"Orderings of the settings by phase gap against the paper's ({paper_order}): "
        "Kendall's tau-a over the pairs of settings (ties count in neither).",
        ["model", "gap", "order (largest first)", "Kendall tau vs paper", "same order"],
        order_rows,
    )
    out = [main, orders]
    if "ladder" in data:
        out.append(_ladder_table(data["ladder"], names))
    f = data["flow_check"]
    if f is not None:
        out.append(
            MeasuredTable(
                f"The theorem rung at W8/S8 against the full flow at the same task, sample and "
                f"seeds, t_max = steps * lr = {f['t_max']:g}, delta = {f['delta']:g}.",
                [
                    "flow seeds selected",
                    "same key and value offsets as gradient descent",
                    "trained heads with value = key + 1",
                    "trained key / value mass",
                ],
                [
                    [
                        share_text(f["selected"], f["seeds"]),
                        share_text(f["agrees"], f["seeds"]),
                        share_text(
                            f["trained_value_follows_key"], f["seeds"] * f["heads"]
                        ),
                        f"{f['trained_key_mass']:.3f} / {f['trained_value_mass']:.3f}",
                    ]
                ],
            )
        )
    return out


def _ladder_table(ladder, names) -> MeasuredTable:
    rows = []
    for r in ladder:
        o = r["ordering"]
        rows.append(
            [_trained.rung_label(r["rung"])]
            + [
                f"{100 * r['gaps'][n]['value']:.1f} "
                f"{interval_text(*(100 * np.array(r['gaps'][n]['ci95'])), 1)}"
                for n in names
            ]
            + [
                " > ".join(o["order"]),
                f"{o['tau']:.2f} {interval_text(*r['tau_ci95'])}",
                "yes" if r["changed"] else "no",
            ]
        )
    return MeasuredTable(
        "The relaxation ladder's cumulative rungs (each adds one switch to the one above; "
        "the first is the theorem rung, the last the realistic rung): gap of the seed-mean "
        "accuracy curve per setting (percentage points) and Kendall's tau-a of their order "
        "against the paper's, with bootstrap 95% intervals over seeds (resampled within "
        "each setting); 'order changes' compares with the rung above (ties in the order "
        "are broken by the paper's order of the settings).",
        ["rung"]
        + [f"gap {n}" for n in names]
        + ["order (largest first)", "Kendall tau vs paper", "order changes"],
        rows,
    )


CLAIM = (
    "The paper's mitigation protocol (docs/theory.md §9, §10; the trained model of "
    "docs/trained.md) on exact-geometry tasks of T = L*S = 24 positions, N=48, H=2, beta=4, "
    "gamma=1, kappa=1, every query phase (the boundary phase S-1 included), at W8/S8, W8/S4, "
    "W8/S6, uniform averaging at W8/S8 and W8/S2; 32 seeds per run (quick mode: W8/S8 and "
    "W8/S2, 4 seeds, fewer steps), measured on 64 held-out contexts per seed. Theorem rung: "
    "gradient descent, lr=8, 1000 steps on the full flow's balanced sample (M=48); realistic "
    "rung: every switch of the relaxation ladder (Adam lr=0.01, 400 steps of 16 fresh "
    "contexts, learned embeddings, maps and unembedding d=32, gate bias, exact local branch "
    "w=1, two layers); baseline: the realistic rung with full attention (local branch over "
    "the 23 other positions, uniform entries), one run whose queries are grouped by position "
    "mod each setting's S. Measured: at W8/S8 the theorem rung's keys are hard (mean argmax "
    "mass 0.998) with value = key + 1 in 64/64 heads [0.94, 1], and the full flow at the "
    "same sample and t=8000 ends on the same keys in 32/32 seeds [0.89, 1]; the value gates "
    "stay soft: the trained ones at mean mass 0.77 on key + 1, the flow's below the selection "
    "mass 0.9 (0/32 seeds [0, 0.11] selected; the closest at 0.769, unchanged since "
    "t=6450). "
    "Gap of the seed-mean accuracy curve (percentage points; per-seed gap, mean [bootstrap "
    "95%]): theorem rung W8/S8 37.5 (100 [100, 100]), W8/S4 100, W8/S6 75.0, uniform 0 "
    "(every phase a tie, accuracy 0), W8/S2 100; realistic rung W8/S8 21.1 (24.1 [22.8, "
    "25.4]), W8/S4 38.1 (57.2 [46.9, 67.2]), W8/S6 30.6 (35.7 [33.0, 38.4]), uniform 24.5 "
    "(25.0 [24.1, 25.8]) at mean accuracy 8.6% [8.4, 8.8], W8/S2 0 (every query answered "
    "in 32/32 seeds [0.89, 1]); full attention 0.8-7.8 at mean accuracy 97.9% [97.7, 98.1], "
    "worst phase of the "
    "mean curve 91.8% at W8/S8 against 0.5% for the realistic rung and 0 for the theorem "
    "rung (paper: 9.9% against 58.4%). Against the paper's order (W8/S8 > W8/S4 > W8/S6 > "
    "uniform > W8/S2), Kendall's tau-a of the seed-mean gaps is -0.1 for the theorem rung "
    "and for the idealized flows of the mitigations figure, and 0.4 for the realistic rung, "
    "whose order W8/S4 > W8/S6 > uniform > W8/S8 > W8/S2 agrees but for W8/S8; its W8/S4 "
    "and W8/S6 gaps (38.1, 30.6) are near the paper's (39.8, 31.9), its W8/S8 gap far below "
    "(its mean accuracy there is 13.4% [12.9, 13.9] with two heads for eight phases). "
    "Between these two end rungs, the ladder's cumulative rungs "
    "(32 seeds each; the minibatch rung by gradient descent, 1000 steps; the rest Adam, "
    "400 steps) give tau-a [bootstrap 95% over seeds]: theorem -0.1 [-0.1, -0.1], + minibatch "
    "-0.1 [-0.1, -0.1], + Adam 0.0 [-0.1, 0.2], + approximate geometry 0.2 [0.2, 0.4], + "
    "learned representations 0.6 [0.6, 0.6], + gate bias 0.6 [0.4, 0.6], + exact local "
    "branch 0.6 [0.4, 0.6], + two layers (realistic) 0.4 [0.2, 0.4]. The order moves at more "
    "than one switch: learned embeddings, maps and unembedding put W8/S8 first, as in the "
    "paper (its gap 27.0 against W8/S4's 4.9, W8/S6's 22.3), the exact local branch moves "
    "W8/S6 (38.3) above it, and two layers put W8/S8 (21.1) fourth, where the realistic "
    "rung has it; W8/S2 falls to the smallest gap (0.1) at learned representations and "
    "stays there."
)

FIGURE = Figure(
    "trained_mitigations",
    "The paper's mitigations on trained models, beside its numbers",
    CLAIM,
    compute,
    draw,
    # the end rungs and baseline (about 1000 s) and the ladder's six rungs (about 900 CPU-s)
    cost=1900,
    tables=tables,
)
