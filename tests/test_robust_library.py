"""Robustness of the library pieces the CLI relies on: stable numerics, the cache, memory
estimates."""

import functools
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


def test_a_cache_entry_being_computed_is_waited_for_not_computed_again(tmp_path):
    # two figures computed at once ask for the same run: the second waits for the first
    import threading
    import time

    calls, computing = [], threading.Event()

    def slow(tag):
        def compute():
            calls.append(tag)
            computing.set()
            time.sleep(0.5)
            return {"x": tag}

        return compute

    results = {}
    first = threading.Thread(
        target=lambda: results.update(a=_io.cached(tmp_path, {"a": 1}, slow("a")))
    )
    first.start()
    assert computing.wait(30)
    second = _io.cached(tmp_path, {"a": 1}, slow("b"))
    first.join()
    assert calls == ["a"] and second == results["a"] == {"x": "a"}
    # another entry is not held up by it
    assert _io.cached(tmp_path, {"a": 2}, slow("c")) == {"x": "c"}


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
    assert small.total < 2**30 < big.total
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
    assert red.parts["trajectories"] > 10**12  # a billion seeds' saved statistics
    o = _memory.oracle_bytes(
        N=4096, L=8, S=4, H=2, restarts=10**7, vertex_starts=8, contexts=1
    )
    assert o.parts["starts"] > 10**12


def test_check_memory_refuses_with_one_line(monkeypatch):
    monkeypatch.setenv(_memory.ENV_MAX_BYTES, "1000")
    with pytest.raises(
        MemoryError,
        match=r"needs about .* but 1000 B is available \(INDUCTHEORY_MAX_BYTES\)",
    ):
        _memory.check_memory(_memory.with_total(a=5000), "this run")
    _memory.check_memory(_memory.with_total(a=10), "this run")  # fits
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


# --- stores keyed by content: sweep blocks, stored programs, output directories ------------------

SWEEP_TASK = it.Task(L=4, S=3, H=1, N=64)


def _loss_sweep(beta, out=None):
    gates = it.hard_selection(3, [0])
    return it.sweep("loss", SWEEP_TASK, {"beta": [beta]}, gates=gates, out=out)


def test_a_resumed_sweep_uses_no_block_of_another_sweep_even_without_its_manifest(
    tmp_path,
):
    _loss_sweep(7.0, tmp_path)
    (tmp_path / "sweep.json").unlink()  # nothing but the blocks says whose they are
    (block,) = (tmp_path / "blocks").iterdir()
    with pytest.warns(_io.CacheWarning, match=f"{block}.*another sweep"):
        resumed = _loss_sweep(1.0, tmp_path)
    np.testing.assert_array_equal(resumed.loss.values, _loss_sweep(1.0).loss.values)
    assert resumed.loss.values != _loss_sweep(7.0).loss.values
    with warnings.catch_warnings():  # the block now proves it is this sweep's
        warnings.simplefilter("error")
        _loss_sweep(1.0, tmp_path)


