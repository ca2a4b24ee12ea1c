"""Robustness of the library pieces the CLI relies on: stable numerics, the cache, memory
estimates."""

import json
import math
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inductheory as it
from inductheory.internal import _io, _memory

# --- numerics ----------------------------------------------------------------------------------


def _plain(w, gamma, L):
    # the former implementation (jnp.exp directly), to compare bit for bit
    e = jnp.exp(gamma * jnp.asarray(w))
    return np.asarray(e / (e + L - 1)), np.asarray(1.0 / (e + L - 1))


def test_block_attention_bit_identical_to_the_plain_form_for_gamma_at_most_one():
    w = np.linspace(0, 1, 101)
    for gamma in (1e-3, 0.5, 1.0):
        a, b = it.model.block_attention(jnp.asarray(w), gamma, 8)
        pa, pb = _plain(w, gamma, 8)
        np.testing.assert_array_equal(np.asarray(a), pa)
        np.testing.assert_array_equal(np.asarray(b), pb)


@pytest.mark.parametrize("gamma", [1e3, 1e6, 1e300])
def test_block_attention_finite_and_correct_for_huge_gamma(gamma):
    w = jnp.array([0.0, 1e-7, 0.5, 1.0])
    a, b = (np.asarray(x) for x in it.model.block_attention(w, gamma, 8))
    assert np.all(np.isfinite(a)) and np.all(np.isfinite(b))
    # sigmoid(gamma w - log(L-1)) computed independently in log space
    x = gamma * np.asarray(w) - math.log(7)
    np.testing.assert_allclose(a, 1 / (1 + np.exp(-x)), rtol=1e-14)
    np.testing.assert_allclose(a + 7 * b, 1.0, rtol=1e-14)  # weights sum to one
    assert a[0] == b[0] == 1 / 8  # w = 0: a tie stays a bit-exact tie
    grad = jax.grad(lambda v: jnp.sum(it.model.block_attention(v, gamma, 8)[0]))(w)
    assert np.all(np.isfinite(np.asarray(grad)))


def test_equal_inputs_give_equal_outputs_on_both_sides_of_the_switch():
    for u in (29.999999, 30.0, 30.000001, 700.0):
        a1, b1 = it.model.block_attention(jnp.array([u, u]), 1.0, 8)
        assert a1[0] == a1[1] and b1[0] == b1[1]


def test_toy_does_not_overflow_at_huge_beta():
    for beta in (1e154, 1e200, 1e307):
        cfg = it.ToyConfig(beta=beta)
        values = [
            it.toy.split_advantage(cfg),
            *it.toy.escape_rates(cfg),
            *it.toy.corner_losses(cfg),
            it.toy.toy_loss(cfg, jnp.array([0.5, 0.5])),
        ]
        assert all(np.isfinite(float(v)) and float(v) >= 0 for v in values)
    # moderate beta: the log-space forms agree with the direct ones
    cfg = it.ToyConfig(beta=4.0, gamma=1.0, L=8, K=100.0)
    np.testing.assert_allclose(
        float(it.toy.split_advantage(cfg)), 0.008960151490614724, rtol=1e-12
    )


# --- cache -------------------------------------------------------------------------------------


def _compute_counter():
    calls = []

    def compute():
        calls.append(1)
        return {"x": 1.5}

    return calls, compute


