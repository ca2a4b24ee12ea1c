"""`inductheory train`: the compressed model of the task trained with optax, many seeds at once
(docs/theory.md §11)."""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from ..experiments._training import summarize_training, train_bytes
from ..internal._io import write_json_atomic
from ..internal._memory import check_memory
from ..trained._config import (
    Embeddings,
    ModelConfig,
    TrainConfig,
)
from ..trained._train import TrainRun, make_optimizer, train
from ._common import (
    CLIError,
    add_config_options,
    add_cpu_devices_argument,
    add_json_argument,
    add_task_arguments,
    config_from_args,
    float_type,
    format_table,
    option_flag,
    print_json,
    require_finite,
    require_token_ids,
    task_from_args,
)
from ._declare import QUIET, Option, add_options, count, output_dir, prose
from ._matrix import family_options_hint, register_family
from ._training_options import MODEL_OPTIONS, TRAIN_OPTIONS

# What `--out` holds beside `train`'s own files: the report `--json` prints.
REPORT = "report.json"
# Seeds listed by the text table (all of them are in --json and --out).
SHOWN_SEEDS = 32
# Fields of the configs by the option that sets them (the configs' messages name the fields).
_FLAGS = {
    f.name: option_flag(f.name)
    for cls in (ModelConfig, TrainConfig)
    for f in dataclasses.fields(cls)
}


HELP = "train the compressed model with optax, each idealization a switch (§11)"
DESCRIPTION = prose(
    """
    Train the compressed model of the task (docs/theory.md §11) from many seeds at once
    and measure it on held-out contexts: per seed the key and value offsets (argmax of
    each head's mean gate) and the per-phase accuracy; over seeds the argmax gate mass,
    value = key + 1 and distinct-head shares (Wilson 95%), static vs average effective
    offsets, per-phase accuracy and gap, accuracy and loss. Every switch at its default
    with --optimizer gd and --batch full is the explicit Euler scheme of the full flow
    (`inductheory flow --dynamics full`) from the same seeds. The paper's compressor
    family (KV heads, per-offset payload maps, vector gates, every layer compressed)
    trains with `inductheory train paper [OPTIONS]` (the family's options, `inductheory
    train paper --help`; the same as `inductheory matrix`).
    """
)


def register(sub) -> None:
    p = sub.add_parser("train", help=HELP, description=DESCRIPTION)
    p.unrecognized_hint = family_options_hint
    add_task_arguments(p, geometry=False)
    add_train_arguments(p)
    add_options(
        p,
        count("--seeds", 1, 16, "number of seeds"),
        output_dir(
            "directory for train.json, statistics.npz, models.eqx, report.json and a "
            "checkpoint after every chunk (an interrupted run resumes)"
        ),
        QUIET,
    )
    add_cpu_devices_argument(p)
    add_json_argument(p)
    p.set_defaults(
        func=run,
        interrupt_message="interrupted; with --out the run resumes from its last chunk",
    )
    register_family(p)


def add_train_arguments(p, *, geometry: bool = True) -> None:
    """The options of a `ModelConfig` and a `TrainConfig` (shared with `inductheory sweep
    train`); see `configs_from_args`. `geometry=False`: the parser has --eps and --d already
    (the task's geometry options, read the same way)."""
    m = p.add_argument_group("model (default: the theorem's setting)")
    add_config_options(m, ModelConfig, MODEL_OPTIONS[:1])
    if geometry:
        _add_geometry_arguments(m)
    add_config_options(m, ModelConfig, MODEL_OPTIONS[1:])
    t = p.add_argument_group("training")
    add_config_options(t, TrainConfig, TRAIN_OPTIONS)


def _add_geometry_arguments(m) -> None:
    """--eps and --d: the approximate geometry's, or (--d) the learned embeddings' dimension."""
    add_options(
        m,
        Option(
            "--eps",
            "with --embeddings approximate: target geometry error in (0, 1)",
            float_type("eps", 0, 1, low_open=True, high_open=True),
        ),
        count(
            "--d",
            1,
            None,
            "embedding dimension: of the approximate geometry, or of learned embeddings",
        ),
    )


def _flagged(err: Exception) -> CLIError:
    """A config's one-line message with its leading field named as the option."""
    text = str(err)
    for name, flag in _FLAGS.items():
        for sep in (" ", "="):
            if text.startswith(name + sep):
                return CLIError(f"{flag} {text[len(name) + 1 :]}")
    return CLIError(text)


def configs_from_args(args) -> tuple[ModelConfig, TrainConfig]:
    """The `ModelConfig` and `TrainConfig` of parsed `train` options; options that do not
    apply to the chosen embeddings or batch are errors, not silently ignored."""
    embeddings = Embeddings(args.embeddings)
    if args.eps is not None and embeddings is not Embeddings.APPROXIMATE:
        raise CLIError(
            f"--eps sets the approximate geometry: it needs --embeddings approximate, "
            f"got --embeddings {args.embeddings}"
        )
    if embeddings is Embeddings.APPROXIMATE and args.eps is None and args.d is None:
        raise CLIError("--embeddings approximate needs --eps or --d (its geometry)")
    if embeddings is Embeddings.EXACT and args.d is not None:
        raise CLIError(
            "--d sets the dimension of approximate or learned embeddings; --embeddings "
            "exact takes the exact geometry"
        )
    if args.M is not None and args.batch != "full":
        raise CLIError(
            f"--M sets the fixed sample of --batch full; --batch {args.batch} does not use it"
        )
    try:
        model = config_from_args(
            ModelConfig,
            MODEL_OPTIONS,
            args,
            d=args.d if embeddings is Embeddings.LEARNED else None,
        )
        config = config_from_args(TrainConfig, TRAIN_OPTIONS, args)
        make_optimizer(config)  # an unknown optimizer name, refused before any work
    except ValueError as err:
        raise _flagged(err) from None
    return model, config