def test_sweep_blocks_without_a_record_are_used_only_when_the_manifest_proves_them(
    tmp_path,
):
    expected = _loss_sweep(2.0, tmp_path).loss.values
    (block,) = (tmp_path / "blocks").iterdir()
    with np.load(block) as z:  # as older versions wrote it: the arrays only
        arrays = {k: z[k] for k in z.files if k != "_sweep"}
    np.savez_compressed(block, **arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(_loss_sweep(2.0, tmp_path).loss.values, expected)
    np.savez_compressed(block, **arrays)
    (tmp_path / "sweep.json").write_text(
        "{not json"
    )  # a damaged manifest proves nothing
    with pytest.warns(_io.CacheWarning) as seen:
        np.testing.assert_array_equal(_loss_sweep(2.0, tmp_path).loss.values, expected)
    messages = [str(w.message) for w in seen]
    assert any("sweep.json" in m for m in messages)
    assert any(str(block) in m and "records no sweep" in m for m in messages)


def test_a_stored_program_is_used_only_under_its_own_key(tmp_path, monkeypatch):
    from inductheory.internal import _programs

    monkeypatch.setenv("INDUCTHEORY_COMPILATION_CACHE", "1")
    x = np.linspace(0.0, 1.0, 5)
    try:
        _programs.enable_program_store(tmp_path)
        _programs.stored_call("double", lambda v: 2.0 * v, (x,))
        _programs.stored_call("square", lambda v: v * v, (x,))
        (double,) = tmp_path.glob("double-*.jaxexport")
        (square,) = tmp_path.glob("square-*.jaxexport")
        square.write_bytes(
            double.read_bytes()
        )  # another solver's program under this name
        _programs.disable_program_store()  # a new process: nothing loaded
        _programs.enable_program_store(tmp_path)
        with pytest.warns(_io.CacheWarning, match=f"{square}.*another program"):
            again = _programs.stored_call("square", lambda v: v * v, (x,))
        np.testing.assert_array_equal(np.asarray(again), x * x)
        _programs.disable_program_store()
        _programs.enable_program_store(tmp_path)
        with warnings.catch_warnings():  # exported again under its key: used as is
            warnings.simplefilter("error")
            np.testing.assert_array_equal(
                np.asarray(_programs.stored_call("square", lambda v: v * v, (x,))),
                x * x,
            )
    finally:
        _programs.disable_program_store()


def test_an_output_directory_holds_one_command_and_one_set_of_parameters(tmp_path):
    _io.claim_output_dir(tmp_path, "flow", {"seeds": 2})
    (tmp_path / "flow.json").write_text("{}")
    _io.release_output_dir(tmp_path)
    _io.claim_output_dir(tmp_path, "flow", {"seeds": 2})  # the same run again: fine
    _io.release_output_dir(tmp_path)
    with pytest.raises(ValueError, match="`inductheory flow` with other parameters"):
        _io.claim_output_dir(tmp_path, "flow", {"seeds": 3})
    with pytest.raises(
        ValueError, match="holds the output of `inductheory flow`.*not of"
    ):
        _io.claim_output_dir(tmp_path, "sweep loss")
    with pytest.raises(ValueError, match="holds the output of `inductheory flow`"):
        _loss_sweep(1.0, tmp_path)  # the library's sweep claims its directory too
    assert not (tmp_path / "blocks").exists()


def test_a_claim_whose_command_wrote_nothing_leaves_the_directory_free(tmp_path):
    _io.claim_output_dir(tmp_path, "flow", {"seeds": 2})
    _io.release_output_dir(tmp_path)  # the command stopped before writing anything
    _io.claim_output_dir(tmp_path, "sweep loss")
    _io.release_output_dir(tmp_path)


def test_temporaries_of_a_killed_write_are_cleaned_by_the_next_run(tmp_path):
    _loss_sweep(1.0, tmp_path)
    stale = [
        tmp_path / ".sweep.nc.abc123.tmp",
        tmp_path / "blocks" / ".block-00000.npz.x.tmp",
    ]
    for path in stale:
        path.write_bytes(b"partial")
    # while another process holds the directory, its temporaries may be in use: kept
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_SH)
        _loss_sweep(1.0, tmp_path)
        assert all(p.exists() for p in stale)
    finally:
        os.close(fd)
    _loss_sweep(1.0, tmp_path)
    assert not any(p.exists() for p in stale)


def test_quick_figures_are_not_written_over_full_ones(tmp_path, monkeypatch):
    from inductheory.figures import _reproduce

    (tmp_path / "data").mkdir()
    (tmp_path / "README.md").write_text(
        "# Theorem figures\n\nMode: full. Command: `x`.\n"
    )
    monkeypatch.setattr(_reproduce, "_make", lambda *a: pytest.fail("computed"))
    with pytest.raises(ValueError, match=r"`inductheory reproduce` \(full\).*--quick"):
        _reproduce.reproduce(tmp_path, quick=True, only=["coverage"], cache=False)


@pytest.mark.parametrize("damage", ["garbage", "list", "directory"])
def test_a_damaged_output_record_is_reported_and_written_again(tmp_path, damage):
    record = tmp_path / _io.OUTPUT_RECORD
    if damage == "directory":
        record.mkdir()
        (record / "x").write_text("x")
        with pytest.warns(_io.CacheWarning, match=str(record)):
            with pytest.raises(ValueError, match="cannot be replaced"):
                _io.claim_output_dir(tmp_path, "flow", {"seeds": 2})
        return
    record.write_text({"garbage": "{oops", "list": "[1]"}[damage])
    (tmp_path / "flow.json").write_text(
        "{}"
    )  # the files still say what the directory holds
    with pytest.warns(_io.CacheWarning, match=str(record)):
        with pytest.raises(ValueError, match="`inductheory flow`.*found by its files"):
            _io.claim_output_dir(tmp_path, "sweep loss")
    with pytest.warns(_io.CacheWarning, match=str(record)):
        _io.claim_output_dir(tmp_path, "flow", {"seeds": 2})
    _io.release_output_dir(tmp_path)
    assert json.loads(record.read_text())["parameters"] == {"seeds": 2}


