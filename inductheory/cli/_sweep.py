"""`inductheory sweep {loss,flow,oracle,train,matrix}`: one subcommand's computation over a grid
of parameters (`matrix`: rows of the paper's experiment matrix)."""

from __future__ import annotations

import argparse
import dataclasses
import enum
import itertools
import json
import math
import warnings
from collections.abc import Callable
from typing import Any

from ..experiments._sweep import (
    SWEEP_KINDS,
    AbstractSweepKind,
    FlowSweep,
    LossSweep,
    MatrixSweep,
    OracleSweep,
    PointChecks,
    SweepFailureWarning,
    TrainSweep,
    connect_scheduler,
    matrix_sweep,
    parse_scheduler,
    points_of,
    summary_table,
    sweep,
    sweep_problems,
)
from ..flow._config import Dynamics
from ..internal._io import write_json_atomic
from ..internal._records import OMIT_IF_NONE, Record
from ..model._task import task_with
from ..trained._architecture import Architecture
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    CLIError,
    NonFiniteResult,
    add_cpu_devices_argument,
    add_family,
    add_json_argument,
    add_task_arguments,
    claim_out,
    command_prefix,
    eprint,
    print_json,
    require_token_ids,
    task_from_args,
)
from ._declare import ALLOW_FAILURES, QUIET, Option, add_options, count, output_dir
from ._flow import add_flow_arguments, check_radius_resolution, flow_config_from_args
from ._loss import add_gate_arguments
from ._matrix import REFERENCE_ROW, _size, add_size_arguments, family_options_hint
from ._oracle import _config as minimizer_from_args, add_minimizer_arguments
from ._train import add_train_arguments, configs_from_args, task_of


def _grid_item(text: str) -> tuple[str, list[float]]:
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values.strip():
        raise ValueError(f"--grid expects NAME=V1,V2,..., got {text!r}")
    try:
        parsed = [float(v) for v in values.split(",")]
    except ValueError:
        raise ValueError(
            f"--grid {name}: values must be comma-separated numbers, got {values!r}"
        ) from None
    return name.strip(), parsed


def _add_loss_options(k) -> None:
    add_gate_arguments(k)
    k.set_defaults(seed=None)  # an explicit --seed changes nothing in the closed form


def _refuse_loss_seed(args) -> None:
    if args.seed is not None:
        raise CLIError(
            "--seed changes nothing in a loss sweep (the exact closed form draws nothing)"
        )


def _loss_inputs(args, task) -> dict:
    from ..experiments._sweep import loss_point_bytes
    from ..internal._memory import check_memory
    from ._loss import gates_from_args

    _refuse_loss_seed(args)
    # refused with the estimate before the H x W gates are built (H = 1e8: gigabytes)
    check_memory(loss_point_bytes(task), "sweep loss (one grid point)")
    return {"gates": gates_from_args(args, task)[0]}


def _add_flow_options(k) -> None:
    add_flow_arguments(k)
    add_options(k, count("--seeds", 1, 64, "flow seeds per grid point"), ALLOW_FAILURES)


def _flow_inputs(args, task) -> dict:
    config = flow_config_from_args(args)
    _check_flow_grid(args, task, config)
    return {"config": config, "seeds": args.seeds}


def _check_flow_grid(args, task, config) -> None:
    """The refusals of `inductheory flow` that the library leaves to the command line, at every
    (N, kappa, rho) of the grid: the initial radius against float64 resolution, token ids."""
    grid = dict(_grid_item(item) for item in args.grid)
    if not all(math.isfinite(n) and n == int(n) for n in grid.get("N", [])):
        return  # refused by the library's checks of the grid, with their message
    values = {
        name: grid.get(name, [default])
        for name, default in (
            ("N", int(task.N)),
            ("kappa", float(task.kappa)),
            ("rho", float(config.rho)),
        )
    }
    checks = PointChecks(errors=(ValueError, CLIError))
    if config.dynamics is Dynamics.FULL:
        for n in values["N"]:
            checks.attempt(
                {"N": int(n)} if "N" in grid else {},
                lambda n=n: require_token_ids(
                    task_with(task, N=int(n)), "the full flow (sampled contexts)"
                ),
            )
    for n, kappa in itertools.product(values["N"], values["kappa"]):
        try:
            point_task = task_with(task, N=int(n), kappa=kappa)
        except ValueError:
            continue  # an invalid task is refused by the library's checks, naming the point
        for rho in values["rho"]:
            if not (math.isfinite(rho) and rho > 0):
                continue  # refused by the library's checks, naming the point
            point = {
                k: v
                for k, v in (("N", int(n)), ("kappa", kappa), ("rho", rho))
                if k in grid
            }
            checks.attempt(
                point,
                lambda t=point_task, rho=rho: check_radius_resolution(
                    t, rho, config.dynamics
                ),
            )
    checks.warn()


