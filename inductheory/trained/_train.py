"""Training the compressed model with optax: many seeds at once, in compiled chunks of steps,
with log-spaced statistics, held-out measures and resumable checkpoints (docs/theory.md §11).

Seed i of base seed s starts from the full flow's key of seed i (`seed_keys`), and a full-batch
run trains on the full flow's balanced sample (`flow_sample`): with every switch at the theorem's
setting and plain gradient descent of step eta, step k is the explicit Euler step of the full
flow, so the gates after k steps follow the flow at t = k eta with an error O(eta). Beyond the
flow's streams (1 seeds, 2 sample, 3 geometry), held-out contexts use `fold_in(key(s), 4)` and
the fresh contexts of minibatch step k for seed i `fold_in(fold_in(fold_in(key(s), 5), k), i)`:
a seed's numbers do not depend on which seeds train beside it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding, PartitionSpec
from jaxtyping import Array, Float, Int

from ..flow._config import FlowConfig
from ..flow._dynamics import _windows
from ..flow._sample import flow_sample, seed_keys
from ..internal._io import (
    _atomic_write,
    claimed_output_dir,
    library_version,
    write_json_atomic,
    write_npz_atomic,
)
from ..internal._lanes import (
    LANE_AXIS,
    lane_mesh,
    map_lanes,
    pad_lanes,
    padded_size,
    shard_lanes,
)
from ..internal._progress import Progress
from ..internal._records import field_values
from ..model._contexts import _sample_contexts, sample_contexts
from ..model._measures import effective_offsets
from ..model._task import (
    SEED_MAX,
    SEED_MIN,
    SEEDS_MAX,
    Task,
    _require_int,
    assumptions_silenced,
)
from ._config import (
    GRADIENT_DESCENT,
    SCHEDULES,
    Embeddings,
    ModelConfig,
    TrainConfig,
)
from ._measures import ModelMeasures, measure
from ._model import init_model

# The "exponential" schedule ends at this fraction of the peak learning rate.
EXPONENTIAL_END = 0.01
# Streams of the base seed's key beyond the flow's (1 seeds, 2 sample, 3 geometry).
HELD_OUT_STREAM, BATCH_STREAM = 4, 5
CHECKPOINT, RESULT, STATISTICS, MODELS, MEASURES = (
    "checkpoint.eqx",
    "train.json",
    "statistics.npz",
    "models.eqx",
    "measures.npz",
)


def _optax_builder(name: str):
    """The optax optimizer called `name` (`"gd"`: `optax.sgd` without momentum); a one-line
    `ValueError` for a name that is no optax optimizer."""
    if name == GRADIENT_DESCENT:
        return optax.sgd  # without momentum: updates -lr * grad
    build = None if name.startswith("_") else getattr(optax, name, None)
    if not callable(build):
        raise ValueError(
            f"optimizer must be 'gd' or the name of an optax optimizer, got {name!r}"
        )
    return build


class OptimizerSettings(eqx.Module):
    """The optimizer of a `TrainConfig` as the compiled training programs take it.

    The optimizer's name, whether weight decay is decoupled and whether the moment decays are
    given choose the optimizer state's structure (static fields); the schedule's kind, the
    peak learning rate eta, the steps n, the warmup fraction, the moment decays and the
    weight decay lambda are values (traced), so runs that differ only in them share one
    compiled program.
    The arithmetic and dtypes are optax's own (`optax.cosine_decay_schedule`, ...) as XLA
    compiles them with the values written in: a traced value gives the same learning rate and
    the same updates to the last bit (tested against optax), except with a decoupled weight
    decay or given moment decays, within ulps.

    Build it with `optimizer_settings`.

    ```python
    s = optimizer_settings(TrainConfig(optimizer="adam", lr=1e-2, steps=100))
    s.learning_rate(50)  # 0.01 (constant schedule)
    state = s.transformation().init({"w": jnp.zeros(3)})
    ```
    """

    name: str = eqx.field(static=True)
    decoupled: bool = eqx.field(static=True)
    schedule: Int[Array, ""]  # an index into SCHEDULES
    lr: Float[Array, ""]
    steps: Int[Array, ""]
    warmup: Float[Array, ""]
    betas: tuple[Float[Array, ""], Float[Array, ""]] | None
    weight_decay: Float[Array, ""]

    def learning_rate(self, count) -> Float[Array, ""]:
        """The learning rate at step `count` (the schedules of `learning_rate`), float64."""
        eta, n = self.lr, self.steps

        def exponential(count):  # optax.exponential_decay(eta, n, EXPONENTIAL_END)
            p = _over(count, n, jnp.float32)
            return jnp.where(count <= 0, eta, eta * jnp.power(EXPONENTIAL_END, p))

        def warmup_cosine(count):
            # optax.warmup_cosine_decay_schedule(0, eta, w, n), w >= 1: linear warmup (optax's
            # polynomial arithmetic, in float32 as optax's int32 counts give), then the
            # cosine over n - w steps
            warmup = jnp.floor(self.warmup * n).astype(jnp.int32)
            frac = 1 - _over(jnp.clip(count, 0, warmup), warmup, jnp.float32)
            linear = (0.0 - eta) * frac + eta
            return jnp.where(
                count < warmup, linear, _cosine_decay(eta, n - warmup, count - warmup)
            )

        kinds = {
            "constant": lambda count: eta,
            "cosine": lambda count: _cosine_decay(eta, n, count),
            "warmup_cosine": warmup_cosine,
            "exponential": exponential,
        }
        branches = [  # each in float64: the exact values of its own dtype
            lambda count, f=kinds[kind]: jnp.asarray(f(count), jnp.float64)
            for kind in SCHEDULES
        ]
        return jax.lax.switch(self.schedule, branches, count)

    def transformation(self) -> optax.GradientTransformation:
        """The optax transformation (`make_optimizer`)."""
        build = _optax_builder(self.name)
        if self.betas is not None:
            build = functools.partial(build, b1=self.betas[0], b2=self.betas[1])
        if not self.decoupled:
            return build(learning_rate=self.learning_rate)
        return optax.chain(
            build(learning_rate=1.0),
            optax.scale(-1.0),  # the direction u itself
            optax.add_decayed_weights(self.weight_decay),
            optax.scale_by_learning_rate(self.learning_rate),
        )


# XLA computes x / n for a constant n as x times the reciprocal of n: so do the schedules
# below with a traced n, to give the same bits as optax's with the values written in.


def _over(count, n, dtype):
    """count / n in `dtype`, as XLA computes it when n is a constant."""
    return count.astype(dtype) * (1 / jnp.asarray(n, dtype))


def _cosine_decay(eta, n, count):
    """optax.cosine_decay_schedule(eta, n)'s arithmetic (alpha 0, exponent 1), in the weak
    float64 of optax's `float(n)` against int32 counts."""
    n = n * 1.0
    count = jnp.minimum(count, n)
    return eta * (0.5 * (1 + jnp.cos(jnp.pi * count * (1.0 / n))))


