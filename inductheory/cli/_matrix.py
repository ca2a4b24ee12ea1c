"""`inductheory matrix`: rows of the paper's experiment matrix (the paper's compressor family and
full-attention baselines on the retrieval task), or any architecture of the family, trained from
many seeds and measured per phase."""

from __future__ import annotations

import argparse
import dataclasses
import enum

from ..experiments._ceilings import architecture_coverage, retrieval_ceilings
from ..experiments._paper_matrix import (
    FULL_SIZE,
    MATRIX,
    PAPER_TABLE8,
    QUICK_SIZE,
    REFERENCE,
    MatrixRow,
    MatrixSize,
    changed_row,
    matrix_row,
    matrix_row_result,
    run_row,
)
from ..trained._architecture import Architecture
from ..trained._config import TrainConfig
from ._common import (
    add_family,
    add_json_argument,
    claim_out,
    float_type,
    format_table,
    int_type,
    option_flag,
    output_dir_type,
    print_json,
)
from ._training_options import TRAIN_OPTIONS

# `inductheory train paper` trains this row unless --rows says otherwise
REFERENCE_ROW = next(r.name for r in MATRIX if not r.changes)


def add_architecture_arguments(parser) -> None:
    """One option per field of `Architecture`, typed from the field's default (enums take their
    values, booleans `--x/--no-x`); every default None, so that a row's own setting stands
    unless an option changes it."""
    group = parser.add_argument_group(
        "architecture (changes from the row; default: the row's own)"
    )
    for f in dataclasses.fields(Architecture):
        default = f.default  # the class's default: its type gives the option's
        ref = getattr(REFERENCE, f.name)
        help_ = f"(reference row: {ref.value if isinstance(ref, enum.Enum) else ref})"
        if isinstance(default, bool):
            group.add_argument(
                option_flag(f.name),
                action=argparse.BooleanOptionalAction,
                default=None,
                help=help_,
            )
        elif isinstance(default, enum.Enum):
            group.add_argument(
                option_flag(f.name),
                choices=[m.value for m in type(default)],
                default=None,
                help=help_,
            )
        else:
            group.add_argument(
                option_flag(f.name),
                type=int_type(f.name, 0 if f.name == "local_window" else 1),
                default=None,
                help=help_,
            )


def family_options_hint(extras: list[str]) -> str:
    """For a command that does not train the paper's family (`train`, `sweep train`): where
    the options among `extras` (arguments the command does not take) that are the family's
    architecture options are taken ("" if none is)."""
    names = {option_flag(f.name) for f in dataclasses.fields(Architecture)}
    names |= {"--no-" + n[2:] for n in names}
    found = [e.split("=")[0] for e in extras if e.split("=")[0] in names]
    if not found:
        return ""
    return (
        f"; {', '.join(found)}: the paper's compressor family, trained by "
        "`inductheory train paper` (as `inductheory matrix`: a row and its changes) and "
        "`inductheory sweep train paper` (as `inductheory sweep matrix`)"
    )


def architecture_changes(args) -> dict:
    """The `Architecture` fields the options set (None: left to the row)."""
    return {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(Architecture)
        if getattr(args, f.name, None) is not None
    }


_MATRIX_DESCRIPTION = (
    "Train rows of the paper's experiment matrix (full attention with 1 and 8 KV heads, the "
    "W8/S8 reference with 1-8 KV heads, overlapping windows, uniform averaging, the "
    "DeepSeek-style kernel, one compressor switch at a time) from many seeds, and print per "
    "row the held-out loss, mean accuracy, worst phase, gap and boundary phase beside the "
    "paper's row and the model it comes from. Options of the architecture change the chosen "
    "rows; with --out every finished row is kept and an interrupted run resumes at its first "
    "unfinished row."
)


def register(sub) -> None:
    p = sub.add_parser(
        "matrix",
        help="the paper's compressor family and table 8 trained on the retrieval task",
        description=_MATRIX_DESCRIPTION,
    )
    _add_matrix_options(p, default_rows="all")


