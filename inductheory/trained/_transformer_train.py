"""Training the paper's transformers (`trained/_modules.py`) on the retrieval task: every seed
vmapped in one compiled chunk of `lax.scan` steps, fresh contexts at every step, the training
loss of every step kept, and per-phase measures on held-out contexts.

Seed i of base seed s starts from `init_transformer(task, arch, fold_in(key(s), i))`; the
contexts of step k for seed i come from `fold_in(fold_in(fold_in(key(s), BATCH), k), i)` and
the held-out contexts from `fold_in(key(s), HELD_OUT)` (the same for every seed and every
architecture of a task): a seed's numbers do not depend on which seeds train beside it.

May import: `inductheory.internal`, `inductheory.model`, `._architecture`, `._modules`,
`._optimizer`, `._compile`, `._run` (what both trainers share).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ..internal._lanes import map_lanes
from ..internal._memory import MemoryEstimate, check_memory, with_total
from ..internal._progress import Progress
from ..model._task import SEED_MAX, SEED_MIN, SEEDS_MAX, _require_int
from ._architecture import Architecture, Attention, Gate, RetrievalTask
from ._compile import jit_with_ynn_fusions
from ._config import TrainConfig
from ._mechanisms import (
    gate_offsets,
    key_gate_overlap,
    phase_mean,
    query_outcomes,
)
from ._modules import Transformer, init_transformer
from ._optimizer import OptimizerSettings, optimizer_settings
from ._run import log_steps

# Streams of the base seed's key: the seeds' initial models, the training batches, held out,
# the probe contexts of the gate trajectories, the prompts of knockout means.
INIT_STREAM, BATCH_STREAM, HELD_OUT_STREAM, PROBE_STREAM, MEANS_STREAM = 1, 2, 3, 4, 5
# Contexts on which the gates' effective offsets are measured during training.
PROBE_CONTEXTS = 32
# Gradients are clipped to this global norm (the paper's models: clip 1).
CLIP_NORM = 1.0


def sample_retrieval_contexts(
    key: PRNGKeyArray, task: RetrievalTask, n: int
) -> Int[Array, "contexts positions"]:
    """n contexts of `task` (shape (n, T)), each from its own key of `jax.random.split(key, n)`:
    T distinct tokens drawn uniformly from the N (`task.vocab` None: the first T of a random
    permutation), T tokens $x_p$ iid uniform over the symbols $0..V-1$ (`task.vocab` = V), or
    the stream (`task.keys` = K): $x_0$ uniform, then $x_{p+1}$ uniform after a key
    ($x_p < K$) and $G(x_p)$ otherwise (`RetrievalTask.bigram_successors`).
    Every context of the trained family (training batches, held-out contexts, probes, the
    prompts of knockout means) comes from here.

    ```python
    sample_retrieval_contexts(jax.random.key(0), RetrievalTask(T=8, N=16, period=4), 2)
    sample_retrieval_contexts(jax.random.key(0), RetrievalTask(T=8, N=16, period=4, vocab=3), 2)
    ```
    """
    if task.vocab is None:

        def one(k):
            return jax.random.permutation(k, task.N)[: task.T]

    elif task.keys is None:

        def one(k):
            return jax.random.randint(k, (task.T,), 0, task.vocab)

    else:
        successor = jnp.asarray(task.bigram_successors())

        def one(k):
            draws = jax.random.randint(k, (task.T,), 0, task.vocab)

            def step(x, fresh):
                nxt = jnp.where(x < task.keys, fresh, successor[x])
                return nxt, nxt

            return jnp.concatenate(
                [draws[:1], jax.lax.scan(step, draws[0], draws[1:])[1]]
            )

    return jax.vmap(one)(jax.random.split(key, n)).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class PhaseMeasures:
    """Held-out measures of each seed (numpy, leading axis seeds).

    - `loss` (seeds,): mean cross-entropy over every held-out query.
    - `correct` (seeds, contexts, period): per held-out context, how many of its T / period
      queries of each phase (position mod `period`) are right (top-1, ties wrong).
    - `phase_loss` (seeds, period): mean cross-entropy per phase.
    - `queries_per_context`: T / period, the queries of one phase in one context.
    """

    loss: np.ndarray
    correct: np.ndarray
    phase_loss: np.ndarray
    queries_per_context: int

    @property
    def phase_accuracy(self) -> np.ndarray:
        """(seeds, period)."""
        return self.correct.mean(axis=1) / self.queries_per_context

    @property
    def mean_accuracy(self) -> np.ndarray:
        """Mean accuracy over phases (every phase has as many queries), (seeds,)."""
        return self.phase_accuracy.mean(axis=1)

    @property
    def worst_accuracy(self) -> np.ndarray:
        return self.phase_accuracy.min(axis=1)

    @property
    def gap(self) -> np.ndarray:
        """max - min over phases, (seeds,)."""
        return self.phase_accuracy.max(axis=1) - self.phase_accuracy.min(axis=1)


def phase_measures(models: Transformer, task: RetrievalTask, contexts):
    """Loss (seeds,), correct counts per context and phase (seeds, contexts, period) and loss
    per phase (seeds, period) of stacked models on held-out contexts (every query of every
    context; phase = position mod `period`)."""

    def one(model):
        correct, losses = query_outcomes(model, contexts)  # (n, T) each
        n, T, P = contexts.shape[0], task.T, task.period
        counts = jnp.sum(correct.reshape(n, T // P, P), axis=1, dtype=jnp.int32)
        phase_loss = phase_mean(losses, P)
        return jnp.mean(losses), counts, phase_loss

    return eqx.filter_vmap(one)(models)


def gate_trajectory_point(models: Transformer, probe) -> Float[Array, "seeds ..."]:
    """Static and average effective offsets of every gate of stacked models on the `probe`
    contexts, (seeds, layers, branches, kv, channels, 2) (`gate_offsets`)."""

    def one(model):
        g = gate_offsets(model, probe)
        return jnp.stack([g.static, g.avg], axis=-1)

    return eqx.filter_vmap(one)(models)


def clipped(optimizer: OptimizerSettings) -> optax.GradientTransformation:
    """The optimizer of the paper's models: the global gradient norm clipped to `CLIP_NORM`,
    then `optimizer`'s transformation."""
    return optax.chain(optax.clip_by_global_norm(CLIP_NORM), optimizer.transformation())


