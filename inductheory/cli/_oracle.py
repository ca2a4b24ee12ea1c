"""`inductheory oracle`: Theorem 1 — the global minimizer over the oracle class vs hard
selections."""

from __future__ import annotations

import argparse
import csv
import io

import jax
import numpy as np

from ..experiments._regime import regime_map
from ..internal._io import write_text_atomic
from ..internal._memory import check_memory, oracle_bytes
from ..internal._progress import Progress
from ..model._task import task_with
from ..oracle._minimize import METHODS, OracleMinimizer
from ..oracle._point import config_dict, oracle_point
from ._common import (
    TOKEN_ID_MAX,
    CLIError,
    add_json_argument,
    add_objective_arguments,
    add_task_arguments,
    check_output_dir,
    claim_out,
    float_type,
    format_table,
    int_type,
    list_type,
    objective_from_args,
    print_json,
    require_finite,
    require_token_ids,
    task_from_args,
)
from ._declare import QUIET, TIED, Option, add_options, count, prose, switch

# Sweep options and their defaults (None in the parser, so that giving one without --sweep
# is an error).
SWEEP_DEFAULTS = {
    "N_grid": "64,256,1024,4096,16384",
    "beta_grid": "1,2,4,8",
    "eps_grid": None,
    "refine": 0,
    "out": None,
}
SWEEP_FLAGS = {
    "N_grid": "--N-grid",
    "beta_grid": "--beta-grid",
    "eps_grid": "--eps-grid",
    "refine": "--refine",
    "out": "--out",
}
N_GRID = list_type("--N-grid", "int", 1, TOKEN_ID_MAX)
BETA_GRID = list_type("--beta-grid", "float", 0, low_open=True)
EPS_GRID = list_type("--eps-grid", "float", 0, 1, high_open=True)


HELP = "Theorem 1: global minimization over the oracle class, and where hard selection ends"
DESCRIPTION = prose(
    """
    Minimize one context's loss over the oracle class (multi-start BFGS on softmax
    logits, projected-gradient polish), enumerate the hard selections, and report
    whether the minimizer is a hard selection with distinct heads (docs/theory.md §7,
    Theorem 1). With --sweep, a regime map over (eps, beta, N) written point by point to
    --out (resumable), with summary.txt and summary.csv.
    """
)


def register(sub) -> None:
    p = sub.add_parser("oracle", help=HELP, description=DESCRIPTION)
    add_task_arguments(p)
    add_minimizer_arguments(p)
    s = p.add_argument_group("sweep (each option below needs --sweep)")
    add_options(
        s,
        switch("--sweep", "regime map over the grids below"),
        Option(
            "--N-grid", f"vocabulary sizes (default {SWEEP_DEFAULTS['N_grid']})", N_GRID
        ),
        Option(
            "--beta-grid",
            f"unembedding scales (default {SWEEP_DEFAULTS['beta_grid']})",
            BETA_GRID,
        ),
        Option(
            "--eps-grid", "geometry errors (0 = exact; default: the task's)", EPS_GRID
        ),
        Option(
            "--refine",
            "bisection steps in log N per beta (default 0)",
            int_type("refine", 0, 60),
        ),
        Option(
            "--out",
            "directory of per-point results (resumable) and summary.txt / summary.csv",
            str,
        ),
    )
    add_options(p, QUIET)
    add_json_argument(p)
    p.set_defaults(func=run)


def add_minimizer_arguments(p) -> None:
    """The `OracleMinimizer` options and the point's sizes (shared with `inductheory sweep
    oracle`)."""
    m = p.add_argument_group("minimizer")
    add_options(
        m,
        Option(
            "--method",
            "local method: active-set Newton with the exact Hessian (default), or BFGS on "
            "logits + projected-gradient polish (the independent second method)",
            choices=METHODS,
            default="newton",
        ),
        count("--restarts", 1, 32, "random starts"),
        count(
            "--steps",
            1,
            300,
            "Newton iterations per start, BFGS steps per start and round",
        ),
        count(
            "--polish-steps", 0, 300, "bfgs only: projected-gradient steps per round"
        ),
        TIED,
    )
    add_objective_arguments(m)
    add_options(
        m,
        count("--rounds", 1, 2, "bfgs only: BFGS + polish rounds"),
        Option(
            "--vertex-starts",
            "best hard selections (vertices) also used as starts (default 8; 0: none); "
            "reported as `seeds` in the JSON",
            int_type("vertex-starts", 0),
            8,
        ),
        Option("--seeds", argparse.SUPPRESS, dest="old_seeds"),
        Option(
            "--delta",
            "hard-selection tolerance in (0, 1/2) (default 1e-3)",
            float_type("delta", 0, 0.5, low_open=True, high_open=True),
            1e-3,
        ),
        count("--contexts", 1, None, "contexts M (default 1 for eps = 0, 8 otherwise)"),
    )


