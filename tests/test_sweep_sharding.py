"""Sweep blocks sharded over several (forced host) devices give the single-point numbers."""

import textwrap

import pytest
from forced_devices import run_on_host_devices

SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    import inductheory as it
    assert jax.device_count() == 4, jax.devices()
    task = it.Task(L=4, S=4, H=2, N=1024, beta=4.0)
    gates = it.hard_selection(4, [0, 2])
    ds = it.sweep("loss", task, {"beta": [1.0, 2.0, 4.0], "N": [64, 4096]}, gates=gates, block=5)
    for b in (1.0, 2.0, 4.0):
        for N in (64, 4096):
            ref = float(it.population_loss(task.replace(beta=b, N=N), gates))
            np.testing.assert_allclose(float(ds.loss.sel(beta=b, N=N)), ref, rtol=1e-13)
    if not ORACLE:
        print("OK"); raise SystemExit
    config = it.OracleMinimizer(restarts=4, steps=60, polish_steps=60)
    grid = {"beta": [4.0, 8.0], "N": [32, 512]}
    ds = it.sweep("oracle", task, grid, config=config, vertex_starts=2, block=3)
    for b in (4.0, 8.0):
        for N in (32, 512):
            ref = it.oracle_point(task.replace(beta=b, N=N), jax.random.key(0), config, seeds=2)
            best = float(ds.best_loss.sel(beta=b, N=N))
            np.testing.assert_allclose(best, ref.best_loss, rtol=1e-9)
            assert bool(ds.hard_selection.sel(beta=b, N=N)) == ref.hard_selection
    print("OK")
    """
)


def _run(oracle: bool):
    run_on_host_devices(f"ORACLE = {oracle}\n" + SCRIPT)


def test_sharded_loss_sweep_equals_single_points():
    _run(oracle=False)


@pytest.mark.slow
def test_sharded_oracle_sweep_equals_single_points():
    _run(oracle=True)
