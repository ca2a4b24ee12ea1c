"""The computations behind each theorem figure (see `_reproduce`). Every expensive call goes
through `_io.cached(cache_dir, params, compute)` so that a rerun with the same parameters reuses it."""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np

from ._config import Task, TheoryAssumptionWarning, quiet_task
from ._flow_config import FlowConfig
from ._solution import STATUSES
from ._flow_run import independent_distinct_baseline, run_flow
from ._gates import shared_gates_from_logits
from ._io import cached
from ._interventions import knockout_phase_accuracy, knockout_phase_losses, rotate_gates
from ._loss import phase_accuracy, phase_gap, phase_losses

_TIMING_KEYS = ("wall_s", "first_chunk_s_including_compile")


task_of = quiet_task  # figures choose settings outside the theorems' assumptions on purpose


def flow_runs(task: Task, config: FlowConfig, seeds: int, cache_dir, *, seed: int = 0, trajectories: bool = False) -> dict:
    """Per-seed outcomes of `run_flow` (and trajectories if asked), cached by every parameter."""
    params = {"kind": "flow", "task": task.to_dict(), "config": config.to_dict(), "seeds": seeds, "seed": seed,
              "trajectories": trajectories}

    def compute():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TheoryAssumptionWarning)
            out = run_flow(task, config, seeds, seed=seed)
        ps = out["per_seed"]
        res = {
            "selected": ps["selected"], "key_offsets": ps["key_offsets"], "value_offsets": ps["value_offsets"],
            "t_final": ps["t_final"], "status": [STATUSES[s] for s in np.asarray(ps["status"])],
            "final_biases": ps["final"]["biases"], "final_loss": ps["final"]["loss"],
            "summary": {k: v for k, v in out["summary"].items() if k not in _TIMING_KEYS},
            "sample": out["sample"],
        }
        if trajectories:
            res.update(t=ps["t"], mass=ps["mass"], static_offsets=ps["static_offsets"],
                       avg_offsets=ps["avg_offsets"], loss=ps["loss"])
        return res

    return cached(cache_dir, params, compute)


# ---------------------------------------------------------------------------------------------
# Theorem 2: trajectories and effective offsets


def _theorem2_setups(quick: bool):
    reduced_task = task_of(L=8, S=4, H=2, N=4096, gamma=1.0, beta=4.0, kappa=1.0)
    full_task = task_of(L=8, S=4, H=2, N=256 if quick else 1024, gamma=1.0, beta=4.0, kappa=1.0)
    reduced = FlowConfig(dynamics="reduced", rho=0.1, delta=1e-3, t_max=1e6, n_save=48)
    full = FlowConfig(dynamics="full", rho=0.1, delta=1e-3, t_max=1e6, n_save=48, M=1)
    return (reduced_task, reduced, 3 if quick else 6), (full_task, full, 2 if quick else 4)


def theorem2_trajectories(quick: bool, cache_dir) -> dict:
    runs = {}
    for label, (task, config, seeds) in zip(("reduced", "full"), _theorem2_setups(quick)):
        r = flow_runs(task, config, seeds, cache_dir, trajectories=True)
        runs[label] = {"task": task.to_dict(), "config": config.to_dict(), "M": r["sample"].get("M"),
                       **{k: r[k] for k in ("t", "mass", "key_offsets", "value_offsets", "t_final", "status", "loss")}}
    selected = {k: int(np.sum(np.asarray(v["status"]) == "selected")) for k, v in runs.items()}
    return {
        "runs": runs,
        "parameters": {k: f"L={v['task']['L']} S={v['task']['S']} H={v['task']['H']} N={v['task']['N']} "
                          f"beta={v['task']['beta']} rho={v['config']['rho']} delta={v['config']['delta']}"
                       + (f" M={v['M']}" if v["M"] else "") for k, v in runs.items()},
        "findings": "; ".join(f"{k}: {selected[k]}/{len(runs[k]['status'])} seeds reached delta-selection with "
                              f"value offset = key offset + 1" for k in runs),
    }


def effective_offsets_figure(quick: bool, cache_dir) -> dict:
    task, config, seeds = _theorem2_setups(quick)[1]
    r = flow_runs(task, config, seeds, cache_dir, trajectories=True)
    static, avg = np.asarray(r["static_offsets"], float), np.asarray(r["avg_offsets"], float)
    last = lambda a: np.array([row[np.isfinite(row[:, 0, 0])][-1] for row in a])  # final saved value per seed
    return {
        "t": r["t"], "static": r["static_offsets"], "avg": r["avg_offsets"], "S": task.S,
        "parameters": {"task": f"L={task.L} S={task.S} H={task.H} N={task.N} beta={task.beta}",
                       "flow": f"full, rho={config.rho}, M={r['sample']['M']} balanced contexts"},
        "findings": f"start (static, avg) ~ ({static[:, 0].mean():.2f}, {avg[:, 0].mean():.2f}) of S={task.S}; "
                    f"end max static {last(static).max():.4f}, max avg {last(avg).max():.4f}: static concentration",
    }


