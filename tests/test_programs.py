"""The program store: exported programs give the numbers of the traced ones, are loaded (not traced)
the second time, and are keyed on the static fields and shapes."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inductheory as it
from inductheory.internal import _programs
from inductheory.internal._lanes import broadcast_lanes


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("INDUCTHEORY_COMPILATION_CACHE", "1")
    assert _programs.enable_program_store(tmp_path) == tmp_path
    yield tmp_path
    _programs.disable_program_store()


def _softplus_sum(x, scale):
    return {
        "value": jnp.sum(jnp.logaddexp(0.0, scale * x)),
        "grad": jax.grad(lambda y: jnp.sum(jnp.logaddexp(0.0, scale * y)))(x),
    }


def _no_tracing(monkeypatch):
    monkeypatch.setattr(
        jax.export,
        "export",
        lambda *a, **k: (_ for _ in ()).throw(AssertionError("traced")),
    )


def test_a_stored_program_is_loaded_not_traced_and_damage_is_repaired(
    store, monkeypatch
):
    x, scale = np.linspace(-2.0, 3.0, 7), np.float64(1.5)
    expected = jax.jit(_softplus_sum)(x, scale)
    first = _programs.stored_call("f", _softplus_sum, (x, scale))
    [path] = store.glob("f-*.jaxexport")
    for k in expected:
        np.testing.assert_array_equal(first[k], expected[k])
    _programs.disable_program_store()  # a new process: nothing loaded
    _programs.enable_program_store(store)
    with monkeypatch.context() as m:
        _no_tracing(m)
        again = _programs.stored_call(
            "f", _softplus_sum, (x, np.float64(-0.5))
        )  # a new traced value
    np.testing.assert_array_equal(
        again["grad"], jax.jit(_softplus_sum)(x, np.float64(-0.5))["grad"]
    )
    _programs.stored_call(
        "f", _softplus_sum, (x[:3], scale)
    )  # a new shape is a new program
    assert len(list(store.glob("f-*.jaxexport"))) == 2
    path.write_bytes(b"damaged")
    _programs.disable_program_store()
    _programs.enable_program_store(store)
    repaired = _programs.stored_call("f", _softplus_sum, (x, scale))
    np.testing.assert_array_equal(repaired["value"], expected["value"])
    assert path.read_bytes() != b"damaged"


def test_static_fields_and_shapes_are_in_the_key():
    task, config = it.Task(L=4, S=3, H=1, N=1000, beta=4.0), it.FlowConfig()
    key = lambda t, c, n=2: _programs.program_key(
        "p", (broadcast_lanes(t, n), broadcast_lanes(c, n))
    )  # noqa: E731
    assert key(task, config) == key(
        task.replace(N=2000, beta=2.0), config.replace(rho=0.3)
    )  # traced values
    assert key(task, config) != key(task, config.replace(max_steps=50_000))
    assert key(task, config) != key(task.replace(H=2), config)
    assert key(task, config) != key(task, config, n=4)


def test_the_store_is_off_with_the_compilation_cache_off(tmp_path, monkeypatch):
    monkeypatch.setenv("INDUCTHEORY_COMPILATION_CACHE", "0")
    assert _programs.enable_program_store(tmp_path / "p") is None
    assert not (tmp_path / "p").exists()


# Flows, in fresh processes with `EQX_ON_ERROR=nan` as the command line sets it (equinox reads it at
# import; programs with its host callbacks cannot be exported).
FLOW_SCRIPT = textwrap.dedent(
    """
    import sys, jax, numpy as np
    import inductheory as it
    from inductheory.internal import _programs
    store, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "loaded":  # must not trace the lane program again
        jax.export.export = lambda *a, **k: (_ for _ in ()).throw(AssertionError("traced"))
    assert _programs.enable_program_store(store) is not None
    # the second process skips XLA's compile too
    it.internal.enable_compilation_cache(store + "/jax")
    task, config = it.Task(L=4, S=3, H=1, N=1000, beta=4.0), it.FlowConfig(rho=0.1, n_save=5)
    ps = it.run_flow(task, config, 2).per_seed.to_dict()
    arrays = {k: v for k, v in ps.items() if not isinstance(v, dict)}
    arrays |= {"final_" + k: v for k, v in ps["final"].items()}
    if mode == "first":  # and the traced (jit) path, in the same process
        _programs.disable_program_store()
        ps = it.run_flow(task, config, 2).per_seed.to_dict()
        arrays |= {"jit_" + k: v for k, v in ps.items() if not isinstance(v, dict)}
    np.savez(out, **arrays)
    """
)


def _flow_process(store, out, mode):
    env = {**os.environ, "EQX_ON_ERROR": "nan", "INDUCTHEORY_COMPILATION_CACHE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", FLOW_SCRIPT, str(store), str(out), mode],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(np.load(out))


# two fresh processes compiling a flow; the store's mechanics are tested above
@pytest.mark.slow
def test_a_stored_flow_program_gives_the_traced_numbers_in_a_second_process(tmp_path):
    store = tmp_path / "programs"
    first = _flow_process(store, tmp_path / "first.npz", "first")
    assert len(list(store.glob("flow_lanes-*.jaxexport"))) == 1
    for k in [k for k in first if k.startswith("jit_")]:
        np.testing.assert_array_equal(
            first[k], first[k[4:]], err_msg=k
        )  # stored == traced, bit for bit
    loaded = _flow_process(store, tmp_path / "loaded.npz", "loaded")
    for k, v in loaded.items():
        np.testing.assert_array_equal(v, first[k], err_msg=k)
