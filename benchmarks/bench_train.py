"""Training the compressed model: what vmapping seeds in compiled chunks buys, how a step of the
equivalence rung compares with the full flow's right-hand side, and the memory of a long run.

(a) The theorem's rung (exact geometry, identity maps, tied unembedding, linear gates, full-batch
    gradient descent on the flow's balanced sample of M contexts) of two tasks: the ladder's
    (L=4 S=3 H=2 N=48, M=48) and a larger one (L=8 S=4 H=2 N=256, M=48). 32 seeds vmapped in
    `lax.scan` chunks (`train`) against the same seeds trained one by one in a Python loop of
    the very step `train` takes (the same loss, optimizer and XLA options), jitted once and
    compiled before the clock starts, with `block_until_ready` after every step as a user's
    loop would. Seed-steps per second, wall and CPU (process time) side by side:
    - `train`: a whole run (setup, chunks, held-out measures) after an identical compiling run;
    - its chunks alone (`TrainTimings.steps_per_s`, wall, chunks after the first).
(b) steps per second of one seed of the equivalence rung against evaluations per second of
    `FullDynamics(...).vector_field`, jitted, same N and M (the ladder's task);
(c) peak resident memory of a 32-seed, 10^4-step run with log-spaced statistics, in a process
    of its own.

Ratios are measured side by side in one process (the machine may be loaded): CPU time is the
steadier measure there. Run with `python benchmarks/bench_train.py [--steps-c 10000]`.

With `--cpu-devices 2` the host CPU is split into two XLA devices (`use_cpu_devices`) before
anything runs: `train` then steps each device's seeds on its own core, the loop still steps one
seed at a time, and only (a) is measured.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import inductheory as it
from inductheory.flow import FullDynamics, flow_sample, seed_keys
from inductheory.trained import ModelConfig, TrainConfig, _train, init_model

ROOT = Path(__file__).resolve().parents[1]
TASK = it.Task(L=4, S=3, H=2, N=48, beta=4.0)
M = 48
# (name, task, vmapped steps, loop steps per seed)
TASKS = (
    ("ladder", TASK, 512, 64),
    ("larger", it.Task(L=8, S=4, H=2, N=256, beta=4.0), 128, 16),
)


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    jax.block_until_ready(out)
    return out, time.perf_counter() - t0, time.process_time() - c0


def seed_by_seed(task: it.Task, config: TrainConfig, seeds: int, steps: int):
    """Seed-steps per second (wall, CPU) of `train`'s own step of one seed, jitted once, in a
    Python loop over seeds and steps (`block_until_ready` after every step), timed over the
    steps."""
    geometry, contexts = flow_sample(
        task, it.FlowConfig(dynamics="full", M=config.M), 0
    )
    optimizer = _train.make_optimizer(config)
    programs = _train._Programs(
        task, task.vocabulary, "full", optimizer, jnp.asarray(steps), config.chunk
    )

    def start(key):
        model = init_model(
            task,
            ModelConfig(),
            jax.random.wrap_key_data(key),
            rho=config.rho,
            geometry=geometry,
        )
        params, fixed = _train._partition(model)
        return params, optimizer.init(params), fixed

    params, state, fixed = start(seed_keys(0, np.arange(1))[0])
    # arrays in, arrays out; the rest of the model (task, geometry, static fields) closed over
    dynamic, rest = eqx.partition((params, state, fixed), eqx.is_array)
    options = _train._compiler_options()

    @jax.jit if not options else (lambda f: jax.jit(f, compiler_options=options))
    def step(dynamic, k):
        params, state, fixed = eqx.combine(dynamic, rest)
        params, state, _ = programs.step(params, state, (fixed,), contexts, k, 0)
        return eqx.partition((params, state, fixed), eqx.is_array)[0]

    def one_seed(key):
        # the clock runs over the steps only (a model's setup is not the loop's cost)
        d = jax.block_until_ready(eqx.partition(start(key), eqx.is_array)[0])
        t0, c0 = time.perf_counter(), time.process_time()
        for k in range(steps):
            d = jax.block_until_ready(step(d, k))
        return time.perf_counter() - t0, time.process_time() - c0

    keys = seed_keys(0, np.arange(seeds))
    one_seed(keys[0])  # compile
    wall, cpu = np.sum([one_seed(k) for k in keys], axis=0)
    return seeds * steps / wall, seeds * steps / cpu


def vmapped(task: it.Task, config: TrainConfig, seeds: int):
    """Seed-steps per second (wall, CPU) of a whole `train` run (setup and held-out measures
    included) whose programs an identical run compiled before, and (wall) of its chunks after
    the first."""
    it.train(task, ModelConfig(), config, seeds)  # compiles
    run, wall, cpu = timed(lambda: it.train(task, ModelConfig(), config, seeds))
    chunks = run.timings.steps_per_s
    return (
        seeds * config.steps / wall,
        seeds * config.steps / cpu,
        None if chunks is None else seeds * chunks,
    )


def vector_field_rate(evals: int):
    """Evaluations per second (wall, CPU) of the full flow's jitted right-hand side."""
    geometry, contexts = flow_sample(TASK, it.FlowConfig(dynamics="full", M=M), 0)
    c = it.flow.initial_gate_vectors(jax.random.key(0), TASK, geometry, 0.1)
    field = eqx.filter_jit(FullDynamics(TASK, geometry, contexts).vector_field)
    jax.block_until_ready(field(c))

    def loop():
        y = c
        for _ in range(evals):
            y = field(y)
        return y

    _, wall, cpu = timed(loop)
    return evals / wall, evals / cpu