def test_exact_estimates_are_flat_in_N_and_a_huge_N_runs(monkeypatch):
    # the structured exact geometry holds N and kappa only: N near 2^31 fits in a MiB
    N = 2**31 - 1
    o = _memory.oracle_bytes(
        N=N, L=4, S=3, H=1, restarts=2, vertex_starts=1, contexts=1
    )
    small = _memory.oracle_bytes(
        N=64, L=4, S=3, H=1, restarts=2, vertex_starts=1, contexts=1
    )
    assert o == small and o.total < 2**20
    assert _memory.geometry_bytes(N, None, None) < 2**10
    monkeypatch.setenv(_memory.ENV_MAX_BYTES, str(2**30))
    _memory.check_memory(o, "oracle")  # not refused
    task = it.Task(L=4, S=3, H=1, N=N)
    config = it.OracleMinimizer(restarts=2, steps=5, polish_steps=5, rounds=1)
    point = it.oracle.oracle_point(task, jax.random.key(0), config, contexts=1, seeds=1)
    assert math.isfinite(point.best_loss)
    gates = it.model.hard_selection(3, [1])
    assert math.isfinite(float(it.model.population_loss(task, gates)))
    # the full flow's linear gates do hold N + 1 floats per vector: still counted there
    full = _memory.flow_bytes(
        dynamics="full", N=N, L=4, S=3, H=1, M=64, seeds=1, chunk=1, n_save=4
    )
    assert full.total > 2**34


def test_huge_H_oracle_estimate_is_refused_at_once(monkeypatch):
    import time

    monkeypatch.setenv(_memory.ENV_MAX_BYTES, str(2**34))
    start = time.perf_counter()
    o = _memory.oracle_bytes(
        N=4096, L=8, S=4, H=10**8, restarts=8, vertex_starts=8, contexts=1
    )
    with pytest.raises(MemoryError, match="needs about"):
        _memory.check_memory(o, "oracle")
    assert time.perf_counter() - start < 0.5
    # the capped count agrees with the exact one where that one is cheap
    for S, H, L in [(3, 1, 4), (4, 2, 8), (2, 3, 5), (5, 2, 2), (4, 1, 2)]:
        exact = math.comb((S - 1) ** H + L - 1, L)
        count = functools.partial(_memory.vertex_configurations, S, H, L, cap=4096)
        assert count(exact=True) == min(4096, exact)
        dense = (S - 1) ** (H * L)
        assert count(exact=False) == min(4096, dense)


