"""Training the compressed model: optimizers and schedules, vmapped seeds against a loop of
seeds, resuming from a checkpoint, minibatches, the output directory and bad settings."""

import dataclasses
import json
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from forced_devices import run_on_host_devices
from hypothesis import given, settings, strategies as st

import inductheory as it
from inductheory.flow import flow_sample, seed_keys
from inductheory.trained import (
    ModelConfig,
    TrainConfig,
    _train,
    init_model,
    learning_rate,
    log_steps,
    make_optimizer,
)

TASK = it.Task(L=4, S=3, H=2, N=48, beta=4.0)
SMALL = dict(M=48, log_points=4, eval_contexts=8)


def _tree(key):
    a, b = jax.random.split(key)
    return {"a": jax.random.normal(a, (3, 4)), "b": jax.random.normal(b, (5,))}


def test_gd_is_params_minus_lr_times_grad_exactly():
    params, grads = _tree(jax.random.key(0)), _tree(jax.random.key(1))
    for lr in (0.1, 0.3, 1 / 3):
        opt = make_optimizer(TrainConfig(lr=lr))
        state = opt.init(params)
        p = params
        for _ in range(3):  # every step, not only the first
            updates, state = opt.update(grads, state, p)
            new = optax.apply_updates(p, updates)
            for k in p:
                np.testing.assert_array_equal(new[k], p[k] - lr * grads[k])
            p = new


def test_schedules_give_the_documented_learning_rate():
    eta, n = 0.2, 100

    def lr(schedule, k):
        return float(learning_rate(TrainConfig(lr=eta, steps=n, schedule=schedule))(k))

    assert lr("constant", 0) == lr("constant", 77) == eta
    assert lr("cosine", 0) == pytest.approx(eta, rel=1e-15)
    assert lr("cosine", 50) == pytest.approx(eta / 2, rel=1e-12)
    assert lr("cosine", 25) == pytest.approx(eta * (1 + math.cos(math.pi / 4)) / 2)
    assert lr("cosine", 100) == pytest.approx(0, abs=1e-15)
    # warmup over 10 steps: linear from 0, then cosine over the other 90 (in float32, as
    # optax's compiled schedule computes it)
    assert lr("warmup_cosine", 0) == 0
    assert lr("warmup_cosine", 5) == pytest.approx(eta / 2, rel=1e-7)
    assert lr("warmup_cosine", 10) == pytest.approx(eta, rel=1e-7)
    assert lr("warmup_cosine", 55) == pytest.approx(eta / 2, rel=1e-7)
    assert lr("exponential", 50) == pytest.approx(eta * 0.1, rel=1e-7)  # float32 too
    assert lr("exponential", 100) == pytest.approx(eta * 0.01, rel=1e-7)
    # the optimizer steps with it: update k of "gd" is -lr(k) * grad
    params, grads = _tree(jax.random.key(0)), _tree(jax.random.key(1))
    opt = make_optimizer(TrainConfig(lr=eta, steps=n, schedule="cosine"))
    state = opt.init(params)
    for k in range(30):
        updates, state = opt.update(grads, state, params)
        if k in (0, 25, 29):
            want = -eta * (1 + math.cos(math.pi * k / n)) / 2
            np.testing.assert_allclose(updates["a"], want * grads["a"], rtol=1e-14)


def test_named_optimizers_and_decoupled_weight_decay():
    params, grads = _tree(jax.random.key(2)), _tree(jax.random.key(3))
    ours = make_optimizer(TrainConfig(optimizer="adam", lr=1e-2, weight_decay=0.1))
    ref = optax.adamw(1e-2, weight_decay=0.1)
    s1, s2 = ours.init(params), ref.init(params)
    for _ in range(3):
        u1, s1 = ours.update(grads, s1, params)
        u2, s2 = ref.update(grads, s2, params)
        for k in params:
            np.testing.assert_allclose(u1[k], u2[k], rtol=1e-14, atol=1e-17)
    u, _ = make_optimizer(TrainConfig(optimizer="sgd", lr=0.5)).update(
        grads, make_optimizer(TrainConfig(optimizer="sgd", lr=0.5)).init(params)
    )
    np.testing.assert_array_equal(u["b"], -0.5 * grads["b"])
    for bad in ("nadamx", "chain", "apply_updates", "_src"):
        with pytest.raises(ValueError, match="optimizer") as err:
            make_optimizer(TrainConfig(optimizer=bad))
        assert "\n" not in str(err.value)