# ---------------------------------------------------------------------------------------------
# Periodic weak spots and coverage


def _converged_gates(run: dict, seed_index: int):
    return shared_gates_from_logits(jnp.asarray(run["final_biases"][seed_index]))


# One reduced-flow configuration and seed count for the weak-spot and coverage runs, so that runs
# shared between figures are computed (and compiled) once.
def _reduced(quick: bool, **changes) -> tuple[FlowConfig, int]:
    params = dict(dynamics="reduced", rho=0.1, delta=1e-3, t_max=1e7, n_save=8, max_steps=200_000)
    return FlowConfig(**{**params, **changes}), (16 if quick else 256)


_BASE = dict(L=8, N=4096, gamma=1.0, beta=4.0, kappa=1.0)


def weak_spots(quick: bool, cache_dir) -> dict:
    shapes = [(1, 4), (2, 4)] if quick else [(1, 4), (2, 4), (3, 4), (2, 6), (3, 6), (3, 8)]
    config, seeds = _reduced(quick)
    shown = 3  # converged models drawn per (H, S)
    models = []
    for H, S in shapes:
        task = task_of(**_BASE, S=S, H=H)
        run = flow_runs(task, config, seeds, cache_dir)
        curves = [np.asarray(phase_accuracy(task, _converged_gates(run, i))).tolist() for i in range(seeds)]
        models.append({"H": H, "S": S, "selected": run["selected"][:shown], "accuracy": curves[:shown],
                       "gap": [float(phase_gap(jnp.asarray(c))) for c in curves]})
    # rotation and knockout on one converged model
    H, S = (2, 4) if quick else (2, 6)
    task = task_of(**_BASE, S=S, H=H)
    run = flow_runs(task, config, seeds, cache_dir)
    gates = _converged_gates(run, 0)
    rotation = {str(d): np.asarray(phase_accuracy(task, rotate_gates(gates, d))).tolist() for d in range(0, S - 1)}
    knockout = {
        "base_loss": np.asarray(phase_losses(task, gates)).tolist(),
        "base_accuracy": np.asarray(phase_accuracy(task, gates)).tolist(),
        "loss": [np.asarray(knockout_phase_losses(task, gates, [h])).tolist() for h in range(H)],
        "accuracy": [np.asarray(knockout_phase_accuracy(task, gates, [h])).tolist() for h in range(H)],
    }
    mean_gap = {f"H={m['H']},S={m['S']}": float(np.mean(m["gap"])) for m in models}
    return {
        "models": models, "rotation": rotation, "rotation_selected": run["selected"][0], "knockout": knockout,
        "parameters": {"task": "L=8 N=4096 beta=4 gamma=1 kappa=1",
                       "flow": f"reduced, rho={config.rho}, delta={config.delta}, {seeds} seeds per (H,S)"},
        "findings": "mean phase gap over seeds " + ", ".join(f"{k}: {v:.2f}" for k, v in mean_gap.items()),
    }


def coverage(quick: bool, cache_dir) -> dict:
    config, seeds = _reduced(quick)
    shapes = [(2, 4), (3, 4)] if quick else [(2, 3), (2, 4), (3, 4), (2, 6), (3, 6), (4, 6), (5, 6)]
    distinct = []
    for H, S in shapes:
        run = flow_runs(task_of(**_BASE, S=S, H=H), config, seeds, cache_dir)
        distinct.append({"H": H, "S": S, "distinct_fraction": run["summary"]["distinct_fraction"],
                         "baseline": independent_distinct_baseline(H, S),
                         "selected_fraction": run["summary"]["selected_fraction"]})
    rhos = [1e-3, 1e-1] if quick else [1e-4, 1e-3, 1e-2, 1e-1, 0.5]
    kappas = [0.5, 1.0, 2.0] if quick else [0.25, 0.5, 1.0, 2.0, 4.0]

    def times(task, cfg):
        t = np.asarray(flow_runs(task, cfg, seeds, cache_dir)["t_final"], float)
        return {"median": float(np.median(t)), "q25": float(np.quantile(t, 0.25)), "q75": float(np.quantile(t, 0.75))}

    base = {**_BASE, "S": 4, "H": 2}
    by_rho = [{"rho": rho, **times(task_of(**base), _reduced(quick, rho=rho)[0])} for rho in rhos]
    by_kappa = [{"kappa": k, **times(task_of(**{**base, "kappa": k}), config)} for k in kappas]
    return {
        "distinct": distinct, "by_rho": by_rho, "by_kappa": by_kappa,
        "parameters": {"task": "L=8 N=4096 beta=4 gamma=1 (S=4 H=2 for the times)",
                       "flow": f"reduced, delta={config.delta}, {seeds} seeds per point"},
        "findings": "distinct fraction vs independent-uniform baseline: "
                    + ", ".join(f"H={d['H']},S={d['S']}: {d['distinct_fraction']:.2f} vs {d['baseline']:.2f}" for d in distinct)
                    + "; median time to selection "
                    + ", ".join(f"rho={r['rho']}: {r['median']:.0f}" for r in by_rho)
                    + "; " + ", ".join(f"kappa={r['kappa']}: {r['median']:.0f}" for r in by_kappa),
    }