MEMORY_SCRIPT = """
import resource, sys
sys.path.insert(0, {bench!r})
import bench_train as b
import inductheory as it
from inductheory.trained import ModelConfig, TrainConfig
config = TrainConfig(lr=0.5, steps={steps}, chunk=256, M=b.M, log_points=64, eval_contexts=512)
run = it.train(b.TASK, ModelConfig(), config, 32)
print(run.timings.steps_per_s, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiplies the steps of (a) and (b)"
    )
    parser.add_argument(
        "--steps-c", type=int, default=10_000, help="steps of (c); 0: skip"
    )
    parser.add_argument(
        "--only", choices=[name for name, *_ in TASKS], help="one task of (a)"
    )
    parser.add_argument(
        "--xla-defaults",
        action="store_true",
        help="compile with XLA's default options (the programs before their CPU options)",
    )
    parser.add_argument(
        "--cpu-devices",
        type=int,
        default=1,
        help="split the CPU into this many XLA devices first (only (a) is measured)",
    )
    args = parser.parse_args()
    if args.cpu_devices > 1:
        it.internal.use_cpu_devices(args.cpu_devices)
    if args.xla_defaults:
        _train._compiler_options = dict
    options = _train._compiler_options()
    print(
        f"devices={jax.device_count()} ({jax.default_backend()}), XLA options {options}"
    )
    for name, task, steps, loop_steps in TASKS:
        if args.only and name != args.only:
            continue
        steps, loop_steps = (max(1, round(n * args.scale)) for n in (steps, loop_steps))
        config = TrainConfig(
            lr=0.5,
            steps=steps,
            chunk=steps // 4 or 1,
            M=M,
            log_points=16,
            eval_contexts=64,
        )
        loop = seed_by_seed(task, config, args.seeds, loop_steps)
        many = vmapped(task, config, args.seeds)
        chunks = "n/a" if many[2] is None else f"{many[2]:.0f}"
        print(
            f"(a) {name}: L={task.L} S={task.S} H={task.H} N={task.N} M={M}, "
            f"{args.seeds} seeds\n"
            f"    vmapped chunks ({steps} steps): {many[0]:.0f} seed-steps/s wall, "
            f"{many[1]:.0f} CPU (whole run); chunks alone {chunks} wall\n"
            f"    loop of seeds ({loop_steps} steps each): {loop[0]:.0f} wall, "
            f"{loop[1]:.0f} CPU\n"
            f"    ratio: {many[0] / loop[0]:.1f}x wall, {many[1] / loop[1]:.1f}x CPU "
            f"(whole run); chunks alone "
            + ("n/a" if many[2] is None else f"{many[2] / loop[0]:.1f}x wall"),
            flush=True,
        )
    if args.only == "larger" or args.cpu_devices > 1:
        return
    steps = max(1, round(TASKS[0][2] * args.scale))
    config = TrainConfig(
        lr=0.5, steps=steps, chunk=steps // 4 or 1, M=M, log_points=16, eval_contexts=64
    )
    one = vmapped(TASK, config, 1)
    field = vector_field_rate(config.steps)
    print(
        f"(b) one seed: {one[0]:.0f} steps/s wall ({one[1]:.0f} CPU), full-flow vector field "
        f"{field[0]:.0f} evaluations/s wall ({field[1]:.0f} CPU): step/field "
        f"{one[0] / field[0]:.2f} wall, {one[1] / field[1]:.2f} CPU"
    )

    if not args.steps_c:
        return
    script = MEMORY_SCRIPT.format(bench=str(ROOT / "benchmarks"), steps=args.steps_c)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split()
    rss_kib = int(out[-1])
    print(
        f"(c) 32 seeds x {args.steps_c} steps, 64 log points: peak RSS {rss_kib / 2**20:.2f} GiB "
        f"({rss_kib / 1024:.0f} MiB, the run's own process), "
        f"{float(out[-2]):.0f} steps/s, {time.perf_counter() - t0:.0f} s"
    )


if __name__ == "__main__":
    main()
