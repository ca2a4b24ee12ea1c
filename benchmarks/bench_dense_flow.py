"""Benchmark of the approximate-geometry (dense) full flow (not a test):
`python benchmarks/bench_dense_flow.py [--d 256] [--seeds 4]`.

Sections:
- rhs: one vector field of the full flow on the figure's task (L=4 S=3 H=2 N=240 beta=4, a
  balanced sample of N/L contexts) at one d: the plain dense path (`context_bases=False`, logits
  against all N embeddings in R^d) against per-context bases (the default); CPU ms per evaluation
  and the largest difference.
- flow: the same seeds' whole flows to t_max = 1e6 on both paths, jitted and vmapped alike; compile
  and run CPU seconds apart, ratio, and the largest differences of selection time and final loss.
- padded: `run_flow` once per d against `run_flows` of all d in one padded program (CPU s,
  compile included, since the point of padding is one compile instead of one per d).
CPU time (`time.process_time`, all threads) rather than wall time: the machine may be shared.
"""

from __future__ import annotations

import argparse
import time
import warnings

import jax
import numpy as np

import inductheory as it
from inductheory.experiments import flow_sample, run_flow, run_flows, seed_keys

SHAPE = dict(L=4, S=3, H=2, N=240, gamma=1.0, beta=4.0, kappa=1.0)
CONFIG = dict(dynamics="full", rho=0.1, delta=1e-3, t_max=1e6, n_save=4, M=1)


def _cpu(f, *args):
    t0 = time.process_time()
    out = jax.block_until_ready(f(*args))
    return out, time.process_time() - t0


def setup(d: int, seeds: int):
    task = it.Task(**SHAPE, d=d)
    cfg = it.FlowConfig(**CONFIG)
    geo, contexts = flow_sample(task, cfg, 0)
    keys = seed_keys(0, np.arange(seeds))
    c0 = jax.vmap(
        lambda k: it.flow.initial_gate_vectors(
            jax.random.wrap_key_data(k), task, geo, cfg.rho
        )
    )(keys)
    return task, cfg, geo, contexts, c0


def bench_rhs(d: int, repeat: int = 30):
    task, _, geo, contexts, c0 = setup(d, 1)
    print(
        f"\n== rhs: one vector field, d = {d}, M = {contexts.shape[0]} contexts "
        f"(calls of the two paths interleaved; min and median of {repeat})"
    )
    field = jax.jit(lambda dyn, c: dyn.vector_field(c))
    paths = {
        name: it.flow.FullDynamics(task, geo, contexts, context_bases=bases)
        for name, bases in (("plain dense", False), ("context bases", True))
    }
    out = {name: field(dyn, c0[0]) for name, dyn in paths.items()}  # compile
    times = {name: [] for name in paths}
    for _ in range(repeat):
        for name, dyn in paths.items():
            t0 = time.process_time()
            jax.block_until_ready(field(dyn, c0[0]))
            times[name].append(1e3 * (time.process_time() - t0))
    for name, t in times.items():
        print(f"{name:>14}: min {min(t):.2f} ms, median {np.median(t):.2f} ms CPU")
    diff = float(np.max(np.abs(out["plain dense"] - out["context bases"])))
    scale = float(np.max(np.abs(out["plain dense"])))
    ratio = np.median(times["plain dense"]) / np.median(times["context bases"])
    print(f"median ratio {ratio:.1f}x, max |diff| / max |field| = {diff / scale:.1e}")


def bench_flow(d: int, seeds: int):
    task, cfg, geo, contexts, c0 = setup(d, seeds)
    print(f"\n== flow: {seeds} seeds to t_max = 1e6, d = {d}, jit(vmap) on both paths")
    res = {}
    for name, bases in (("plain dense", False), ("context bases", True)):
        solve = jax.jit(
            jax.vmap(
                lambda c, b=bases: it.flow.integrate(
                    it.flow.FullDynamics(task, geo, contexts, context_bases=b), c, cfg
                ).to_dict(state=False)
            )
        )
        t0 = time.process_time()
        compiled = solve.lower(c0).compile()
        compile_s = time.process_time() - t0
        out, run_s = _cpu(compiled, c0)
        res[name] = (out, compile_s, run_s)
        print(
            f"{name:>14}: compile {compile_s:6.1f} s, run {run_s:6.1f} s CPU, steps "
            f"{np.asarray(out['num_steps']).tolist()}"
        )
    (a, _, ra), (b, _, rb) = res["plain dense"], res["context bases"]
    same = all(
        np.array_equal(a[k], b[k])
        for k in ("status", "selected", "key_offsets", "value_offsets")
    )
    t_rel = np.max(np.abs(a["t_final"] - b["t_final"]) / np.abs(a["t_final"]))
    loss = a["final"]["loss"]
    l_rel = np.max(np.abs(loss - b["final"]["loss"]) / np.abs(loss))
    print(
        f"run ratio {ra / rb:.1f}x; same statuses and offsets: {same}; max rel. diff "
        f"t_final {t_rel:.1e}, final loss {l_rel:.1e}"
    )


def bench_padded(dims, seeds: int):
    cfg = it.FlowConfig(**CONFIG)
    tasks = [it.Task(**SHAPE, d=d) for d in dims]
    print(f"\n== padded: d in {dims}, {seeds} seeds each, compile included")
    t0 = time.process_time()
    singles = [run_flow(t, cfg, seeds, chunk=seeds) for t in tasks]
    single_s = time.process_time() - t0
    t0 = time.process_time()
    padded = run_flows(tasks, cfg, seeds)
    padded_s = time.process_time() - t0
    same = all(
        np.array_equal(a.per_seed.status, b.per_seed.status)
        and np.array_equal(a.per_seed.selected, b.per_seed.selected)
        for a, b in zip(singles, padded)
    )
    t_rel = max(
        float(np.max(np.abs(a.per_seed.t_final / b.per_seed.t_final - 1)))
        for a, b in zip(singles, padded)
    )
    print(
        f"one run_flow per d {single_s:.1f} s, one run_flows {padded_s:.1f} s CPU, ratio "
        f"{single_s / padded_s:.1f}x; same statuses and selections: {same}; max rel. diff "
        f"t_final {t_rel:.1e}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=256)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--dims", default="12,16,24,32")
    parser.add_argument(
        "--sections", default="rhs,flow,padded", help="comma-separated subset"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore", it.TheoryAssumptionWarning)
    sections = args.sections.split(",")
    if "rhs" in sections:
        bench_rhs(args.d)
    if "flow" in sections:
        bench_flow(args.d, args.seeds)
    if "padded" in sections:
        bench_padded([int(x) for x in args.dims.split(",")], args.seeds)