def _config(args) -> OracleMinimizer:
    return OracleMinimizer(
        method=args.method,
        restarts=args.restarts,
        steps=args.steps,
        polish_steps=args.polish_steps,
        rounds=args.rounds,
        delta=args.delta,
        tied=args.tied,
        **objective_from_args(args),
    )


def _contexts(args, exact: bool) -> int:
    return args.contexts if args.contexts is not None else (1 if exact else 8)


def _check_memory(args, task) -> None:
    check_memory(
        oracle_bytes(
            N=int(task.N),
            L=task.L,
            S=task.W,
            H=task.H,
            restarts=args.restarts,
            vertex_starts=args.vertex_starts,
            contexts=_contexts(args, task.exact),
            eps=task.eps,
            d=task.d,
            windowed=task.windowed,
            tied=args.tied,
        ),
        f"oracle at N = {task.N}",
    )


def run(args) -> int:
    if args.old_seeds is not None:
        raise CLIError(
            "--seeds was renamed --vertex-starts (flow's --seeds counts flow seeds; here it meant "
            "the number of best vertices used as starts)"
        )
    given = [
        flag for name, flag in SWEEP_FLAGS.items() if getattr(args, name) is not None
    ]
    if not args.sweep and given:
        raise CLIError(
            f"{', '.join(given)} only appl{'ies' if len(given) == 1 else 'y'} with --sweep"
        )
    task = task_from_args(args)
    config = _config(args)
    if args.sweep:
        return _run_sweep(args, task, config)
    require_token_ids(task, "the oracle (sampled contexts)")
    _check_memory(args, task)
    point = oracle_point(
        task,
        jax.random.key(args.seed),
        config,
        contexts=_contexts(args, task.exact),
        seeds=args.vertex_starts,
        progress=not args.quiet,
    )
    require_finite(point.to_dict(), "the oracle point")
    if args.json:
        print_json(point.to_dict())
        return 0
    print(f"task: {task.to_dict()}  realized eps = {point.eps:.4g}")
    rows = []
    for i, c in enumerate(point.contexts):
        rows.append(
            (
                i,
                f"{c.best_loss:.10f}",
                f"{c.best_vertex_loss:.10f}",
                f"{c.gap:.3g}",
                c.hard_selection,
                c.distinct_heads,
                f"{c.fw_gap:.2g}",
                np.asarray(c.offsets).tolist(),
            )
        )
    print(
        format_table(
            [
                "context",
                "best loss",
                "best vertex",
                "gap",
                "hard",
                "distinct",
                "FW gap",
                "offsets (H x L)",
            ],
            rows,
        )
    )
    print(
        f"hard selection: {point.hard_selection}  distinct heads: {point.distinct_heads}  "
        f"(share hard {point.share_hard:.3g}, hard+distinct {point.share_hard_distinct:.3g})"
    )
    return 0


SUMMARY_COLUMNS = (
    "eps",
    "d",
    "beta",
    "N",
    "ok",
    "share_hard",
    "share_hard_distinct",
    "share_beats_vertex",
    "best_loss",
    "best_vertex_loss",
    "gap",
    "max_fw_gap",
    "share_minimizer_failed",
    "eps_realized",
)


def summary_rows(maps) -> list[dict]:
    """One row per computed point of every map (grid order, then refinement), for summary.csv."""
    rows = []
    for mp in maps:
        for s in mp["points"]:
            rows.append(
                {
                    "eps": mp["eps"],
                    "d": s.get("dim") if not mp["exact"] else None,
                    "beta": s["task"]["beta"],
                    "N": s["task"]["N"],
                    "ok": s["ok"],
                    "share_hard": s["share_hard"],
                    "share_hard_distinct": s["share_hard_distinct"],
                    "share_beats_vertex": s["share_beats_vertex"],
                    "best_loss": s["best_loss"],
                    "best_vertex_loss": s["best_vertex_loss"],
                    "gap": s["gap"],
                    "max_fw_gap": s["max_fw_gap"],
                    "share_minimizer_failed": s["share_minimizer_failed"],
                    "eps_realized": s["eps"],
                }
            )
    return rows


def summary_csv(maps) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in summary_rows(maps):
        writer.writerow(
            {
                k: "" if v is None else (repr(v) if isinstance(v, float) else v)
                for k, v in row.items()
            }
        )
    return buf.getvalue()