def optimizer_settings(config: TrainConfig) -> OptimizerSettings:
    """The `OptimizerSettings` of `config` (its values weakly typed, as Python numbers are:
    a float32 model's updates stay float32).

    **Arguments:**
    - `config`: the training settings.

    **Returns:** an `OptimizerSettings`.

    **Raises:** `ValueError` for a name that is no optax optimizer taking a learning rate.

    ```python
    optimizer_settings(TrainConfig(lr=0.5, schedule="cosine", steps=100)).learning_rate(50)
    ```
    """
    schedule = config.schedule
    if schedule == "warmup_cosine" and config.warmup_steps == 0:
        schedule = "cosine"  # no warmup step (optax's own choice, kept in float64)
    settings = OptimizerSettings(
        name=config.optimizer,
        schedule=jnp.asarray(SCHEDULES.index(schedule)),
        decoupled=config.weight_decay != 0,
        lr=jnp.asarray(float(config.lr)),
        steps=jnp.asarray(int(config.steps)),
        warmup=jnp.asarray(float(config.warmup)),
        betas=None
        if config.betas is None
        else tuple(jnp.asarray(float(b)) for b in config.betas),
        weight_decay=jnp.asarray(float(config.weight_decay)),
    )
    try:
        optimizer = settings.transformation()
    except TypeError:
        optimizer = None
    if not isinstance(optimizer, optax.GradientTransformation):
        raise ValueError(
            f"optimizer {config.optimizer!r} is not an optax optimizer taking a "
            "learning_rate" + ("" if config.betas is None else " and betas b1, b2")
        )
    return settings


def learning_rate(config: TrainConfig) -> optax.Schedule:
    """The learning rate at step k as an optax schedule, peak `config.lr` = eta over
    n = `config.steps` steps.

    - `"constant"`: eta.
    - `"cosine"`: $\\eta (1 + \\cos(\\pi k / n)) / 2$.
    - `"warmup_cosine"`: linear from 0 to eta over w = floor(`config.warmup` n) steps, then
      cosine to 0 at step n (w = 0: the cosine schedule).
    - `"exponential"`: $\\eta \\cdot$ `EXPONENTIAL_END`$^{k/n}$.

    The warmup and exponential schedules are float32, as optax's compiled schedules are.

    **Arguments:**
    - `config`: the training settings.

    **Returns:** a function of the step count (`OptimizerSettings.learning_rate`).

    ```python
    learning_rate(TrainConfig(lr=0.1, schedule="cosine", steps=100))(50)  # 0.05
    ```
    """
    return optimizer_settings(config).learning_rate


def make_optimizer(config: TrainConfig) -> optax.GradientTransformation:
    """The optimizer of `config`: `"gd"` (plain gradient descent, $\\theta \\leftarrow \\theta -
    \\eta_k \\nabla L$ exactly, the Euler scheme of the flow) or the optax optimizer of that name
    (`optax.adam`, ...), called with the `learning_rate` schedule; with `weight_decay` lambda > 0
    the decay is decoupled: $\\theta \\leftarrow \\theta - \\eta_k (u + \\lambda \\theta)$ with u
    the optimizer's direction at learning rate 1.

    **Arguments:**
    - `config`: the training settings.

    **Returns:** an `optax.GradientTransformation` (`OptimizerSettings.transformation`).

    **Raises:** `ValueError` for a name that is no optax optimizer.

    ```python
    opt = make_optimizer(TrainConfig(optimizer="adamw", lr=1e-2, weight_decay=1e-4))
    ```
    """
    return optimizer_settings(config).transformation()


