"""Drawing the theorem figures from their data dicts (matplotlib, no computation here)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt
import numpy as np

from ._oracle_regime import log_boundary

BRANCHES = ("key", "value")


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def plot_theorem2_trajectories(data: dict):
    runs = data["runs"]
    n_seeds = min(3, *(len(r["status"]) for r in runs.values()))
    fig, axes = plt.subplots(2 * len(runs), n_seeds, figsize=(4 * n_seeds, 3.2 * 2 * len(runs)), squeeze=False,
                             sharex=True, sharey=True)
    for row, (label, run) in enumerate(runs.items()):
        t, mass = _arr(run["t"]), _arr(run["mass"])  # (seeds, T), (seeds, T, H, 2, S)
        H, S = mass.shape[2], mass.shape[4]
        for s in range(n_seeds):
            ok = np.isfinite(t[s]) & (t[s] > 0)
            for b, branch in enumerate(BRANCHES):
                ax = axes[2 * row + b, s]
                for h in range(H):
                    for r in range(S):
                        ax.plot(t[s, ok], mass[s, ok, h, b, r], color=f"C{r}", ls=("-", "--", ":", "-.")[h % 4],
                                label=f"head {h}, offset {r}" if s == 0 else None)
                ax.set_xscale("log")
                key, value = run["key_offsets"][s], run["value_offsets"][s]
                ax.set_title(f"{label} seed {s}: {branch} mass\nkey r={key}, value r={value}", fontsize=9)
                ax.set_ylim(-0.02, 1.02)
                if s == 0:
                    ax.set_ylabel(f"{branch} gate mass")
    for ax in axes[-1]:
        ax.set_xlabel("time t (log)")
    axes[0, 0].legend(fontsize=6, ncol=2)
    fig.suptitle("Theorem 2: gate masses per offset and head along gradient flow (color = offset, style = head)")
    fig.tight_layout()
    return fig


def plot_effective_offsets(data: dict):
    static, avg = _arr(data["static"]), _arr(data["avg"])  # (seeds, T, H, 2)
    S = data["S"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), sharex=True, sharey=True)
    for b, (ax, branch) in enumerate(zip(axes, BRANCHES)):
        for s in range(static.shape[0]):
            for h in range(static.shape[2]):
                x, y = static[s, :, h, b], avg[s, :, h, b]
                ok = np.isfinite(x) & np.isfinite(y)
                ax.plot(x[ok], y[ok], "-", color=f"C{h}", alpha=0.7, label=f"head {h}" if s == 0 else None)
                ax.plot(x[ok][0], y[ok][0], "o", color=f"C{h}", ms=4)
                ax.plot(x[ok][-1], y[ok][-1], "*", color=f"C{h}", ms=9)
        ax.plot([1, S], [1, S], "k:", lw=0.8)
        ax.set_xlabel("static effective offsets exp(H(E[alpha]))")
        ax.set_title(f"{branch} gates (o = start, * = end)")
        ax.set_xlim(0.9, S + 0.1)
        ax.set_ylim(0.9, S + 0.1)
    axes[0].set_ylabel("average effective offsets E[exp(H(alpha))]")
    axes[0].legend()
    fig.suptitle("Static vs average effective number of offsets during the full flow (paper's Fig. 5a)")
    fig.tight_layout()
    return fig


def plot_weak_spots(data: dict):
    models = data["models"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    for i, m in enumerate(models):
        acc = _arr(m["accuracy"])
        phases = np.arange(acc.shape[1])
        for s, curve in enumerate(acc[:3]):
            ax.plot(phases + 0.04 * s, curve + 0.03 * i, "o-", color=f"C{i}", alpha=0.8, ms=3,
                    label=f"H={m['H']}, S={m['S']} (mean gap {np.mean(m['gap']):.2f})" if s == 0 else None)
    ax.set_xlabel("query phase r*")
    ax.set_ylabel("top-1 accuracy (curves offset slightly)")
    ax.set_title("converged models: accuracy per phase")
    ax.legend(fontsize=7)
    ax = axes[1]
    for d, curve in data["rotation"].items():
        ax.plot(np.arange(len(curve)), _arr(curve) + 0.03 * int(d), "o-", label=f"delta={d}")
    ax.set_title(f"gate rotation (selected offsets {data['rotation_selected']})")
    ax.set_xlabel("query phase r*")
    ax.legend(fontsize=7)
    ax = axes[2]
    ko = data["knockout"]
    base = _arr(ko["base_loss"])
    width = 0.8 / len(ko["loss"])
    for h, losses in enumerate(ko["loss"]):
        ax.bar(np.arange(len(base)) + h * width, _arr(losses) - base, width, label=f"knock out head {h}")
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xlabel("query phase r*")
    ax.set_ylabel("loss change")
    ax.set_title("mean-ablation of one head")
    ax.legend(fontsize=7)
    fig.suptitle("Periodic weak spots in the idealized model")
    fig.tight_layout()
    return fig


def plot_coverage(data: dict):
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    d = data["distinct"]
    labels = [f"H={x['H']}\nS={x['S']}" for x in d]
    idx = np.arange(len(d))
    axes[0].bar(idx - 0.2, [x["distinct_fraction"] for x in d], 0.4, label="gradient flow")
    axes[0].bar(idx + 0.2, [x["baseline"] for x in d], 0.4, label="independent uniform choices")
    axes[0].set_xticks(idx, labels)
    axes[0].set_ylabel("share of seeds with distinct offsets")
    axes[0].legend(fontsize=8)
    axes[0].set_title("heads need not split the offsets")
    for ax, rows, key, xlabel in ((axes[1], data["by_rho"], "rho", "init radius rho"),
                                  (axes[2], data["by_kappa"], "kappa", "kappa")):
        x = [r[key] for r in rows]
        med = np.array([r["median"] for r in rows])
        err = np.array([[r["median"] - r["q25"] for r in rows], [r["q75"] - r["median"] for r in rows]])
        ax.errorbar(x, med, yerr=err, fmt="o-", capsize=3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("time to delta-selection (median, IQR)")
        ax.set_title(f"time to selection vs {key}")
    fig.tight_layout()
    return fig


def plot_toy_landscape(data: dict):
    grid, loss = _arr(data["grid"]), _arr(data["loss"])
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    cs = ax.contourf(grid, grid, loss.T, levels=30, cmap="viridis")
    fig.colorbar(cs, ax=ax, label="toy loss")
    for i, traj in enumerate(data["trajectories"]):
        traj = _arr(traj)
        ax.plot(traj[:, 0], traj[:, 1], "w-", lw=1.2)
        ax.plot(traj[0, 0], traj[0, 1], "wo", ms=3)
        ax.plot(traj[-1, 0], traj[-1, 1], "r*", ms=9)
    for (x, y), label in (((1, 1), "same"), ((0, 0), "same"), ((1, 0), "opposite"), ((0, 1), "opposite")):
        value = data["corner_same"] if label == "same" else data["corner_opposite"]
        ax.annotate(f"{label}\n{value:.4f}", (x, y), xytext=(0.5 + 0.38 * (2 * x - 1), 0.5 + 0.42 * (2 * y - 1)),
                    color="w", ha="center", fontsize=8)
    for (dx, dy), rate, name in (((1, 1), data["escape_symmetric"], "sym"), ((1, -1), data["escape_antisymmetric"], "anti")):
        ax.annotate("", xy=(0.5 + 0.15 * dx, 0.5 + 0.15 * dy), xytext=(0.5, 0.5),
                    arrowprops=dict(arrowstyle="->", color="orange", lw=2))
        ax.text(0.5 + 0.17 * dx, 0.5 + 0.17 * dy, f"{name} rate\n{rate:.3g}", color="orange", fontsize=8)
    c = data["config"]
    ax.set_xlabel("p1 (head 1 key weight on offset 0)")
    ax.set_ylabel("p2 (head 2 key weight on offset 0)")
    ax.set_title(f"two-head toy, beta={c['beta']} gamma={c['gamma']} L={c['L']} K={c['K']}\n"
                 f"split advantage {data['split_advantage']:.3g}")
    fig.tight_layout()
    return fig


def plot_theorem1_oracle(data: dict):
    fig = plt.figure(figsize=(15, 7.5))
    grid = fig.add_gridspec(2, 3, width_ratios=[1, 1, 1.25])
    for col, (label, ex) in enumerate(data["examples"].items()):
        for row, branch in enumerate(BRANCHES):
            ax = fig.add_subplot(grid[row, col])
            p = _arr(ex[branch])  # (H, L, S)
            H, L, S = p.shape
            ax.imshow(p.reshape(H * L, S), vmin=0, vmax=1, cmap="magma", aspect="auto")
            ax.set_yticks(range(H * L), [f"h{h} l{l}" for h in range(H) for l in range(L)], fontsize=6)
            ax.set_xticks(range(S))
            ax.set_xlabel("offset r")
            ax.set_title(f"{label}: N={ex['N']} beta={ex['beta']} {branch} gates\n"
                         f"hard={ex['hard_selection']} distinct={ex['distinct_heads']}", fontsize=9)
    ax = fig.add_subplot(grid[:, 2])
    share = _arr(data["share_hard_distinct"])
    N_grid, beta_grid = data["N_grid"], data["beta_grid"]
    im = ax.imshow(share, origin="lower", aspect="auto", cmap="RdYlGn", vmin=0, vmax=1,
                   extent=(-0.5, len(N_grid) - 0.5, -0.5, len(beta_grid) - 0.5))
    ax.set_xticks(range(len(N_grid)), [str(n) for n in N_grid], rotation=45)
    ax.set_yticks(range(len(beta_grid)), [str(b) for b in beta_grid])
    # boundary at the geometric middle of its bracket (N_below, N*], in grid-index coordinates
    logs, idx = np.log(N_grid), np.arange(len(N_grid))
    xs, ys = [], []
    for i, b in enumerate(data["boundary"]):
        if b["N_star"] is not None:
            mid = log_boundary(b)
            xs.append(float(np.interp(mid, logs, idx)) - (0.5 if b["N_below"] is None else 0.0))
            ys.append(i)
    ax.plot(xs, ys, "ko-", lw=2)
    fig.colorbar(im, ax=ax, label="minimizer is hard with distinct heads")
    fit = data.get("fit")
    ax.set_title("regime map; black: boundary N*(beta)" + (f"\nlog N* ~ {fit['intercept']:.2f} + {fit['slope']:.3f} beta" if fit else ""))
    ax.set_xlabel("N")
    ax.set_ylabel("beta")
    fig.tight_layout()
    return fig


def plot_approximate_geometry(data: dict):
    rows = data["rows"]
    eps = [r["eps"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(eps, [r["oracle_share_hard"] for r in rows], "o-", label="oracle minimizer hard")
    ax.plot(eps, [r["oracle_share_hard_distinct"] for r in rows], "s--", label="oracle minimizer hard, distinct heads")
    ax.plot([r["flow_eps"] for r in rows], [r["flow_share_hard"] for r in rows], "^-", label="full flow ends hard")
    for r in rows:
        ax.annotate(f"d={r['d']}", (r["eps"], r["oracle_share_hard"]), textcoords="offset points", xytext=(0, 6), fontsize=7)
    ax.set_xlabel("realized eps")
    ax.set_ylabel("share")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=8)
    ax.set_title("hard selection under approximate geometry")
    fig.tight_layout()
    return fig
