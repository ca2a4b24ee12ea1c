"""`inductheory flow`: gradient flow of the linear gate class (Theorem 2), many seeds at once."""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import numpy as np

from ..experiments._flows import (
    FAILURES as FLOW_FAILURES,
    SAMPLE_FIELDS,
    NoSelectionWarning,
    no_selection_message,
    run_flow,
    sample_size,
    seed_chunk,
)
from ..experiments._results import FlowRun
from ..flow._config import (
    DYNAMICS,
    INITS,
    ROOT_FINDERS,
    SAMPLES,
    SOLVERS,
    Dynamics,
    FlowConfig,
)
from ..flow._init import mean_norm_squared
from ..flow._solution import STATUSES
from ..internal._io import write_json_atomic, write_npz_atomic
from ..internal._memory import check_memory, flow_bytes
from ..internal._records import Record
from ._common import (
    EXIT_FAILED,
    CLIError,
    ConfigOption,
    add_config_options,
    add_cpu_devices_argument,
    add_json_argument,
    add_objective_arguments,
    add_task_arguments,
    claim_out,
    config_from_args,
    eprint,
    floats,
    format_table,
    ints,
    objective_from_args,
    print_json,
    require_finite,
    require_token_ids,
    task_from_args,
)
from ._declare import (
    ALLOW_FAILURES,
    QUIET,
    add_options,
    count,
    output_dir,
    prose,
    switch,
)

# The options of `FlowConfig`'s fields, in the order of the help (the objective's: shared with
# the oracle, `add_objective_arguments`); defaults are `FlowConfig`'s own.
FLOW_OPTIONS = (
    ConfigOption(
        "dynamics",
        "reduced: exact 2HS-dim flow on span(m); full: d-dim flow on a sample",
        choices=DYNAMICS,
    ),
    ConfigOption(
        "rho", "radius of the ball-uniform c(0), > 0", floats(0, low_open=True)
    ),
    ConfigOption(
        "delta",
        "selection tolerance in (0, 1/2)",
        floats(0, 0.5, low_open=True, high_open=True),
    ),
    ConfigOption("t_max", "final time", floats(0, low_open=True)),
    ConfigOption(
        "tied",
        "one gate per head for key and value (selection then means key mass >= "
        "1-delta on one offset)",
    ),
)
# Options of the full dynamics only (None in the parser: giving one with the reduced dynamics is
# an error, not silently ignored).
FULL_ONLY = (
    ConfigOption("M", "full dynamics: contexts in the sample", ints(1), unset=True),
    ConfigOption("sample", "full dynamics: sample kind", choices=SAMPLES, unset=True),
    ConfigOption(
        "init",
        "full dynamics: ball-uniform c(0) or its projection on span(m)",
        choices=INITS,
        unset=True,
    ),
    ConfigOption(
        "batch_size",
        "full dynamics: contexts per loss batch (default all)",
        ints(1),
        show_default=False,
        unset=True,
    ),
)
SOLVER_OPTIONS = (
    ConfigOption("solver", "adaptive solver", choices=tuple(SOLVERS)),
    ConfigOption("rtol", "relative tolerance", floats(0, low_open=True)),
    ConfigOption("atol", "absolute tolerance", floats(0, low_open=True)),
    ConfigOption("max_steps", "solver step budget", ints(1)),
    ConfigOption("n_save", "log-spaced save times", ints(1)),
    ConfigOption("t_save_min", "first save time", floats(0, low_open=True)),
    ConfigOption(
        "root_finder",
        "how the selection time is located (default newton; bisection where newton ends in "
        "solver errors, e.g. delta <= 3e-7)",
        choices=tuple(ROOT_FINDERS),
        show_default=False,
    ),
)
# Statuses that are failures of the computation (t_max is an outcome: no selection by t_max).
FAILURES = tuple(s.label for s in FLOW_FAILURES)
# Initial radius vs float64 resolution (see `check_radius_resolution`).
RESOLUTION_REFUSE, RESOLUTION_WARN = 16.0, 1e6


