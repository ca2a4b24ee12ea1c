"""Sweeps: one compiled program per shape, labeled datasets equal to the single-point paths,
resume."""

import json

import jax
import jax.monitoring
import numpy as np
import pytest

import inductheory as it
from inductheory.cli import main
from inductheory.experiments import _sweep
from inductheory.experiments._sweep import _driver, _oracle

TASK = it.Task(L=4, S=4, H=2, N=1024, beta=4.0)


class CompileCounter:
    """Counts XLA backend compilations (jax's compile events) while active."""

    def __init__(self):
        self.count, self.active = 0, False
        jax.monitoring.register_event_duration_secs_listener(self._on_event)

    def _on_event(self, name, duration, **kwargs):
        if self.active and name == "/jax/core/compile/backend_compile_duration":
            self.count += 1

    def measure(self, fn, *, clear=True):
        if clear:
            jax.clear_caches()
            it.experiments._flows.lane_map.cache_clear()
        self.count, self.active = 0, True
        try:
            result = fn()
        finally:
            self.active = False
        return self.count, result


@pytest.fixture(scope="module")
def counter():
    return CompileCounter()


def test_loss_sweep_equals_the_closed_form_at_every_point():
    gates = it.hard_selection(4, [0, 2])
    grid = {
        "beta": [1.0, 4.0, 16.0],
        "N": [16, 1024, 10**6],
        "kappa": [0.5, 2.0],
        "gamma": [0.5, 1.0],
    }
    ds = it.sweep("loss", TASK, grid, gates=gates)
    assert list(ds.loss.dims) == ["beta", "N", "kappa", "gamma"]
    for point in _sweep.grid_points(_driver._check_grid("loss", TASK, grid)):
        task = it.model.quiet_task(**{**TASK.to_dict(), **point})
        sel = ds.sel(point)
        np.testing.assert_allclose(
            float(sel.loss), float(it.population_loss(task, gates)), rtol=1e-13
        )
        np.testing.assert_array_equal(
            sel.phase_accuracy.values, np.asarray(it.phase_accuracy(task, gates))
        )
    assert (
        ds.attrs["L"] == 4
        and ds.attrs["kind"] == "loss"
        and "inductheory_version" in ds.attrs
    )


def test_flow_sweep_matches_run_flow_point_by_point():
    grid = {"beta": [2.0, 6.0], "rho": [0.05, 0.2]}
    config = it.FlowConfig(t_max=1e6)
    ds = it.sweep("flow", TASK, grid, config=config, seeds=6)
    assert ds.selected.dims == ("beta", "rho", "seed", "head")
    for point in _sweep.grid_points(grid):
        run = it.run_flow(
            TASK.replace(beta=point["beta"]), config.replace(rho=point["rho"]), 6
        )
        ref = run.per_seed
        sel = ds.sel(point)
        np.testing.assert_array_equal(sel.selected.values, ref.selected)
        np.testing.assert_allclose(sel.t_final.values, ref.t_final, rtol=1e-6)
        assert list(sel.status.values) == list(it.flow.status_names(ref.status))
        assert float(sel.distinct_fraction) == run.summary.distinct_fraction


# Before test_k_points_compile_no_more_than_one_point, which clears jax's caches: the command
# line's sweep (2 points x 3 seeds, the default flow settings) runs in the 6-lane program that
# run_flow of 6 seeds compiled just above.
def test_sweep_cli_json_has_one_entry_per_point(capsys, tmp_path):
    args = [
        "sweep",
        "flow",
        "--L",
        "4",
        "--S",
        "4",
        "--H",
        "2",
        "--N",
        "256",
        "--seeds",
        "3",
        "--quiet",
        "--grid",
        "beta=2,4",
        "--grid",
        "rho=0.1",
        "--out",
        str(tmp_path),
        "--json",
    ]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(p["beta"], p["rho"]) for p in report["points"]] == [(2.0, 0.1), (4.0, 0.1)]
    for p in report["points"]:
        assert len(p["key_offsets"]) == 3 and len(p["value_offsets"][0]) == 2
        assert 0 <= p["distinct_fraction"] <= 1
    assert {"sweep.nc", "summary.txt", "points.json", "sweep.json"} <= {
        f.name for f in tmp_path.iterdir()
    }
    assert main(["sweep", "oracle", "--grid", "L=4,8", "--quiet"]) == 2
    assert "not swept" in capsys.readouterr().err