# ---------------------------------------------------------------------------------------------
# The two-head toy


def toy_landscape(quick: bool, cache_dir) -> dict:
    from ._toy import ToyConfig, corner_losses, escape_rates, split_advantage, toy_flow, toy_loss

    config = ToyConfig(beta=4.0, gamma=1.0, L=8, K=100.0)
    n = 41 if quick else 101
    grid = np.linspace(0.0, 1.0, n)
    P1, P2 = np.meshgrid(grid, grid, indexing="ij")
    loss = np.asarray(toy_loss(config, jnp.stack([jnp.asarray(P1), jnp.asarray(P2)], axis=-1)))
    starts = [(0.52, 0.50), (0.50, 0.48), (0.45, 0.44), (0.55, 0.57), (0.3, 0.62), (0.7, 0.35), (0.2, 0.25), (0.8, 0.9)]
    ts = np.concatenate([[0.0], np.geomspace(1e-2, 1e5, 60 if quick else 200)])
    trajectories = [np.asarray(toy_flow(config, jnp.asarray(p0), jnp.asarray(ts))).tolist() for p0 in starts]
    same, opposite = corner_losses(config)
    sym, anti = escape_rates(config)
    return {
        "config": config.to_dict(), "grid": grid, "loss": loss, "t": ts, "trajectories": trajectories,
        "corner_same": float(same), "corner_opposite": float(opposite), "split_advantage": float(split_advantage(config)),
        "escape_symmetric": float(sym), "escape_antisymmetric": float(anti),
        "parameters": config.to_dict(),
        "findings": f"corners: same {float(same):.5f}, opposite {float(opposite):.5f}, split advantage "
                    f"{float(split_advantage(config)):.3g}; escape rates at (1/2,1/2): symmetric {float(sym):.4g}, "
                    f"antisymmetric {float(anti):.4g}",
    }


# ---------------------------------------------------------------------------------------------
# Theorem 1: oracle minimizers and the regime map; approximate geometry


def _oracle_point(task: Task, config, cache_dir, *, contexts: int = 1, seeds: int = 8, seed: int = 0) -> dict:
    import jax

    from ._oracle_regime import oracle_point, point_params

    params = point_params(task, config, seed=seed, contexts=contexts, seeds=seeds)
    return cached(cache_dir, params, lambda: oracle_point(task, jax.random.key(seed), config, contexts=contexts, seeds=seeds))


