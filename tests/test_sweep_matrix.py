"""The matrix sweep: every row of the paper matrix a point of a sweep, its arrays equal to
`run_row`'s, resumed block by block and run on a Dask cluster with the same numbers."""

import dataclasses
import re

import numpy as np
import pytest

from inductheory.cli import main
from inductheory.experiments import matrix_sweep
from inductheory.experiments._paper_matrix import (
    QUICK_SIZE,
    matrix_row,
    row_parameters,
    run_row,
)
from inductheory.experiments._sweep import _driver

# The quick size cut to 2 steps and 1 seed: seconds of training per row (compiling dominates).
TINY = dataclasses.replace(
    QUICK_SIZE, seeds=1, train=dataclasses.replace(QUICK_SIZE.train, steps=2)
)
ROWS = ["W8/S8 8 KV", "W4/S4"]  # row names hold '/' and spaces
# Every stored array but the wall time is a pure function of the spec.
TIMED = ("wall_s",)


@pytest.fixture(scope="module")
def cli_sweep(tmp_path_factory):
    """`inductheory sweep matrix --quick --steps 2 --seeds 1` over two rows, read back."""
    import xarray as xr

    out = tmp_path_factory.mktemp("matrix") / "sweep"
    argv = ["sweep", "matrix", "--quick", "--steps", "2", "--seeds", "1"]
    argv += ["--grid", "row=" + ",".join(ROWS), "--out", str(out), "--quiet"]
    assert main(argv) == 0
    with xr.open_dataset(out / "sweep.nc") as ds:
        return ds.load()


def _assert_same(a, b):
    assert set(a.data_vars) == set(b.data_vars)
    for name in a.data_vars:
        if name not in TIMED:
            np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def test_sweep_points_equal_run_row(cli_sweep):
    ds = cli_sweep
    assert list(ds.row.values) == ROWS
    assert dict(ds.sizes) == {
        "row": 2,
        "seed": 1,
        "phase": 24,
        "context": 64,
        "curve_point": 2,
    }
    for name in ROWS:
        r = run_row(matrix_row(name), TINY)
        m, point = r.measures, ds.sel(row=name)
        acc = m.phase_accuracy
        np.testing.assert_array_equal(point.held_out_loss.values, m.loss)
        np.testing.assert_array_equal(point.correct.values, m.correct)
        np.testing.assert_array_equal(point.phase_loss.values, m.phase_loss)
        np.testing.assert_array_equal(point.phase_accuracy.values, acc)
        np.testing.assert_array_equal(point.mean_accuracy.values, m.mean_accuracy)
        np.testing.assert_array_equal(point.worst_phase.values, m.worst_accuracy)
        np.testing.assert_array_equal(point.phase_gap.values, m.gap)
        np.testing.assert_array_equal(point.initial_loss.values, r.initial_loss)
        np.testing.assert_array_equal(point.plateau_change.values, r.plateau_change)
        np.testing.assert_array_equal(point.curve_steps.values, r.curve_steps)
        np.testing.assert_array_equal(point.curve.values, r.curve)
        assert float(point.mean_accuracy_mean) == pytest.approx(acc.mean())
        assert float(point.wall_s) > 0


def test_the_stride_2_row_trains_twice_the_steps_and_nothing_else():
    """Its run at a size is the run of the same row without the factor at twice the steps, and
    its cache key says so; the other rows' keys are those of earlier runs (no factor)."""
    row = matrix_row("W8/S2 (stride 2)")
    assert row.steps_factor == 2 and row.training(TINY).steps == 4
    longer = dataclasses.replace(TINY, train=dataclasses.replace(TINY.train, steps=4))
    doubled = run_row(row, TINY)
    plain = run_row(dataclasses.replace(row, steps_factor=1), longer)
    assert doubled.curve_steps[-1] == 3
    np.testing.assert_array_equal(doubled.curve, plain.curve)
    np.testing.assert_array_equal(doubled.measures.correct, plain.measures.correct)
    np.testing.assert_array_equal(doubled.measures.loss, plain.measures.loss)
    assert row_parameters(row, TINY)["steps_factor"] == 2
    reference = matrix_row("W8/S8 1 KV (reference)")
    assert reference.training(TINY) is TINY.train
    assert "steps_factor" not in row_parameters(reference, TINY)