def log_steps(steps: int, log_points: int) -> np.ndarray:
    """The steps at which statistics are kept: 0, `log_points` log-spaced steps in [1, steps]
    (rounded; repeats dropped) and the last.

    **Example:** `log_steps(1000, 4)` is `[0, 1, 10, 100, 1000]`.
    """
    spaced = np.rint(np.geomspace(1, steps, log_points)).astype(np.int64)
    return np.unique(np.concatenate([[0], spaced, [steps]]))


@dataclasses.dataclass(frozen=True)
class TrainStatistics:
    """Statistics of every seed at the logged steps (numpy, leading axes (seeds, logged steps)),
    gate masses over the held-out contexts' windows (context, entry).

    - `loss` (seeds, n_log): the training loss at that step (the fixed sample's, the
      population's, or that step's fresh batch's).
    - `mass` (seeds, n_log, H, 2, W): mean gate mass per head, branch (key, value) and offset.
    - `worst` (seeds, n_log, H, 2, W): its minimum over the windows.
    - `static_offsets`, `avg_offsets` (seeds, n_log, H, 2): the effective offsets of
      `effective_offsets` (docs/theory.md §9).
    """

    loss: np.ndarray
    mass: np.ndarray
    worst: np.ndarray
    static_offsets: np.ndarray
    avg_offsets: np.ndarray

    def to_dict(self) -> dict:
        return field_values(self)


@dataclasses.dataclass(frozen=True)
class TrainTimings:
    """Wall times of a `train` run: the whole run, its first chunk (with compilation; None when
    resumed after the last chunk), and steps per second over the other chunks (None with one)."""

    wall_s: float
    first_chunk_s_including_compile: float | None
    steps_per_s: float | None
    devices: int


@dataclasses.dataclass(frozen=True)
class TrainRun:
    """The result of `train`: every parameter, the logged statistics, the held-out measures and
    the final models of every seed.

    - `task`, `model_config`, `train_config`, `seed`, `seeds`: the parameters.
    - `M`: contexts of the fixed sample (`batch="full"`; None otherwise).
    - `steps`: the logged steps (`log_steps`).
    - `statistics`: a `TrainStatistics`.
    - `measures`: the model's measures on the held-out contexts, each with a leading seed axis.
    - `models`: the final models, array leaves with a leading seed axis.
    - `timings`: a `TrainTimings`.
    """

    task: Task
    model_config: ModelConfig
    train_config: TrainConfig
    seed: int
    seeds: int
    M: int | None
    steps: np.ndarray
    statistics: TrainStatistics
    measures: object
    models: object
    timings: TrainTimings

    def parameters(self) -> dict:
        """Every parameter of the run (what an output directory is claimed with)."""
        return _parameters(
            self.task, self.model_config, self.train_config, self.seeds, self.seed
        )

    def to_dict(self) -> dict:
        """JSON-able: the parameters, the logged steps and statistics, per seed the held-out
        `key_offsets`, `value_offsets` and `phase_accuracy`, and a `summary` over seeds."""
        m = self.measures
        per_seed = {
            name: np.asarray(getattr(m, name))
            for name in ("key_offsets", "value_offsets", "phase_accuracy")
        }
        follows = np.asarray(m.value_follows_key)
        summary = dict(
            seeds=self.seeds,
            M=self.M,
            train_loss_mean=float(np.mean(self.statistics.loss[:, -1])),
            held_out_loss_mean=float(np.mean(np.asarray(m.loss))),
            mean_accuracy_mean=float(np.mean(np.asarray(m.mean_accuracy))),
            phase_gap_mean=float(np.mean(np.asarray(m.phase_gap))),
            value_follows_key_seeds=int(
                np.sum(np.all(follows.reshape(self.seeds, -1), axis=1))
            ),
            timings=dataclasses.asdict(self.timings),
        )
        return dict(
            self.parameters(),
            steps=self.steps,
            statistics=self.statistics.to_dict(),
            per_seed=per_seed,
            summary=summary,
        )


def _parameters(task, model_config, train_config, seeds, seed) -> dict:
    return dict(
        task=task.to_dict(),
        model_config=field_values(model_config),
        train_config=field_values(train_config),
        seeds=seeds,
        seed=seed,
        version=library_version(),
    )


def _stack(models: list):
    """Models stacked along a new leading axis (array leaves; the rest from the first)."""
    arrays = [eqx.filter(m, eqx.is_array) for m in models]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *arrays)
    return eqx.combine(stacked, eqx.filter(models[0], eqx.is_array, inverse=True))


def _map_arrays(fn, tree):
    """`fn` applied to every array leaf of `tree`; the other leaves kept."""
    return jax.tree.map(lambda x: fn(x) if eqx.is_array(x) else x, tree)


def seed_model(models, i: int):
    """Seed `i` of stacked models (every array leaf's lane i; the other leaves kept)."""
    return _map_arrays(lambda a: a[i], models)


def _lanes(tree, n: int):
    """The first n lanes of every array leaf."""
    return _map_arrays(lambda a: a[:n], tree)


def _partition(model):
    """`(params, fixed)`: the model's trainable floating-point arrays and everything else."""
    params, rest = eqx.partition(model, model.trainable())
    params, fixed = eqx.partition(params, eqx.is_inexact_array)
    return params, eqx.combine(fixed, rest)


