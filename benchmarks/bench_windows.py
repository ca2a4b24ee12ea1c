"""Cost of windows (docs/theory.md §10) against the W = S path (not a test):
`python benchmarks/bench_windows.py [--L 8 --S 4 --H 2 --batch 4096 --repeat 5 --seeds 256]`.

Measured side by side in one run, at equal L, S, H:
- loss: the exact population loss of shared gates and its gradient (what the reduced flow
  evaluates), vmapped over a batch of random gates, steady state (compile reported apart), for
  W = S `within` (the block form of §4), W = S `all`, W = S+1, S + S/2 and 2S with `all`; at
  N = 4096 and N = 10^6 (the windowed path must not depend on N).
- flow: one reduced-flow run of `--seeds` seeds per setting, wall time after a warm-up run (the
  number of solver steps differs between settings: they converge to different selections, so the
  per-step cost is the vector-field ratio above).
Ratios are to the W = S `within` path.
"""

from __future__ import annotations

import argparse
import time
import warnings

import jax
import numpy as np

import inductheory as it

warnings.simplefilter("ignore", it.TheoryAssumptionWarning)


def steady(f, *args, repeat: int):
    t0 = time.perf_counter()
    jax.block_until_ready(f(*args))
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t0)
    return first, float(np.median(times))


def settings(S: int):
    return [
        (S, "within"),
        (S, "all"),
        (S + 1, "all"),
        (S + S // 2, "all"),
        (2 * S, "all"),
    ]


def loss_section(args):
    print(
        f"exact loss + gradient of shared gates, batch {args.batch}, L={args.L} "
        f"S={args.S} H={args.H} "
        f"(median of {args.repeat}; compile = first call minus steady)"
    )
    print(
        f"{'N':>8} {'W':>3} {'queries':>7} {'compile s':>10} {'steady ms':>10} {'ratio':>6}"
    )
    for N in (4096, 10**6):
        base = None
        for W, queries in settings(args.S):
            task = it.Task(
                L=args.L, S=args.S, H=args.H, N=N, beta=4.0, W=W, queries=queries
            )
            b = jax.random.normal(jax.random.key(0), (args.batch, args.H, 2, W))
            f = jax.jit(
                jax.vmap(
                    jax.value_and_grad(
                        lambda b, task: it.population_loss(
                            task, it.model.shared_gates_from_logits(b)
                        )
                    ),
                    in_axes=(0, None),
                )
            )
            first, t = steady(f, b, task, repeat=args.repeat)
            base = base or t
            print(
                f"{N:>8} {W:>3} {queries:>7} {first - t:>10.2f} {1e3 * t:>10.2f} {t / base:>6.2f}"
            )


def flow_section(args):
    print(
        f"\nreduced flow, {args.seeds} seeds, L={args.L} S={args.S} H={args.H} N=4096 "
        "beta=4 rho=0.1 "
        "(second run: compile excluded)"
    )
    print(f"{'W':>3} {'queries':>7} {'wall s':>8} {'ratio':>6} {'selected':>9}")
    base = None
    for W, queries in settings(args.S):
        task = it.Task(
            L=args.L, S=args.S, H=args.H, N=4096, beta=4.0, W=W, queries=queries
        )
        config = it.FlowConfig(rho=0.1)
        it.run_flow(task, config, args.seeds)
        t0 = time.perf_counter()
        out = it.run_flow(task, config, args.seeds)
        wall = time.perf_counter() - t0
        base = base or wall
        print(
            f"{W:>3} {queries:>7} {wall:>8.2f} {wall / base:>6.2f} "
            f"{out.summary.selected_fraction:>9.2f}"
        )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--L", type=int, default=8)
    p.add_argument("--S", type=int, default=4)
    p.add_argument("--H", type=int, default=2)
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seeds", type=int, default=256)
    p.add_argument("--sections", default="loss,flow")
    args = p.parse_args()
    print(f"jax {jax.__version__}, devices {jax.devices()}")
    if "loss" in args.sections:
        loss_section(args)
    if "flow" in args.sections:
        flow_section(args)


if __name__ == "__main__":
    main()