def _optax_schedule(config: TrainConfig) -> optax.Schedule:
    """optax's own schedule of `config`, with the values written in."""
    eta, n = config.lr, config.steps
    warmup = int(config.warmup * n) if config.schedule == "warmup_cosine" else 0
    if config.schedule == "constant":
        return optax.constant_schedule(eta)
    if config.schedule == "exponential":
        return optax.exponential_decay(eta, n, 0.01)
    if warmup:
        return optax.warmup_cosine_decay_schedule(0.0, eta, warmup, n)
    return optax.cosine_decay_schedule(eta, n)


def _optax_own(config: TrainConfig) -> optax.GradientTransformation:
    """The optimizer of `config` built from optax's own schedules with the values written in
    (what the library did before its values were traced): the reference."""
    schedule = _optax_schedule(config)
    build = optax.sgd if config.optimizer == "gd" else getattr(optax, config.optimizer)
    if config.betas is not None:
        b1, b2 = config.betas
        build = lambda learning_rate, build=build: build(learning_rate, b1=b1, b2=b2)  # noqa: E731
    if config.weight_decay == 0:
        return build(learning_rate=schedule)
    return optax.chain(
        build(learning_rate=1.0),
        optax.scale(-1.0),
        optax.add_decayed_weights(config.weight_decay),
        optax.scale_by_learning_rate(schedule),
    )


# float64 in the default run, the stricter twin: a traced setting rounded to float32 where optax
# keeps its Python number shows in float64 updates and hides under float32 rounding. The float32
# twin (the paper model's parameters) runs the same traced code at its own rounding, in the slow
# target: each of the 54 cases compiles optax's own update, 16 s a dtype.
@pytest.mark.parametrize(
    "dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)]
)
def test_traced_hyperparameters_step_as_optax_with_the_values_written_in(dtype):
    # the settings enter the compiled update as arguments (traced); the reference has them as
    # Python numbers in optax's own schedules: every update equal to the last bit
    params = jax.tree.map(lambda a: a.astype(dtype), _tree(jax.random.key(4)))
    grads = jax.tree.map(lambda a: a.astype(dtype), _tree(jax.random.key(5)))

    @jax.jit
    def traced(settings, params, grads, state):
        return settings.transformation().update(grads, state, params)

    cases = [
        dict(optimizer=o, lr=lr, steps=n, schedule=sch, weight_decay=wd)
        for o, lr, wd in (("gd", 0.3, 0.0), ("adam", 1e-2, 0.0), ("adamw", 3e-3, 0.1))
        for sch in ("constant", "cosine", "warmup_cosine", "exponential")
        for n in (7, 37, 2000)
    ] + [  # the paper matrix's AdamW: 2% warmup, moment decays (0.9, 0.95), decay 0.1
        dict(
            optimizer=o,
            lr=3e-3,
            steps=n,
            schedule="warmup_cosine",
            warmup=w,
            betas=betas,
            weight_decay=wd,
        )
        for o, wd in (("adam", 0.1), ("adam", 0.0), ("adamw", 0.0))
        for w, betas in ((0.02, (0.9, 0.95)), (0.5, (0.0, 0.5)), (0.02, None))
        for n in (37, 2800)
    ]
    for case in cases:
        config = TrainConfig(**case)
        ref = _optax_own(config)
        ref_update = jax.jit(ref.update)
        settings = _train.optimizer_settings(config)
        s1, s2 = settings.transformation().init(params), ref.init(params)
        p1 = p2 = params
        for _ in range(12):
            u1, s1 = traced(settings, p1, grads, s1)
            u2, s2 = ref_update(grads, s2, p2)
            p1, p2 = optax.apply_updates(p1, u1), optax.apply_updates(p2, u2)
            for k in params:
                if config.weight_decay or config.betas is not None:
                    # XLA folds the decay (or the moment decays, 1 - b) into the constant
                    # step differently: within ulps
                    rtol = 8 * np.finfo(dtype).eps
                    np.testing.assert_allclose(
                        u1[k], u2[k], rtol=rtol, err_msg=str(case)
                    )
                else:
                    np.testing.assert_array_equal(u1[k], u2[k], err_msg=str(case))
        # and the schedule itself, at every step and past the last
        k = jnp.arange(config.steps + 3, dtype=jnp.int32)
        ours = jax.jit(lambda s, k: jax.vmap(s.learning_rate)(k))(settings, k)
        theirs = jax.jit(jax.vmap(_optax_schedule(config)))(k)
        np.testing.assert_array_equal(ours, np.broadcast_to(theirs, ours.shape))