def _split(models: list):
    """`(params, (per_seed, shared))` of the seeds' models: the trainable arrays and the fixed
    ones stacked along a leading seed axis, except the fixed arrays every seed holds the very
    same of (the task's numbers, the given geometry), kept once."""
    parts = [_partition(m) for m in models]
    fixed = [f for _, f in parts]
    same = jax.tree.map(
        lambda *xs: eqx.is_array(xs[0]) and all(x is xs[0] for x in xs), *fixed
    )
    per_seed = _stack([eqx.filter(f, same, inverse=True) for f in fixed])
    return _stack([p for p, _ in parts]), (per_seed, eqx.filter(fixed[0], same))


# how the vmaps of the seeds take `(per_seed, shared)`
_FIXED_AXES = (0, None)


def _gate_statistics(model, contexts) -> dict:
    """Mean and minimum gate masses (H, 2, W) and effective offsets (H, 2) over the windows
    of `contexts`."""
    w = _windows(jax.vmap(model.gate_probabilities)(contexts))  # (windows, H, 2, W)
    static, avg = effective_offsets(jnp.moveaxis(w, 0, -2))
    return dict(
        mass=jnp.mean(w, axis=0),
        worst=jnp.min(w, axis=0),
        static_offsets=static,
        avg_offsets=avg,
    )


# XLA's CPU backend hands contractions, elementwise fusions and reductions to the YNNPACK library
# (`LIBRARY_FUSION_TYPE_DOT`, `_ELTWISE`, `_REDUCE`; by default some of them). On the tiny
# trailing axes of the flow-equivalent programs (W offsets, L entries, T + 1 logits, in float64)
# its calls cost more than XLA's own loops, and they do not get cheaper per seed when seeds are
# vmapped: those programs use none. The option only chooses how XLA emits the same operations.
YNN_FUSION_OPTION = "xla_cpu_experimental_ynn_fusion_type"


@functools.cache
def _compiler_options(fusions: tuple[str, ...] = ()) -> dict:
    """The XLA options of `jit_with_ynn_fusions(*fusions)`: YNNPACK for exactly `fusions`
    (names as "DOT", "ELTWISE", "REDUCE") on the CPU backend where this jax knows the option
    and the names, none otherwise."""
    if jax.default_backend() != "cpu":
        return {}
    options = {YNN_FUSION_OPTION: ",".join(f"LIBRARY_FUSION_TYPE_{f}" for f in fusions)}
    try:
        jax.jit(jnp.sin, compiler_options=options).lower(1.0).compile()
    except Exception:  # an older jax or XLA without the option or a name: its defaults
        return {}
    return options


def jit_with_ynn_fusions(*fusions: str):
    """A decorator: `eqx.filter_jit` of `fn` compiled with XLA's YNNPACK library fusions of
    exactly the kinds `fusions` on the CPU backend (`_compiler_options`; other backends, or a
    jax without the option: its defaults), chosen at the first call, when the backend is known.
    One compiled program per distinct static input, as with `eqx.filter_jit` itself; methods
    are passed unbound (`self` first).

    ```python
    step = jit_with_ynn_fusions("DOT")(lambda x: x @ x.T)
    ```
    """

    def decorate(fn):
        compiled = None

        @functools.wraps(fn)
        def call(*args):
            nonlocal compiled
            if compiled is None:
                options = _compiler_options(fusions)
                kwargs = {"compiler_options": options} if options else {}
                compiled = eqx.filter_jit(fn, **kwargs)
            return compiled(*args)

        return call

    return decorate


# the flow-equivalent trainer's programs: XLA's own loops throughout (above)
jit_without_ynn_fusions = jit_with_ynn_fusions()


# Lanes a CPU step vmaps at once. Vmapping every seed makes the step's intermediates (seeds x
# contexts x queries x logits) outgrow the CPU caches, so that 32 seeds cost more than 32 single
# steps; a few at a time, the groups scanned inside the same compiled step, keeps them cached.
CPU_LANE_GROUP = 2


def _lane_group(devices) -> int | None:
    """`CPU_LANE_GROUP` on CPU devices (each device steps its own lanes, a group at a time);
    None (all lanes in one vmap, split over the devices) otherwise."""
    if all(d.platform == "cpu" for d in devices):
        return CPU_LANE_GROUP
    return None