def register_family(train_parser) -> None:
    """`inductheory train paper`: the paper's compressor family trained like `inductheory
    matrix`, the reference row (W8/S8, 1 KV head) unless --rows says otherwise, so that every
    architecture option of the family (--kv-heads, --q-heads, --payload, --gate, --layers,
    --tied, ...) is a switch of `train`."""
    p = add_family(train_parser, "paper").add_parser(
        "paper",
        help="the paper's compressor family (as `inductheory matrix`, default the "
        "reference row)",
        description="Train one architecture of the paper's compressor family on the "
        "retrieval task from many seeds: the W8/S8 reference with 1 KV head (--rows: "
        "another row of `inductheory matrix --list`), changed by the architecture options "
        "(e.g. --payload shared, --gate vector, --no-position-bias, --tied, --layers 3, "
        "--attention full; every option after `paper`), and print its held-out loss, mean "
        "accuracy, worst phase, gap and boundary phase; with --out a finished row is kept "
        "and a second run reads it.",
    )
    _add_matrix_options(p, default_rows=REFERENCE_ROW)


# What the optimizer's options of `train` (`TRAIN_OPTIONS`: their types and ranges) set in a
# matrix size, where the schedule is the warm-up cosine and the optimizer AdamW.
_SIZE_HELP = {
    "lr": "peak learning rate, > 0",
    "steps": "optimizer steps (the stride-2 row trains twice as many)",
    "warmup": "fraction of the steps of linear warm-up, in [0, 1)",
    "betas": "AdamW's moment decays b1,b2 in [0, 1)",
    "weight_decay": "AdamW's decoupled weight decay, >= 0",
}
# The coordination term's weight (a `TrainConfig` field of the paper's transformers only).
OVERLAP_HELP = (
    "weight >= 0 of the overlap penalty between the key gates of every compressed layer and "
    "KV head, added to the loss (0: none, today's training)"
)
# The `TrainConfig` fields of a `MatrixSize` that options change.
SIZE_TRAIN_OPTIONS = ("batch", *_SIZE_HELP, "overlap_penalty")


def add_size_arguments(p) -> None:
    """The options of a `MatrixSize` (read by `_size`) and the base seed: the optimizer's are
    `train`'s (`TRAIN_OPTIONS`), left unset so that the size's values stand."""
    p.add_argument(
        "--quick", action="store_true", help="the quick size (few steps and seeds)"
    )
    p.add_argument(
        "--seeds",
        type=int_type("seeds", 1),
        default=None,
        help=f"seeds per row (default: the size's, {_size_value('seeds')})",
    )
    p.add_argument(
        "--vocab",
        type=int_type("vocab", 2),
        default=None,
        metavar="V",
        help="draw the context's tokens with replacement from V of the task's "
        f"N = {FULL_SIZE.task.N} symbols, 2 <= V <= N (default: T distinct tokens)",
    )
    p.add_argument(
        "--keys",
        type=int_type("keys", 1),
        default=None,
        metavar="K",
        help="with --vocab: a language-model-like stream in which the symbols 0..K-1 are "
        "keys followed by a uniform value (retrieval queries, scored apart) and every other "
        "symbol by its fixed bigram successor (local targets), 1 <= K < V (default: none)",
    )
    p.add_argument(
        "--batch",
        type=int_type("batch", 1),
        default=None,
        help=f"fresh contexts per step (default: the size's, {_size_value('batch')})",
    )
    for option in TRAIN_OPTIONS:
        if option.name in _SIZE_HELP:
            help = f"{_SIZE_HELP[option.name]} (default: the size's, {_size_value(option.name)})"
            replaced = dataclasses.replace(
                option, help=help, show_default=False, unset=True
            )
            replaced.add(p, TrainConfig)
    p.add_argument(
        "--overlap-penalty",
        type=float_type("overlap-penalty", 0),
        default=None,
        metavar="LAMBDA",
        help=f"{OVERLAP_HELP} (default: 0)",
    )
    p.add_argument("--seed", type=int_type("seed", 0), default=0, help="base seed")


