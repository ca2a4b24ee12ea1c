"""The paper matrix's training step against its arithmetic (issue: within 5x of the floor).

For each chosen row: the compiled training step of `seeds` vmapped seeds (one `lax.scan` chunk of
`train_transformer`'s program, so the measured step is the real one), its FLOPs, and a float32
matmul of about the same FLOPs timed on the same machine in the same run (interleaved, median of
the repeats). Prints per row: ms per seed-step, MFLOP per seed-step, the matmul's time for those
FLOPs (the floor) and the ratio step / floor; then how much slower than that floor full
attention's own contractions (batches of T x d_h x T) run alone, and what the softmax between
them costs against one contraction's FLOPs at the floor.

The FLOPs are XLA's cost analysis of one seed's step compiled alone. Not the chunk's: XLA counts
the body of a loop once, so the chunk's count is one step's, and dividing it by the chunk's
seed-steps undercounts by the number of steps (the mistake behind an earlier "37-112x").

    python benchmarks/bench_matrix.py                      # reference, 8-KV, full attention
    python benchmarks/bench_matrix.py --rows all --repeats 5
    python benchmarks/bench_matrix.py --rows "W8/S8 8 KV" --local-window 2   # the studies' rows
    python benchmarks/bench_matrix.py --rows "W8/S8 8 KV" --vocab 128 --keys 16
"""

from __future__ import annotations

import argparse
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import inductheory  # noqa: F401  (x64 on, as in the library)
from inductheory.experiments._paper_matrix import FULL_SIZE, MATRIX
from inductheory.experiments._studies import StudyRow
from inductheory.trained._train import seed_model
from inductheory.trained._transformer_train import (
    _initial_models,
    clipped,
    training_program,
)

DEFAULT_ROWS = ("W8/S8 1 KV (reference)", "W8/S8 8 KV", "full attention 8 KV")


def _chunk_program(row, seeds, steps, size=FULL_SIZE):
    arch = row.architecture(size.reference)
    keys = jax.random.split(jax.random.key(0), seeds)
    models = _initial_models(size.task, arch, keys)
    params, static = eqx.partition(models, eqx.is_inexact_array)
    program, run_chunk = training_program(size.task, arch, size.train, chunk=steps)
    opt_state = eqx.filter_vmap(clipped(program.optimizer).init)(params)
    args = (
        program,
        params,
        opt_state,
        static,
        jax.random.key(1),
        jnp.arange(seeds),
        jnp.asarray(0),
    )
    return run_chunk, args


def _step_flops(args) -> float:
    """FLOPs of one seed's training step, from XLA's cost analysis of that step alone."""
    program, params, opt_state, static, batch_key = args[:5]
    # seed 0: every array's first lane (the parameters, their state, the compressor's switches)
    one = seed_model((params, opt_state, static), 0)
    step = eqx.filter_jit(program.step)
    compiled = step.lower(*one, batch_key, jnp.asarray(0), jnp.asarray(0))
    cost = compiled.compile().compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return float(cost["flops"])


# Matmuls per timed call (one alone is too short to time).
MATMULS = 20


def _square_matmuls(flops: float):
    """`(run, scale)`: `run()` does `MATMULS` float32 square matmuls of about `flops` FLOPs
    each (2 n^3 = flops); its time times `scale` is one matmul's time for exactly `flops`."""
    n = max(8, int(round((flops / 2) ** (1 / 3))))
    x = jax.random.normal(jax.random.key(2), (n, n), jnp.float32)
    matmul = jax.jit(lambda x: x @ x).lower(x).compile()

    def run():
        return [matmul(x) for _ in range(MATMULS)][-1]

    return run, flops / (2 * n**3) / MATMULS


