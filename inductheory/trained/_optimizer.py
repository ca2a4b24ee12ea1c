"""The optimizer of a `TrainConfig` as both trainers take it: optax's optimizers and the
learning-rate schedules, with the schedule's values traced so that runs differing only in them
share one compiled program (docs/theory.md §11).

May import: nothing in `inductheory` but `._config`.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float, Int

from ._config import GRADIENT_DESCENT, SCHEDULES, TrainConfig

# The "exponential" schedule ends at this fraction of the peak learning rate.
EXPONENTIAL_END = 0.01


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


__all__ = [
    "OptimizerSettings",
    "learning_rate",
    "make_optimizer",
    "optimizer_settings",
]