HELP = "gradient flow of the linear gate class to hard selection (Theorem 2)"
DESCRIPTION = prose(
    """
    Integrate dc/dt = -grad L(c) (docs/theory.md §6) with diffrax for many seeds,
    vmapped and sharded over local devices; report per seed the offsets each head
    selected and its status, and across the selected seeds the fraction with distinct
    offsets. Seeds that fail (max_steps, nonfinite, solver_error) make the exit status 1
    unless --allow-failures.
    """
)


def register(sub) -> None:
    p = sub.add_parser("flow", help=HELP, description=DESCRIPTION)
    add_task_arguments(p)
    add_flow_arguments(p)
    add_options(
        p,
        count("--seeds", 1, 16, "number of flow seeds"),
        count("--chunk", 1, None, "seeds per compiled call (default automatic)"),
        output_dir(
            "directory for flow.npz (trajectories) and flow.json (every per-seed detail)"
        ),
        ALLOW_FAILURES,
        switch(
            "--per-seed",
            "with --json: every per-seed detail, not just offsets and status",
        ),
        QUIET,
    )
    add_cpu_devices_argument(p)
    add_json_argument(p)
    p.set_defaults(
        func=run,
        interrupt_message="interrupted; nothing was written (flow writes --out at the end)",
    )


def add_flow_arguments(p) -> None:
    """The options of a `FlowConfig` (shared with `inductheory sweep flow`); see
    `flow_config_from_args`."""
    f = p.add_argument_group("flow")
    add_config_options(f, FlowConfig, FLOW_OPTIONS)
    add_objective_arguments(f)
    add_config_options(f, FlowConfig, FULL_ONLY)
    s = p.add_argument_group("solver")
    add_config_options(s, FlowConfig, SOLVER_OPTIONS)


def flow_config_from_args(args) -> FlowConfig:
    """The `FlowConfig` of parsed `add_flow_arguments` options; full-dynamics-only options
    given with
    the reduced dynamics are an error."""
    given = [o.flag for o in FULL_ONLY if getattr(args, o.name) is not None]
    if Dynamics(args.dynamics) is Dynamics.REDUCED and given:
        raise CLIError(
            f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to --dynamics full only "
            "(the reduced flow is exact: no sample, no init choice)"
        )
    return config_from_args(
        FlowConfig,
        FLOW_OPTIONS + FULL_ONLY + SOLVER_OPTIONS,
        args,
        **objective_options(args),
    )


def objective_options(args) -> dict:
    """The objective's keywords of `FlowConfig` (no `tau` unless the worst phase: the config
    refuses a temperature the mean objective does not have)."""
    options = objective_from_args(args)
    if options["objective"] != "worst-phase":
        del options["tau"]
    return options


def _none_if_negative(a):
    return [None if int(x) < 0 else int(x) for x in a]


@dataclasses.dataclass(frozen=True)
class SeedOutcome(Record):
    """How one seed's flow ended: its `seed_index`, `status` name and `selected_offsets` (per
    head, None where the head selected none)."""

    seed_index: int
    status: str
    selected_offsets: list[int | None]


@dataclasses.dataclass(frozen=True)
class SeedDetails(SeedOutcome):
    """Every detail of one seed's flow: its `SeedOutcome`, then per head the `key_offsets` and
    `value_offsets`; `t_selection` (None unless selected) and `t_final`; at the end the
    `final_loss` and the gate masses (H, S) `final_key_mass`, `final_value_mass` (mean over
    windows) and `final_worst_key_mass`, `final_worst_value_mass` (minimum over windows); the
    solver's `num_steps`, `num_accepted_steps`, `num_rejected_steps`; and
    `reduced_selected_offsets`, the reduced flow's selection from the same start (None where it
    does not apply: reduced flows, approximate geometries)."""

    key_offsets: list[int | None]
    value_offsets: list[int | None]
    t_selection: float | None
    t_final: float
    final_loss: float
    final_key_mass: Any
    final_value_mass: Any
    final_worst_key_mass: Any
    final_worst_value_mass: Any
    num_steps: int
    num_accepted_steps: int
    num_rejected_steps: int
    reduced_selected_offsets: list[int | None] | None