def penalized_loss(
    model: Transformer, contexts: Int[Array, "contexts positions"]
) -> tuple[Float[Array, ""], Float[Array, ""]]:
    r"""`(loss, overlap)`: the mean cross-entropy over every query of `contexts` (M, T), as
    `Transformer.loss`, and the key gates' overlap averaged over the contexts
    (`key_gate_overlap`), from one forward pass per context. The training objective with
    `TrainConfig.overlap_penalty` $\lambda$ is loss + $\lambda$ overlap."""

    def one(tokens):
        losses, gates = model.query_losses_and_gates(tokens)
        return jnp.mean(losses), key_gate_overlap(model, gates)

    losses, overlaps = jax.vmap(one)(contexts)
    return jnp.mean(losses), jnp.mean(overlaps)


def check_overlap_penalty(arch: Architecture, config: TrainConfig) -> None:
    """A one-line refusal of a positive `overlap_penalty` where it has nothing to act on: no
    learned gates, or fewer than two key gates (compressed layers x KV heads)."""
    if not config.overlap_penalty:
        return
    gates = sum(arch.compressed_layers) * arch.kv_heads
    if not arch.learned_gates or gates < 2:
        raise ValueError(
            "overlap_penalty needs learned gates in at least two (compressed layer, KV "
            f"head) pairs; this architecture has {gates if arch.learned_gates else 0}"
        )