def test_runs_differing_in_traced_hyperparameters_share_the_compiled_programs():
    from inductheory.internal._compiles import CompileCount

    base = dict(optimizer="adam", M=48, log_points=4, eval_contexts=8, chunk=16)
    first = TrainConfig(lr=1e-2, schedule="cosine", steps=32, **base)
    _train.train(TASK, ModelConfig(), first, 2)
    counter = CompileCount()
    for changes in (
        dict(lr=3e-2, schedule="cosine", steps=32),
        dict(lr=1e-2, schedule="exponential", steps=32),
        dict(lr=1e-2, schedule="warmup_cosine", steps=48),
        dict(lr=1e-2, schedule="warmup_cosine", steps=48, warmup=0.25),
    ):
        _train.train(TASK, ModelConfig(), TrainConfig(**changes, **base), 2)
    assert counter.count().compiles == 0
    # moment decays given or not are two optimizer states; given, their values are traced
    _train.train(TASK, ModelConfig(), dataclasses.replace(first, betas=(0.9, 0.95)), 2)
    counter = CompileCount()
    _train.train(TASK, ModelConfig(), dataclasses.replace(first, betas=(0.5, 0.9)), 2)
    assert counter.count().compiles == 0
    # another optimizer state is another program
    counter = CompileCount()
    _train.train(
        TASK,
        ModelConfig(),
        TrainConfig(lr=1e-2, steps=32, **base | dict(optimizer="sgd")),
        2,
    )
    assert counter.count().compiles > 0


