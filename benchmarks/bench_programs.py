"""How many XLA programs a training run compiles when it differs from the runs before only in
its learning rate, weight decay, schedule or steps (traced: one compiled program per shape).

Trains, in one process and in this order, small runs of both trainers: the compressed model of
the theorems (`train`) and the paper's transformer (`train_transformer`), each at three learning
rates, two weight decays, another schedule and two numbers of steps, and prints per run the
programs handed to XLA and their seconds (`CompileCount`). The first run of each trainer
compiles its programs; with every hyperparameter traced the others compile nothing new.

    python benchmarks/bench_programs.py
    python benchmarks/bench_programs.py --json programs.json

Run it on an older tree (`PYTHONPATH=<checkout> python benchmarks/bench_programs.py`) for the
counts before.
"""

from __future__ import annotations

import argparse
import json
import time

import inductheory as it
from inductheory.internal._compiles import CompileCount
from inductheory.trained import ModelConfig, TrainConfig, train
from inductheory.trained._architecture import Architecture, RetrievalTask
from inductheory.trained._transformer_train import train_transformer

THEOREM_TASK = it.Task(L=4, S=3, H=2, N=48, beta=4.0)
RETRIEVAL_TASK = RetrievalTask(T=24, N=32, period=24)
# (label, changes): the runs of each trainer, in order
RUNS = (
    ("lr 1e-2", {}),
    ("lr 3e-3", {"lr": 3e-3}),
    ("lr 3e-2", {"lr": 3e-2}),
    ("weight decay 1e-2", {"weight_decay": 1e-2}),
    ("weight decay 1e-1", {"weight_decay": 1e-1}),
    ("schedule constant", {"schedule": "constant"}),
    ("steps 48", {"steps": 48}),
    ("steps 64", {"steps": 64}),
)


def theorem_run(changes: dict) -> None:
    config = dict(
        optimizer="adam", lr=1e-2, schedule="cosine", steps=32, M=48, chunk=16
    )
    config |= dict(log_points=4, eval_contexts=8) | changes
    train(THEOREM_TASK, ModelConfig(), TrainConfig(**config), 2)


def transformer_run(changes: dict) -> None:
    config = dict(
        optimizer="adamw", lr=1e-2, schedule="warmup_cosine", steps=32, batch=4
    )
    config |= dict(chunk=16, eval_contexts=8) | changes
    train_transformer(
        RETRIEVAL_TASK, Architecture(W=4, S=4, d=16), TrainConfig(**config), 2
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the table as JSON to this file")
    args = parser.parse_args(argv)
    rows = []
    for trainer, run in (
        ("theorem model", theorem_run),
        ("transformer", transformer_run),
    ):
        for label, changes in RUNS:
            counter, t0 = CompileCount(), time.perf_counter()
            run(changes)
            spent = counter.count()
            rows.append(
                dict(
                    trainer=trainer,
                    run=label,
                    compiles=spent.compiles,
                    compile_s=spent.seconds,
                    wall_s=round(time.perf_counter() - t0, 2),
                )
            )
            r = rows[-1]
            print(
                f"{trainer:14} {label:18} {r['compiles']:4d} programs "
                f"{r['compile_s']:6.2f} s compiling {r['wall_s']:6.2f} s wall",
                flush=True,
            )
    for trainer in ("theorem model", "transformer"):
        later = [r for r in rows if r["trainer"] == trainer][1:]
        print(
            f"{trainer}: the {len(later)} runs after the first compiled "
            f"{sum(r['compiles'] for r in later)} programs in "
            f"{sum(r['compile_s'] for r in later):.1f} s"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