def _oracle_inputs(args, task) -> dict:
    contexts = args.contexts if args.contexts is not None else (1 if task.exact else 8)
    if args.old_seeds is not None:
        raise ValueError(
            "--seeds is now --vertex-starts (best hard selections also used as starts)"
        )
    return {
        "config": minimizer_from_args(args),
        "contexts": contexts,
        "vertex_starts": args.vertex_starts,
    }


def _add_train_options(k) -> None:
    add_train_arguments(k, geometry=False)  # --eps, --d: the task options' own
    add_options(k, count("--seeds", 1, 16, "seeds trained per grid point"))


def _train_inputs(args, task) -> dict:
    model_config, train_config = configs_from_args(args)
    train_task = task_of(args)  # --d of learned embeddings is not the task's geometry
    require_token_ids(train_task, "train (sampled contexts)")
    if (
        model_config.local_window > train_task.T - 1
    ):  # as `train` says it, before the sweep
        raise CLIError(
            f"--local-window must be <= {train_task.T - 1}, got {model_config.local_window}"
        )
    return {
        "task": train_task,
        "config": (model_config, train_config),
        "seeds": args.seeds,
    }


@dataclasses.dataclass(frozen=True)
class _KindOptions:
    """The command line of one sweep kind: `add(parser)` adds its options, `inputs(args, task)`
    gives its keyword arguments of `sweep`."""

    add: Callable
    inputs: Callable[..., dict]


# Every registered kind (SWEEP_KINDS) needs its command-line options here.
_OPTIONS: dict[type[AbstractSweepKind], _KindOptions] = {
    LossSweep: _KindOptions(_add_loss_options, _loss_inputs),
    FlowSweep: _KindOptions(_add_flow_options, _flow_inputs),
    OracleSweep: _KindOptions(add_minimizer_arguments, _oracle_inputs),
    TrainSweep: _KindOptions(_add_train_options, _train_inputs),
}


def _add_sweep_options(k, kind: type[AbstractSweepKind], *, grid_required: bool):
    g = k.add_argument_group("sweep")
    g.add_argument(
        "--grid",
        action="append",
        required=grid_required,
        default=None if grid_required else [],
        metavar="NAME=V1,V2,...",
        help="values of one parameter (repeat for a cartesian product): "
        + ", ".join(kind.grid_names),
    )
    add_options(
        g,
        count("--block", 1, None, "grid points per compiled call (default automatic)"),
        output_dir("directory: sweep.nc, summary.txt, resumable blocks"),
        Option(
            "--scheduler",
            "Dask distributed scheduler address (needs the 'distributed' extra)",
            scheduler_type,
        ),
        QUIET,
    )
    return g


_MATRIX_SWEEP_DESCRIPTION = (
    "each row a point of a sweep: --grid row=NAME1,NAME2 chooses the rows (row names "
    "separated by commas; quote them, they hold '/' and spaces; default {rows}), --grid "
    "FIELD=V1,V2 crosses them with values of an architecture field (kv_heads, S, gate, tied, "
    "...) or of lr, steps (the stride-2 row trains twice the steps) and overlap_penalty (the "
    "weight of the key gates' overlap penalty). With --out every "
    "finished row is a block (an interrupted sweep "
    "resumes at the first unfinished one); with --scheduler the rows are trained by a Dask "
    "cluster's workers."
)


def _register_matrix(kinds, name: str = "matrix", *, default_row: str | None = None):
    """`sweep matrix` (every row by default), or `sweep train paper` (`default_row`)."""
    k = kinds.add_parser(
        name,
        help=MatrixSweep.description
        if default_row is None
        else "the paper's compressor family over a grid (as `inductheory sweep matrix`, "
        "default the reference row)",
        description=(
            "Train rows of the paper's experiment matrix (as `inductheory matrix`), "
            if default_row is None
            else "Train the paper's compressor family (as `inductheory train paper`), "
        )
        + _MATRIX_SWEEP_DESCRIPTION.format(
            rows="every row of the size"
            if default_row is None
            else f"the reference row {default_row!r}"
        ),
    )
    add_size_arguments(k)
    _add_sweep_options(k, MatrixSweep, grid_required=False)
    add_json_argument(k)
    k.set_defaults(
        func=run_matrix,
        default_row=default_row,
        interrupt_message="interrupted; with --out the finished rows are kept",
    )