def summary_text(task, config, maps, N_grid, beta_grid) -> str:
    """The human-readable tables of a sweep (what the console shows), for summary.txt."""
    # the header names the values swept, not the task's own N and beta (and eps), which are not
    swept = {"N": sorted(N_grid), "beta": sorted(beta_grid)}
    if [mp["eps"] for mp in maps] != [task.eps or 0.0]:
        swept["eps"] = [mp["eps"] for mp in maps]
    fixed = {
        k: v
        for k, v in task.to_dict().items()
        if k not in swept and not ("eps" in swept and k == "d")
    }
    lines = [
        f"task: {fixed}",
        "swept: " + "; ".join(f"{k} in {v}" for k, v in swept.items()),
        f"minimizer: {config_dict(config)}",
    ]
    for mp in maps:
        geometry = (
            "exact geometry"
            if mp["exact"]
            else f"eps = {mp['eps']}, d = {mp['d'] or 'chosen for eps'}"
        )
        lines.append(
            f"\n{geometry}: share of contexts whose oracle minimizer is a hard "
            "selection (+distinct)"
        )
        share = {(s["task"]["beta"], s["task"]["N"]): s for s in mp["points"]}
        rows = []
        for beta in sorted(beta_grid):
            points = [share[(beta, N)] for N in sorted(N_grid)]
            cells = [
                f"{p['share_hard']:.2f}/{p['share_hard_distinct']:.2f}" for p in points
            ]
            rows.append([beta] + cells)
        lines.append(format_table(["beta \\ N"] + sorted(N_grid), rows))
        rows = [
            (b["beta"], b["N_below"], b["N_star"], b["bracketed"])
            for b in mp["boundary"]
        ]
        lines.append(
            format_table(["beta", "fails at N", "hard for N >=", "bracketed"], rows)
        )
        fit = mp["fit"]
        if fit:
            lines.append(
                f"log N* = {fit['intercept']:.3f} + {fit['slope']:.3f} * beta  "
                f"({fit['n']} bracketed betas)"
            )
        else:
            lines.append("log N* vs beta: fewer than 2 bracketed boundaries, no fit")
    return "\n".join(lines) + "\n"


def _run_sweep(args, task, config) -> int:
    N_grid = (
        args.N_grid if args.N_grid is not None else N_GRID(SWEEP_DEFAULTS["N_grid"])
    )
    beta_grid = (
        args.beta_grid
        if args.beta_grid is not None
        else BETA_GRID(SWEEP_DEFAULTS["beta_grid"])
    )
    refine = args.refine if args.refine is not None else 0
    out = (
        None if args.out is None else check_output_dir(args.out)
    )  # before any computation
    if args.eps_grid is not None:
        if args.d is not None:
            raise CLIError(
                "--eps-grid and --d exclude each other: each grid eps chooses its own dimension d"
            )
        if not args.eps_grid:
            raise CLIError(
                "--N-grid, --beta-grid and --eps-grid must each hold at least one value"
            )
        # eps = 0: the exact geometry; eps > 0: an approximate geometry with d chosen for that eps
        tasks = [task_with(task, eps=eps or None, d=None) for eps in args.eps_grid]
    else:
        tasks = [task]
    if not N_grid or not beta_grid:
        raise CLIError(
            "--N-grid, --beta-grid and --eps-grid must each hold at least one value"
        )
    # every point's task is valid (N >= L*S, ...) and fits in memory before the first is computed
    for t in tasks:
        for N in N_grid:
            for beta in beta_grid:
                task_with(t, N=N, beta=beta)
        _check_memory(args, task_with(t, N=max(N_grid)))
    claim_out(args, "oracle --sweep")
    maps = []
    total = (
        len(tasks) * len(beta_grid) * (len(N_grid) + refine)
    )  # refinement may stop early
    with Progress(total, "oracle sweep", enabled=not args.quiet) as bar:
        for t in tasks:
            result = regime_map(
                t,
                N_grid,
                beta_grid,
                seed=args.seed,
                config=config,
                contexts=_contexts(args, t.exact),
                seeds=args.vertex_starts,
                refine=refine,
                directory=out,
                on_point=lambda s: bar.update(
                    note=f"N={s.task.N} beta={s.task.beta} ok={s.ok}"
                ),
            )
            maps.append(
                {"eps": t.eps or 0.0, "d": t.d, "exact": t.exact, **result.to_dict()}
            )
    require_finite([p for mp in maps for p in mp["points"]], "the sweep")
    text = summary_text(task, config, maps, N_grid, beta_grid)
    if out is not None:
        write_text_atomic(out / "summary.txt", text)
        write_text_atomic(out / "summary.csv", summary_csv(maps))
    if args.json:
        print_json(
            {"task": task.to_dict(), "config": config_dict(config), "maps": maps}
        )
        return 0
    print(text, end="")
    if out is not None:
        print(
            f"wrote {out / 'summary.txt'} and {out / 'summary.csv'} beside the cached points"
        )
    return 0