class _Programs(eqx.Module):
    """The compiled pieces of one run: a chunk of `chunk` steps of every seed and the final
    evaluation (equal settings give equal programs, compiled once per process)."""

    task: Task
    # N as a Python int: fresh contexts have a static shape, and inside jit task.N is traced
    vocabulary: int = eqx.field(static=True)
    batch: int | str = eqx.field(static=True)
    # its learning rate, steps and weight decay traced: runs differing only in them share
    # the programs
    optimizer: OptimizerSettings
    chunk: int = eqx.field(static=True)
    # lanes stepped at once (None: every lane in one vmap)
    group: int | None = eqx.field(static=True, default=None)
    # the devices the lanes are split over (None: one)
    devices: tuple | None = eqx.field(static=True, default=None)

    def loss_of(self, model, data, step, lane):
        """The training loss of one seed: on the fixed sample `data`, the population's, or on
        fresh contexts of the batch key `data` for this step and seed."""
        if self.batch == "full":
            return model.loss(data)
        if self.batch == "population":
            return model.population_loss()
        key = jax.random.fold_in(
            jax.random.fold_in(jax.random.wrap_key_data(data), step), lane
        )
        t = self.task
        return model.loss(_sample_contexts(key, t.L, t.S, self.vocabulary, self.batch))

    def step(self, params, opt_state, static, data, step, lane):
        def loss(p):
            return self.loss_of(eqx.combine(p, *static), data, step, lane)

        value, grads = jax.value_and_grad(loss)(params)
        optimizer = self.optimizer.transformation()
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    def statistics(self, params, static, contexts):
        return _gate_statistics(eqx.combine(params, *static), contexts)

    def lanes_step(self, params, opt_state, static, data, step, lanes):
        per_seed, shared = static
        arrays, rest = eqx.partition(
            (params, opt_state, per_seed, lanes, shared, data, step), eqx.is_array
        )

        def own_lanes(arrays):
            p, state, own, lane, common, d, k = eqx.combine(arrays, rest)
            return map_lanes(
                lambda seed: self.step(
                    seed[0], seed[1], (seed[2], common), d, k, seed[3]
                ),
                (p, state, own, lane),
                self.group,
            )

        # over several CPU devices, each device steps its own lanes `group` at a time (a group's
        # program is the one-device one, and the devices' cores work side by side)
        if self.group is None or self.devices is None or len(self.devices) == 1:
            return own_lanes(arrays)
        split, whole = PartitionSpec(LANE_AXIS), PartitionSpec()
        specs = (split,) * 4 + (whole,) * 3
        return jax.shard_map(
            own_lanes,
            mesh=lane_mesh(self.devices),
            in_specs=(specs,),
            out_specs=split,
            # no collectives: each device's lanes are independent (and the minibatch sampler's
            # loops start from replicated keys, which the varying-axes check would reject)
            check_vma=False,
        )(arrays)

    def lanes_statistics(self, params, static, contexts):
        return eqx.filter_vmap(self.statistics, in_axes=(0, _FIXED_AXES, None))(
            params, static, contexts
        )

    @jit_without_ynn_fusions
    def run_chunk(
        self, params, opt_state, static, data, held_out, lanes, start, stop, log_mask
    ):
        """The steps `start` to `stop - 1` (at most `chunk`; the scan's other iterations leave
        the state alone); per step the loss (lanes,) and, where `log_mask[step - start]`
        (chunk,), the gate statistics (else zeros); chunks of every length and runs of other
        lengths share the program."""
        shapes = jax.eval_shape(self.lanes_statistics, params, static, held_out)
        n = lanes.shape[0]

        def body(carry, i):
            params, opt_state = carry
            s = start + i
            stats = jax.lax.cond(
                log_mask[i],
                lambda: self.lanes_statistics(params, static, held_out),
                lambda: jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), shapes),
            )
            params, opt_state, loss = jax.lax.cond(
                s < stop,
                lambda: self.lanes_step(params, opt_state, static, data, s, lanes),
                lambda: (params, opt_state, jnp.zeros(n)),
            )
            return (params, opt_state), (loss, stats)

        (params, opt_state), out = jax.lax.scan(
            body, (params, opt_state), jnp.arange(self.chunk)
        )
        return params, opt_state, out

    @jit_without_ynn_fusions
    def evaluate(self, params, static, data, held_out, lanes):
        """The loss (lanes,) and gate statistics of the state after the last step."""

        def one(p, st, lane):
            return self.loss_of(eqx.combine(p, *st), data, self.optimizer.steps, lane)

        loss = eqx.filter_vmap(one, in_axes=(0, _FIXED_AXES, 0))(params, static, lanes)
        return loss, self.lanes_statistics(params, static, held_out)


def _replicated(tree, devices):
    if len(devices) == 1:
        return tree
    return jax.device_put(tree, NamedSharding(lane_mesh(devices), PartitionSpec()))


def _check_population(model) -> None:
    """A one-line `ValueError` where the model's population loss has no closed form."""
    eqx.filter_eval_shape(lambda m: m.population_loss(), model)


def train(
    task: Task,
    model_config: ModelConfig,
    train_config: TrainConfig,
    seeds: int,
    *,
    seed: int = 0,
    out=None,
    progress: bool = False,
    devices=None,
) -> TrainRun:
    """Train the compressed model of `task` from `seeds` seeds at once.

    Seed i starts from `init_model(task, model_config, key_i, rho=train_config.rho,
    geometry=geometry)` with key_i the full flow's key of seed i and the geometry of the full
    flow's sample (`flow_sample`), and takes `train_config.steps` optimizer steps
    (`make_optimizer`) of the mean cross-entropy: on the flow's fixed balanced sample of M
    contexts (`batch="full"`), the population loss (`"population"`), or fresh contexts at every
    step (a number). All seeds are vmapped (the fixed parts of the model get no optimizer state),
    split over `devices`, and stepped in `lax.scan` chunks of `train_config.chunk` steps through
    one compiled program. At the `log_steps` the loss and gate statistics on held-out contexts
    are kept (`TrainStatistics`; no parameters along the way); at the end the model's measures
    on the `eval_contexts` held-out contexts.

    **Arguments:**
    - `task`, `model_config`, `train_config`: the task, the model's switches and the training.
    - `seeds`: number of seeds (indices 0..seeds-1 under base seed `seed`).
    - `seed`: base seed (keys, sample, geometry, held-out contexts, batches).
    - `out`: a directory for the result (`train.json`, `statistics.npz`, the final models
      `models.eqx`) and a checkpoint after every chunk: a run stopped anywhere resumes from its
      last chunk with the numbers of an uninterrupted run. A directory holding a run with other
      parameters is refused.
    - `progress`: show a `Progress` line on stderr (per chunk).
    - `devices`: devices to split the seeds over (default all local devices).

    **Returns:** a `TrainRun`.

    **Raises:** `ValueError` naming the parameter, e.g. `batch="population"` for a model
    without a closed-form population loss.

    ```python
    task = Task(L=4, S=3, H=2, N=48, beta=4.0)
    run = train(task, ModelConfig(), TrainConfig(lr=0.5, steps=200, M=48), 8)
    run.measures.key_offsets  # (8, H)
    ```
    """
    seeds = _require_int("seeds", seeds, 1, SEEDS_MAX)
    seed = _require_int("seed", seed, SEED_MIN, SEED_MAX)
    if train_config.overlap_penalty:
        raise ValueError(
            "overlap_penalty applies to the paper's transformers (train_transformer, "
            f"`inductheory train paper`), not this model; got {train_config.overlap_penalty}"
        )
    devices = tuple(jax.devices() if devices is None else devices)
    parameters = _parameters(task, model_config, train_config, seeds, seed)
    setup, state = _prepare_run(task, model_config, train_config, seeds, seed, devices)
    with claimed_output_dir(out, "train", parameters) as directory:
        checkpoint = None if directory is None else Path(directory) / CHECKPOINT
        if checkpoint is not None and checkpoint.exists():
            state = _load_checkpoint(checkpoint, state)
        setup, state = _placed(setup, state)
        start_time = time.perf_counter()
        loop_timings = _run_chunks(setup, state, checkpoint, progress)
        run = _finish_run(setup, state, loop_timings, start_time)
        if directory is not None:
            _write_result(Path(directory), run)
    return run