# The matrix sweep's grid parameters that take real numbers (the others integers, booleans,
# enum values or row names).
REAL_FIELDS = ("lr", "overlap_penalty")


def _matrix_value(name: str, text: str):
    """One --grid value of a matrix sweep, typed as its parameter (row names as given)."""
    text = text.strip()
    if name == "row":
        return text
    default = next(
        (f.default for f in dataclasses.fields(Architecture) if f.name == name), None
    )
    try:
        if name in REAL_FIELDS:
            return float(text)
        if isinstance(default, bool):
            return {"true": True, "false": False}[text.lower()]
        if isinstance(default, enum.Enum):
            return text  # checked against the enum's values by the sweep
        return int(text)
    except (KeyError, ValueError):
        expected = (
            "true or false"
            if isinstance(default, bool)
            else "numbers"
            if name in REAL_FIELDS
            else "integers"
        )
        raise ValueError(
            f"--grid {name}: values must be {expected}, got {text!r}"
        ) from None


def _matrix_grid(args) -> dict[str, list]:
    grid = {}
    for item in args.grid:
        name, sep, values = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name or not values.strip():
            raise ValueError(f"--grid expects NAME=V1,V2,..., got {item!r}")
        if name not in MatrixSweep.grid_names:
            raise ValueError(
                f"--grid {name}: not swept by a matrix sweep; choose from "
                f"{', '.join(MatrixSweep.grid_names)}"
            )
        if name in grid:
            raise ValueError(f"--grid {name} given twice")
        if (
            name in ("lr", "steps", "vocab", "overlap_penalty")
            and getattr(args, name) is not None
        ):
            raise ValueError(f"--grid {name} and --{name} both given: give one")
        grid[name] = [_matrix_value(name, v) for v in values.split(",")]
    return grid


def scheduler_type(text: str) -> str:
    """argparse `type=` of --scheduler: an address `[scheme://]host:port` (`parse_scheduler`)."""
    try:
        parse_scheduler(text, "scheduler")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text.strip()


scheduler_type.__name__ = "scheduler"


def check_scheduler(args) -> None:
    """With --scheduler: a Dask scheduler answers there, or a one-line refusal naming
    --scheduler (within `SCHEDULER_TIMEOUT_S` or so) before any work."""
    if args.scheduler is not None:
        connect_scheduler(args.scheduler, name="--scheduler").close()


def run_matrix(args) -> int:
    """`inductheory sweep matrix` and `sweep train paper`: `matrix_sweep` of the size and grid
    of the options (`sweep train paper`: the reference row unless the grid names rows)."""
    size = _size(args)
    grid = _matrix_grid(args)
    if args.default_row is not None and "row" not in grid:
        grid = {"row": [args.default_row], **grid}
    check_scheduler(args)
    claim_out(args, "sweep matrix", parameters=False)
    with warnings.catch_warnings():  # said below, in one line with the exit status
        warnings.simplefilter("ignore", SweepFailureWarning)
        ds = matrix_sweep(
            size,
            grid,
            seed=args.seed,
            block=args.block,
            out=args.out,
            scheduler=args.scheduler,
            progress=not args.quiet,
        )
    report = SweepReport.of(ds, _grid_order(ds), kind="matrix", size=size.to_dict())
    return _report(args, ds, report)


def _grid_order(ds) -> list[str]:
    return json.loads(ds.attrs["parameters"])["extra"]["grid_order"]