def test_matrix_sweep_resumes_at_its_first_unfinished_row(
    tmp_path, monkeypatch, cli_sweep
):
    calls = []
    real = _driver.compute_block

    class Interrupted(Exception):
        """Stands for Ctrl-C or a killed process while the second row trains."""

    def interrupted(spec, indices):
        calls.append(indices)
        if len(calls) == 2:
            raise Interrupted
        return real(spec, indices)

    monkeypatch.setattr(_driver, "compute_block", interrupted)
    with pytest.raises(Interrupted):
        matrix_sweep(TINY, {"row": ROWS}, out=tmp_path)
    assert [p.name for p in (tmp_path / "blocks").iterdir()] == ["block-00000.npz"]
    calls.clear()
    monkeypatch.setattr(
        _driver, "compute_block", lambda s, i: calls.append(i) or real(s, i)
    )
    resumed = matrix_sweep(TINY, {"row": ROWS}, out=tmp_path)
    assert calls == [[1]]  # the finished row was not trained again
    _assert_same(resumed, cli_sweep)
    # another grid in the same directory is refused, the difference named
    with pytest.raises(ValueError, match=r"different sweep \(differs in: grid"):
        matrix_sweep(TINY, {"row": ROWS[:1]}, out=tmp_path)


# Two worker processes that each import the package and compile both rows' training: with the
# slow checks. The default run covers the path: tests/test_sweep.py's sweep on a local Dask
# cluster of two worker processes (the same driver, blocks sent to a scheduler and written back)
# and test_matrix_sweep_resumes_at_its_first_unfinished_row here (the matrix kind's blocks).
@pytest.mark.slow
def test_matrix_sweep_on_a_local_dask_cluster_of_two_workers(tmp_path, cli_sweep):
    distributed = pytest.importorskip(
        "distributed", reason="the 'distributed' extra is not installed"
    )
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster) as client:
            remote = matrix_sweep(
                TINY,
                {"row": ROWS},
                scheduler=cluster.scheduler_address,
                out=tmp_path,
            )
            workers = client.run(lambda: __import__("os").getpid())
    assert len(workers) == 2
    _assert_same(remote, cli_sweep)
    assert len(list((tmp_path / "blocks").iterdir())) == 2


@pytest.mark.parametrize(
    "grid, message",
    [
        (["row=nope"], "row must be one of full attention 1 KV, .*got 'nope'"),
        (["kv-heads=x"], "--grid kv_heads: values must be integers, got 'x'"),
        (["gate=foo"], "'gate' must be one of scalar, vector, uniform, got 'foo'"),
        (["tied=maybe"], "--grid tied: values must be true or false"),
        (["heads=1"], "--grid heads: not swept by a matrix sweep; choose from row, "),
        (["S=5"], "grid point row='W8/S8 8 KV', S=5: S must divide T = 96"),
        (["lr=0"], "grid point row='W8/S8 8 KV', lr=0.0: lr must be > 0"),
        (["steps=1", "steps=2"], "--grid steps given twice"),
        (["row=W4/S4,W4/S4"], "grid parameter 'row' repeats 'W4/S4'"),
    ],
)
def test_bad_matrix_grids_are_one_line_errors(grid, message, capsys):
    rows = [] if grid[0].startswith("row=") else ["row=W8/S8 8 KV"]
    argv = ["sweep", "matrix", "--quick"] + sum(
        (["--grid", g] for g in rows + grid), []
    )
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert re.search(message, err), err


def test_steps_given_twice_is_refused(capsys):
    argv = ["sweep", "matrix", "--steps", "3", "--grid", "steps=2"]
    assert main(argv) == 2
    assert "--grid steps and --steps both given" in capsys.readouterr().err


def test_sweep_of_kind_matrix_points_to_matrix_sweep():
    import inductheory as it

    with pytest.raises(ValueError, match=r"call matrix_sweep\(size, grid\)"):
        it.sweep("matrix", it.Task(L=4, S=4, H=2, N=64), {"row": ["W4/S4"]})


def test_sweep_train_paper_sweeps_the_reference_row_by_default(monkeypatch, capsys):
    """`inductheory sweep train paper` is the matrix sweep with the reference row as its default
    row: its grid reaches `matrix_sweep` as {row: [reference], ...the options' grid}."""
    from inductheory.cli import _sweep as cli_sweep_module

    seen = {}

    def fake(size, grid, **kw):
        seen.update(grid=grid, steps=size.train.steps)
        raise KeyboardInterrupt  # stop before any training or report

    monkeypatch.setattr(cli_sweep_module, "matrix_sweep", fake)
    argv = ["sweep", "train", "paper", "--quick", "--steps", "2"]
    assert main([*argv, "--grid", "kv_heads=1,8"]) == 130
    assert seen == {
        "grid": {"row": ["W8/S8 1 KV (reference)"], "kv_heads": [1, 8]},
        "steps": 2,
    }
    assert main([*argv, "--grid", "row=W4/S4"]) == 130  # a row given: no default added
    assert seen["grid"] == {"row": ["W4/S4"]}
    capsys.readouterr()