def test_log_steps():
    np.testing.assert_array_equal(log_steps(1000, 4), [0, 1, 10, 100, 1000])
    np.testing.assert_array_equal(log_steps(5, 64), [0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(log_steps(7, 1), [0, 1, 7])


def _train_seed_by_seed(task, config: TrainConfig, seeds: int):
    """The same training, one seed at a time with a jitted step in a Python loop: the
    reference of the vmapped, chunked `train`."""
    geometry, contexts = flow_sample(
        task, it.FlowConfig(dynamics="full", M=config.M), 0
    )
    opt = make_optimizer(config)
    finals, losses = [], []
    for key in seed_keys(0, np.arange(seeds)):
        model = init_model(
            task,
            ModelConfig(),
            jax.random.wrap_key_data(key),
            rho=config.rho,
            geometry=geometry,
        )
        params, static = eqx.partition(model, model.trainable())

        @eqx.filter_jit
        def step(params, state, static=static):
            loss, grads = eqx.filter_value_and_grad(
                lambda p: eqx.combine(p, static).loss(contexts)
            )(params)
            updates, state = opt.update(grads, state, params)
            return eqx.apply_updates(params, updates), state, loss

        state, seed_losses = opt.init(params), []
        for _ in range(config.steps):
            params, state, loss = step(params, state)
            seed_losses.append(float(loss))
        finals.append(eqx.combine(params, static))
        losses.append(seed_losses)
    return finals, np.array(losses)


@pytest.mark.parametrize("optimizer", ["gd", "adam"])
def test_vmapped_chunked_seeds_equal_a_loop_of_seeds(optimizer):
    config = TrainConfig(
        optimizer=optimizer,
        lr=0.3 if optimizer == "gd" else 0.05,
        schedule="cosine",
        steps=25,
        chunk=10,  # the first step alone, then to 10, 20 and 25 (the last one short)
        **SMALL,
    )
    run = it.train(TASK, ModelConfig(), config, 3)
    finals, losses = _train_seed_by_seed(TASK, config, 3)
    for i, model in enumerate(finals):
        got = jax.tree.leaves(eqx.filter(_lane(run.models, i), eqx.is_inexact_array))
        want = jax.tree.leaves(eqx.filter(model, eqx.is_inexact_array))
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    logged = run.steps[run.steps < config.steps]
    np.testing.assert_allclose(
        run.statistics.loss[:, : logged.size], losses[:, logged], rtol=1e-12
    )


@settings(max_examples=200)
@given(done=st.integers(0, 300), steps=st.integers(1, 300), chunk=st.integers(1, 64))
def test_chunks_take_the_first_step_alone_then_end_at_multiples_of_the_chunk(
    done, steps, chunk
):
    bounds = _train._chunk_bounds(done, steps, chunk)
    if done >= steps:
        assert bounds == []
        return
    assert bounds[0] == (done, done + 1)
    # every step from `done` to the last exactly once, in order
    assert [s for a, b in bounds for s in range(a, b)] == list(range(done, steps))
    assert all(0 < b - a <= chunk for a, b in bounds)
    assert all(b % chunk == 0 for _, b in bounds[1:-1])


def test_the_first_progress_line_comes_after_one_step_and_its_eta_waits(capsys):
    config = TrainConfig(lr=0.3, steps=25, chunk=10, **SMALL)
    it.train(TASK, ModelConfig(), config, 2, progress=True)
    lines = [
        line
        for line in capsys.readouterr().err.splitlines()
        if line.startswith("train ")
    ]
    assert lines[0].endswith("running the first step"), lines
    # the first counted line: one step, no ETA from a time that was mostly compiling
    assert lines[1].startswith("train 1/25 [") and "eta ?]" in lines[1], lines
    assert all("eta ?" not in line for line in lines[2:]) and len(lines) > 2, lines
    assert lines[-1].startswith("train 25/25 [")


def _lane(models, i):
    return jax.tree.map(lambda a: a[i] if eqx.is_array(a) else a, models)


def _same_run(a, b):
    for x, y in zip(
        jax.tree.leaves(eqx.filter(a.models, eqx.is_array)),
        jax.tree.leaves(eqx.filter(b.models, eqx.is_array)),
        strict=True,
    ):
        np.testing.assert_array_equal(x, y)
    for name, value in a.statistics.to_dict().items():
        np.testing.assert_array_equal(value, getattr(b.statistics, name))
    for x, y in zip(
        jax.tree.leaves(a.measures), jax.tree.leaves(b.measures), strict=True
    ):
        np.testing.assert_array_equal(x, y)


def test_an_interrupted_run_resumes_with_the_numbers_of_a_straight_run(
    tmp_path, monkeypatch
):
    config = TrainConfig(
        optimizer="adam", lr=0.05, steps=30, chunk=10, batch=16, **SMALL
    )
    straight = it.train(TASK, ModelConfig(), config, 2)

    write = _train._write_checkpoint
    calls = []

    def interrupted(*args):
        write(*args)
        calls.append(args[1])
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C just after the second chunk's checkpoint

    monkeypatch.setattr(_train, "_write_checkpoint", interrupted)
    with pytest.raises(KeyboardInterrupt):
        it.train(TASK, ModelConfig(), config, 2, out=tmp_path)
    # checkpoints after the first step, then at multiples of the chunk
    assert calls == [1, 10] and not (tmp_path / "train.json").exists()
    monkeypatch.setattr(_train, "_write_checkpoint", write)

    resumed_from = []
    monkeypatch.setattr(
        _train,
        "_write_checkpoint",
        lambda *args: (resumed_from.append(args[1]), write(*args)),
    )
    resumed = it.train(TASK, ModelConfig(), config, 2, out=tmp_path)
    # from step 10 on: its first step alone, then to 20 and 30 (nothing before 10 again)
    assert resumed_from == [11, 20, 30]
    _same_run(straight, resumed)

    saved = json.loads((tmp_path / "train.json").read_text())
    assert saved["train_config"]["steps"] == 30 and saved["seeds"] == 2
    assert saved["task"] == TASK.to_dict() and saved["version"] == it.__version__
    assert saved["model_config"] == {
        f: getattr(ModelConfig(), f) for f in saved["model_config"]
    }
    np.testing.assert_array_equal(
        np.array(saved["per_seed"]["key_offsets"]), straight.measures.key_offsets
    )
    with np.load(tmp_path / "statistics.npz") as stats:
        np.testing.assert_array_equal(stats["loss"], straight.statistics.loss)
        np.testing.assert_array_equal(stats["steps"], straight.steps)
    loaded = eqx.tree_deserialise_leaves(tmp_path / "models.eqx", straight.models)
    _same_run(straight, straight.__class__(**{**straight.__dict__, "models": loaded}))

    with pytest.raises(ValueError, match="other parameters") as err:
        it.train(TASK, ModelConfig(), config, 3, out=tmp_path)
    assert "\n" not in str(err.value)


def test_a_seeds_numbers_do_not_depend_on_the_seeds_beside_it():
    for batch in ("full", 8):
        config = TrainConfig(lr=0.3, steps=12, chunk=5, batch=batch, **SMALL)
        two = it.train(TASK, ModelConfig(), config, 2)
        three = it.train(TASK, ModelConfig(), config, 3)
        np.testing.assert_allclose(
            three.statistics.loss[:2], two.statistics.loss, rtol=1e-12
        )
        np.testing.assert_allclose(
            three.statistics.mass[:2], two.statistics.mass, rtol=1e-12, atol=1e-15
        )


def test_minibatches_are_fresh_at_every_step_and_per_seed():
    config = TrainConfig(lr=0.3, steps=6, chunk=6, batch=4, **SMALL)
    run = it.train(TASK, ModelConfig(), config, 2)
    geometry, _ = flow_sample(TASK, it.FlowConfig(dynamics="full", M=48), 0)
    model = init_model(
        TASK,
        ModelConfig(),
        jax.random.wrap_key_data(seed_keys(0, [1])[0]),
        rho=0.1,
        geometry=geometry,
    )
    # step 0 of seed 1: its own 4 fresh contexts from the documented key
    key = jax.random.fold_in(
        jax.random.fold_in(jax.random.fold_in(jax.random.key(0), 5), 0), 1
    )
    want = model.loss(it.sample_contexts(key, TASK, 4))
    np.testing.assert_allclose(run.statistics.loss[1, 0], want, rtol=1e-13)
    assert run.statistics.loss[0, 0] != run.statistics.loss[1, 0]
    assert run.M is None


def test_statistics_and_measures_have_their_shapes():
    config = TrainConfig(lr=0.3, steps=10, chunk=4, **SMALL)
    run = it.train(TASK, ModelConfig(), config, 2)
    n = run.steps.size
    H, W = TASK.H, TASK.W
    assert run.statistics.loss.shape == (2, n)
    assert run.statistics.mass.shape == run.statistics.worst.shape == (2, n, H, 2, W)
    assert run.statistics.static_offsets.shape == (2, n, H, 2)
    np.testing.assert_allclose(run.statistics.mass.sum(-1), 1, rtol=1e-12)
    # at c(0) (rho = 0.1) every gate is close to uniform: W effective offsets
    np.testing.assert_allclose(run.statistics.static_offsets[:, 0], W, rtol=1e-2)
    assert np.all(run.statistics.avg_offsets <= run.statistics.static_offsets + 1e-12)
    assert run.measures.key_offsets.shape == (2, H)
    assert np.all(np.diff(run.statistics.loss, axis=1) < 0)  # gd descends
    text = json.dumps(it.internal._io._to_jsonable(run.to_dict()))
    assert "summary" in text and "per_seed" in text


def test_warmup_steps_are_the_floor_of_the_fraction_and_none_without_warmup():
    def steps(**kw):
        return TrainConfig(optimizer="adam", **kw).warmup_steps

    assert steps(schedule="warmup_cosine", warmup=0.02, steps=2800) == 56
    assert steps(schedule="warmup_cosine", warmup=0.02, steps=10) == 0
    assert steps(schedule="warmup_cosine", steps=37) == 3
    assert steps(schedule="cosine", warmup=0.5, steps=100) == 0


def test_bad_optimizer_settings_are_one_line_errors():
    for bad, match in [
        (dict(warmup=1.0), "warmup must be in"),
        (dict(warmup=-0.5), "warmup must be in"),
        (dict(warmup=float("nan")), "warmup must be a finite"),
        (dict(betas=(0.9,)), "betas must be a pair"),
        (dict(betas=[0.9, 0.95]), "betas must be a pair"),
        (dict(betas=(0.9, 1.0)), "betas must lie in"),
        (dict(betas=(0.9, float("inf"))), "betas must be a finite"),
    ]:
        with pytest.raises(ValueError, match=match) as err:
            TrainConfig(optimizer="adam", **bad)
        assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="betas b1, b2") as err:
        make_optimizer(TrainConfig(optimizer="sgd", betas=(0.9, 0.95)))
    assert "\n" not in str(err.value)


def test_bad_settings_are_one_line_errors():
    for bad, match in [
        (dict(seeds=0), "seeds"),
        (dict(seed=2**64), "seed"),
        (dict(seed=1.5), "seed"),
    ]:
        kwargs = dict(seeds=2) | bad
        seeds = kwargs.pop("seeds")
        with pytest.raises(ValueError, match=match) as err:
            it.train(
                TASK, ModelConfig(), TrainConfig(steps=1, **SMALL), seeds, **kwargs
            )
        assert "\n" not in str(err.value)
    geometry, _ = flow_sample(TASK, it.FlowConfig(dynamics="full", M=48), 0)
    model = init_model(TASK, ModelConfig(), jax.random.key(0), geometry=geometry)
    try:
        model.population_loss()
    except ValueError:
        with pytest.raises(ValueError) as err:
            it.train(
                TASK,
                ModelConfig(),
                TrainConfig(steps=1, batch="population", **SMALL),
                2,
            )
        assert "\n" not in str(err.value)


@pytest.mark.slow
def test_seeds_split_over_devices_give_the_numbers_of_one_device():
    run_on_host_devices(
        """
import jax, numpy as np, equinox as eqx
import inductheory as it
from inductheory.trained import ModelConfig, TrainConfig, _programs
task = it.Task(L=4, S=3, H=2, N=48, beta=4.0)
assert len(jax.devices()) == 2

def split_equals_one(model, config, seeds, rtol, atol):
    split = it.train(task, model, config, seeds)  # padded to an even lane count
    one = it.train(task, model, config, seeds, devices=jax.devices()[:1])
    assert split.timings.devices == 2
    for a, b in zip(jax.tree.leaves(eqx.filter(split.models, eqx.is_array)),
                    jax.tree.leaves(eqx.filter(one.models, eqx.is_array))):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    np.testing.assert_allclose(split.statistics.loss, one.statistics.loss, rtol=rtol)

config = TrainConfig(lr=0.3, steps=12, chunk=5, M=48, log_points=4, eval_contexts=8)
split_equals_one(ModelConfig(), config, 3, rtol=1e-12, atol=1e-14)
# each device steps its own lanes in groups (`CPU_LANE_GROUP`), here 3 a device: a full group and
# a remainder; a learned model on fresh minibatches with Adam, a few steps (before rounding grows)
assert _programs.CPU_LANE_GROUP == 2
model = ModelConfig(embeddings="learned", d=8, maps="learned", layers=2)
config = TrainConfig(optimizer="adam", lr=0.02, steps=4, chunk=2, batch=8, M=48,
                     log_points=2, eval_contexts=8)
split_equals_one(model, config, 5, rtol=1e-10, atol=1e-12)
print("OK")
""",
        devices=2,
    )


def test_a_finished_run_loads_back_with_the_numbers_it_computed(tmp_path):
    from inductheory.figures import _runs
    from inductheory.trained import load_run

    model = ModelConfig(embeddings="learned", d=8, maps="learned", layers=2)
    config = TrainConfig(optimizer="adam", lr=0.02, steps=6, chunk=3, batch=8, **SMALL)
    straight = it.train(TASK, model, config, 2, out=tmp_path / "run")
    loaded = load_run(tmp_path / "run")
    _same_run(straight, loaded)
    for name in ("loss", "phase_accuracy", "static_offsets", "argmax_mass"):
        np.testing.assert_array_equal(
            getattr(loaded.measures, name), getattr(straight.measures, name)
        )
    # the loaded models are models: they give the measures the run took
    held_out = it.sample_contexts(
        jax.random.fold_in(jax.random.key(0), _train.HELD_OUT_STREAM), TASK, 8
    )
    again = it.trained.measure(
        jax.tree.map(lambda a: a[1] if eqx.is_array(a) else a, loaded.models), held_out
    )
    np.testing.assert_allclose(again.loss, straight.measures.loss[1], rtol=1e-12)
    with pytest.raises(ValueError, match="no finished train run") as err:
        load_run(tmp_path / "missing")
    assert "\n" not in str(err.value)

    # the figures' cache: trained once, then loaded, the same numbers both times
    first = _runs.trained_run(TASK, model, config, 2, tmp_path / "cache")
    calls = []
    real = _runs.train
    _runs.train = lambda *a, **k: calls.append(1) or real(*a, **k)
    try:
        second = _runs.trained_run(TASK, model, config, 2, tmp_path / "cache")
    finally:
        _runs.train = real
    assert calls == []
    _same_run(first, second)
    _same_run(straight, first)


def test_a_model_with_nothing_to_train_is_a_one_line_error():
    config = TrainConfig(lr=0.5, steps=2, **SMALL)
    with pytest.raises(ValueError, match="nothing to train") as err:
        it.train(TASK, ModelConfig(gates="uniform"), config, 2)
    assert "\n" not in str(err.value)
    # uniform gates with something else to learn still train
    run = it.train(TASK, ModelConfig(gates="uniform", layers=2), config, 1)
    assert run.measures.loss.shape == (1,)