def register(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="run loss, flow, oracle, train or matrix rows over a grid of parameters "
        "(vectorized, resumable)",
        description="Run one subcommand's computation at every point of a grid (--grid "
        "NAME=V1,V2,... "
        "repeated: the cartesian product), vectorized and compiled once per shape. "
        "Results are an xarray "
        "dataset (--out DIR: sweep.nc, summary.txt and resumable blocks); --json "
        "prints one entry per "
        "grid point with the single-point command's result keys.",
    )
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    for name, kind in SWEEP_KINDS.items():
        if kind is MatrixSweep:  # its template is a matrix size, not a task
            _register_matrix(kinds)
            continue
        options = _OPTIONS[kind]
        k = kinds.add_parser(name, help=kind.description)
        if kind is TrainSweep:
            k.unrecognized_hint = family_options_hint
        add_task_arguments(k)
        options.add(k)
        # `sweep train paper` takes its own --grid: the train kind's is checked by `run`
        g = _add_sweep_options(k, kind, grid_required=kind is not TrainSweep)
        add_cpu_devices_argument(g)
        add_json_argument(k)
        k.set_defaults(func=run, sweep_inputs=options.inputs)
        if kind is TrainSweep:
            _register_matrix(add_family(k, "paper"), "paper", default_row=REFERENCE_ROW)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SweepReport(Record):
    """What `inductheory sweep` reports (`--json`, points.json): the sweep's `kind`, its `task`
    (a `Task`'s dict; the matrix kind: its `size` instead), the `grid` values by dimension,
    every point's results `points` (`points_of`) and the dataset's `attrs` (without its
    parameters)."""

    kind: str
    task: dict[str, Any] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    size: dict[str, Any] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    grid: dict[str, list]
    points: list[dict[str, Any]]
    attrs: dict[str, Any]

    @classmethod
    def of(cls, ds, dims, **setting) -> SweepReport:
        """The report of dataset `ds` over the grid dimensions `dims`; `setting`: `kind` and
        `task` or `size`."""
        return cls(
            **setting,
            grid={d: ds.coords[d].values.tolist() for d in dims},
            points=points_of(ds),
            attrs={k: v for k, v in ds.attrs.items() if k != "parameters"},
        )


def run(args) -> int:
    if not args.grid:  # required (`sweep train`'s is not, for its `paper` family)
        raise ValueError(f"sweep {args.kind} needs --grid NAME=V1,V2,... (see --help)")
    task = task_from_args(args)
    grid = {}
    for item in args.grid:
        name, values = _grid_item(item)
        name = name.replace("-", "_")
        if name in grid:
            raise ValueError(f"--grid {name} given twice")
        grid[name] = values
    kwargs = dict(
        block=args.block,
        out=args.out,
        scheduler=args.scheduler,
        progress=not args.quiet,
        seed=0 if args.seed is None else args.seed,
    )
    check_scheduler(args)
    # its parameters are compared by the sweep's manifest, with the differences named
    claim_out(args, f"sweep {args.kind}", parameters=False)
    inputs = args.sweep_inputs(args, task)
    task = inputs.pop("task", task)  # a kind whose options also set the task's geometry
    with warnings.catch_warnings():  # said below, in one line with the exit status
        warnings.simplefilter("ignore", SweepFailureWarning)
        ds = sweep(args.kind, task, grid, **inputs, **kwargs)
    report = SweepReport.of(ds, grid, kind=args.kind, task=task.to_dict())
    return _report(args, ds, report)


def _report(args, ds, report: SweepReport) -> int:
    """Write points.json (with --out), print the report (--json) or the summary table; the exit
    status of the sweep's problems."""
    if args.out is not None:
        write_json_atomic(args.out / "points.json", report.to_dict())
    if args.json:
        print_json(report.to_dict())
    else:
        print(summary_table(ds))
        if args.out is not None:
            print(
                f"wrote {args.out / 'sweep.nc'}, {args.out / 'summary.txt'} and "
                f"{args.out / 'points.json'}"
            )
    return _exit_status(args, sweep_problems(ds))


def _exit_status(args, problems) -> int:
    """As `inductheory flow`: failed seeds exit 1 unless --allow-failures (then a warning);
    results that are not finite always exit 1. One line on stderr either way."""
    prefix = command_prefix(args)
    allowed = getattr(args, "allow_failures", False)
    if problems.nonfinite:
        raise NonFiniteResult(
            "; ".join(
                t for t in (problems.nonfinite_text(), problems.failure_text()) if t
            )
        )
    if problems.failed:
        eprint(
            f"{prefix}: {'warning' if allowed else 'error'}: {problems.failure_text()}"
            + ("" if allowed else "; pass --allow-failures to accept (exit 0)")
        )
        return EXIT_OK if allowed else EXIT_FAILED
    return EXIT_OK
