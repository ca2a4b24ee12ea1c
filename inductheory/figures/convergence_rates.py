"""Convergence rates of the reduced flow (docs/theory.md §6): escape from the uniform point,
then a 1/t tail."""

from __future__ import annotations

import numpy as np

from ..flow import _rates
from ..flow._config import FlowConfig
from . import _runs, _style
from ._figure import Figure

SHAPE = dict(L=8, S=4, H=2, N=4096, gamma=1.0, beta=4.0, kappa=1.0)
# The tail runs stop here (with Newton's root find, much smaller deltas end in solver errors).
TAIL_DELTA = 1e-6
FIT_WINDOW = (2e-6, 1e-4)  # 1 - p(t) fitted in (lo, hi]

CLAIM = (
    "Convergence of the reduced flow (docs/theory.md §6). Reduced flows (exact "
    "geometry, L=8, S=4, H=2, N=4096, beta=4, gamma=1, kappa=1). Tail: 16 seeds for "
    "each "
    "rho in {1e-4, 1e-3, 1e-2, 0.1, 0.5} (quick mode 3 seeds, rho in {1e-3, 0.1}), run "
    "to delta = 1e-6 with 160 "
    "log-spaced saves in [1, 1e9] (quick mode 80); seeds whose solver failed at the "
    "selection event (10 of 80 in "
    "full mode) are left out. The unselected mass 1 - p(t) (largest mass off the final "
    "selection over heads and branches) is fitted on log-log axes over 1 - p in (2e-6, "
    "1e-4]; the exponent "
    "(mean and range over seeds under Measured) is close to -1, and t (1 - p) at the "
    "end is compared with the "
    "coefficient C = max_{h,B} sum_{r'} 1/((kappa + 1/N) S Delta g_{r'}) predicted "
    "from the loss gradient gaps "
    "Delta g at the selected vertex (inductheory.tail_coefficients). Hence the time to "
    "delta-selection is about "
    "C/delta plus the escape time: delta in {1e-2, ..., 1e-6} (64 seeds per delta, rho "
    "= 0.1; quick mode 3 values, "
    "8 seeds), median time x delta / C under Measured. Escape: b = 0 is not a fixed "
    "point (key mass drifts off "
    "offset S-1, value mass off offset 0, equally for all phases), but on the "
    "symmetry-breaking directions the "
    "Jacobian has the closed-form rate lambda (proofs/escape_rate.py); the time at "
    "which the symmetry-breaking "
    "norm of the logits reaches 1 is compared with log(1/rho_eff)/lambda, rho_eff its "
    "initial value (ratio "
    "under Measured). log(1/rho) enters only through this escape time, which is why "
    "the time to selection "
    "hardly depends on rho."
)


def _tail_config(quick: bool, rho: float) -> FlowConfig:
    return FlowConfig(
        dynamics="reduced",
        rho=rho,
        delta=TAIL_DELTA,
        t_max=1e9,
        n_save=80 if quick else 160,
        t_save_min=1.0,
        max_steps=200_000,
    )


