"""Training the compressed model: what vmapping seeds in compiled chunks buys, how a step of the
equivalence rung compares with the full flow's right-hand side, and the memory of a long run.

(a) 32 seeds vmapped in `lax.scan` chunks (`train`) against the same seeds trained one by one
    with a jitted step in a Python loop (seed-steps per second, both after compilation);
(b) steps per second of one seed of the equivalence rung (theorem's setting, "gd", full batch)
    against evaluations per second of `FullDynamics(...).vector_field`, jitted, same N and M;
(c) peak resident memory of a 32-seed, 10^4-step run with log-spaced statistics, in a process
    of its own.

Ratios are measured side by side in one process (the machine may be loaded). Run with
`python benchmarks/bench_train.py [--steps-c 10000]`; until the package has its model, the test
suite's stand-in (`tests/_trained_standin.py`) is used.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import equinox as eqx
import jax
import numpy as np

import inductheory as it
from inductheory.flow import FullDynamics, flow_sample, seed_keys
from inductheory.trained import ModelConfig, TrainConfig, _train, make_optimizer

ROOT = Path(__file__).resolve().parents[1]
TASK = it.Task(L=4, S=3, H=2, N=48, beta=4.0)
M = 48


def model_api():
    """The package's model, or the test suite's stand-in where it has none yet."""
    sys.path.insert(0, str(ROOT / "tests"))
    import _trained_standin as standin

    if not standin.HAS_MODEL:
        _train._model_api = lambda: (
            standin.standin_init_model,
            standin.standin_measure,
        )
    return _train._model_api()


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    jax.block_until_ready(out)
    return out, time.perf_counter() - t0, time.process_time() - c0


def seed_by_seed(config: TrainConfig, seeds: int, steps: int):
    """Seed-steps per second (wall, CPU) of a jitted step in a Python loop, seed by seed."""
    init_model, _ = _train._model_api()
    geometry, contexts = flow_sample(TASK, it.FlowConfig(dynamics="full", M=M), 0)
    opt = make_optimizer(config)

    @eqx.filter_jit
    def step(params, state, static):
        grads = eqx.filter_grad(lambda p: eqx.combine(p, static).loss(contexts))(params)
        updates, state = opt.update(grads, state, params)
        return eqx.apply_updates(params, updates), state

    def one_seed(key):
        model = init_model(
            TASK,
            ModelConfig(),
            jax.random.wrap_key_data(key),
            rho=0.1,
            geometry=geometry,
        )
        params, static = eqx.partition(model, model.trainable())
        state = opt.init(params)
        for _ in range(steps):
            params, state = step(params, state, static)
        return params

    keys = seed_keys(0, np.arange(seeds))
    timed(lambda: one_seed(keys[0]))  # compile
    _, wall, cpu = timed(lambda: [one_seed(k) for k in keys])
    return seeds * steps / wall, seeds * steps / cpu


def vmapped(config: TrainConfig, seeds: int):
    """Seed-steps per second (wall, CPU) of a whole `train` run (setup and held-out measures
    included) whose programs an identical run compiled before."""
    it.train(TASK, ModelConfig(), config, seeds)  # compiles
    _, wall, cpu = timed(lambda: it.train(TASK, ModelConfig(), config, seeds))
    return seeds * config.steps / wall, seeds * config.steps / cpu


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
b.model_api()
import inductheory as it
from inductheory.trained import ModelConfig, TrainConfig
config = TrainConfig(lr=0.5, steps={steps}, chunk=256, M=b.M, log_points=64, eval_contexts=512)
run = it.train(b.TASK, ModelConfig(), config, 32)
print(run.timings.steps_per_s, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--steps", type=int, default=512, help="steps of (a) and (b)")
    parser.add_argument(
        "--loop-steps", type=int, default=64, help="per seed in the loop"
    )
    parser.add_argument(
        "--steps-c", type=int, default=10_000, help="steps of (c); 0: skip"
    )
    args = parser.parse_args()
    model_api()
    config = TrainConfig(
        lr=0.5, steps=args.steps, chunk=128, M=M, log_points=16, eval_contexts=64
    )
    print(
        f"task L={TASK.L} S={TASK.S} H={TASK.H} N={TASK.N}, M={M}, devices={jax.device_count()}"
    )

    loop = seed_by_seed(config, args.seeds, args.loop_steps)
    many = vmapped(config, args.seeds)
    print(
        f"(a) {args.seeds} seeds: vmapped chunks {many[0]:.0f} seed-steps/s wall "
        f"({many[1]:.0f} CPU), loop of seeds {loop[0]:.0f} wall ({loop[1]:.0f} CPU): "
        f"ratio {many[0] / loop[0]:.1f}x wall, {many[1] / loop[1]:.1f}x CPU"
    )

    one = vmapped(config, 1)
    field = vector_field_rate(args.steps)
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