@pytest.mark.parametrize(
    "damage", ["truncated", "garbage", "list", "missing_result", "directory", "binary"]
)
def test_damaged_cache_entry_is_reported_and_recomputed(tmp_path, damage):
    params = {"a": 1}
    calls, compute = _compute_counter()
    assert _io.cached(tmp_path, params, compute) == {"x": 1.5}
    (path,) = list(tmp_path.glob("*.json"))
    text = path.read_text()
    if damage == "directory":
        path.unlink()
        path.mkdir()
    else:
        path.write_bytes(
            {
                "truncated": text[: len(text) // 2].encode(),
                "garbage": b"not json {",
                "list": b"[1, 2]",
                "missing_result": json.dumps({"params": params}).encode(),
                "binary": b"\xff\xfe\x00",
            }[damage]
        )
    with pytest.warns(_io.CacheWarning, match=str(path)):
        assert _io.cached(tmp_path, params, compute) == {"x": 1.5}
    assert len(calls) == 2
    if damage != "directory":  # repaired: the next read uses the file
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert _io.cached(tmp_path, params, compute) == {"x": 1.5}
        assert len(calls) == 2


def test_cache_keys_include_the_library_version(tmp_path, monkeypatch):
    calls, compute = _compute_counter()
    v0 = _io.library_version()
    assert v0 == it.__version__
    _io.cached(tmp_path, {"a": 1}, compute)
    monkeypatch.setattr(it, "__version__", "999.0")
    _io.cached(tmp_path, {"a": 1}, compute)  # results of other code are not reused
    assert len(calls) == 2 and len(list(tmp_path.glob("*.json"))) == 2
    stored = {json.loads(p.read_text())["version"] for p in tmp_path.glob("*.json")}
    assert stored == {v0, "999.0"}


def test_default_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv(
        "INDUCTHEORY_CACHE_DIR", raising=False
    )  # the tests' own override
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _io.default_cache_dir() == tmp_path / "inductheory"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # ignored, as the spec says
    assert str(_io.default_cache_dir()) == os.path.expanduser("~/.cache/inductheory")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert str(_io.default_cache_dir()) == os.path.expanduser("~/.cache/inductheory")


def test_atomic_writes_use_unique_temporaries_and_leave_none(tmp_path):
    for i in range(5):
        _io.write_json_atomic(tmp_path / "out.json", {"i": i})
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    assert json.loads((tmp_path / "out.json").read_text()) == {"i": 4}


# --- memory ------------------------------------------------------------------------------------


def test_memory_estimates_scale_with_the_sizes():
    small = _memory.flow_bytes(
        dynamics="full", N=4096, L=4, S=4, H=2, M=1024, seeds=16, chunk=2, n_save=64
    )
    big = _memory.flow_bytes(
        dynamics="full", N=10**7, L=4, S=4, H=2, M=1024, seeds=16, chunk=2, n_save=64
    )
    assert small["total"] < 2**30 < big["total"]
    assert _memory.dense_exact_bytes(1000) == 8 * 1000 * 1001
    red = _memory.flow_bytes(
        dynamics="reduced",
        N=10**12,
        L=8,
        S=4,
        H=2,
        M=1,
        seeds=10**9,
        chunk=4096,
        n_save=64,
    )
    assert red["trajectories"] > 10**12  # a billion seeds' saved statistics
    o = _memory.oracle_bytes(
        N=4096, L=8, S=4, H=2, restarts=10**7, vertex_starts=8, contexts=1
    )
    assert o["starts"] > 10**12


def test_check_memory_refuses_with_one_line(monkeypatch):
    monkeypatch.setenv(_memory.ENV_MAX_BYTES, "1000")
    with pytest.raises(
        MemoryError,
        match=r"needs about .* but 1000 B is available \(INDUCTHEORY_MAX_BYTES\)",
    ):
        _memory.check_memory({"a": 5000, "total": 5000}, "this run")
    _memory.check_memory({"a": 10, "total": 10}, "this run")  # fits
    monkeypatch.setenv(_memory.ENV_MAX_BYTES, "lots")
    with pytest.raises(ValueError, match="INDUCTHEORY_MAX_BYTES must be an integer"):
        _memory.available_bytes()


def test_available_bytes_reads_the_machine(monkeypatch):
    monkeypatch.delenv(_memory.ENV_MAX_BYTES, raising=False)
    value, source = _memory.available_bytes()
    assert value is None or value > 0


def test_ball_radius_must_be_finite_and_not_bool():
    for rho in (float("inf"), float("nan"), True, 0.0):
        with pytest.raises(ValueError, match="rho must be > 0"):
            it.flow.ball_uniform(jax.random.key(0), (4,), rho)


# --- sweeps held to the single-point standard --------------------------------------------------

TINY_TASK = it.Task(L=4, S=3, H=1, N=64)
TINY_CONFIG = dict(t_max=1e4, n_save=4)


def test_sweep_validates_every_grid_point_naming_it():
    with pytest.raises(
        ValueError, match=r"grid point t_save_min=20000.0: t_save_min must"
    ):
        it.sweep(
            "flow",
            TINY_TASK,
            {"t_save_min": [1e-2, 2e4]},
            config=it.FlowConfig(t_max=1e4),
        )
    with pytest.raises(ValueError, match=r"grid point N=100: balanced samples need"):
        it.sweep(
            "flow",
            it.Task(L=4, S=3, H=1, N=96),
            {"N": [96, 100]},
            config=it.FlowConfig(dynamics="full", M=24, **TINY_CONFIG),
        )


def test_sweep_refuses_inputs_that_change_nothing():
    gates = it.hard_selection(3, [0])
    with pytest.raises(ValueError, match="'beta' repeats 1.0"):
        it.sweep("loss", TINY_TASK, {"beta": [1, 1.0, 2]}, gates=gates)
    with pytest.raises(ValueError, match="'tau' changes nothing"):
        it.sweep("flow", TINY_TASK, {"tau": [0.5, 2.0]}, config=it.FlowConfig())
    with pytest.raises(ValueError, match="tau applies to objective='worst-phase' only"):
        it.FlowConfig(tau=2.0)
    assert float(it.FlowConfig(objective="worst-phase", tau=2.0).tau) == 2.0
    with pytest.warns(UserWarning, match="M, init apply to dynamics='full' only"):
        it.FlowConfig(M=5, init="projected")


def test_sweep_says_each_assumption_once_naming_the_grid_values():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        it.sweep(
            "loss",
            TINY_TASK,
            {"gamma": [0.5, 2.0, 3.0]},
            gates=it.hard_selection(3, [0]),
        )
    said = [str(w.message) for w in caught if w.category is it.TheoryAssumptionWarning]
    assert len(said) == 1 and "gamma=2.0; gamma=3.0" in said[0], said


def test_sweep_warns_of_failed_seeds_and_nonfinite_results():
    from inductheory.experiments import SweepFailureWarning, sweep_problems

    config = it.FlowConfig(max_steps=2, **TINY_CONFIG)
    with pytest.warns(
        SweepFailureWarning, match=r"2 of 2 seeds failed \(max_steps: 2\)"
    ):
        ds = it.sweep("flow", TINY_TASK, {"rho": [0.1]}, config=config, seeds=2)
    assert sweep_problems(ds).failed == {"max_steps": 2}
    ds = it.sweep(
        "loss", TINY_TASK, {"beta": [1.0, 2.0]}, gates=it.hard_selection(3, [0])
    )
    assert sweep_problems(ds).ok
    ds["loss"][1] = np.nan
    assert sweep_problems(ds).nonfinite == ("loss at beta=2.0",)
