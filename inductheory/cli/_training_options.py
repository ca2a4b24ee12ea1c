"""The options of the trained model's configs (`ModelConfig`, `TrainConfig`), declared once for
`inductheory train`, `sweep train`, and (the optimizer's) `matrix`."""

from __future__ import annotations

import argparse

from ..trained._config import (
    EMBEDDINGS,
    FULL_BATCHES,
    GATE_CLASSES,
    LAYERS,
    MAPS,
    SCHEDULES,
    UNEMBEDDINGS,
)
from ._common import ConfigOption, betas_type, floats, int_type, ints


def _batch(text: str) -> int | str:
    if text.strip() in FULL_BATCHES:
        return text.strip()
    try:
        return int_type("batch", 1)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"batch must be {' or '.join(FULL_BATCHES)} or a number of contexts >= 1, "
            f"got {text!r}"
        ) from None


_batch.__name__ = "batch"

# The options of `ModelConfig`'s fields (its `d`: `--d`, read with the task's geometry) and of
# `TrainConfig`'s, in the order of the help; defaults are the configs' own.
MODEL_OPTIONS = (
    ConfigOption(
        "embeddings",
        "exact geometry (default), approximate geometry (--eps or --d) or learned "
        "(dimension --d)",
        choices=EMBEDDINGS,
        show_default=False,
    ),
    ConfigOption("maps", "q/k/v/o maps", choices=MAPS),
    ConfigOption(
        "unembedding",
        "tied to the embeddings (default) or learned",
        choices=UNEMBEDDINGS,
        show_default=False,
    ),
    ConfigOption(
        "gates",
        "linear scores <c, x> (default), a static bias per offset, or uniform",
        choices=GATE_CLASSES,
        show_default=False,
    ),
    ConfigOption(
        "bias", "with --gates linear: a learned per-offset bias added to the scores"
    ),
    ConfigOption("tied", "one gate per head for key and value"),
    ConfigOption(
        "local_window",
        "the last w positions before the query attended exactly (0: none)",
        ints(0),
    ),
    ConfigOption(
        "layers",
        "1, or 2 with an uncompressed causal attention layer first",
        lambda _: int,
        choices=LAYERS,
    ),
)
TRAIN_OPTIONS = (
    ConfigOption(
        "optimizer",
        "gd (plain gradient descent, default) or an optax optimizer (sgd, adam, ...)",
        metavar="NAME",
        show_default=False,
    ),
    ConfigOption(
        "lr",
        "learning rate, the schedule's peak, > 0",
        floats(0, low_open=True),
    ),
    ConfigOption("schedule", "learning-rate schedule", choices=SCHEDULES),
    ConfigOption("steps", "optimizer steps", ints(1)),
    ConfigOption(
        "batch",
        "full: the fixed balanced sample of --M contexts (default); population: the "
        "closed-form population loss; B: B fresh contexts every step",
        lambda _: _batch,
        metavar="B|full|population",
        show_default=False,
    ),
    ConfigOption(
        "M",
        "with --batch full: contexts of the balanced sample",
        ints(1),
        unset=True,  # an error with another batch
    ),
    ConfigOption(
        "rho",
        "radius of the ball-uniform initial gate vectors, as in flow",
        floats(0, low_open=True),
    ),
    ConfigOption(
        "warmup",
        "with --schedule warmup_cosine: the fraction of the steps over which the learning "
        "rate rises linearly from 0, in [0, 1)",
        floats(0, 1, high_open=True),
    ),
    ConfigOption(
        "betas",
        "the optimizer's moment decays b1,b2 in [0, 1), for optimizers that take them "
        "(adam, adamw, ...; default: the optimizer's own)",
        betas_type,
        metavar="B1,B2",
        show_default=False,
    ),
    ConfigOption("weight_decay", "decoupled weight decay, >= 0", floats(0)),
    ConfigOption("eval_contexts", "held-out contexts of the measures", ints(1)),
    ConfigOption(
        "log_points", "log-spaced steps at which statistics are kept", ints(1)
    ),
    ConfigOption(
        "chunk",
        "steps per compiled chunk (progress and checkpoints between chunks)",
        ints(1),
    ),
)
