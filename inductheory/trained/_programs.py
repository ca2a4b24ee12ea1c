"""The compiled programs of a `train` run: a chunk of `lax.scan` steps of every seed (the loss
on the fixed sample, the population or fresh contexts; the optimizer step; the gate statistics of
the logged steps) and the final evaluation, with the seeds vmapped a few lanes at a time on CPU
and split over the devices.

May import: `inductheory.internal`, `inductheory.model`, `inductheory.flow`, `._optimizer`,
`._compile`, `._seeds`.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax.sharding import PartitionSpec

from ..flow._dynamics import _windows
from ..internal._lanes import LANE_AXIS, lane_mesh, map_lanes
from ..model._contexts import _sample_contexts
from ..model._measures import effective_offsets
from ..model._task import Task
from ._compile import jit_without_ynn_fusions
from ._optimizer import OptimizerSettings
from ._seeds import _FIXED_AXES


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


__all__: list[str] = []