def _first_crossing(t, y, level):
    """First time y(t) >= level, log-linear interpolation between saved points (NaN if never)."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    ok = np.isfinite(y) & (t > 0)
    t, y = t[ok], y[ok]
    idx = np.flatnonzero(y >= level)
    if idx.size == 0:
        return float("nan")
    i = idx[0]
    if i == 0:
        return float(t[0])
    w = (level - y[i - 1]) / (y[i] - y[i - 1])
    return float(np.exp(np.log(t[i - 1]) + w * (np.log(t[i]) - np.log(t[i - 1]))))


def compute(quick: bool, cache_dir) -> dict:
    task = _runs.task_of(**SHAPE)
    rates = _rates.reduced_escape_rates(task)
    rhos = [1e-3, 1e-1] if quick else [1e-4, 1e-3, 1e-2, 1e-1, 0.5]
    seeds = 3 if quick else 16
    tails = []
    for rho in rhos:
        run = _runs.flow_runs(
            task, _tail_config(quick, rho), seeds, cache_dir, trajectories=True
        )
        t, mass = np.asarray(run["t"], float), np.asarray(run["mass"], float)
        for i in range(seeds):
            keys = np.asarray(run["key_offsets"][i])
            if run["status"][i] != "selected":
                tails.append({"rho": rho, "seed": i, "status": run["status"][i]})
                continue
            y = _rates.unselected_mass(mass[i], keys)
            slope, _ = _rates.fit_decay_exponent(
                t[i], y, y_min=FIT_WINDOW[0], y_max=FIT_WINDOW[1]
            )
            breaking = _rates.breaking_norm(np.log(mass[i]))
            C = float(_rates.tail_coefficients(task, keys).max())
            last = np.flatnonzero(np.isfinite(y))[-1]
            row = (
                {"t": t[i].tolist(), "unselected": y.tolist()} if i < 3 else {}
            )  # drawn seeds only
            tails.append(
                {
                    "rho": rho,
                    "seed": i,
                    "status": "selected",
                    "key_offsets": keys.tolist(),
                    **row,
                    "exponent": slope,
                    "C_predicted": C,
                    "t_times_unselected_last": float(t[i][last] * y[last]),
                    "t_final": float(run["t_final"][i]),
                    "rho_eff": float(breaking[0]),
                    "escape_measured": _first_crossing(t[i], breaking, 1.0),
                    "escape_predicted": float(_rates.escape_time(task, breaking[0])),
                }
            )
    deltas = [1e-2, 1e-3, 1e-4] if quick else [1e-2, 1e-3, 1e-4, 1e-5, 1e-6]
    d_seeds = 8 if quick else 64
    by_delta = []
    for delta in deltas:
        cfg = FlowConfig(
            dynamics="reduced",
            rho=0.1,
            delta=delta,
            t_max=1e9,
            n_save=8,
            max_steps=200_000,
        )
        run = _runs.flow_runs(task, cfg, d_seeds, cache_dir)
        ok = np.asarray(run["status"]) == "selected"
        tf = np.asarray(run["t_final"], float)[ok]
        C = np.array(
            [
                _rates.tail_coefficients(task, k).max()
                for k in np.asarray(run["key_offsets"])[ok]
            ]
        )
        by_delta.append(
            {
                "delta": delta,
                "selected": int(ok.sum()),
                "seeds": d_seeds,
                "median": float(np.median(tf)),
                "q25": float(np.quantile(tf, 0.25)),
                "q75": float(np.quantile(tf, 0.75)),
                "median_C": float(np.median(C)),
                "median_t_delta_over_C": float(np.median(tf * delta / C)),
            }
        )
    good = [r for r in tails if r["status"] == "selected"]
    ex = np.array([r["exponent"] for r in good])
    ratio_c = np.array([r["t_times_unselected_last"] / r["C_predicted"] for r in good])
    ratio_e = np.array([r["escape_measured"] / r["escape_predicted"] for r in good])
    slope_dt = np.polyfit(
        np.log([r["delta"] for r in by_delta]),
        np.log([r["median"] for r in by_delta]),
        1,
    )[0]
    return {
        "rates": rates,
        "tails": tails,
        "by_delta": by_delta,
        "summary": {
            "exponent_mean": float(ex.mean()),
            "exponent_min": float(ex.min()),
            "exponent_max": float(ex.max()),
            "exponent_std": float(ex.std()),
            "tail_over_C_min": float(ratio_c.min()),
            "tail_over_C_max": float(ratio_c.max()),
            "escape_ratio_median": float(np.median(ratio_e)),
            "escape_ratio_min": float(ratio_e.min()),
            "escape_ratio_max": float(ratio_e.max()),
            "time_vs_delta_slope": float(slope_dt),
            "selected_tails": len(good),
            "tails": len(tails),
        },
        "parameters": {
            "task": "L=8 S=4 H=2 N=4096 beta=4 gamma=1 kappa=1, reduced flow",
            "tail": f"rho in {rhos}, {seeds} seeds each, delta={TAIL_DELTA}, saves in [1, 1e9], "
            f"exponent fitted over 1-p in {FIT_WINDOW}",
            "delta": f"delta in {deltas}, rho=0.1, {d_seeds} seeds each",
        },
        "findings": (
            f"escape rates lambda sym {rates['sym']:.4f}, anti {rates['anti']:.4f}; "
            "exponent of 1-p(t) "
            f"{ex.mean():.4f} (range {ex.min():.4f}..{ex.max():.4f}, "
            f"{len(good)}/{len(tails)} seeds selected); "
            "t(1-p) at the end / predicted C in "
            f"{ratio_c.min():.4f}..{ratio_c.max():.4f}; measured / "
            f"predicted escape time median {np.median(ratio_e):.2f} (range {ratio_e.min():.2f}.."
            f"{ratio_e.max():.2f}); median time to selection vs delta: slope {slope_dt:.3f}, "
            + ", ".join(
                f"delta={r['delta']:g}: {r['median']:.4g} (t delta / C = "
                f"{r['median_t_delta_over_C']:.3f})"
                for r in by_delta
            )
        ),
    }


def draw(data: dict):
    fig, axes = _style.subplots(1, 3, figsize=(15, 4.6))
    tails = [r for r in data["tails"] if r["status"] == "selected"]
    rhos = sorted({r["rho"] for r in tails})
    ax = axes[0]
    for j, rho in enumerate(rhos):
        for k, r in enumerate([r for r in tails if r["rho"] == rho and "t" in r]):
            t, y = (
                np.array(r["t"], dtype=float),
                np.array(r["unselected"], dtype=float),
            )  # JSON null -> nan
            ok = np.isfinite(y) & (t > 0)
            ax.loglog(
                t[ok],
                y[ok],
                color=_style.color(j),
                lw=0.9,
                alpha=0.8,
                label=f"rho={rho:g}" if k == 0 else None,
            )
    C = np.median([r["C_predicted"] for r in tails])
    tt = np.geomspace(1e3, 1e7, 20)
    ax.loglog(tt, C / tt, "k--", lw=1.2, label=f"C/t, C={C:.2f} (vertex gradient gaps)")
    s = data["summary"]
    ax.set_title(
        f"1 - p(t): fitted exponent {s['exponent_mean']:.3f} "
        f"({s['exponent_min']:.3f}..{s['exponent_max']:.3f})"
    )
    ax.set_xlabel("flow time t")
    ax.set_ylabel("1 - p(t), mass off the final selection")
    ax.set_ylim(1e-7, 1.5)
    ax.set_xlim(0.8, 1e8)
    ax.legend(loc="lower left", fontsize=7)
    ax = axes[1]
    for j, rho in enumerate(rhos):
        pts = [
            (np.log(1 / r["rho_eff"]), r["escape_measured"])
            for r in tails
            if r["rho"] == rho
        ]
        ax.plot(
            *zip(*sorted(pts)),
            _style.MARKERS[j % len(_style.MARKERS)],
            color=_style.color(j),
            ms=4,
            ls="none",
            label=f"rho={rho:g}",
        )
    x = np.linspace(0, max(np.log(1 / r["rho_eff"]) for r in tails) * 1.05, 50)
    lam = data["rates"]["rate"]
    ax.plot(x, x / lam, "k--", lw=1.2, label=f"log(1/rho_eff)/lambda, lambda={lam:.4f}")
    ax.set_xlabel("log(1/rho_eff), rho_eff = initial symmetry-breaking norm")
    ax.set_ylabel("time the symmetry-breaking norm reaches 1")
    ax.set_title("escape from the uniform point: measured vs linearized")
    ax.legend(loc="upper left", fontsize=7)
    ax = axes[2]
    rows, d, _ = _style.median_quartiles(
        ax, data["by_delta"], "delta", fmt="o", label="median, quartiles over seeds"
    )
    Cd = np.array([r["median_C"] for r in rows])
    ax.loglog(d, Cd / d, "k--", lw=1.2, label="C/delta (tail prediction)")
    ax.set_xlabel("selection tolerance delta")
    ax.set_ylabel("time to delta-selection")
    ax.set_title(
        f"time to selection ~ C/delta (log-log slope {s['time_vs_delta_slope']:.3f}), rho=0.1"
    )
    ax.legend(loc="upper right", fontsize=7)
    return fig


FIGURE = Figure(
    "convergence_rates",
    "Convergence rates: escape from uniform gates, then a 1/t tail",
    CLAIM,
    compute,
    draw,
    cost=35,
)