def _size_value(name: str) -> str:
    """The full and quick sizes' value of `name` (`seeds` or a `TrainConfig` field)."""
    full, quick = (
        getattr(size if name == "seeds" else size.train, name)
        for size in (FULL_SIZE, QUICK_SIZE)
    )
    shown = lambda v: ",".join(map(str, v)) if isinstance(v, tuple) else str(v)
    return shown(full) + ("" if quick == full else f"; --quick {shown(quick)}")


def _add_matrix_options(p, *, default_rows: str) -> None:
    p.add_argument(
        "--rows",
        default=default_rows,
        help=f"comma-separated row names, or 'all' (default {default_rows!r}); --list "
        "shows them",
    )
    p.add_argument("--list", action="store_true", help="list the rows and exit")
    add_size_arguments(p)
    add_architecture_arguments(p)
    p.add_argument(
        "--out",
        type=output_dir_type,
        default=None,
        help="directory keeping every finished row (resume)",
    )
    p.add_argument(
        "--export-gates",
        default=None,
        metavar="FILE.safetensors",
        help="train one row with learned gates (not from --out's cache) and write every "
        "seed's gate parameterization and its inputs on held-out windows to FILE, for "
        "`inductheory gates FILE --paper`",
    )
    p.add_argument("--quiet", action="store_true", help="no progress display")
    add_json_argument(p)
    p.set_defaults(
        func=run,
        interrupt_message="interrupted; with --out the finished rows are kept",
    )


def _size(args) -> MatrixSize:
    size = QUICK_SIZE if args.quick else FULL_SIZE
    train = {
        k: getattr(args, k) for k in SIZE_TRAIN_OPTIONS if getattr(args, k) is not None
    }
    if train:
        size = dataclasses.replace(size, train=dataclasses.replace(size.train, **train))
    if args.seeds is not None:
        size = dataclasses.replace(size, seeds=args.seeds)
    if args.keys is not None and args.vocab is None:
        raise ValueError("--keys needs --vocab (the stream draws its symbols from V)")
    if args.vocab is not None:  # refused here, before any work, where V > N or K >= V
        task = dataclasses.replace(size.task, vocab=args.vocab, keys=args.keys)
        size = dataclasses.replace(size, task=task)
    return size


def _rows(args, size: MatrixSize) -> list[MatrixRow]:
    """The chosen rows, changed by the architecture options: a changed row that is a row of the
    matrix is that row (with its paper row); any other is another model, named by what it
    changes and without the paper's row."""
    if args.rows.strip() == "all":
        rows = list(MATRIX)
    else:
        rows = [matrix_row(name.strip()) for name in args.rows.split(",")]
    changes = architecture_changes(args)
    if not changes:
        return rows
    return [changed_row(r, changes, size.reference) for r in rows]


def _check_export(path: str, rows, size) -> None:
    """One-line refusals before training: one row, with learned gates, a writable
    .safetensors path."""
    import os
    from pathlib import Path

    if len(rows) != 1:
        raise ValueError(
            f"--export-gates needs exactly one row (--rows NAME), got {len(rows)}"
        )
    if not rows[0].architecture(size.reference).learned_gates:
        raise ValueError(
            f"--export-gates needs a row with learned gates, not {rows[0].name!r}"
        )
    target = Path(path)
    if target.suffix != ".safetensors":
        raise ValueError(f"--export-gates must name a .safetensors file, got {path!r}")
    if target.is_dir() or not target.parent.is_dir():
        raise ValueError(
            f"--export-gates must be a file in an existing directory, got {path!r}"
        )
    if not os.access(target.parent, os.W_OK):
        raise ValueError(f"--export-gates: cannot write in {str(target.parent)!r}")


def check_training_memory(row: MatrixRow, size: MatrixSize) -> None:
    """A one-line `MemoryError` (the estimate and the limit) where training `row` at `size`
    (`training_bytes`: its batch, heads, seeds) cannot fit, before any row trains."""
    from ..internal._memory import check_memory
    from ..trained._transformer_train import training_bytes

    arch = row.architecture(size.reference)
    check_memory(
        training_bytes(size.task, arch, size.train, size.seeds),
        f"training {size.seeds} seeds of {row.name!r}",
    )


