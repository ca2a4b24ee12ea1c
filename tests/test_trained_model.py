"""The trained compressed model (docs/theory.md §11) against independent computations.

- At the theorem's setting its loss and gradient are the full flow's (`monte_carlo_loss`,
  `FullDynamics.vector_field`), and its general path (its own code) gives the library's logits.
- The exact structured path (the context's span, T + 1 coordinates) equals the dense N x (N+1)
  realization for every switch the exact geometry allows.
- The general path equals a literal per-query reference written with plain numpy loops.
- Static gates on the exact geometry have the closed-form population loss.
- The measures read hard selections, effective offsets and accuracies as computed by hand.
"""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inductheory.flow._dynamics import FullDynamics, ReducedDynamics
from inductheory.flow._init import initial_biases, initial_gate_vectors
from inductheory.model import (
    LinearGates,
    hard_selection,
    make_geometry,
    monte_carlo_loss,
    phase_accuracy,
    population_loss,
    sample_contexts,
    uniform_gates,
)
from inductheory.model._gates import shared_gates_from_logits
from inductheory.model._logits import cross_entropy, top1_correct
from inductheory.model._task import quiet_task
from inductheory.trained import (
    CompressedModel,
    ModelConfig,
    ModelMeasures,
    init_model,
    measure,
)
from inductheory.trained._model import dense_twin, general_path

KEY = jax.random.key(0)


def _task(windows=False, **extra):
    """L=4, S=3, H=2, N=64, kappa != 1 (so that sqrt(kappa) is seen); windows: W=4 with the
    boundary phase queried."""
    more = dict(W=4, queries="all") if windows else {}
    return quiet_task(
        L=4, S=3, H=2, N=64, gamma=0.9, beta=3.0, kappa=1.5, **more, **extra
    )


def _contexts(task, M=4, seed=1):
    return sample_contexts(jax.random.key(seed), task, M)


def _randomize(model: CompressedModel, seed=7, scale=1.0) -> CompressedModel:
    """Every learnable leaf replaced by a generic value (init values are too symmetric to
    catch a wrong axis): gate vectors and biases N(0, scale^2), the rest perturbed."""
    params, fixed = eqx.partition(model, model.trainable())
    leaves, tree = jax.tree_util.tree_flatten(params)
    keys = jax.random.split(jax.random.key(seed), len(leaves))
    names = [n for n in _learnable_names(model)]
    new = []
    for name, leaf, k in zip(names, leaves, keys):
        noise = jax.random.normal(k, leaf.shape)
        if name in ("gate_vectors", "gate_biases", "position_bias"):
            new.append(scale * noise)
        else:
            new.append(leaf + 0.3 * noise / np.sqrt(leaf.shape[-1]))
    return eqx.combine(jax.tree_util.tree_unflatten(tree, new), fixed)


def _learnable_names(model):
    order = [
        "gate_vectors",
        "gate_biases",
        "embeddings",
        "unembedding",
        "maps",
        "first_maps",
        "position_bias",
    ]
    return [n for n in order if getattr(model, n) is not None]


@eqx.filter_jit
def _per_query(model, contexts):
    """Cross-entropy and top-1 of every query of every context, (M, Q) each."""

    def one(tokens):
        out = model.logits(tokens)
        return cross_entropy(*out), top1_correct(*out)

    return jax.vmap(one)(contexts)


@eqx.filter_jit
def _loss(model, contexts):
    return model.loss(contexts)


@eqx.filter_jit
def _gate_gradient(model, contexts):
    """d loss / d c through the model's own filter spec."""
    params, fixed = eqx.partition(model, model.trainable())
    return jax.grad(lambda p: eqx.combine(p, fixed).loss(contexts))(params).gate_vectors


@eqx.filter_jit
def _logits(model, tokens):
    return model.logits(tokens)


# -- 1. the theorem's setting is the full flow ---------------------------------------------------


def _theorem_cases():
    # every pair of (geometry, tied, windows) values in the default run, all eight under slow
    for embeddings, tied, windows in itertools.product(
        ["exact", "approximate"], [False, True], [False, True]
    ):
        case = (embeddings, tied, windows)
        name = f"{embeddings}-{'tied' if tied else 'untied'}-{'W>S,all' if windows else 'W=S'}"
        fast = (embeddings == "exact") == (tied == windows)
        marks = () if fast else (pytest.mark.slow,)
        yield pytest.param(*case, marks=marks, id=name)


