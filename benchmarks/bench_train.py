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
    - its chunks alone (`TrainTimings.steps_per_s`, wall, chunks after the first);
    - the ceiling: `train`'s step alone (n seeds vmapped, in one jitted `lax.scan`, nothing
      else), every device stepping its own n seeds side by side, at n from 1 to 8 and all of
      a device's seeds; the fastest bounds a vmapped run of that step in groups of those sizes,
      so its ratio to the loop is what vmapping can give on this machine.
(b) steps per second of one seed of the equivalence rung against evaluations per second of
    `FullDynamics(...).vector_field`, jitted, same N and M (the ladder's task): like against
    like, the rung's chunks against the field in a compiled loop (Euler steps), and a whole run
    against the field called from Python;
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
import dataclasses
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
from inductheory.trained import (
    ModelConfig,
    TrainConfig,
    _compile,
    _optimizer,
    _programs,
    _seeds,
    init_model,
)

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


def one_seed_step(task: it.Task, config: TrainConfig, steps: int):
    """`train`'s own step of one seed on the flow's sample, as arrays in and arrays out (the
    rest of the model, its task, geometry and static fields, closed over): `(start, step)` with
    `start(key)` the arrays seed `key` starts from and `step(arrays, k)` step k."""
    geometry, contexts = flow_sample(
        task, it.FlowConfig(dynamics="full", M=config.M), 0
    )
    optimizer = _optimizer.optimizer_settings(dataclasses.replace(config, steps=steps))
    programs = _programs._Programs(
        task, task.vocabulary, "full", optimizer, config.chunk
    )

    def arrays_and_rest(key):
        model = init_model(
            task,
            ModelConfig(),
            jax.random.wrap_key_data(key),
            rho=config.rho,
            geometry=geometry,
        )
        params, fixed = _seeds._partition(model)
        return eqx.partition(
            (params, optimizer.transformation().init(params), fixed), eqx.is_array
        )

    rest = arrays_and_rest(seed_keys(0, np.arange(1))[0])[1]

    def step(arrays, k):
        params, state, fixed = eqx.combine(arrays, rest)
        params, state, _ = programs.step(params, state, (fixed,), contexts, k, 0)
        return eqx.partition((params, state, fixed), eqx.is_array)[0]

    return (lambda key: arrays_and_rest(key)[0]), step


def _jit(fn):
    options = _compile._compiler_options()
    return jax.jit(fn, compiler_options=options) if options else jax.jit(fn)


def seed_by_seed(task: it.Task, config: TrainConfig, seeds: int, steps: int):
    """A measurement, compiled before it returns: seed-steps per second (wall, CPU) of
    `train`'s own step of one seed, jitted once, in a Python loop over seeds and steps
    (`block_until_ready` after every step), timed over the steps."""
    start, step = one_seed_step(task, config, steps)
    step = _jit(step)

    def one_seed(key):
        # the clock runs over the steps only (a model's setup is not the loop's cost)
        d = jax.block_until_ready(start(key))
        t0, c0 = time.perf_counter(), time.process_time()
        for k in range(steps):
            d = jax.block_until_ready(step(d, k))
        return time.perf_counter() - t0, time.process_time() - c0

    keys = seed_keys(0, np.arange(seeds))
    one_seed(keys[0])  # compile

    def measure():
        wall, cpu = np.sum([one_seed(k) for k in keys], axis=0)
        return seeds * steps / wall, seeds * steps / cpu

    return measure


def step_alone(task: it.Task, config: TrainConfig, lanes: int, steps: int):
    """A measurement, compiled before it returns: seconds per seed-step (wall) of `train`'s own
    step of `lanes` seeds vmapped at once, `steps` of them in one jitted `lax.scan`, on every
    device at once (each its own `lanes` seeds, as `train` splits them): the arithmetic of the
    step with nothing around it (no dispatch per step, no chunk bookkeeping, no statistics),
    with the devices sharing the machine's caches and memory as they do in `train`."""
    start, step = one_seed_step(task, config, steps)
    arrays = jax.tree.map(
        lambda *a: jnp.stack(a), *[start(k) for k in seed_keys(0, np.arange(lanes))]
    )

    def body(arrays, k):
        return jax.vmap(step, in_axes=(0, None))(arrays, k), None

    program = _jit(lambda a: jax.lax.scan(body, a, jnp.arange(steps))[0])
    per_device = [jax.device_put(arrays, d) for d in jax.devices()]

    def run():
        # dispatch is asynchronous: the devices run side by side
        return [program(a) for a in per_device]

    jax.block_until_ready(run())  # compile
    return lambda: timed(run)[1] / (len(per_device) * lanes * steps)


def vmapped(task: it.Task, config: TrainConfig, seeds: int):
    """A measurement, compiled before it returns (by an identical run): seed-steps per second
    (wall, CPU) of a whole `train` run (setup and held-out measures included), and (wall) of its
    chunks after the first."""
    it.train(task, ModelConfig(), config, seeds)  # compiles

    def measure():
        run, wall, cpu = timed(lambda: it.train(task, ModelConfig(), config, seeds))
        chunks = run.timings.steps_per_s
        return (
            seeds * config.steps / wall,
            seeds * config.steps / cpu,
            None if chunks is None else seeds * chunks,
        )

    return measure


def vector_field_rate(evals: int):
    """Evaluations per second of the full flow's right-hand side, jitted as the flow jits it:
    called from Python one evaluation at a time (wall, CPU), and inside one compiled loop of
    `evals` Euler steps (wall), the way `train`'s chunks take their steps."""
    geometry, contexts = flow_sample(TASK, it.FlowConfig(dynamics="full", M=M), 0)
    c = it.flow.initial_gate_vectors(jax.random.key(0), TASK, geometry, 0.1)
    field = FullDynamics(TASK, geometry, contexts).vector_field
    per_call = eqx.filter_jit(field)
    scanned = eqx.filter_jit(
        lambda c: jax.lax.scan(
            lambda y, _: (y + 1e-3 * field(y), None), c, None, length=evals
        )[0]
    )
    jax.block_until_ready((per_call(c), scanned(c)))

    def loop():
        y = c
        for _ in range(evals):
            y = y + 1e-3 * per_call(y)
        return y

    _, wall, cpu = timed(loop)
    _, scan_wall, _ = timed(lambda: scanned(c))
    return evals / wall, evals / cpu, evals / scan_wall


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
        "--repeats", type=int, default=3, help="interleaved repeats of (a)"
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
        _compile._compiler_options = lambda fusions=(): {}
    options = _compile._compiler_options()
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
        devices = jax.device_count()
        share = -(-args.seeds // devices)  # a device's seeds
        # the ceiling's widths: 1 to 8 seeds, the lane group, a device's share
        widths = sorted(
            n for n in {1, 2, 4, 8, _programs.CPU_LANE_GROUP, share} if n <= share
        )
        loop = seed_by_seed(task, config, args.seeds, loop_steps)
        many = vmapped(task, config, args.seeds)
        alone = {n: step_alone(task, config, n, steps) for n in widths}
        print(
            f"(a) {name}: L={task.L} S={task.S} H={task.H} N={task.N} M={M}, "
            f"{args.seeds} seeds, {steps} steps vmapped, {loop_steps} per seed in the loop; "
            f"seed-steps/s"
        )
        ratios = []
        for rep in range(args.repeats):
            # interleaved, so that a slow spell of the machine hits all three alike
            lp, mn, al = loop(), many(), {n: f() for n, f in alone.items()}
            if mn[2] is None:  # a single chunk: no chunk after the first to time
                mn = (*mn[:2], float("nan"))
            best = min(al, key=al.get)
            ceiling = 1 / al[best]
            ratios.append((mn[0] / lp[0], mn[2] / lp[0], ceiling / lp[0]))
            print(
                f"    {rep + 1}: loop {lp[0]:.0f} wall ({lp[1]:.0f} CPU); vmapped whole run "
                f"{mn[0]:.0f} ({mn[1]:.0f} CPU), chunks {mn[2]:.0f}; the step alone, every device "
                "busy, per seed-step "
                + ", ".join(f"{n} at once {al[n] * 1e6:.1f} us" for n in widths)
                + f", ceiling {ceiling:.0f} ({devices} x {best} at once)"
                f"\n       ratio to the loop: whole run {ratios[-1][0]:.1f}x, chunks "
                f"{ratios[-1][1]:.1f}x, ceiling {ratios[-1][2]:.1f}x; chunks at "
                f"{mn[2] / ceiling:.0%} of the ceiling",
                flush=True,
            )
        r = np.array(ratios)
        print(
            f"    over {args.repeats} repeats, median [min, max]: "
            + "; ".join(
                f"{what} {np.median(r[:, i]):.1f}x [{r[:, i].min():.1f}, "
                f"{r[:, i].max():.1f}]"
                for i, what in enumerate(("whole run", "chunks", "ceiling"))
            ),
            flush=True,
        )
    if args.only == "larger" or args.cpu_devices > 1:
        return
    steps = max(1, round(TASKS[0][2] * args.scale))
    config = TrainConfig(
        lr=0.5, steps=steps, chunk=steps // 4 or 1, M=M, log_points=16, eval_contexts=64
    )
    one = vmapped(TASK, config, 1)()
    field = vector_field_rate(config.steps)
    print(
        f"(b) one seed of the equivalence rung: {one[2]:.0f} steps/s in its chunks, "
        f"{one[0]:.0f} over a whole run (wall); the full flow's vector field {field[2]:.0f} "
        f"evaluations/s in a compiled loop, {field[0]:.0f} called from Python (wall)\n"
        f"    step/field, both compiled loops: {one[2] / field[2]:.2f}; whole run against "
        f"calls from Python: {one[0] / field[0]:.2f} wall, {one[1] / field[1]:.2f} CPU"
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