def run(args) -> int:
    if args.list:
        for r in MATRIX:
            paper = PAPER_TABLE8[r.paper].model if r.paper else "-"
            changes = ", ".join(f"{k}={v}" for k, v in r.changes.items()) or "none"
            print(f"{r.name}\n    changes: {changes}; paper: {paper}")
        return 0
    size = _size(args)
    rows = _rows(args, size)
    for r in rows:  # every architecture checked before any training
        r.architecture(size.reference).check_task(size.task)
        check_training_memory(r, size)
    if args.export_gates is not None:
        _check_export(args.export_gates, rows, size)
    claim_out(args, "matrix", parameters=False)
    from ..figures._matrix_stats import row_summary, stream_summary

    report = {}
    for r in rows:
        if args.export_gates is not None:
            result = run_row(
                r,
                size,
                seed=args.seed,
                progress=not args.quiet,
                export_gates=args.export_gates,
            )
        else:
            result = matrix_row_result(
                r, size, args.out, seed=args.seed, progress=not args.quiet
            )
        arch = r.architecture(size.reference)
        report[r.name] = row_summary(arch, result, size.task.period).to_dict()
        if (
            result.stream is not None
        ):  # the loss half: every query beside the retrieval ones
            report[r.name]["stream"] = stream_summary(result.stream).to_dict()
        elif size.task.vocab is not None:  # the Bayes reader of what the row can read
            report[r.name]["ceilings"] = retrieval_ceilings(
                size.task, architecture_coverage(arch, size.task.T)
            ).to_dict()
    if args.json:
        print_json({"size": size.to_dict(), "rows": report})
        return 0
    table = []
    for name, s in report.items():
        pct = lambda m: f"{100 * m['mean']:.1f}"  # noqa: E731
        line = [
            name,
            f"{s['loss']['mean']:.3f}",
            pct(s["mean_accuracy"]),
            pct(s["worst_phase"]),
            pct(s["gap"]),
            pct(s["boundary_phase"]) if "boundary_phase" in s else "n/a",
        ]
        if "ceilings" in s:
            c = s["ceilings"]
            line += [
                f"{c['mean_loss']:.3f}",
                f"{100 * c['mean_accuracy']:.1f}",
                f"{100 * c['worst_accuracy']:.1f}",
            ]
        table.append(line)
    head = ["row", "loss", "mean %", "worst %", "gap", "boundary %"]
    if size.task.keys is not None:
        _print_stream(report, size)
        return 0
    if size.task.vocab is not None:
        head += ["ceiling loss", "ceiling mean %", "ceiling worst %"]
    print(format_table(head, table))
    if size.task.vocab is not None:
        print(
            f"tokens drawn with replacement from V = {size.task.vocab} symbols; ceilings: "
            "the Bayes reader without position information of every pair the row can "
            "read (docs/theory.md, section 12)"
        )
    return 0


def _print_stream(report: dict, size: MatrixSize) -> None:
    """The stream's table: the language-model loss over every query, the local queries' loss,
    and the retrieval queries' loss and accuracy (mean and worst phase), means over seeds."""
    table = []
    for name, s in report.items():
        m = s["stream"]
        table.append(
            [
                name,
                f"{m['loss']['mean']:.3f}",
                f"{m['local_loss']['mean']:.3f}",
                f"{m['retrieval_loss']['mean']:.3f}",
                f"{100 * m['retrieval_mean']['mean']:.1f}",
                f"{100 * m['retrieval_worst']['mean']:.1f}",
            ]
        )
    head = ["row", "loss", "local loss", "retrieval loss", "retrieval %", "worst %"]
    print(format_table(head, table))
    t = size.task
    print(
        f"stream of V = {t.vocab} symbols, keys 0..{t.keys - 1} followed by a uniform value "
        "(retrieval queries, per phase), every other symbol by its bigram successor (local "
        "queries); loss: every query, as a language model's"
    )