@pytest.mark.parametrize("embeddings, tied, windows", _theorem_cases())
def test_theorem_setting_loss_and_gradient_are_the_full_flows(
    embeddings, tied, windows
):
    task = _task(windows, **({"d": 24} if embeddings == "approximate" else {}))
    geometry = make_geometry(task, jax.random.key(3))
    contexts = _contexts(task)
    model = init_model(
        task,
        ModelConfig(embeddings=embeddings, tied=tied),
        KEY,
        rho=0.5,
        geometry=geometry,
    )
    # the start is the flow's c(0) for the same key
    c0 = initial_gate_vectors(KEY, task, geometry, 0.5, tied)
    np.testing.assert_array_equal(model.flow_gate_vectors(), c0)
    model = _randomize(model, scale=2.0)
    c = model.flow_gate_vectors()
    if tied:
        np.testing.assert_array_equal(c[:, 0], c[:, 1])
    want = monte_carlo_loss(task, geometry, LinearGates(c), contexts)
    np.testing.assert_allclose(_loss(model, contexts), want, rtol=1e-13)
    # the model's own general path (other code) agrees with the library's logits
    np.testing.assert_allclose(_loss(general_path(model), contexts), want, rtol=1e-12)

    dynamics = FullDynamics(task, geometry, contexts, tied=tied)
    field = eqx.filter_jit(lambda dyn, y: dyn.vector_field(y))(dynamics, c)
    B = model.gate_vectors.shape[1]
    scale = float(jnp.max(jnp.abs(field)))
    assert scale > 1e-6
    for m in (model, general_path(model)):
        np.testing.assert_allclose(
            _gate_gradient(m, contexts), -field[:, :B], rtol=1e-9, atol=1e-13 * scale
        )


# -- 2. exact structured path = dense realization, every switch exact allows ---------------------

# every switch exact allows: 4 gate kinds x tied x local window x layers
EXACT_SWITCHES = [
    dict(gates=gates, bias=bias, tied=tied, local_window=w, layers=layers)
    for (gates, bias), tied, w, layers in itertools.product(
        [("linear", False), ("linear", True), ("bias", False), ("uniform", False)],
        [False, True],
        [0, 2],
        [1, 2],
    )
]
# the default run: each switch on at least once, the library path of each gate kind, all on
FAST_SWITCHES = [
    dict(gates="linear", bias=True, tied=False, local_window=2, layers=2),
    dict(gates="linear", bias=False, tied=True, local_window=2, layers=1),
    dict(gates="bias", bias=False, tied=True, local_window=0, layers=2),
    dict(gates="uniform", bias=False, tied=False, local_window=2, layers=2),
    dict(gates="linear", bias=True, tied=False, local_window=0, layers=1),
    dict(gates="bias", bias=False, tied=False, local_window=0, layers=1),
]


def _switch_id(s):
    return "-".join(f"{k}={v}" for k, v in s.items())


@pytest.mark.parametrize(
    "switches",
    [
        s if s in FAST_SWITCHES else pytest.param(s, marks=pytest.mark.slow)
        for s in EXACT_SWITCHES
    ],
    ids=_switch_id,
)
def test_exact_structured_path_equals_the_dense_realization(switches):
    task = _task(windows=True)
    contexts = _contexts(task, M=3)
    model = _randomize(init_model(task, ModelConfig(**switches), KEY), scale=3.0)
    twin = dense_twin(model)
    assert twin.geometry.embeddings.shape == (64, 65)
    ce, top1 = _per_query(model, contexts)
    ce_dense, top1_dense = _per_query(twin, contexts)
    assert jax.eval_shape(model.logits, contexts[0])[0].shape == (
        task.n_queries,
        task.T + 1,
    )
    assert jax.eval_shape(twin.logits, contexts[0])[0].shape == (task.n_queries, 64)
    np.testing.assert_allclose(ce, ce_dense, rtol=1e-11)
    np.testing.assert_array_equal(top1, top1_dense)
    # not every query alike (else a wrong permutation of positions could pass)
    assert float(jnp.std(ce)) > 1e-3
    # where the library's logits apply, the general path gives them too
    ce_general, top1_general = _per_query(general_path(model), contexts)
    np.testing.assert_allclose(ce, ce_general, rtol=1e-11)
    np.testing.assert_array_equal(top1, top1_general)


# -- 3. a literal per-query reference in numpy loops ----------------------------------------------


def _softmax(s):
    s = np.asarray(s, dtype=float)
    e = np.exp(s - s.max())
    return e / e.sum()