@dataclasses.dataclass(frozen=True)
class _Setup:
    """What a `train` run fixes before its first step: its parameters, the compiled programs,
    the training data (`_Programs.loss_of`), the held-out contexts, the fixed parts of the models
    `(per_seed, shared)`, the lanes, the logged steps and which steps of the chunks log. After
    `_placed`, the arrays are on the devices."""

    task: Task
    model_config: ModelConfig
    config: TrainConfig
    seeds: int
    seed: int
    devices: tuple
    programs: _Programs
    M: int | None
    data: object
    held_out: jax.Array
    static: tuple
    lanes: np.ndarray | jax.Array  # 0..n-1, the seeds padded to the devices
    logged: np.ndarray
    log_mask: np.ndarray


@dataclasses.dataclass
class _State:
    """What a run changes as it steps: the steps done, every seed's trainable parameters and
    optimizer state, and the statistics buffers of the logged steps (what a checkpoint holds)."""

    done: int
    params: object
    opt_state: object
    buffers: dict


def _prepare_run(
    task, model_config, config, seeds: int, seed: int, devices: tuple
) -> tuple[_Setup, _State]:
    """The run's `_Setup` and its state at step 0: the full flow's sample and geometry, the
    held-out contexts, the seeds' initial models split into trainable and fixed parts, the
    optimizer's initial state and empty statistics buffers. Raises the one-line `ValueError`s
    of `train` (no closed-form population loss, nothing to train)."""
    geometry, contexts = flow_sample(
        task, FlowConfig(dynamics="full", M=config.M), seed
    )
    base = jax.random.key(seed)
    held_out = sample_contexts(
        jax.random.fold_in(base, HELD_OUT_STREAM), task, config.eval_contexts
    )
    models = _initial_models(task, model_config, config, seeds, seed, geometry)
    if config.batch == "population":
        _check_population(models[0])
    data = {
        "full": contexts,
        "population": None,
    }.get(
        config.batch,
        jax.random.key_data(jax.random.fold_in(base, BATCH_STREAM)),
    )
    size = padded_size(seeds, devices)
    params, static = _split(models)
    if not jax.tree.leaves(params):
        raise ValueError(
            f"model_config has nothing to train (gates='{model_config.gates}' with fixed "
            "embeddings, identity maps, a tied unembedding and one layer): measure the model "
            "with `measure` instead"
        )
    optimizer = optimizer_settings(config)
    programs = _Programs(
        task,
        task.vocabulary,
        config.batch,
        optimizer,
        config.chunk,
        _lane_group(devices),
        devices,
    )
    opt_state = eqx.filter_vmap(optimizer.transformation().init)(params)
    logged, log_mask, buffers = _logging(
        config, programs, params, static, held_out, seeds
    )
    setup = _Setup(
        task=task,
        model_config=model_config,
        config=config,
        seeds=seeds,
        seed=seed,
        devices=devices,
        programs=programs,
        M=int(contexts.shape[0]) if config.batch == "full" else None,
        data=data,
        held_out=held_out,
        static=static,
        lanes=np.arange(size),
        logged=logged,
        log_mask=log_mask,
    )
    return setup, _State(0, params, opt_state, buffers)


def _logging(config, programs, params, static, held_out, seeds: int):
    """`(logged, log_mask, buffers)`: the logged steps (`log_steps`), whether each step of the
    chunks logs its statistics (steps before the last; the last is logged by `evaluate`), and
    zeroed buffers (seeds, logged steps, ...) of the loss and every gate statistic."""
    logged = log_steps(config.steps, config.log_points)
    # a chunk reads `chunk` entries from its start, which can be any step (`_chunk_bounds`)
    log_mask = np.zeros(config.steps + config.chunk, bool)
    log_mask[logged[logged < config.steps]] = True
    stat_shapes = jax.eval_shape(programs.lanes_statistics, params, static, held_out)
    buffers = {"loss": np.zeros((seeds, logged.size))} | {
        k: np.zeros((seeds, logged.size) + v.shape[1:], v.dtype)
        for k, v in stat_shapes.items()
    }
    return logged, log_mask, buffers