@dataclasses.dataclass(frozen=True)
class FlowReport(Record):
    """What `inductheory flow` reports (`--json`, flow.json): the `task`, the `flow`
    configuration and the first `seed`; the context `sample` and the across-seed `summary` (the
    `FlowRun`'s, with every field of the full flow, None where it does not apply, so both
    dynamics have one schema); and per seed a `SeedOutcome` (compact) or `SeedDetails`."""

    task: dict[str, Any]
    flow: dict[str, Any]
    seed: int
    sample: dict[str, Any]
    summary: dict[str, Any]
    seeds: list[SeedOutcome]

    @classmethod
    def from_dict(cls, data):
        """The report of `to_dict()`, its seeds `SeedDetails` where they hold every detail."""
        seeds = [
            (SeedDetails if "t_final" in s else SeedOutcome).from_dict(s)
            for s in data["seeds"]
        ]
        return dataclasses.replace(
            super().from_dict({**data, "seeds": []}), seeds=seeds
        )


def flow_report(result: FlowRun, per_seed: bool = True) -> FlowReport:
    """The report: every parameter, the across-seed summary and per-seed outcomes.

    `per_seed=False`: per seed a `SeedOutcome`, its index, status name and selected offsets
    (the compact form `--json` prints); `True`: its `SeedDetails` (what flow.json holds and
    `--per-seed` prints). The parameters and the summary are those of `result.to_dict()`.
    """
    out = result.to_dict()
    ps = out["per_seed"]
    seeds = []
    for i in range(len(ps["status"])):
        outcome = SeedOutcome(
            seed_index=i,
            status=STATUSES[int(ps["status"][i])],
            selected_offsets=_none_if_negative(ps["selected"][i]),
        )
        if not per_seed:
            seeds.append(outcome)
            continue
        selected = outcome.status == "selected"
        seeds.append(
            SeedDetails(
                **dataclasses.asdict(outcome),
                key_offsets=_none_if_negative(ps["key_offsets"][i]),
                value_offsets=_none_if_negative(ps["value_offsets"][i]),
                t_selection=float(ps["t_final"][i]) if selected else None,
                t_final=float(ps["t_final"][i]),
                final_loss=float(ps["final"]["loss"][i]),
                final_key_mass=ps["final"]["mass"][i][:, 0],
                final_value_mass=ps["final"]["mass"][i][:, 1],
                final_worst_key_mass=ps["final"]["worst"][i][:, 0],
                final_worst_value_mass=ps["final"]["worst"][i][:, 1],
                num_steps=int(ps["num_steps"][i]),
                num_accepted_steps=int(ps["num_accepted_steps"][i]),
                num_rejected_steps=int(ps["num_rejected_steps"][i]),
                reduced_selected_offsets=(
                    _none_if_negative(ps["reduced_selected"][i])
                    if "reduced_selected" in ps
                    else None
                ),
            )
        )
    # One schema for both dynamics: the full flow's fields are null where they do not apply.
    return FlowReport(
        task=out["task"],
        flow=out["config"],
        seed=out["seed"],
        sample={**dict.fromkeys(SAMPLE_FIELDS), **out["sample"]},
        summary={"same_selection_as_reduced_fraction": None, **out["summary"]},
        seeds=seeds,
    )


