"""Benchmarks of the Theorem 2 gradient flow (not a test): run `python benchmarks/bench_flow.py`.

Sections (all by default, or pick with --sections):
- reduced: batched diffrax reduced flow vs a per-seed scipy.integrate.solve_ivp loop on the same
  jitted vector field, both Dormand-Prince 5(4) at equal tolerances to a fixed time, at 1, 64 and
  4096 seeds; steady state, compile time reported apart; final states compared.
- rhs: full-flow right-hand side (one gradient of the sample loss), structured exact geometry vs
  the dense exact embedding (`ExactGeometry.dense()`), time per evaluation and XLA memory.
- large: one full flow at N = 10^5, M = 16384 i.i.d. contexts to delta = 1e-3 selection.
"""

from __future__ import annotations

import argparse
import time
import warnings

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

import inductheory as it


def _timed(f, *args, repeat=1):
    t0 = time.perf_counter()
    out = jax.block_until_ready(f(*args))
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t0)
    return out, first, min(times)


def bench_reduced(T=6000.0, rtol=1e-10, atol=1e-12, scipy_subset=64):
    task = it.Task(L=8, S=4, H=2, N=10**6, beta=4.0)
    shape = (task.H, 2, task.S)
    print(
        f"\n== reduced flow: {task.to_dict()}, Dormand-Prince 5(4) both sides, "
        f"rtol={rtol} atol={atol}, t in [0, {T}]"
    )
    field = jax.jit(
        lambda y: it.flow.reduced_vector_field(task, y.reshape(shape)).reshape(-1)
    )

    def one(y0):
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(lambda t, y, args: field(y)),
            diffrax.Dopri5(),
            0.0,
            T,
            None,
            y0,
            stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
            max_steps=100_000,
        )
        return sol.ys[-1], sol.stats["num_steps"]

    mapped, n_dev = it.experiments.sharded_seed_map(lambda y0, shared: one(y0))

    def batched(y0):
        pad = -len(y0) % n_dev
        out = mapped(jnp.concatenate([y0, jnp.repeat(y0[:1], pad, axis=0)]), None)
        return jax.tree.map(lambda a: a[: len(y0)], out)

    print(
        f"diffrax side: jit(vmap) sharded over {n_dev} device(s); scipy side: one "
        "process, one seed at a time"
    )
    np_field = lambda t, y: np.asarray(field(jnp.asarray(y)))
    print(
        f"{'seeds':>6} {'compile s':>10} {'diffrax s':>10} {'scipy s':>10} "
        f"{'ratio':>8} {'max |dy|':>10}  note"
    )
    for n in (1, 64, 4096):
        b0 = jax.vmap(lambda k: it.flow.initial_biases(k, task, 0.1).reshape(-1))(
            jax.random.split(jax.random.key(0), n)
        )
        (yf, steps), first, steady = _timed(batched, b0, repeat=2)
        m = min(n, scipy_subset)
        field(b0[0]).block_until_ready()
        t0 = time.perf_counter()
        ys = [
            solve_ivp(
                np_field,
                (0.0, T),
                np.asarray(b0[i]),
                method="RK45",
                rtol=rtol,
                atol=atol,
            ).y[:, -1]
            for i in range(m)
        ]
        scipy_s = (time.perf_counter() - t0) * n / m
        err = float(np.max(np.abs(np.asarray(yf[:m]) - np.stack(ys))))
        note = (
            f"scipy timed on {m} seeds, extrapolated linearly x{n / m:g}"
            if m < n
            else ""
        )
        print(
            f"{n:>6} {first - steady:>10.2f} {steady:>10.4f} {scipy_s:>10.3f} "
            f"{scipy_s / steady:>8.1f} {err:>10.2e}  {note}"
        )
    b0 = jax.vmap(lambda k: it.flow.initial_biases(k, task, 0.1))(
        jax.random.split(jax.random.key(0), 4096)
    )
    cfg = it.FlowConfig()
    lib = jax.jit(jax.vmap(lambda b: it.flow.solve_reduced(task, cfg, b)))
    out, first, steady = _timed(lib, b0)
    print(
        "library solve_reduced (Tsit5, event, 64 saved statistics), 4096 seeds: "
        f"{steady:.3f} s steady, "
        f"compile {first - steady:.1f} s; selected "
        f"{int(np.sum(np.asarray(out.status) == it.Status.SELECTED))}/4096, "
        f"max steps {int(np.max(out.num_steps))}"
    )