class _Program(eqx.Module):
    """One compiled chunk of steps for every seed (equal settings: one program per process)."""

    task: RetrievalTask
    batch: int = eqx.field(static=True)
    chunk: int = eqx.field(static=True)
    # its learning rate, steps and weight decay traced: one program for runs differing in them
    optimizer: OptimizerSettings
    # seeds one vmap steps at a time, the groups one after another (None: every seed at once)
    seed_group: int | None = eqx.field(static=True, default=None)
    # the overlap penalty's weight, traced (None: no term, the program without it)
    overlap: Float[Array, ""] | None = None

    def step(self, params, opt_state, static, batch_key, step, lane):
        key = jax.random.fold_in(jax.random.fold_in(batch_key, step), lane)
        contexts = sample_retrieval_contexts(key, self.task, self.batch)

        if self.overlap is None:

            def loss(p):
                return eqx.combine(p, static).loss(contexts)

            value, grads = jax.value_and_grad(loss)(params)
        else:

            def loss(p):
                ce, penalty = penalized_loss(eqx.combine(p, static), contexts)
                return ce + self.overlap * penalty, ce

            # the cross-entropy is the step's recorded loss; the gradient is the total's
            (_, value), grads = jax.value_and_grad(loss, has_aux=True)(params)
        updates, opt_state = clipped(self.optimizer).update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    def run_chunk(self, params, opt_state, static, batch_key, lanes, start, trace=None):
        """`chunk` steps of every seed (uncompiled: `training_program` gives it compiled).
        `trace = (record_steps, probe, points)` keeps the gate trajectory: before the update
        of a step in `record_steps`, its `gate_trajectory_point` on `probe` goes to
        `points[:, slot]` (None: the chunk trains only)."""

        def body(carry, i):
            params, opt_state, points = carry
            s = start + i
            if trace is not None:
                record, probe = trace[:2]
                hit = record == s

                def keep():
                    point = gate_trajectory_point(eqx.combine(params, static), probe)
                    return points.at[:, jnp.argmax(hit)].set(point)

                points = jax.lax.cond(jnp.any(hit), keep, lambda: points)

            def go():
                # `static`'s arrays (the compressor's switches) are per seed as the parameters
                return map_lanes(
                    lambda seed: self.step(*seed[:3], batch_key, s, seed[3]),
                    (params, opt_state, static, lanes),
                    self.seed_group,
                )

            def stay():
                return params, opt_state, jnp.zeros(lanes.shape, jnp.float32)

            params_, opt_state_, loss = jax.lax.cond(s < self.optimizer.steps, go, stay)
            return (params_, opt_state_, points), loss

        points = None if trace is None else trace[2]
        (params, opt_state, points), losses = jax.lax.scan(
            body, (params, opt_state, points), jnp.arange(self.chunk)
        )
        return params, opt_state, losses, points


# How each attention's chunk runs on the CPU backend: which of XLA's YNNPACK library fusions it
# emits (`jit_with_ynn_fusions`) and how many seeds one vmap steps at a time. Measured per
# seed-step, 8 seeds of the matrix's size on 2 cores (benchmarks/bench_matrix.py): full
# attention 16.6 ms with XLA's defaults and every seed in one vmap, 10.0-10.6 ms with
# contractions and elementwise fusions in YNNPACK and one seed at a time (its T x T scores
# and their softmax stay in cache; its compressed rows run slower that way); the compressor's
# rows 12-30% faster with contractions alone than with none, all seeds at once (W8/S8 8 KV
# 6.6 -> 4.6-4.9 ms). Either way the same operations, to float32 rounding (tested).
_CPU_PLANS = {
    Attention.FULL: (("DOT", "ELTWISE"), 1),
    Attention.COMPRESSED: (("DOT",), None),
}
_CHUNK_PROGRAMS = {
    attention: jit_with_ynn_fusions(*fusions)(_Program.run_chunk)
    for attention, (fusions, _) in _CPU_PLANS.items()
}