def trajectory_arrays(result: FlowRun) -> dict:
    """Arrays for the .npz: trajectories (seeds, times, ...) and final statistics.

    Per head and offset: `key_mass`, `value_mass` (mean over windows), `worst_key_mass`,
    `worst_value_mass` (minimum over windows); `loss`, `static_offsets`, `avg_offsets`
    (heads, branch),
    `biases`, the times `t` (NaN after the end), and `final_*` at the end time `t_final`; `status`
    holds indices into `status_names`, and `result` (diffrax's integer code) is not kept."""
    ps = result.per_seed.to_dict()
    arrays = {
        k: v for k, v in ps.items() if k not in ("final", "mass", "worst", "result")
    }
    arrays.update({f"final_{k}": v for k, v in ps["final"].items()})
    for name, prefix in (("mass", ""), ("worst", "worst_")):
        arrays[f"{prefix}key_mass"], arrays[f"{prefix}value_mass"] = (
            ps[name][..., 0, :],
            ps[name][..., 1, :],
        )
    arrays["status_names"] = np.array(STATUSES)
    return arrays


def initial_score_rms(task, rho: float, dynamics: str) -> float:
    """Root-mean-square size of the initial gate scores that the seeds differ by.

    c(0) is uniform in the ball of radius rho in R^D, D = 2HS * dim, so one coordinate has rms
    rho / sqrt(D + 2). The scores the softmax sees are <c, m> (reduced: |m| = sqrt(kappa + 1/N))
    or <c, x> (full: |x| = sqrt(kappa + 1)); their seed-to-seed spread is that rms times the norm.
    """
    dim = task.N + 1 if task.exact else (task.d or task.N + 1)
    D = 2 * task.H * task.W * dim
    norm = (
        math.sqrt(mean_norm_squared(task))
        if Dynamics(dynamics) is Dynamics.REDUCED
        else math.sqrt(task.kappa + 1.0)
    )
    return rho / math.sqrt(D + 2) * norm


def check_radius_resolution(task, rho: float, dynamics: str) -> None:
    """Refuse (or warn about) an initial radius that float64 cannot resolve.

    Criterion: the gates are softmax(scores) with scores of rms size s = `initial_score_rms` around
    the symmetric point; softmax sees them through exp(s) = 1 + s, and 1 + s == 1 in float64 once
    s < 2^-53. Then every seed starts at the exactly uniform gate, the flow is the same for all of
    them and the "distinct fraction" measures rounding, not the initialization. We refuse when
    s < 16 ulp(1) (the initial gates differ from uniform in at most the last 4 bits: every seed is
    decided by rounding) and warn when s < 1e6 ulp(1) (fewer than ~6 significant digits of the
    initial perturbation survive, so rounding can decide which offset a seed selects).
    """
    ulp = np.finfo(np.float64).eps
    s = initial_score_rms(task, rho, dynamics)
    ratio = s / ulp
    if ratio < RESOLUTION_REFUSE:
        raise CLIError(
            f"--rho {rho} is below float64 resolution: the initial gate scores have rms {s:.3g} "
            f"(< {RESOLUTION_REFUSE:g} x 2^-52 relative to the uniform gate at N = "
            f"{task.N}), so every seed "
            f"starts at the same rounded point; use rho >= {RESOLUTION_REFUSE * ulp / s * rho:.3g}"
        )
    if ratio < RESOLUTION_WARN:
        import warnings

        warnings.warn(
            f"--rho {rho} is close to float64 resolution: the initial gate scores have "
            f"rms {s:.3g}, only "
            f"{math.log10(ratio):.1f} significant digits above rounding; seeds may be "
            "decided by rounding",
            UserWarning,
            stacklevel=2,
        )