def _time(fn, repeats):
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=",".join(DEFAULT_ROWS))
    parser.add_argument("--seeds", type=int, default=FULL_SIZE.seeds)
    parser.add_argument("--steps", type=int, default=50, help="steps per timed chunk")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--local-window", type=int, default=0, help="an exact local window"
    )
    parser.add_argument("--vocab", type=int, default=None, help="tokens that repeat")
    parser.add_argument(
        "--keys", type=int, default=None, help="a stream (with --vocab)"
    )
    args = parser.parse_args()
    names = (
        [r.name for r in MATRIX]
        if args.rows == "all"
        else [n.strip() for n in args.rows.split(",")]
    )
    print(
        f"{'row':40s} {'ms/seed-step':>13s} {'MFLOP/seed-step':>16s} "
        f"{'matmul floor ms':>16s} {'ratio':>7s}"
    )
    for name in names:
        # a study's row (experiments._studies): the same model `inductheory matrix` trains
        window = (("local_window", args.local_window),) if args.local_window else ()
        study = StudyRow(name, vocab=args.vocab, keys=args.keys, changes=window)
        row, size = study.matrix_row(FULL_SIZE), study.size(FULL_SIZE)
        name = row.name + (f" V={args.vocab}" if args.vocab else "")
        name += f" K={args.keys}" if args.keys else ""
        run_chunk, a = _chunk_program(row, args.seeds, args.steps, size)
        flops = _step_flops(a)
        matmuls, scale = _square_matmuls(flops)  # of about the step's FLOPs
        jax.block_until_ready(run_chunk(*a))  # compiled and warm
        step_t, mm_t = [], []

        def step_once(run_chunk=run_chunk, a=a):
            return run_chunk(*a)

        for _ in range(args.repeats):  # interleaved: the machine's noise hits both
            step_t += _time(step_once, 1)
            mm_t += _time(matmuls, 1)
        step = np.median(step_t) / (args.seeds * args.steps)
        floor = np.median(mm_t) * scale
        print(
            f"{name:40s} {1e3 * step:13.2f} {flops / 1e6:16.1f} {1e3 * floor:16.3f} "
            f"{step / floor:7.1f}"
        )
    _attention_shaped(args.seeds, args.repeats)


def _attention_shaped(seeds: int, repeats: int) -> None:
    """Full attention's score and read contractions at the matrix's shapes (every seed,
    context and query head a batch of T x d_h x T), against a square matmul of the same FLOPs:
    how far below the square floor such small contractions run on this machine."""
    task, ref = FULL_SIZE.task, FULL_SIZE.reference
    b, n, e = seeds * FULL_SIZE.train.batch * ref.q_heads, task.T, ref.head_dim
    key = jax.random.key(3)
    q = jax.random.normal(key, (b, n, e), jnp.float32)
    a = jax.random.normal(key, (b, n, n), jnp.float32)
    scores = jax.jit(lambda q: jnp.einsum("bne,bme->bnm", q, q)).lower(q).compile()
    reads = jax.jit(lambda a, v: jnp.einsum("bnm,bme->bne", a, v)).lower(a, q).compile()
    # the softmax between them: XLA's cost analysis counts an exp as one FLOP, but it costs
    # several, and with d_h = 16 there are only 32 FLOPs of contraction per score
    softmax = jax.jit(lambda a: jax.nn.softmax(a, axis=-1)).lower(a).compile()
    flops = 2 * b * n * n * e
    square, scale = _square_matmuls(flops)
    times = {"scores": [], "reads": [], "softmax": [], "square": []}
    for _ in range(repeats):  # interleaved, as the rows
        for name, fn in (
            ("scores", lambda: [scores(q) for _ in range(MATMULS)][-1]),
            ("reads", lambda: [reads(a, q) for _ in range(MATMULS)][-1]),
            ("softmax", lambda: [softmax(a) for _ in range(MATMULS)][-1]),
            ("square", square),
        ):
            times[name] += _time(fn, 1)
    floor = np.median(times["square"]) * scale * MATMULS  # MATMULS of them
    print(
        f"full attention's contractions ({b} batches of {n}x{e}x{n}, {flops / 1e6:.0f} MFLOP): "
        f"scores {np.median(times['scores']) / floor:.1f}x, reads "
        f"{np.median(times['reads']) / floor:.1f}x the square matmul's time for the same FLOPs; "
        f"the softmax of the scores alone (forward) takes "
        f"{np.median(times['softmax']) / floor:.1f}x the time of one contraction's FLOPs at "
        "the floor"
    )


if __name__ == "__main__":
    main()