def training_program(
    task: RetrievalTask,
    arch: Architecture,
    config: TrainConfig,
    chunk: int | None = None,
) -> tuple[_Program, object]:
    """`(program, run_chunk)`: the chunk of `chunk` (default `config.chunk`) steps that trains
    `arch` with `config`, and its compiled `run_chunk` (`_CHUNK_PROGRAMS`), called as
    `run_chunk(program, params, opt_state, static, batch_key, lanes, start, trace)`; on the CPU
    backend with `_CPU_PLANS`' seeds at a time."""
    group = _CPU_PLANS[arch.attention][1] if jax.default_backend() == "cpu" else None
    overlap = None
    if config.overlap_penalty:
        overlap = jnp.asarray(config.overlap_penalty, jnp.float32)
    program = _Program(
        task,
        config.batch,
        chunk or config.chunk,
        optimizer_settings(config),
        group,
        overlap,
    )
    return program, _CHUNK_PROGRAMS[arch.attention]


@dataclasses.dataclass(frozen=True)
class TransformerRun:
    """The result of `train_transformer`.

    - `task`, `arch`, `train_config`, `seeds`, `seed`: the parameters.
    - `loss` (seeds, steps): the training loss of every step (its fresh batch's).
    - `initial_loss` (seeds,): the held-out loss at step 0.
    - `measures`: `PhaseMeasures` of the final models on the held-out contexts.
    - `models`: the final models, array leaves with a leading seed axis.
    - `wall_s`, `first_chunk_s`: the run's wall time and its first chunk's (with compiling).
    - `trajectory_steps` (points,), `trajectory` (seeds, points, layers, branches, kv,
      channels, 2): static and average effective offsets of every gate on `PROBE_CONTEXTS`
      probe contexts at log-spaced steps, the last after training (`gate_trajectory_point`);
      None unless asked for and the model has learned gates.
    """

    task: RetrievalTask
    arch: Architecture
    train_config: TrainConfig
    seeds: int
    seed: int
    loss: np.ndarray
    initial_loss: np.ndarray
    measures: PhaseMeasures
    models: Transformer
    wall_s: float
    first_chunk_s: float
    trajectory_steps: np.ndarray | None = None
    trajectory: np.ndarray | None = None


# Every seed's initial model, vmapped op by op: each random draw and scaling compiles apart as a
# small program that rows of the same parameter shapes share. One compiled program of the whole
# initialization costs more to compile (the 16 matrix rows: 101-103 CPU-s under XLA's defaults,
# against 24 op by op; 10.3 against 3.7 under the quick figures' flags) for the same numbers
# (tested; every matrix row compared at its full size).
_initial_models = eqx.filter_vmap(init_transformer, in_axes=(None, None, 0))


def held_out_contexts(task: RetrievalTask, config: TrainConfig, seed: int):
    """The `config.eval_contexts` held-out contexts of base seed `seed` (every seed and every
    architecture of a task is measured on these)."""
    key = jax.random.fold_in(jax.random.key(seed), HELD_OUT_STREAM)
    return sample_retrieval_contexts(key, task, config.eval_contexts)


# Float32 arrays per context a step keeps for the backward pass, by what they scale with
# (`context_floats`): against XLA's compiled memory analysis of one model's loss and gradient
# (temporaries per context, batch 16 against 256, the quick task, 7 architectures) these
# counts are 1.2 (full attention) to 2.6 (8 KV heads) times the measure
# (tests/test_memory_estimates.py checks that they are never below it).
LOGIT_COPIES, RESIDUAL_COPIES, QUERY_COPIES, SCORE_COPIES, WINDOW_COPIES = (
    4,
    16,
    4,
    5,
    8,
)
F32 = 4


def context_floats(task: RetrievalTask, arch: Architecture) -> int:
    """Float32 numbers one context holds through a training step's forward and backward pass
    (an upper estimate): its logits (T x N), and per layer the residual stream (T x d; the
    MLP's T x 4d), queries (T x q_heads x head_dim), attention scores (q_heads x T x keys:
    T exact, T / S entries + local window compressed) and, compressed, the windows' inputs
    (entries x W x d) with their payloads and gate scores (branches x kv x entries x W x
    (head_dim + channels)), each times the copies the backward pass keeps (`*_COPIES`).

    ```python
    context_floats(RetrievalTask(T=96, N=128, period=24), Architecture())
    ```
    """
    T, d = task.T, arch.d
    total = LOGIT_COPIES * T * task.N
    for compressed in arch.compressed_layers:
        layer = RESIDUAL_COPIES * T * d + (8 * T * 4 * d if arch.mlp else 0)
        layer += QUERY_COPIES * T * arch.q_heads * arch.head_dim
        entries = T // arch.S
        keys = entries + arch.local_window if compressed else T
        layer += SCORE_COPIES * arch.q_heads * T * keys
        if compressed:
            branches = 1 if arch.tied else 2
            channels = arch.head_dim if arch.gate is Gate.VECTOR else 1
            layer += WINDOW_COPIES * (
                entries * arch.W * d
                + branches
                * arch.kv_heads
                * entries
                * arch.W
                * (arch.head_dim + channels)
            )
        total += layer
    return total


