"""`inductheory oracle`: Theorem 1 — the global minimizer over the oracle class vs hard selections."""

from __future__ import annotations

import jax
import numpy as np

from .._oracle import OracleMinimizer
from .._oracle_regime import config_dict, oracle_point, regime_map, with_point
from .._progress import Progress
from ._common import add_json_argument, add_task_arguments, format_table, print_json, task_from_args


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"expected comma-separated numbers, got {text!r}") from None


def _ints(text: str) -> list[int]:
    values = _floats(text)
    if any(v != int(v) for v in values):
        raise ValueError(f"expected comma-separated integers, got {text!r}")
    return [int(v) for v in values]


def register(sub) -> None:
    p = sub.add_parser(
        "oracle",
        help="Theorem 1: global minimization over the oracle class, and where hard selection ends",
        description="Minimize one context's loss over the oracle class (multi-start BFGS on softmax logits, "
        "projected-gradient polish), enumerate the hard selections, and report whether the minimizer is a "
        "hard selection with distinct heads (THEORY.md §7, Theorem 1). With --sweep, a regime map over "
        "(eps, beta, N) written point by point to --out (resumable).",
    )
    add_task_arguments(p)
    add_minimizer_arguments(p)
    s = p.add_argument_group("sweep")
    s.add_argument("--sweep", action="store_true", help="regime map over the grids below")
    s.add_argument("--N-grid", type=str, default="64,256,1024,4096,16384", help="vocabulary sizes")
    s.add_argument("--beta-grid", type=str, default="1,2,4,8", help="unembedding scales")
    s.add_argument("--eps-grid", type=str, default=None, help="geometry errors (0 = exact; default: the task's)")
    s.add_argument("--refine", type=int, default=0, help="bisection steps in log N per beta (default 0)")
    s.add_argument("--out", type=str, default=None, help="directory of per-point results (resumable)")
    s.add_argument("--quiet", action="store_true", help="no progress display")
    add_json_argument(p)
    p.set_defaults(func=run)


def add_minimizer_arguments(p) -> None:
    """The OracleMinimizer options and the oracle point's sizes (shared with `inductheory sweep oracle`)."""
    m = p.add_argument_group("minimizer")
    m.add_argument("--restarts", type=int, default=32, help="random starts (default 32)")
    m.add_argument("--steps", type=int, default=300, help="BFGS steps per start and round (default 300)")
    m.add_argument("--polish-steps", type=int, default=300, help="projected-gradient steps per round (default 300)")
    m.add_argument("--rounds", type=int, default=2, help="BFGS + polish rounds (default 2)")
    m.add_argument("--seeds", type=int, default=8, help="best vertices also used as starts (default 8; 0: none)")
    m.add_argument("--delta", type=float, default=1e-3, help="hard-selection tolerance (default 1e-3)")
    m.add_argument("--contexts", type=int, default=None, help="contexts M (default 1 for eps = 0, 8 otherwise)")


def _config(args) -> OracleMinimizer:
    return OracleMinimizer(
        restarts=args.restarts, steps=args.steps, polish_steps=args.polish_steps, rounds=args.rounds, delta=args.delta
    )


def _contexts(args, exact: bool) -> int:
    return args.contexts if args.contexts is not None else (1 if exact else 8)


def run(args) -> int:
    task = task_from_args(args)
    config = _config(args)
    if args.sweep:
        return _run_sweep(args, task, config)
    point = oracle_point(task, jax.random.key(args.seed), config, contexts=_contexts(args, task.exact), seeds=args.seeds)
    if args.json:
        print_json(point)
        return 0
    print(f"task: {task.to_dict()}  realized eps = {point['eps']:.4g}")
    rows = []
    for i, c in enumerate(point["contexts"]):
        rows.append(
            (
                i,
                f"{c['best_loss']:.10f}",
                f"{c['best_vertex_loss']:.10f}",
                f"{c['gap']:.3g}",
                c["hard_selection"],
                c["distinct_heads"],
                f"{c['fw_gap']:.2g}",
                np.asarray(c["offsets"]).tolist(),
            )
        )
    print(format_table(["context", "best loss", "best vertex", "gap", "hard", "distinct", "FW gap", "offsets (H x L)"], rows))
    print(
        f"hard selection: {point['hard_selection']}  distinct heads: {point['distinct_heads']}  "
        f"(share hard {point['share_hard']:.3g}, hard+distinct {point['share_hard_distinct']:.3g})"
    )
    return 0


def _run_sweep(args, task, config) -> int:
    N_grid, beta_grid = _ints(args.N_grid), _floats(args.beta_grid)
    if args.eps_grid is not None:
        if args.d is not None:
            raise ValueError("--eps-grid and --d exclude each other: each grid eps chooses its own dimension d")
        # eps = 0: the exact geometry; eps > 0: an approximate geometry with d chosen for that eps
        tasks = [with_point(task, eps=eps or None, d=None) for eps in _floats(args.eps_grid)]
    else:
        tasks = [task]
    if not tasks or not N_grid or not beta_grid:
        raise ValueError("--N-grid, --beta-grid and --eps-grid must each hold at least one value")
    maps = []
    total = len(tasks) * len(beta_grid) * (len(N_grid) + args.refine)  # refinement may stop early
    with Progress(total, "oracle sweep", enabled=not args.quiet) as bar:
        for t in tasks:
            result = regime_map(
                t, N_grid, beta_grid, seed=args.seed, config=config, contexts=_contexts(args, t.exact),
                seeds=args.seeds, refine=args.refine, directory=args.out,
                on_point=lambda s: bar.update(note=f"N={s['task']['N']} beta={s['task']['beta']} ok={s['ok']}"),
            )
            maps.append({"eps": t.eps or 0.0, "d": t.d, "exact": t.exact, **result})
    if args.json:
        print_json({"task": task.to_dict(), "config": config_dict(config), "maps": maps})
        return 0
    for mp in maps:
        geometry = "exact geometry" if mp["exact"] else f"eps = {mp['eps']}, d = {mp['d'] or 'chosen for eps'}"
        print(f"\n{geometry}: share of contexts whose oracle minimizer is a hard selection (+distinct)")
        share = {(s["task"]["beta"], s["task"]["N"]): s for s in mp["points"]}
        rows = []
        for beta in sorted(beta_grid):
            cells = [f"{share[(beta, N)]['share_hard']:.2f}/{share[(beta, N)]['share_hard_distinct']:.2f}" for N in sorted(N_grid)]
            rows.append([beta] + cells)
        print(format_table(["beta \\ N"] + sorted(N_grid), rows))
        rows = [(b["beta"], b["N_below"], b["N_star"], b["bracketed"]) for b in mp["boundary"]]
        print(format_table(["beta", "fails at N", "hard for N >=", "bracketed"], rows))
        fit = mp["fit"]
        if fit:
            print(f"log N* = {fit['intercept']:.3f} + {fit['slope']:.3f} * beta  ({fit['n']} bracketed betas)")
        else:
            print("log N* vs beta: fewer than 2 bracketed boundaries, no fit")
    return 0

