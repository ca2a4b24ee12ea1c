"""`inductheory flow`: gradient flow of the linear gate class (Theorem 2), many seeds at once."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._flow_config import SOLVERS, FlowConfig
from .._solution import STATUSES
from .._flow_run import run_flow
from .._io import write_json_atomic, write_npz_atomic
from ._common import add_json_argument, add_task_arguments, format_table, print_json, task_from_args


def register(sub) -> None:
    p = sub.add_parser(
        "flow",
        help="gradient flow of the linear gate class to hard selection (Theorem 2)",
        description="Integrate dc/dt = -grad L(c) (THEORY.md §6) with diffrax for many seeds, vmapped and "
        "sharded over local devices; report per seed the offsets each head selected, the time to "
        "delta-selection and solver statistics, and across seeds the fraction with distinct offsets.",
    )
    add_task_arguments(p)
    add_flow_arguments(p)
    p.add_argument("--seeds", type=int, default=16, help="number of seeds (default 16)")
    p.add_argument("--chunk", type=int, default=None, help="seeds per compiled call (default automatic)")
    p.add_argument("--out", type=Path, default=None, help="directory for flow.npz (trajectories) and flow.json")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    add_json_argument(p)
    p.set_defaults(func=run)


def add_flow_arguments(p) -> None:
    """The FlowConfig options (shared with `inductheory sweep flow`)."""
    f = p.add_argument_group("flow")
    f.add_argument("--dynamics", choices=("reduced", "full"), default="reduced",
                   help="reduced: exact 2HS-dim flow on span(m); full: d-dim flow on a sample (default reduced)")
    f.add_argument("--rho", type=float, default=0.1, help="radius of the ball-uniform c(0) (default 0.1)")
    f.add_argument("--delta", type=float, default=1e-3, help="selection tolerance (default 1e-3)")
    f.add_argument("--t-max", type=float, default=1e6, help="final time (default 1e6)")
    f.add_argument("--M", type=int, default=1024, help="contexts in the sample, full dynamics (default 1024)")
    f.add_argument("--sample", choices=("balanced", "iid"), default="balanced", help="sample kind (default balanced)")
    f.add_argument("--init", choices=("ball", "projected"), default="ball",
                   help="full dynamics: ball-uniform c(0) or its projection on span(m) (default ball)")
    f.add_argument("--batch-size", type=int, default=None, help="contexts per loss batch (default all)")
    s = p.add_argument_group("solver")
    s.add_argument("--solver", choices=tuple(SOLVERS), default="tsit5", help="adaptive solver (default tsit5)")
    s.add_argument("--rtol", type=float, default=1e-8, help="relative tolerance (default 1e-8)")
    s.add_argument("--atol", type=float, default=1e-10, help="absolute tolerance (default 1e-10)")
    s.add_argument("--max-steps", type=int, default=100_000, help="solver step budget (default 100000)")
    s.add_argument("--n-save", type=int, default=64, help="log-spaced save times (default 64)")
    s.add_argument("--t-save-min", type=float, default=1e-2, help="first save time (default 1e-2)")


def flow_config_from_args(args) -> FlowConfig:
    return FlowConfig(
        dynamics=args.dynamics, rho=args.rho, delta=args.delta, t_max=args.t_max, solver=args.solver,
        rtol=args.rtol, atol=args.atol, max_steps=args.max_steps, M=args.M, sample=args.sample, init=args.init,
        batch_size=args.batch_size, n_save=args.n_save, t_save_min=args.t_save_min,
    )


def _none_if_negative(a):
    return [None if int(x) < 0 else int(x) for x in a]


def flow_report(result: dict) -> dict:
    """The JSON summary: every parameter, per-seed outcomes and the across-seed summary."""
    ps = result["per_seed"]
    seeds = []
    for i in range(len(ps["status"])):
        selected = ps["status"][i] == STATUSES.index("selected")
        entry = {
            "seed_index": i,
            "status": STATUSES[int(ps["status"][i])],
            "key_offsets": _none_if_negative(ps["key_offsets"][i]),
            "value_offsets": _none_if_negative(ps["value_offsets"][i]),
            "selected_offsets": _none_if_negative(ps["selected"][i]),
            "t_selection": float(ps["t_final"][i]) if selected else None,
            "t_final": float(ps["t_final"][i]),
            "final_loss": float(ps["final"]["loss"][i]),
            "final_key_mass": ps["final"]["mass"][i][:, 0],
            "final_value_mass": ps["final"]["mass"][i][:, 1],
            "final_worst_key_mass": ps["final"]["worst"][i][:, 0],
            "final_worst_value_mass": ps["final"]["worst"][i][:, 1],
            "num_steps": int(ps["num_steps"][i]),
            "num_accepted_steps": int(ps["num_accepted_steps"][i]),
            "num_rejected_steps": int(ps["num_rejected_steps"][i]),
        }
        if "reduced_selected" in ps:
            entry["reduced_selected_offsets"] = _none_if_negative(ps["reduced_selected"][i])
        seeds.append(entry)
    return {"task": result["task"], "flow": result["config"], "seed": result["seed"], "sample": result["sample"],
            "summary": result["summary"], "seeds": seeds}


def trajectory_arrays(result: dict) -> dict:
    """Arrays for the .npz: trajectories (seeds, times, ...) and final statistics.

    Per head and offset: `key_mass`, `value_mass` (mean over windows), `worst_key_mass`,
    `worst_value_mass` (minimum over windows); `loss`, `static_offsets`, `avg_offsets` (heads, branch),
    `biases`, the times `t` (NaN after the end), and `final_*` at the end time `t_final`."""
    ps = result["per_seed"]
    arrays = {k: v for k, v in ps.items() if k not in ("final", "mass", "worst")}
    arrays.update({f"final_{k}": v for k, v in ps["final"].items()})
    for name, prefix in (("mass", ""), ("worst", "worst_")):
        arrays[f"{prefix}key_mass"], arrays[f"{prefix}value_mass"] = ps[name][..., 0, :], ps[name][..., 1, :]
    return arrays


def run(args) -> int:
    task = task_from_args(args)
    config = flow_config_from_args(args)
    result = run_flow(task, config, args.seeds, seed=args.seed, chunk=args.chunk, progress=not args.quiet)
    report = flow_report(result)
    if args.out is not None:
        write_npz_atomic(args.out / "flow.npz", **trajectory_arrays(result))
        write_json_atomic(args.out / "flow.json", report)
    if args.json:
        print_json(report)
        return 0
    s = result["summary"]
    print(f"task: {result['task']}")
    print(f"flow: {result['config']}")
    if result["sample"]:
        print(f"sample: {result['sample']}")
    rows = [(e["seed_index"], e["status"], e["key_offsets"], e["value_offsets"],
             "-" if e["t_selection"] is None else f"{e['t_selection']:.4g}", e["num_steps"])
            for e in report["seeds"][:32]]
    print(format_table(["seed", "status", "key r", "value r", "t_select", "steps"], rows))
    if len(report["seeds"]) > 32:
        print(f"... {len(report['seeds']) - 32} more seeds (see --json or --out)")
    print(f"statuses: {s['status_counts']}")
    print(f"distinct offsets: {s['distinct_fraction']:.4f} of seeds "
          f"(independent uniform baseline {s['distinct_baseline_independent_uniform']:.4f})")
    hist = np.asarray(s["offset_histogram"])
    print(format_table(["head"] + [f"r={r}" for r in range(hist.shape[1])],
                       [[h] + hist[h].tolist() for h in range(hist.shape[0])]))
    if args.out is not None:
        print(f"wrote {args.out / 'flow.npz'} and {args.out / 'flow.json'}")
    return 0