def _load_checkpoint(path: Path, state: _State) -> _State:
    """The state stored in the checkpoint at `path` (`_write_checkpoint`), shaped like `state`."""
    like = (np.zeros((), np.int64), state.params, state.opt_state, state.buffers)
    done, params, opt_state, buffers = eqx.tree_deserialise_leaves(path, like)
    return _State(
        int(done), params, opt_state, {k: np.array(v) for k, v in buffers.items()}
    )


def _placed(setup: _Setup, state: _State) -> tuple[_Setup, _State]:
    """`setup` and `state` on the devices: every per-seed array padded to the lanes and split
    over the devices, the arrays every lane shares replicated."""
    size, devices = setup.lanes.size, setup.devices

    def place(tree):
        arrays, rest = eqx.partition(tree, eqx.is_array)
        arrays = jax.tree.map(jnp.asarray, pad_lanes(arrays, size))
        return eqx.combine(shard_lanes(arrays, devices), rest)

    params, opt_state, per_seed = (
        place(t) for t in (state.params, state.opt_state, setup.static[0])
    )
    static = (per_seed, _replicated(setup.static[1], devices))
    data, held_out = _replicated((setup.data, setup.held_out), devices)
    setup = dataclasses.replace(
        setup,
        static=static,
        data=data,
        held_out=held_out,
        lanes=shard_lanes(jnp.asarray(setup.lanes), devices),
    )
    return setup, dataclasses.replace(state, params=params, opt_state=opt_state)


def _run_chunks(setup: _Setup, state: _State, checkpoint, progress: bool) -> tuple:
    """Step `state` (in place) from its `done` steps to the last in chunks of
    `setup.config.chunk` steps, filling its buffers at the logged steps and writing
    `checkpoint` (when not None) after every chunk.

    **Returns:** `(first, rest_s, rest_steps)`: the seconds of the first chunk (None when no
    chunk ran), and the seconds and steps of the others."""
    config, seeds, programs = setup.config, setup.seeds, setup.programs
    row = {int(s): j for j, s in enumerate(setup.logged)}
    first, rest_s, rest_steps = None, 0.0, 0
    with Progress(config.steps, "train", enabled=progress) as bar:
        if state.done:
            bar.update(state.done)
        if state.done < config.steps:
            bar.note("compiling (or reading from the cache) and running the first step")
        for start, stop in _chunk_bounds(state.done, config.steps, config.chunk):
            t0 = time.perf_counter()
            log_mask = setup.log_mask[start : start + config.chunk].copy()
            # the steps after `stop` belong to the next chunk
            log_mask[stop - start :] = False
            state.params, state.opt_state, (loss, stats) = programs.run_chunk(
                state.params,
                state.opt_state,
                setup.static,
                setup.data,
                setup.held_out,
                setup.lanes,
                jnp.asarray(start),
                jnp.asarray(stop),
                jnp.asarray(log_mask),
            )
            loss, stats = jax.device_get((loss, stats))
            for i in np.flatnonzero(log_mask):
                j = row[start + int(i)]
                state.buffers["loss"][:, j] = loss[i, :seeds]
                for k, v in stats.items():
                    state.buffers[k][:, j] = v[i, :seeds]
            n = stop - start
            state.done = stop
            if checkpoint is not None:
                _write_checkpoint(
                    checkpoint,
                    state.done,
                    _lanes(jax.device_get(state.params), seeds),
                    _lanes(jax.device_get(state.opt_state), seeds),
                    state.buffers,
                )
            elapsed, warmup = time.perf_counter() - t0, first is None
            if warmup:
                first = elapsed
            else:
                rest_s, rest_steps = rest_s + elapsed, rest_steps + n
            # the first chunk's time is mostly compiling: the ETA counts from its end
            bar.update(n, f"loss {np.mean(loss[n - 1, :seeds]):.4g}", warmup=warmup)
    return first, rest_s, rest_steps