@functools.lru_cache(maxsize=256)
def parameter_bytes(task: RetrievalTask, arch: Architecture) -> int:
    """Bytes of one model's trained parameters (the inexact arrays, `eqx.is_inexact_array`),
    from their shapes (`eqx.filter_eval_shape`: nothing computed); cached by task and
    architecture, as a sweep's points share them."""
    shapes = eqx.filter_eval_shape(init_transformer, task, arch, jax.random.key(0))
    return sum(
        leaf.size * leaf.dtype.itemsize
        for leaf in jax.tree.leaves(shapes)
        if hasattr(leaf, "dtype") and jnp.issubdtype(leaf.dtype, jnp.inexact)
    )


def training_bytes(
    task: RetrievalTask, arch: Architecture, config: TrainConfig, seeds: int
) -> MemoryEstimate:
    """The memory of `train_transformer`: every seed's parameters, their gradients and two
    optimizer moments (the parameters' shapes from tracing one model, nothing computed), the
    loss history, the activations of a step (`context_floats` per context, `config.batch`
    contexts per seed, the seeds one vmap steps at once) and of the held-out measures (the
    forward pass on `config.eval_contexts` contexts per seed, a third of a step's copies).

    ```python
    training_bytes(RetrievalTask(T=24, N=32, period=24), Architecture(W=4, S=4, d=16),
                   TrainConfig(optimizer="adamw", steps=100, batch=8), 8).total
    ```
    """
    one = parameter_bytes(task, arch)
    steps = math.ceil(config.steps / config.chunk) * config.chunk
    per_context = F32 * context_floats(task, arch)
    group = _CPU_PLANS[arch.attention][1] if jax.default_backend() == "cpu" else None
    at_once = seeds if group is None else min(seeds, group)
    batch = config.batch if isinstance(config.batch, int) else 0
    return with_total(
        parameters=seeds * one,
        gradients=seeds * one,
        optimizer_moments=2 * seeds * one,
        loss_history=4 * seeds * steps,
        activations=at_once * batch * per_context,
        evaluation=seeds * config.eval_contexts * per_context // 3,
    )