def task_of(args):
    """The task of `train`'s options: its geometry is that of approximate embeddings
    (`--eps`, `--d`), else exact."""
    approximate = Embeddings(args.embeddings) is Embeddings.APPROXIMATE
    return task_from_args(
        argparse.Namespace(
            **{
                **vars(args),
                "eps": args.eps if approximate else None,
                "d": args.d if approximate else None,
            }
        )
    )


def train_report(run: TrainRun) -> dict:
    """The JSON report: every parameter, per seed its offsets, accuracy and losses, and the
    `summarize_training` summary with Wilson 95% intervals of its two shares."""
    # the figures' interval (imported here: the figures package loads matplotlib)
    from ..figures._stats import wilson_interval

    m = run.measures
    per_seed = [
        {
            "seed_index": i,
            "key_offsets": np.asarray(m.key_offsets[i]).tolist(),
            "value_offsets": np.asarray(m.value_offsets[i]).tolist(),
            "phase_accuracy": np.asarray(m.phase_accuracy[i]).tolist(),
            "argmax_key_mass": np.asarray(m.argmax_mass[i][:, 0]).tolist(),
            "argmax_value_mass": np.asarray(m.argmax_mass[i][:, 1]).tolist(),
            "held_out_loss": float(m.loss[i]),
            "train_loss": float(run.statistics.loss[i, -1]),
        }
        for i in range(run.seeds)
    ]
    s = summarize_training(run)
    summary = s.to_dict()
    summary["value_follows_key_interval"] = list(
        wilson_interval(s.value_follows_key_seeds, s.seeds)
    )
    summary["distinct_interval"] = list(wilson_interval(s.distinct_seeds, s.seeds))
    return {
        **run.parameters(),
        "M": run.M,
        "per_seed": per_seed,
        "summary": summary,
        "timings": dataclasses.asdict(run.timings),
    }


def run(args) -> int:
    model_config, train_config = configs_from_args(args)
    task = task_of(args)
    require_token_ids(task, "train (sampled contexts)")
    check_memory(
        train_bytes(task, model_config, train_config, args.seeds),
        f"train ({args.seeds} seeds, --batch {train_config.batch})",
    )
    try:
        result = train(
            task,
            model_config,
            train_config,
            args.seeds,
            seed=args.seed,
            out=args.out,
            progress=not args.quiet,
        )
    except ValueError as err:
        if str(err).startswith("population_loss"):  # the model has no closed form
            raise CLIError(f"--batch population: {err}") from None
        raise _flagged(
            err
        ) from None  # a setting checked against the task names its option
    report = train_report(result)
    require_finite(report["summary"], "the training summary")
    if args.out is not None:
        write_json_atomic(args.out / REPORT, report)
    if args.json:
        print_json(report)
    else:
        _print_text(args, report)
    return 0


def _fmt(values) -> str:
    return ",".join(f"{v:.3g}" for v in values)


def _print_text(args, report: dict) -> None:
    s = report["summary"]
    print(f"task: {report['task']}")
    print(f"model: {report['model_config']}")
    print(f"training: {report['train_config']}")
    rows = [
        (
            e["seed_index"],
            e["key_offsets"],
            e["value_offsets"],
            _fmt(e["phase_accuracy"]),
            f"{e['held_out_loss']:.5g}",
        )
        for e in report["per_seed"][:SHOWN_SEEDS]
    ]
    print(
        format_table(
            ["seed", "key r", "value r", "phase accuracy", "held-out loss"], rows
        )
    )
    if len(report["per_seed"]) > SHOWN_SEEDS:
        print(
            f"... {len(report['per_seed']) - SHOWN_SEEDS} more seeds (see --json or --out)"
        )
    n = s["seeds"]
    low, high = s["value_follows_key_interval"]
    dlow, dhigh = s["distinct_interval"]
    print(
        f"argmax gate mass (key, value): mean {_fmt(s['argmax_mass_mean'])}, "
        f"std {_fmt(s['argmax_mass_std'])}, min {_fmt(s['argmax_mass_min'])}"
    )
    print(
        f"value = key + 1: {s['value_follows_key_seeds']}/{n} seeds "
        f"[{low:.3f}, {high:.3f}]; distinct heads: {s['distinct_seeds']}/{n} "
        f"[{dlow:.3f}, {dhigh:.3f}] (independent baseline {s['distinct_baseline']:.3f})"
    )
    print(
        f"effective offsets (key, value): static {_fmt(s['static_offsets_mean'])}, "
        f"average {_fmt(s['avg_offsets_mean'])}"
    )
    boundary = s["boundary_accuracy_mean"]
    print(
        f"phase accuracy {_fmt(s['phase_accuracy_mean'])} (gap of the mean "
        f"{s['phase_gap_of_mean']:.3g}, mean per-seed gap {s['phase_gap_mean']:.3g})"
        + ("" if boundary is None else f", boundary phase {boundary:.3g}")
    )
    print(
        f"mean accuracy {s['mean_accuracy_mean']:.4g}; loss held-out "
        f"{s['held_out_loss_mean']:.6g}, training {s['train_loss_mean']:.6g}"
    )
    if args.out is not None:
        print(f"wrote {args.out}/train.json, statistics.npz, models.eqx and {REPORT}")