def _chunk_bounds(done: int, steps: int, chunk: int) -> list[tuple[int, int]]:
    """`(start, stop)` of the chunks that take a run from step `done` to `steps`: the first
    step alone (its progress line comes as soon as the program is compiled or read from the
    cache, not a whole chunk later), then up to the next multiple of `chunk`, then `chunk` steps
    at a time. A run's numbers do not depend on where its chunks end (tested).

    **Example:** `_chunk_bounds(0, 25, 10) == [(0, 1), (1, 10), (10, 20), (20, 25)]`.
    """
    if done >= steps:
        return []
    edges = sorted(
        {done, done + 1, steps, *range((done // chunk + 1) * chunk, steps, chunk)}
    )
    return list(zip(edges[:-1], edges[1:]))


def _finish_run(
    setup: _Setup, state: _State, loop_timings: tuple, start_time: float
) -> TrainRun:
    """The `TrainRun` of the trained `state`: the loss and statistics after the last step in
    its buffers' last column, the final models of every seed and their held-out measures, and
    the timings (`loop_timings` of `_run_chunks`, the wall time since `start_time`)."""
    seeds, static, buffers = setup.seeds, setup.static, state.buffers
    loss, stats = jax.device_get(
        setup.programs.evaluate(
            state.params, static, setup.data, setup.held_out, setup.lanes
        )
    )
    buffers["loss"][:, -1] = loss[:seeds]
    for k, v in stats.items():
        buffers[k][:, -1] = v[:seeds]
    # the seeds' models on the host: slicing and broadcasting there compiles nothing (as jax
    # arrays, every leaf's slice was a program of its own, about 1.5 CPU-s of a quick ladder)
    host = eqx.combine(
        _lanes(jax.device_get(eqx.combine(state.params, static[0])), seeds),
        _map_arrays(
            lambda a: np.broadcast_to(a, (seeds,) + a.shape), jax.device_get(static[1])
        ),
    )
    # jax.device_put, not jnp.asarray: that compiles a program per leaf
    final = _map_arrays(jax.device_put, host)
    per_seed = [measure(seed_model(host, i), setup.held_out) for i in range(seeds)]
    measures = jax.tree.map(lambda *a: np.stack([np.asarray(x) for x in a]), *per_seed)
    first, rest_s, rest_steps = loop_timings
    return TrainRun(
        task=setup.task,
        model_config=setup.model_config,
        train_config=setup.config,
        seed=setup.seed,
        seeds=seeds,
        M=setup.M,
        steps=setup.logged,
        statistics=TrainStatistics(**buffers),
        measures=measures,
        models=final,
        timings=TrainTimings(
            wall_s=time.perf_counter() - start_time,
            first_chunk_s_including_compile=first,
            steps_per_s=rest_steps / rest_s if rest_s else None,
            devices=len(setup.devices),
        ),
    )


def _initial_models(task, model_config, config, seeds: int, seed: int, geometry):
    """Seed i's model at step 0 (the full flow's key of seed i)."""
    return [
        init_model(
            task,
            model_config,
            jax.random.wrap_key_data(k),
            rho=config.rho,
            # learned embeddings bring their own; fixed ones are the flow's geometry
            geometry=None
            if model_config.embeddings is Embeddings.LEARNED
            else geometry,
        )
        for k in seed_keys(seed, np.arange(seeds))
    ]


def load_run(directory) -> TrainRun:
    """The finished `train` run written to `directory` (`train(..., out=directory)`).

    **Arguments:**
    - `directory`: the run's output directory.

    **Returns:** the `TrainRun`, with the final models of every seed and the held-out measures
    exactly as the run computed them.

    **Raises:** `ValueError` when `directory` holds no finished run.

    ```python
    train(task, ModelConfig(), TrainConfig(steps=100), 4, out="run")
    load_run("run").measures.key_offsets  # (4, H)
    ```
    """
    directory = Path(directory)
    missing = [
        n
        for n in (RESULT, STATISTICS, MODELS, MEASURES)
        if not (directory / n).is_file()
    ]
    if missing:
        raise ValueError(
            f"directory {str(directory)!r} holds no finished train run "
            f"(missing {', '.join(missing)})"
        )
    record = json.loads((directory / RESULT).read_text())
    with assumptions_silenced():  # the run was warned about when it trained
        task = Task(**record["task"])
    model_config = ModelConfig(**record["model_config"])
    config = TrainConfig(**record["train_config"])
    seeds, seed = int(record["seeds"]), int(record["seed"])
    geometry, _ = flow_sample(task, FlowConfig(dynamics="full", M=config.M), seed)
    like = _stack(_initial_models(task, model_config, config, seeds, seed, geometry))
    models = eqx.tree_deserialise_leaves(directory / MODELS, like)
    with np.load(directory / STATISTICS) as f:
        steps = f["steps"]
        statistics = TrainStatistics(
            **{k.name: f[k.name] for k in dataclasses.fields(TrainStatistics)}
        )
    with np.load(directory / MEASURES) as f:
        measures = ModelMeasures(**{k: f[k] for k in f.files})
    return TrainRun(
        task=task,
        model_config=model_config,
        train_config=config,
        seed=seed,
        seeds=seeds,
        M=record["summary"]["M"],
        steps=steps,
        statistics=statistics,
        measures=measures,
        models=models,
        timings=TrainTimings(**record["summary"]["timings"]),
    )


def _write_checkpoint(path: Path, done: int, params, opt_state, buffers) -> None:
    """The state after `done` steps, in one file written atomically."""
    state = (np.asarray(done, np.int64), params, opt_state, buffers)
    _atomic_write(path, lambda tmp: eqx.tree_serialise_leaves(tmp, state))


def _write_result(directory: Path, run: TrainRun) -> None:
    write_npz_atomic(
        directory / STATISTICS, steps=run.steps, **run.statistics.to_dict()
    )
    _atomic_write(
        directory / MODELS,
        lambda tmp: eqx.tree_serialise_leaves(tmp, run.models),
    )
    write_npz_atomic(
        directory / MEASURES,
        **{
            f.name: np.asarray(getattr(run.measures, f.name))
            for f in dataclasses.fields(run.measures)
        },
    )
    # the record last: a directory with it holds a finished run
    write_json_atomic(directory / RESULT, run.to_dict())


__all__ = [
    "OptimizerSettings",
    "TrainRun",
    "TrainStatistics",
    "TrainTimings",
    "learning_rate",
    "load_run",
    "log_steps",
    "make_optimizer",
    "optimizer_settings",
    "train",
]