def test_sweep_too_big_is_refused_before_anything_runs(monkeypatch, tmp_path):
    import time

    from inductheory.experiments import _sweep
    from inductheory.experiments._sweep import _driver

    task = it.Task(L=4, S=3, H=1, N=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # H >= S: outside the theorems, refused anyway
        many_heads = it.Task(L=4, S=3, H=10**8, N=64)
    monkeypatch.setattr(  # nothing may be computed
        _driver, "compute_block", lambda *a: pytest.fail("a block was computed")
    )
    start = time.perf_counter()
    for kwargs in (
        dict(kind="flow", seeds=10**8),
        dict(kind="flow", seeds=4, config=it.FlowConfig(n_save=10**9)),
        dict(kind="oracle", task=many_heads),
    ):
        kind = kwargs.pop("kind")
        t = kwargs.pop("task", task)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(MemoryError, match=f"sweep {kind} .* needs about"):
                _sweep.sweep(
                    kind, t, {"beta": [1.0, 2.0]}, out=tmp_path / kind, **kwargs
                )
        assert not (tmp_path / kind).exists()  # refused before the store was made
    # a block no memory could hold is refused by its size, before any estimate
    with pytest.raises(ValueError, match="block must be <= 65536"):
        gates = it.model.hard_selection(3, [0])
        _sweep.sweep("loss", task, {"beta": [1.0]}, gates=gates, block=10**9)
    assert time.perf_counter() - start < 5


def _points_by_selection(ds):
    # the former per-point assembly (`ds.sel` at every grid point), for comparison
    import itertools

    from inductheory.experiments import _sweep

    grid_dims = json.loads(ds.attrs["parameters"])["extra"]["grid_order"]
    keys = _sweep.sweep_kind(ds.attrs["kind"]).point_keys
    out = []
    for values in itertools.product(*(ds.coords[d].values.tolist() for d in grid_dims)):
        sel = ds.sel(dict(zip(grid_dims, values)))
        entry = dict(zip(grid_dims, values))
        for k in keys:
            if k in sel:
                v = sel[k].values
                entry[k] = v.tolist() if v.ndim else v.item()
        out.append(entry)
    return out


def test_vectorized_assembly_gives_the_per_point_results():
    from inductheory.experiments import _sweep
    from inductheory.experiments._sweep import _driver, _spec
    from inductheory.internal._lanes import stack_lanes

    task = it.Task(L=4, S=3, H=1, N=64)
    gates = it.model.hard_selection(3, [0])
    grid = {"beta": [1.0, 2.0, 4.0], "N": [64, 128], "gamma": [0.5, 1.0]}
    ds = _sweep.sweep("loss", task, grid, gates=gates, block=4)
    assert _sweep.points_of(ds) == _points_by_selection(ds)
    spec = _sweep.SweepSpec(
        "loss", task.to_dict(), {}, _driver._check_grid("loss", task, grid), 0, 0, 4, {}
    )
    points = _sweep.grid_points(spec.grid)
    assert [_sweep.grid_point(spec.grid, i) for i in range(len(points))] == points
    stacked = _spec._stacked_tasks(spec, points)
    reference = stack_lanes(_spec._tasks(spec, points))
    assert jax.tree.structure(stacked) == jax.tree.structure(reference)
    for a, b in zip(jax.tree.leaves(stacked), jax.tree.leaves(reference)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    with pytest.raises(ValueError, match="N must be >= L\\*S"):
        _sweep.sweep("loss", task, {"N": [64, 8]}, gates=gates)
    # the flow program of test_numpy_integers_are_accepted_for_seeds_seed_and_block (same task,
    # lanes and static settings: n_save=4, not 2), so a run of this file compiles it once
    flow = _sweep.sweep(
        "flow",
        task,
        {"beta": [1.0, 2.0]},
        seeds=2,
        config=it.FlowConfig(t_max=1e3, n_save=4),
    )
    # NaN fractions (no seed selected) compare equal as JSON
    assert json.dumps(_sweep.points_of(flow)) == json.dumps(_points_by_selection(flow))


def test_loss_sweep_of_many_points_assembles_in_seconds():
    import time

    from inductheory.experiments import _sweep

    task = it.Task(L=4, S=3, H=1, N=64)
    gates = it.model.hard_selection(3, [0])
    _sweep.sweep(
        "loss", task, {"beta": [1.0]}, gates=gates
    )  # compiled outside the timing
    grid = {
        "beta": np.linspace(1, 8, 1000).tolist(),
        "gamma": [0.5, 0.75, 1.0, 1.25, 1.5],
    }
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = _sweep.sweep("loss", task, grid, gates=gates)
        points = _sweep.points_of(ds)
        _sweep.summary_table(ds)
    assert len(points) == 5000
    assert time.perf_counter() - start < 10  # the per-point path took ~25 s


# --- wrong types and sizes: a TypeError or ValueError naming the argument -----------------------

TINY = dict(L=4, S=3, H=1, N=64)


def test_task_refuses_a_vocabulary_beyond_float64_integers_with_the_bound():
    assert int(it.Task(L=4, S=3, H=1, N=2**53).N) == 2**53
    for N in (2**53 + 1, 2**70, 10**400):
        with pytest.raises(ValueError, match=r"N must be <= 9007199254740992"):
            it.Task(L=4, S=3, H=1, N=N)
    assert int(it.Task(L=4, S=3, H=1, N=np.int64(64)).N) == 64


def test_run_flow_names_a_config_or_task_of_the_wrong_type():
    task = it.Task(**TINY)
    for config in ("reduced", {"t_max": 1e3}):
        with pytest.raises(TypeError, match="config must be a FlowConfig"):
            it.run_flow(task, config, 2)
    with pytest.raises(TypeError, match="task must be a Task"):
        it.run_flow("task", it.FlowConfig(), 2)
    with pytest.raises(ValueError, match="seeds must be <= 2147483647"):
        it.run_flow(task, it.FlowConfig(), 2**70)
    with pytest.raises(ValueError, match="seed must be an integer"):
        it.run_flow(task, it.FlowConfig(), 2, seed="1")


def test_numpy_integers_are_accepted_for_seeds_seed_and_block():
    task, config = it.Task(**TINY), it.FlowConfig(t_max=1e3, n_save=4)
    plain = it.sweep(
        "flow", task, {"beta": [1.0, 2.0]}, config=config, seeds=2, block=2
    )
    numpy = it.sweep(
        "flow",
        task,
        {"beta": [1.0, 2.0]},
        config=config,
        seeds=np.int64(2),
        seed=np.int64(0),
        block=np.int32(2),
    )
    for name in plain.data_vars:
        np.testing.assert_array_equal(plain[name].values, numpy[name].values)
    # 4 seeds: the 4 lanes (2 points x 2 seeds) of the sweeps above, so one compiled program
    run = it.run_flow(task, config, np.int64(4), seed=np.int64(0))
    same = it.run_flow(task, config, 4)
    assert _io.to_json(run.to_dict()["per_seed"]) == _io.to_json(
        same.to_dict()["per_seed"]
    )
    assert run.seed == 0 and type(run.seed) is int


def test_sweep_names_arguments_of_the_wrong_type_or_size():
    task = it.Task(**TINY)
    gates = it.model.hard_selection(3, [0])
    with pytest.raises(TypeError, match="gates must be SharedGates"):
        it.sweep("loss", task, {"beta": [1.0]}, gates=[[1.0, 0.0, 0.0]])
    with pytest.raises(TypeError, match="task must be a Task"):
        it.sweep("loss", "task", {"beta": [1.0]}, gates=gates)
    with pytest.raises(TypeError, match="grid must be a mapping"):
        it.sweep("loss", task, [("beta", [1.0])], gates=gates)
    with pytest.raises(ValueError, match="config must be a FlowConfig"):
        it.sweep("flow", task, {"beta": [1.0]}, config="reduced", seeds=2)
    for N in (1e20, 2**70, 10**400):
        with pytest.raises(ValueError, match=r"'N' must be <= 9007199254740992"):
            it.sweep("loss", task, {"N": [64, N]}, gates=gates)
    with pytest.raises(ValueError, match="seed must be an integer"):
        it.sweep("loss", task, {"beta": [1.0]}, gates=gates, seed="1")
    with pytest.raises(ValueError, match="block must be <= 65536"):
        it.sweep("loss", task, {"beta": [1.0]}, gates=gates, block=2**31 - 1)
    with pytest.raises(
        ValueError, match="block must be <= 16384 grid points of 4 seeds"
    ):
        it.sweep(
            "flow", task, {"beta": [1.0]}, config=it.FlowConfig(), seeds=4, block=10**6
        )


def test_a_malformed_sweep_manifest_is_named_and_rewritten(tmp_path):
    task, gates = it.Task(**TINY), it.model.hard_selection(3, [0])
    expected = it.sweep("loss", task, {"beta": [1.0]}, gates=gates).loss.values
    for text in ("not json {", "[1, 2]", '{"spec": 3}'):
        (tmp_path / "sweep.json").write_text(text)
        with pytest.warns(_io.CacheWarning, match=str(tmp_path / "sweep.json")):
            ds = it.sweep("loss", task, {"beta": [1.0]}, gates=gates, out=tmp_path)
        np.testing.assert_array_equal(ds.loss.values, expected)


def test_an_unwritable_cache_directory_is_refused_before_any_figure(tmp_path):
    from inductheory.figures import reproduce

    file = tmp_path / "a-file"
    file.write_text("x")
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=f"the cache directory {file}/quick cannot"):
        reproduce(out, quick=True, only=["toy_stability"], cache=file, progress=False)
    assert not list(out.glob("*.png"))  # nothing was computed


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