def test_oracle_sweep_matches_oracle_point():
    grid = {"beta": [4.0, 8.0], "N": [32, 512]}
    config = it.OracleMinimizer(restarts=8, steps=150, polish_steps=150)
    ds = it.sweep("oracle", TASK, grid, config=config, vertex_starts=4)
    for point in _sweep.grid_points(grid):
        ref = it.oracle_point(TASK.replace(**point), jax.random.key(0), config, seeds=4)
        sel = ds.sel(point)
        np.testing.assert_allclose(float(sel.best_loss), ref.best_loss, rtol=1e-10)
        assert bool(sel.hard_selection) == ref.hard_selection
        assert bool(sel.distinct_heads) == ref.distinct_heads


@pytest.mark.parametrize(
    "kind",
    [
        "loss",
        pytest.param("flow", marks=pytest.mark.slow),
        pytest.param("oracle", marks=pytest.mark.slow),
    ],
)
def test_k_points_compile_no_more_than_one_point(counter, kind):
    """Blocks are padded to a fixed size: k points compile the programs of one point (the
    mechanism is
    shared by every kind; flows and the oracle are checked in the slow target)."""
    extra = {
        "loss": dict(gates=it.hard_selection(4, [0, 2])),
        "flow": dict(seeds=4, block=8),
        "oracle": dict(
            config=it.OracleMinimizer(restarts=4, steps=50, polish_steps=50),
            vertex_starts=2,
        ),
    }[kind]
    one, _ = counter.measure(lambda: it.sweep(kind, TASK, {"beta": [3.0]}, **extra))
    many, ds = counter.measure(
        lambda: it.sweep(
            kind, TASK, {"beta": [1.0, 2.0, 5.0], "N": [64, 4096]}, **extra
        )
    )
    assert one > 0
    assert many <= one, (one, many)
    # new values of every traced scalar reuse the compiled programs: nothing compiles
    again, _ = counter.measure(
        lambda: it.sweep(kind, TASK, {"gamma": [0.7], "kappa": [0.3, 3.0]}, **extra),
        clear=False,
    )
    assert again == 0


def test_sweep_resumes_from_its_blocks(tmp_path, monkeypatch):
    gates = it.uniform_gates(2, 4)
    grid = {"beta": [1.0, 2.0, 3.0, 4.0, 5.0]}
    full = it.sweep("loss", TASK, grid, gates=gates, block=2)
    calls = []
    real = _driver.compute_block

    class Interrupted(Exception):
        """Stands for Ctrl-C or a killed process in the middle of the second block."""

    armed = [True]

    def interrupted(spec, indices):
        calls.append(indices)
        if armed[0] and len(calls) == 2:
            armed[0] = False
            raise Interrupted
        return real(spec, indices)

    monkeypatch.setattr(_driver, "compute_block", interrupted)
    with pytest.raises(Interrupted):
        it.sweep("loss", TASK, grid, gates=gates, block=2, out=tmp_path)
    assert sorted(p.name for p in (tmp_path / "blocks").iterdir()) == [
        "block-00000.npz"
    ]
    calls.clear()
    resumed = it.sweep("loss", TASK, grid, gates=gates, block=2, out=tmp_path)
    assert calls == [[2, 3], [4]]  # the finished block was not recomputed
    np.testing.assert_array_equal(resumed.loss.values, full.loss.values)
    assert (tmp_path / "sweep.nc").exists() and "beta" in (
        tmp_path / "summary.txt"
    ).read_text()
    import xarray as xr

    with xr.open_dataset(tmp_path / "sweep.nc") as stored:
        np.testing.assert_array_equal(stored.loss.values, full.loss.values)
    # a different sweep in the same directory is refused
    with pytest.raises(ValueError, match=r"different sweep \(differs in: grid;"):
        it.sweep("loss", TASK, {"beta": [9.0]}, gates=gates, block=2, out=tmp_path)
    with pytest.raises(ValueError, match=r"differs in: block;"):
        it.sweep("loss", TASK, grid, gates=gates, block=4, out=tmp_path)