def train_transformer(
    task: RetrievalTask,
    arch: Architecture,
    config: TrainConfig,
    seeds: int,
    *,
    seed: int = 0,
    progress: bool = False,
    trajectory_points: int = 0,
) -> TransformerRun:
    """Train `seeds` transformers of `arch` on `task` at once (module docstring).

    The optimizer is `clipped(optimizer_settings(config))`: `make_optimizer(config)` after
    clipping the global gradient norm to `CLIP_NORM`; `config.batch` fresh contexts per step
    (a number); `config.eval_contexts` held-out contexts (each gives T / period queries to
    every phase group).

    **Arguments:**
    - `task`, `arch`, `config`: the task, the architecture, the training.
    - `seeds`: number of seeds; `seed`: the base seed (keyword).
    - `progress`: a progress line on stderr per chunk.
    - `trajectory_points`: keep the gates' effective offsets at `log_steps(steps,
      trajectory_points)` (0: none; ignored without learned gates).

    **Returns:** a `TransformerRun`.

    ```python
    task = RetrievalTask(T=24, N=32, period=24)
    run = train_transformer(task, Architecture(W=4, S=4, d=16), TrainConfig(
        optimizer="adamw", lr=3e-3, steps=100, batch=8), 2)
    run.measures.mean_accuracy
    ```
    """
    seeds = _require_int("seeds", seeds, 1, SEEDS_MAX)
    seed = _require_int("seed", seed, SEED_MIN, SEED_MAX)
    if isinstance(config.batch, str):
        raise ValueError(
            f"batch must be a number of fresh contexts per step, got {config.batch!r}"
        )
    arch.check_task(task)
    check_overlap_penalty(arch, config)
    check_memory(training_bytes(task, arch, config, seeds), f"training {seeds} seeds")
    base = jax.random.key(seed)
    keys = jax.random.split(jax.random.fold_in(base, INIT_STREAM), seeds)
    models = _initial_models(task, arch, keys)
    params, static = eqx.partition(models, eqx.is_inexact_array)
    program, run_chunk = training_program(task, arch, config)
    opt_state = eqx.filter_vmap(clipped(program.optimizer).init)(params)
    held_out = held_out_contexts(task, config, seed)
    evaluate = eqx.filter_jit(phase_measures)
    initial_loss = np.asarray(evaluate(models, task, held_out)[0])
    batch_key = jax.random.fold_in(base, BATCH_STREAM)
    trace, record = None, None
    if trajectory_points and arch.learned_gates:
        record = log_steps(config.steps, trajectory_points)
        probe = sample_retrieval_contexts(
            jax.random.fold_in(base, PROBE_STREAM), task, PROBE_CONTEXTS
        )
        point = eqx.filter_jit(gate_trajectory_point)
        shape = point(models, probe).shape
        points = jnp.zeros((shape[0], record.size - 1, *shape[1:]), jnp.float32)
        trace = (jnp.asarray(record[:-1]), probe, points)
    lanes = jnp.arange(seeds)
    n_chunks = math.ceil(config.steps / config.chunk)
    losses = np.zeros((seeds, n_chunks * config.chunk), np.float32)
    start_time = time.perf_counter()
    first = None
    with Progress(config.steps, "train", enabled=progress) as bar:
        bar.note(
            "compiling (or reading from the cache) and running the first "
            f"{min(config.chunk, config.steps)} steps"
        )
        for c in range(n_chunks):
            t0 = time.perf_counter()
            params, opt_state, chunk_loss, points = run_chunk(
                program,
                params,
                opt_state,
                static,
                batch_key,
                lanes,
                jnp.asarray(c * config.chunk),
                trace,
            )
            if trace is not None:
                trace = (*trace[:2], points)
            chunk_loss = np.asarray(chunk_loss)
            losses[:, c * config.chunk : (c + 1) * config.chunk] = chunk_loss.T
            warmup = first is None
            if warmup:
                first = time.perf_counter() - t0
            n = min(config.chunk, config.steps - c * config.chunk)
            # the first chunk's time is mostly compiling: the ETA counts from its end
            bar.update(n, f"loss {np.mean(chunk_loss[n - 1]):.4g}", warmup=warmup)
    models = eqx.combine(params, static)
    loss, correct, phase_loss = (
        np.asarray(a) for a in evaluate(models, task, held_out)
    )
    trajectory = None
    if trace is not None:
        last = np.asarray(point(models, trace[1]))[:, None]
        trajectory = np.concatenate([np.asarray(trace[2]), last], axis=1)
    return TransformerRun(
        task=task,
        arch=arch,
        train_config=config,
        seeds=seeds,
        seed=seed,
        loss=losses[:, : config.steps],
        initial_loss=initial_loss,
        measures=PhaseMeasures(
            loss=loss,
            correct=correct,
            phase_loss=phase_loss,
            queries_per_context=task.T // task.period,
        ),
        models=models,
        wall_s=time.perf_counter() - start_time,
        first_chunk_s=first,
        trajectory_steps=record,
        trajectory=trajectory,
    )


__all__ = [
    "MEANS_STREAM",
    "PhaseMeasures",
    "TransformerRun",
    "gate_trajectory_point",
    "check_overlap_penalty",
    "held_out_contexts",
    "penalized_loss",
    "phase_measures",
    "sample_retrieval_contexts",
    "train_transformer",
]