def theorem1_oracle(quick: bool, cache_dir) -> dict:
    from ._oracle import OracleMinimizer
    from ._oracle_regime import regime_map

    config = OracleMinimizer(restarts=8 if quick else 32)
    shape = dict(L=4, S=4, H=2, gamma=1.0, kappa=1.0)
    N_grid = [16, 64, 256] if quick else [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    beta_grid = [6.0, 10.0] if quick else [4.0, 6.0, 8.0, 10.0, 12.0]
    regime = regime_map(task_of(**shape, N=N_grid[-1], beta=beta_grid[0]), N_grid, beta_grid, config=config,
                        directory=cache_dir, refine=0 if quick else 2)
    by_point = {(p["task"]["N"], p["task"]["beta"]): p for p in regime["points"]}
    share = [[by_point[(N, beta)]["share_hard_distinct"] for N in N_grid] for beta in beta_grid]
    examples = {}
    for label, (N, beta) in {"inside": (256, 6.0) if quick else (1024, 4.0), "outside": (16, 10.0) if quick else (16, 8.0)}.items():
        point = _oracle_point(task_of(**shape, N=N, beta=beta), config, cache_dir)  # a grid point: cached
        ctx = point["contexts"][0]
        examples[label] = {"N": N, "beta": beta, "key": ctx["gates"]["key"], "value": ctx["gates"]["value"],
                           "best_loss": point["best_loss"], "best_vertex_loss": point["best_vertex_loss"],
                           "hard_selection": point["hard_selection"], "distinct_heads": point["distinct_heads"]}
    boundary, fit = regime["boundary"], regime["fit"]
    return {
        "examples": examples, "N_grid": N_grid, "beta_grid": beta_grid, "share_hard_distinct": share,
        "gap": [[by_point[(N, beta)]["gap"] for N in N_grid] for beta in beta_grid], "boundary": boundary, "fit": fit,
        "parameters": {"task": "L=4 S=4 H=2 gamma=1 kappa=1, exact geometry",
                       "minimizer": f"{config.restarts} restarts + 8 vertex seeds",
                       "boundary": "smallest grid N from which every larger N is hard with distinct heads"
                                   + ("" if quick else ", refined by 2 bisection steps in log N")},
        "findings": "boundary N*(beta) in (N_below, N*]: "
                    + ", ".join(f"beta={b['beta']}: ({b['N_below']}, {b['N_star']}]" for b in boundary)
                    + (f"; log N* ~ {fit['intercept']:.2f} + {fit['slope']:.3f} beta" if fit else ""),
    }


def approximate_geometry_figure(quick: bool, cache_dir) -> dict:
    from ._oracle import OracleMinimizer

    shape = dict(L=4, S=3, H=2, N=240, gamma=1.0, beta=4.0, kappa=1.0)
    dims = [16, 128] if quick else [12, 16, 24, 32, 64, 128, 256, 1024]
    oracle_config = OracleMinimizer(restarts=8 if quick else 16)
    flow_config = FlowConfig(dynamics="full", rho=0.1, delta=1e-3, t_max=1e6, n_save=4, M=1)
    contexts, seeds = (2, 2) if quick else (6, 8)
    rows = []
    for d in dims:
        task = task_of(**shape, d=d)
        point = _oracle_point(task, oracle_config, cache_dir, contexts=contexts, seeds=4)
        flow = flow_runs(task, flow_config, seeds, cache_dir)
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


def _figures():
    from . import _plots
    from ._reproduce import Figure

    return [
        Figure("theorem2_trajectories", "Theorem 2: gradient flow selects one offset per head",
               "From a small ball-uniform initialization, gradient flow of the linear gate class drives every "
               "head to key mass 1 at some offset r and value mass 1 at r+1, statically for every window; the "
               "reduced (exact, 2HS-dimensional) and full (d-dimensional, Monte-Carlo) dynamics agree.",
               theorem2_trajectories, _plots.plot_theorem2_trajectories),
        Figure("effective_offsets", "The paper's Figure 5a in the idealized model",
               "Along the full flow, both the static and the average effective number of offsets of key and value "
               "gates fall from about S to 1: the concentration is static, not input-dependent.",
               effective_offsets_figure, _plots.plot_effective_offsets),
        Figure("weak_spots", "Periodic weak spots: per-phase accuracy of converged models",
               "A converged model answers exactly the phases its heads selected; with H < S-1 some phases are "
               "always wrong (phase gap 1). Rotating the gates by delta shifts the curve by delta, and knocking "
               "out a head removes exactly its phase.",
               weak_spots, _plots.plot_weak_spots),
        Figure("coverage", "Coverage: do heads split the offsets?",
               "Gradient flow does not enforce complementary coverage: the share of seeds whose heads selected "
               "pairwise distinct offsets stays close to (slightly above) the baseline of independent uniform "
               "choices, so phases stay uncovered. The time to selection is measured against rho (it grows "
               "slowly as rho shrinks) and against kappa (the reduced rate kappa + 1/N sets the time scale).",
               coverage, _plots.plot_coverage),
        Figure("toy_landscape", "The two-head toy: sharpening is fast, splitting is slow",
               "In the two-head toy p = (1/2, 1/2) is a local maximum of the loss, unstable in both the symmetric "
               "and the antisymmetric direction (heads sharpen to corners at rate O(1)); the split "
               "corners beat the same corner only by O(1/K), so flows can end on the same offset.",
               toy_landscape, _plots.plot_toy_landscape),
        Figure("theorem1_oracle", "Theorem 1: the best query-agnostic compressor, and where that stops",
               "For N large relative to the scale beta, every global minimizer over the oracle class is a hard "
               "selection with distinct heads in every block; below a boundary N*(beta) the optimum spreads "
               "mass and beats every vertex. The boundary is measured on a grid (refined by bisection) and "
               "log N* is fitted linearly in beta (slope and intercept in the data).",
               theorem1_oracle, _plots.plot_theorem1_oracle),
        Figure("approximate_geometry", "Approximate geometry: hard selection as eps grows",
               "With eps > 0 (random directions in dimension d, realized eps measured), oracle minimizers and "
               "full gradient flows still end in hard selections for small eps; the figure measures how this "
               "degrades as eps grows.",
               approximate_geometry_figure, _plots.plot_approximate_geometry),
    ]


FIGURES = _figures()