def test_bad_grids_are_clear_errors():
    with pytest.raises(ValueError, match="not swept"):
        it.sweep("loss", TASK, {"L": [4]}, gates=it.uniform_gates(2, 4))
    with pytest.raises(ValueError, match="finite"):
        it.sweep("flow", TASK, {"rho": [float("nan")]})
    with pytest.raises(ValueError, match="integers"):
        it.sweep("oracle", TASK, {"N": [100.5]})
    with pytest.raises(ValueError, match="N must be >= L\\*S"):
        it.sweep("loss", TASK, {"N": [8]}, gates=it.uniform_gates(2, 4))
    with pytest.raises(ValueError, match="kind"):
        it.sweep("toy", TASK, {"beta": [1.0]})


def test_sweep_on_a_local_dask_cluster_of_two_workers_matches_the_local_run(tmp_path):
    distributed = pytest.importorskip(
        "distributed", reason="the 'distributed' extra is not installed"
    )
    grid = {"beta": [1.0, 2.0, 4.0], "N": [64, 4096]}
    gates = it.hard_selection(4, [1, 2])
    local = it.sweep("loss", TASK, grid, gates=gates, block=2)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster) as client:
            remote = it.sweep(
                "loss",
                TASK,
                grid,
                gates=gates,
                block=2,
                scheduler=cluster.scheduler_address,
                out=tmp_path,
            )
            workers = client.run(lambda: __import__("os").getpid())
    assert len(workers) == 2
    for name in local.data_vars:
        np.testing.assert_array_equal(remote[name].values, local[name].values)
    assert len(list((tmp_path / "blocks").iterdir())) == 3


def test_default_oracle_block_is_one_point_per_device(monkeypatch):
    # padding a block of one point to the device count left the other devices idle
    seen = []
    monkeypatch.setattr(_driver, "run_spec", lambda spec, **kw: seen.append(spec.block))
    for devices in (1, 2, 4):
        monkeypatch.setattr(
            _oracle,
            "padded_size",
            lambda n, devices=devices: devices * -(-n // devices),
        )
        _sweep.sweep(
            "oracle", it.Task(L=4, S=4, H=2, N=64, beta=4.0), {"beta": [4.0, 8.0, 9.0]}
        )
    assert seen == [1, 2, 4]


@pytest.mark.parametrize(
    "W, tied, expected",
    [(5, False, 3 / 4), (3, True, 2 / 3)],  # H = 2 heads over W - 1 or W offsets
)
def test_sweep_baseline_matches_run_flow_for_windows_and_tied_gates(W, tied, expected):
    """The independent-choice baseline counts the offsets a head can select (W - 1, or W
    tied), in the sweep's attributes as in run_flow's summary: not S - 1."""
    task = it.model.quiet_task(L=4, S=3, H=2, N=64, beta=4.0, W=W)
    config = it.FlowConfig(t_max=1e4, tied=tied)
    ds = it.sweep("flow", task, {"beta": [4.0]}, config=config, seeds=2)
    run = it.run_flow(task, config, 2)
    baseline = run.summary.distinct_baseline_independent_uniform
    assert baseline == pytest.approx(expected, rel=1e-15)
    assert ds.attrs["distinct_baseline_independent_uniform"] == baseline


def test_sweep_cli_report_is_a_sweep_report(capsys):
    from inductheory.cli._sweep import SweepReport

    args = ["sweep", "loss", "--L", "4", "--S", "3", "--H", "1", "--N", "64", "--quiet"]
    assert main([*args, "--select", "0", "--grid", "beta=2,4", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) == {"kind", "task", "grid", "points", "attrs"}
    report = SweepReport.from_dict(printed)
    assert report.kind == "loss" and report.size is None
    assert report.grid == {"beta": [2.0, 4.0]} and len(report.points) == 2
    assert report.to_dict() == printed


def test_sweep_cli_says_each_assumption_once_naming_the_grid_values(capsys):
    args = ["sweep", "loss", "--L", "4", "--S", "3", "--H", "1", "--N", "64", "--quiet"]
    assert main([*args, "--select", "0", "--grid", "gamma=0.5,2,3", "--json"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "gamma" in line]
    assert len(lines) == 1 and "gamma=2.0; gamma=3.0" in lines[0], lines