def _memory(compiled):
    try:
        ma = compiled.memory_analysis()
        return (
            ma.temp_size_in_bytes + ma.argument_size_in_bytes + ma.output_size_in_bytes
        ) / 2**20
    except Exception:  # pragma: no cover - backend without memory analysis
        return float("nan")


def bench_rhs(M=256, sizes=(1000, 4096, 10_000, 100_000), dense_max=8192):
    print(
        "\n== full-flow right-hand side (gradient of the sample loss), L=8 S=4 H=2 "
        f"beta=4, M={M} i.i.d. contexts"
    )
    print(
        f"{'N':>7} {'geometry':>10} {'s / eval':>10} {'XLA MiB':>9} {'dense/struct':>13}"
    )
    for N in sizes:
        task = it.Task(L=8, S=4, H=2, N=N, beta=4.0)
        contexts = it.sample_contexts(jax.random.key(1), task, M)
        exact = it.ExactGeometry(N=N, kappa=task.kappa)
        c = it.flow.initial_gate_vectors(jax.random.key(2), task, exact, 1.0) * 30
        res = {}
        for name, geo, bs in (("structured", exact, None), ("dense", None, 32)):
            if name == "dense":
                if N > dense_max:
                    print(
                        f"{N:>7} {'dense':>10} {'-':>10} {'-':>9} {'-':>13}  (N x "
                        f"(N+1) embedding not built above N={dense_max})"
                    )
                    continue
                geo = exact.dense()
            f = jax.jit(
                lambda c, g, task=task, contexts=contexts, bs=bs: (
                    it.flow.full_vector_field(task, g, contexts, c, bs)
                )
            )
            mem = _memory(f.lower(c, geo).compile())
            out, first, steady = _timed(f, c, geo, repeat=3)
            res[name] = (out, steady)
            ratio = f"{steady / res['structured'][1]:.0f}x" if name == "dense" else ""
            print(f"{N:>7} {name:>10} {steady:>10.4f} {mem:>9.1f} {ratio:>13}")
        if "dense" in res:
            np.testing.assert_allclose(
                res["dense"][0], res["structured"][0], rtol=1e-8, atol=1e-14
            )


def bench_large(N=100_000, M=16384, sample="iid"):
    task = it.Task(L=8, S=4, H=2, N=N, beta=4.0)
    cfg = it.FlowConfig(
        dynamics="full", M=M, sample=sample, delta=1e-3, batch_size=4096
    )
    print(f"\n== full flow {task.to_dict()}\n   {cfg.to_dict()}")
    t0 = time.perf_counter()
    out = it.run_flow(task, cfg, 1, progress=True)
    wall = time.perf_counter() - t0
    ps = out.per_seed
    print(
        f"wall {wall:.1f} s (incl. compile; first chunk "
        f"{out.summary.first_chunk_s_including_compile:.1f} s) on "
        f"{jax.device_count()} device(s); status {it.flow.STATUSES[int(ps.status[0])]}, "
        f"t_selection {float(ps.t_final[0]):.1f}, steps {int(ps.num_steps[0])}, "
        f"selected {ps.selected[0].tolist()}, reduced-from-projection selects "
        f"{ps.reduced_selected[0].tolist()}, "
        f"sample M={out.sample.M}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="reduced,rhs,large")
    parser.add_argument(
        "--cpu-devices",
        type=int,
        default=None,
        help="split the CPU into this many XLA devices (seeds are sharded across them)",
    )
    args = parser.parse_args()
    if args.cpu_devices is not None:
        it.internal.use_cpu_devices(args.cpu_devices)
    warnings.simplefilter("ignore", it.TheoryAssumptionWarning)
    print(f"devices: {jax.devices()}")
    for name in args.sections.split(","):
        {"reduced": bench_reduced, "rhs": bench_rhs, "large": bench_large}[
            name.strip()
        ]()


if __name__ == "__main__":
    main()