def _reference_logits(model, tokens):
    """The model of docs/theory.md §11 query by query, token by token (learned embeddings,
    maps and unembedding, two layers, local window, linear gates with biases)."""
    task, cfg = model.task, model.config
    L, S, W, H, T = task.L, task.S, task.W, task.H, task.T
    gamma, beta = float(task.gamma), float(task.beta)
    E, U = np.asarray(model.embeddings), np.asarray(model.unembedding)
    maps, first = np.asarray(model.maps), np.asarray(model.first_maps)
    pos = np.asarray(model.position_bias)
    c = np.asarray(model.gate_vectors)
    b = np.asarray(model.gate_biases)
    flat = np.asarray(tokens).reshape(-1)
    x = [E[flat[t]] for t in range(T)]
    z = []
    for t in range(T):
        acc = x[t].copy()
        for h in range(H):
            Q1, K1, V1, O1 = first[0, h], first[1, h], first[2, h], first[3, h]
            a = _softmax(
                [
                    gamma * (Q1 @ x[t]) @ (K1 @ x[u]) + pos[h, t - u]
                    for u in range(t + 1)
                ]
            )
            acc = acc + O1 @ sum(a[u] * (V1 @ x[u]) for u in range(t + 1))
        z.append(acc)
    phases = range(S if task.queries == "all" else S - 1)
    rows, targets = [], []
    for l_star in range(L):
        for phase in phases:
            t = l_star * S + phase
            total = np.zeros(E.shape[1])
            for h in range(H):
                Q, K, V, O = maps[0, h], maps[1, h], maps[2, h], maps[3, h]
                keys, values = [], []
                for l in range(L):
                    held = [(l * S + o) % T for o in range(W)]
                    branch_k, branch_v = (0, 0) if cfg.tied else (0, 1)
                    pK = _softmax(
                        [
                            c[h, branch_k, o] @ z[held[o]] + b[h, branch_k, o]
                            for o in range(W)
                        ]
                    )
                    pV = _softmax(
                        [
                            c[h, branch_v, o] @ z[held[o]] + b[h, branch_v, o]
                            for o in range(W)
                        ]
                    )
                    keys.append(K @ sum(pK[o] * z[held[o]] for o in range(W)))
                    values.append(V @ sum(pV[o] * z[held[o]] for o in range(W)))
                for j in range(1, cfg.local_window + 1):
                    u = (t - j) % T
                    keys.append(K @ z[u])
                    values.append(V @ z[u])
                q = Q @ z[t]
                a = _softmax([gamma * q @ k for k in keys])
                total = total + O @ sum(ai * v for ai, v in zip(a, values))
            rows.append(beta * U @ total)
            targets.append(flat[(t + 1) % T])
    return np.array(rows), np.array(targets)


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_general_path_equals_a_literal_numpy_reference(tied):
    task = _task(windows=True)
    config = ModelConfig(
        embeddings="learned",
        d=6,
        maps="learned",
        unembedding="learned",
        bias=True,
        tied=tied,
        local_window=2,
        layers=2,
    )
    model = _randomize(init_model(task, config, KEY), scale=1.5)
    assert model.gate_vectors.shape == (2, 1 if tied else 2, 4, 6)
    for tokens in _contexts(task, M=2):
        logits, log_mult, target = _logits(model, tokens)
        want, want_target = _reference_logits(model, tokens)
        np.testing.assert_allclose(logits, want, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(target, want_target)
        np.testing.assert_array_equal(log_mult, np.zeros(64))


# -- 4. static gates on the exact geometry: the closed form ---------------------------------------


@pytest.mark.parametrize("windows", [False, True], ids=["W=S", "W>S,all"])
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_bias_gates_have_the_closed_form_population_loss(tied, windows):
    task = _task(windows)
    model = init_model(task, ModelConfig(gates="bias", tied=tied), KEY, rho=0.5)
    B = 1 if tied else 2
    # the start is the reduced flow's b(0) for the same key
    np.testing.assert_array_equal(
        model.gate_biases, initial_biases(KEY, task, 0.5, tied)[:, :B]
    )
    model = _randomize(model, scale=2.0)
    b = jnp.broadcast_to(model.gate_biases, (task.H, 2, task.W))
    want = population_loss(task, shared_gates_from_logits(b))
    np.testing.assert_allclose(_loss(model, _contexts(task, M=3)), want, rtol=1e-12)
    np.testing.assert_allclose(model.population_loss(), want, rtol=1e-13)
    # gradient descent on it is the reduced flow's Euler scheme up to the factor kappa + 1/N
    grad = eqx.filter_jit(
        jax.grad(
            lambda g: eqx.tree_at(lambda m: m.gate_biases, model, g).population_loss()
        )
    )(model.gate_biases)
    field = eqx.filter_jit(ReducedDynamics(task, tied=tied).vector_field)(b)
    rate = float(task.kappa) + 1.0 / 64
    np.testing.assert_allclose(grad, -field[:, :B] / rate, rtol=1e-10, atol=1e-15)


def test_uniform_gates_have_the_closed_form_and_other_switches_refuse_it():
    task = _task(windows=True)
    model = init_model(task, ModelConfig(gates="uniform"), KEY)
    want = population_loss(task, uniform_gates(task.H, task.W))
    np.testing.assert_allclose(model.population_loss(), want, rtol=1e-13)
    np.testing.assert_allclose(_loss(model, _contexts(task, M=2)), want, rtol=1e-12)
    approx = _task(windows=True, d=24)
    for config, task_, word in [
        (ModelConfig(), task, "gates"),
        (ModelConfig(gates="bias", layers=2), task, "layers"),
        (ModelConfig(gates="bias", local_window=1), task, "local_window"),
        (ModelConfig(gates="bias", embeddings="approximate"), approx, "embeddings"),
        (ModelConfig(gates="bias", embeddings="learned", d=4), task, "embeddings"),
    ]:
        m = init_model(task_, config, KEY)
        with pytest.raises(ValueError, match=word) as err:
            m.population_loss()
        assert "\n" not in str(err.value)


# -- 5. measures ----------------------------------------------------------------------------------


def _hard_model(task, offsets, gates="linear", strength=800.0):
    """Gates hard at key r_h and value r_h + 1 in every window: a score `strength` on the
    shared direction e_0 (every token alike), or as a bias."""
    model = init_model(task, ModelConfig(gates=gates), KEY)
    W = task.W
    onehot = np.zeros((task.H, 2, W))
    for h, r in enumerate(offsets):
        onehot[h, 0, r] = onehot[h, 1, r + 1] = strength
    if gates == "bias":
        return eqx.tree_at(lambda m: m.gate_biases, model, jnp.asarray(onehot))
    c = np.zeros(model.gate_vectors.shape)
    c[..., 0] = onehot / np.sqrt(float(task.kappa))
    return eqx.tree_at(lambda m: m.gate_vectors, model, jnp.asarray(c))


@pytest.mark.parametrize("gates", ["linear", "bias"])
@pytest.mark.parametrize(
    "windows, offsets", [(False, [0, 1]), (True, [2, 0])], ids=["W=S", "W>S,all"]
)
def test_measures_of_a_hard_selection(gates, windows, offsets):
    task = _task(windows)
    model = _hard_model(task, offsets, gates)
    got = measure(model, _contexts(task, M=3))
    assert isinstance(got, ModelMeasures)
    np.testing.assert_array_equal(got.key_offsets, offsets)
    np.testing.assert_array_equal(got.value_offsets, np.add(offsets, 1))
    assert bool(jnp.all(got.value_follows_key))
    np.testing.assert_allclose(got.argmax_mass, 1.0, rtol=1e-12)
    np.testing.assert_allclose(got.static_offsets, 1.0, rtol=1e-12)
    np.testing.assert_allclose(got.avg_offsets, 1.0, rtol=1e-12)
    hard = hard_selection(task.W, offsets)
    want = phase_accuracy(task, hard)
    assert got.phase_accuracy.shape == (task.n_phases,)
    np.testing.assert_array_equal(got.phase_accuracy, want)
    np.testing.assert_allclose(got.phase_gap, float(want.max() - want.min()))
    np.testing.assert_allclose(got.mean_accuracy, float(want.mean()))
    np.testing.assert_allclose(got.loss, population_loss(task, hard), rtol=1e-12)
    if windows:
        # the boundary phase is the last: a key at S-1 (offset 2) with its value at S recovers it
        assert task.n_phases == task.S and float(got.phase_accuracy[task.S - 1]) == 1.0


def test_measures_of_token_dependent_gates_match_a_hand_count():
    task = _task(windows=True)
    model = _randomize(init_model(task, ModelConfig(), KEY), scale=4.0)
    contexts = _contexts(task, M=5)
    got = measure(model, contexts)
    p = np.asarray(
        eqx.filter_jit(jax.vmap(model.gate_probabilities))(contexts)
    )  # (M,H,2,L,W)
    for h in range(task.H):
        for br in range(2):
            windows = [
                p[m, h, br, l] for m in range(len(contexts)) for l in range(task.L)
            ]
            mean = np.mean(windows, axis=0)
            ent = lambda a: -sum(x * np.log(x) for x in a if x > 0)
            np.testing.assert_allclose(
                got.static_offsets[h, br], np.exp(ent(mean)), rtol=1e-12
            )
            np.testing.assert_allclose(
                got.avg_offsets[h, br],
                np.mean([np.exp(ent(w)) for w in windows]),
                rtol=1e-12,
            )
            assert int((got.key_offsets, got.value_offsets)[br][h]) == int(
                np.argmax(mean)
            )
            np.testing.assert_allclose(got.argmax_mass[h, br], mean.max(), rtol=1e-12)
    # token-dependent gates: the windows differ
    assert float(np.min(np.std(p, axis=(0, 3)).max(axis=-1))) > 1e-3
    ce, top1 = _per_query(model, contexts)
    correct = np.asarray(top1).reshape(len(contexts), task.L, task.S)
    np.testing.assert_allclose(got.phase_accuracy, correct.mean(axis=(0, 1)))
    np.testing.assert_allclose(got.loss, float(np.mean(ce)), rtol=1e-13)
    assert bool(got.value_follows_key[0]) == (
        int(got.value_offsets[0]) == int(got.key_offsets[0]) + 1
    )


# -- 6. bad input ---------------------------------------------------------------------------------


def test_bad_combinations_raise_one_line_errors_naming_the_parameter():
    exact, approx = _task(), _task(d=24)
    geometry = make_geometry(approx, KEY)
    cases = [
        (lambda: init_model(approx, ModelConfig(), KEY), "embeddings"),
        (
            lambda: init_model(exact, ModelConfig(embeddings="approximate"), KEY),
            "embeddings",
        ),
        (lambda: init_model(exact, ModelConfig(local_window=12), KEY), "local_window"),
        (lambda: init_model(exact, ModelConfig(), KEY, geometry=geometry), "geometry"),
        (
            lambda: init_model(
                exact, ModelConfig(embeddings="learned", d=4), KEY, geometry=geometry
            ),
            "geometry",
        ),
        (
            lambda: init_model(
                approx.replace(N=128),
                ModelConfig(embeddings="approximate"),
                KEY,
                geometry=geometry,
            ),
            "N",
        ),
        (lambda: init_model(exact, ModelConfig(), KEY, rho=0.0), "rho"),
        (lambda: init_model(exact, {"maps": "learned"}, KEY), "config"),
        (lambda: ModelConfig(maps="learned"), "maps"),
        (lambda: ModelConfig(gates="bias", bias=True), "bias"),
        (lambda: ModelConfig(embeddings="learned"), "d"),
    ]
    for build, word in cases:
        with pytest.raises(ValueError, match=word) as err:
            build()
        assert "\n" not in str(err.value), str(err.value)
    # the largest window that stays behind the query is legal
    init_model(exact, ModelConfig(local_window=11), KEY)


# -- 7. vmap over keys and over models -----------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        ModelConfig(),
        ModelConfig(embeddings="learned", d=5, maps="learned", layers=2, bias=True),
    ],
    ids=["theorem", "learned"],
)
def test_init_and_loss_vmap_over_keys(config):
    task = _task(windows=True)
    geometry = None if config.embeddings == "learned" else make_geometry(task)
    keys = jax.random.split(KEY, 3)
    models = eqx.filter_jit(
        eqx.filter_vmap(lambda k: init_model(task, config, k, geometry=geometry))
    )(keys)
    contexts = _contexts(task, M=2)
    losses = eqx.filter_jit(eqx.filter_vmap(lambda m: m.loss(contexts)))(models)
    assert losses.shape == (3,)
    for i, k in enumerate(keys):
        one = init_model(task, config, k, geometry=geometry)
        params = eqx.filter(one, one.trainable())
        batched = eqx.filter(
            jax.tree_util.tree_map(lambda x, i=i: x[i], models), one.trainable()
        )
        for a, b in zip(
            jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(batched)
        ):
            # compiled and eager draws may differ in the last bit
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-17)
        np.testing.assert_allclose(losses[i], _loss(one, contexts), rtol=1e-13)
    # different keys, different starts
    assert float(jnp.std(losses)) > 0


def test_trainable_marks_exactly_the_learnable_leaves():
    task = _task(d=24)
    model = init_model(
        task,
        ModelConfig(
            embeddings="approximate", maps="learned", unembedding="learned", layers=2
        ),
        KEY,
    )
    spec = model.trainable()
    assert spec.gate_vectors and spec.maps and spec.first_maps and spec.unembedding
    assert spec.position_bias and spec.gate_biases is None and spec.embeddings is None
    assert not any(jax.tree_util.tree_leaves(spec.task))
    assert not any(jax.tree_util.tree_leaves(spec.geometry))
