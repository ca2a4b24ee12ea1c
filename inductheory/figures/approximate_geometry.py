"""Approximate geometry (docs/theory.md §3): hard selection of oracle minimizers and full flows as eps grows."""

from __future__ import annotations

import numpy as np

from .._config import welch_bound
from .._flow_config import FlowConfig
from .._oracle import OracleMinimizer
from . import _runs, _style
from ._figure import Figure

SHAPE = dict(L=4, S=3, H=2, N=240, gamma=1.0, beta=4.0, kappa=1.0)

CLAIM = (
    "With eps > 0 (docs/theory.md §3): embeddings x_i = sqrt(kappa) u + v_i with random unit v_i in dimension "
    "d - 1, d in {12, 16, 24, 32, 64, 128, 256, 1024} (quick mode 16, 128); the figure sets d, and eps on the "
    "x axis is the realized coherence max_{i != j} |<v_i, v_j>| of each sample (there is no target eps; the "
    "Welch bound is the smallest eps possible at that d). L=4, S=3, H=2, N=240, beta=4, gamma=1, kappa=1. "
    "Oracle minimizers (6 contexts per d, 16 restarts; quick mode 2 contexts, 8 restarts) and full gradient "
    "flows (8 seeds per d on a balanced sample of N/L contexts, rho=0.1; quick mode 2 seeds) end in hard "
    "selections at small eps (d >= 64, realized eps <= 0.43 for the oracle contexts, <= 0.59 for the flow "
    "samples: every context and seed). At larger eps some contexts and seeds are not hard (lowest share 0.5 of "
    "6 contexts). Distinct heads, which Theorem 1 asks for at eps = 0, fail in some contexts at every eps "
    "measured but the smallest (down to 2 of 6 contexts at eps 0.25). With so few contexts the curves are "
    "not monotone in eps and carry no confidence interval."
)


def compute(quick: bool, cache_dir) -> dict:
    dims = [16, 128] if quick else [12, 16, 24, 32, 64, 128, 256, 1024]
    oracle_config = OracleMinimizer(restarts=8 if quick else 16)
    flow_config = FlowConfig(dynamics="full", rho=0.1, delta=1e-3, t_max=1e6, n_save=4, M=1)
    contexts, seeds = (2, 2) if quick else (6, 8)
    rows = []
    for d in dims:
        task = _runs.task_of(**SHAPE, d=d)
        point = _runs.oracle_point(task, oracle_config, cache_dir, contexts=contexts, seeds=4)
        flow = _runs.flow_runs(task, flow_config, seeds, cache_dir)
        status = np.asarray(flow["status"])
        keys, values = np.asarray(flow["key_offsets"]), np.asarray(flow["value_offsets"])
        hard = (status == "selected") & np.all((keys >= 0) & (values == keys + 1), axis=1)
        rows.append({"d": d, "eps": point["eps"], "flow_eps": flow["sample"]["eps_realized"],
                     "oracle_share_hard": point["share_hard"], "oracle_share_hard_distinct": point["share_hard_distinct"],
                     "flow_share_hard": float(hard.mean()), "flow_statuses": flow["status"]})
    return {
        "rows": rows,
        "parameters": {"task": "L=4 S=3 H=2 N=240 beta=4 gamma=1 kappa=1, approximate geometry through d",
                       "oracle": f"{contexts} contexts, {oracle_config.restarts} restarts",
                       "flow": f"full, rho=0.1, balanced sample of N/L contexts, {seeds} seeds, t_max=1e6"},
        "findings": ", ".join(f"d={r['d']} (eps {r['eps']:.2f}): oracle hard {r['oracle_share_hard']:.2f}, "
                              f"flow hard {r['flow_share_hard']:.2f}" for r in rows),
    }


def draw(data: dict):
    rows = data["rows"]
    fig, axes = _style.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1.5, 1]})
    ax = axes[0]
    series = (("eps", "oracle_share_hard", "oracle minimizer is hard"),
              ("eps", "oracle_share_hard_distinct", "oracle minimizer is hard with distinct heads"),
              ("flow_eps", "flow_share_hard", "full flow ends hard"))
    for i, (x_key, y_key, label) in enumerate(series):
        pts = sorted((r[x_key], r[y_key]) for r in rows)
        ax.plot(*zip(*pts), _style.LINESTYLES[i], marker=_style.MARKERS[i], color=_style.color(i), label=label)
    ax.set_xlabel("realized eps = max_{i != j} |<v_i, v_j>| of the sample")
    ax.set_ylabel("share of contexts (oracle) / seeds (flow)")
    ax.set_ylim(-0.05, 1.12)
    ax.set_title("hard selection under approximate geometry (points sorted by eps)")
    ax.legend(loc="lower left")
    ax = axes[1]
    rows_d = sorted(rows, key=lambda r: r["d"])
    d = np.array([r["d"] for r in rows_d])
    ax.plot(d, [r["eps"] for r in rows_d], "o-", color=_style.color(0), label="realized eps, oracle contexts")
    ax.plot(d, [r["flow_eps"] for r in rows_d], "^--", color=_style.color(2), label="realized eps, flow sample")
    N = SHAPE["N"]
    ax.plot(d, [welch_bound(N, int(x) - 1) for x in d], "k:", label="Welch bound (smallest possible eps)")
    _style.log_ticks(ax, d)
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel("embedding dimension d (set by the figure)")
    ax.set_ylabel("eps")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"realized eps vs d (N={N} tokens)")
    ax.legend(loc="upper right")
    return fig


FIGURE = Figure("approximate_geometry", "Approximate geometry: hard selection as eps grows", CLAIM, compute, draw)