def run(args) -> int:
    task = task_from_args(args)
    config = flow_config_from_args(args)
    if args.per_seed and not args.json:
        raise CLIError(
            "--per-seed applies with --json (the table already lists every seed; "
            "flow.json in --out "
            "holds every detail)"
        )
    full = Dynamics(args.dynamics) is Dynamics.FULL
    if full:
        require_token_ids(task, "the full flow (sampled contexts)")
    check_radius_resolution(task, args.rho, args.dynamics)
    chunk = seed_chunk(args.dynamics, args.seeds, args.chunk)
    M = sample_size(task, config) if full and task.N % task.L == 0 else config.M
    check_memory(
        flow_bytes(
            dynamics=args.dynamics,
            N=int(task.N),
            L=task.L,
            S=task.W,
            H=task.H,
            M=M,
            seeds=args.seeds,
            chunk=chunk,
            n_save=args.n_save,
            eps=task.eps,
            d=task.d,
            batch_size=config.batch_size,
        ),
        f"flow ({args.dynamics}, {args.seeds} seeds, {chunk} at once)",
    )
    claim_out(args, "flow")
    with warnings.catch_warnings():  # said below, with the options' names
        warnings.simplefilter("ignore", NoSelectionWarning)
        result = run_flow(
            task,
            config,
            args.seeds,
            seed=args.seed,
            chunk=args.chunk,
            progress=not args.quiet,
        )
    full_report = flow_report(result, per_seed=True)
    if args.out is not None:
        write_npz_atomic(args.out / "flow.npz", **trajectory_arrays(result))
        write_json_atomic(args.out / "flow.json", full_report.to_dict())
    s = result.summary
    if (
        s.selected_seeds
    ):  # with no selected seed the distinct fraction is NaN by definition
        require_finite(s.to_dict(), "the flow summary")
    counts = s.status_counts
    failed = {k: counts[k] for k in FAILURES if counts.get(k)}
    code = 0
    if failed and not args.allow_failures:
        code = EXIT_FAILED
    if args.json:
        print_json(
            (
                full_report if args.per_seed else flow_report(result, per_seed=False)
            ).to_dict()
        )
    else:
        _print_text(args, result, full_report)
    if failed:
        n_failed = sum(failed.values())
        detail = ", ".join(f"{k}: {v}" for k, v in failed.items())
        eprint(
            f"inductheory flow: {'warning' if args.allow_failures else 'error'}: "
            f"{n_failed} of {s.seeds} "
            f"seeds failed ({detail}); the summary covers the {s.selected_seeds} selected seeds"
            + (
                "; Newton's root find of the selection time stalls when selection is "
                "late and delta "
                "small: try --root-finder bisection"
                if failed.get("solver_error") and args.root_finder == "newton"
                else ""
            )
            + (
                ""
                if args.allow_failures
                else "; pass --allow-failures to accept (exit 0)"
            )
        )
    elif s.selected_seeds == 0:
        eprint(
            f"inductheory flow: warning: {no_selection_message(result, options=True)}"
        )
    return code


def _print_text(args, result: FlowRun, report: FlowReport) -> None:
    s = result.summary
    print(f"task: {report.task}")
    print(f"flow: {report.flow}")
    if report.sample:
        print(f"sample: {report.sample}")
    rows = [
        (
            e.seed_index,
            e.status,
            e.key_offsets,
            e.value_offsets,
            "-" if e.t_selection is None else f"{e.t_selection:.4g}",
            e.num_steps,
        )
        for e in report.seeds[:32]
    ]
    print(
        format_table(["seed", "status", "key r", "value r", "t_select", "steps"], rows)
    )
    if len(report.seeds) > 32:
        print(
            f"... {len(report.seeds) - 32} more seeds (see --json --per-seed or --out)"
        )
    print(f"statuses: {s.status_counts}")
    if s.selected_seeds:
        print(
            f"distinct offsets: {s.distinct_fraction:.4f} of the "
            f"{s.selected_seeds} selected seeds "
            f"(of {s.seeds}; independent uniform baseline "
            f"{s.distinct_baseline_independent_uniform:.4f})"
        )
        hist = np.asarray(s.offset_histogram)
        print(
            format_table(
                ["head"] + [f"r={r}" for r in range(hist.shape[1])],
                [[h] + hist[h].tolist() for h in range(hist.shape[0])],
            )
        )
    else:
        print(
            f"distinct offsets: no seed selected (of {s.seeds}): nothing to summarize"
        )
    if args.out is not None:
        print(f"wrote {args.out / 'flow.npz'} and {args.out / 'flow.json'}")
