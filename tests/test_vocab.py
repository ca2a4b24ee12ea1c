"""Tokens that repeat: `RetrievalTask(vocab=V)` draws each context token iid uniform over the
symbols 0..V-1; without `vocab` the contexts, their random streams and every record of the task
are what they were before (distinct tokens)."""

import dataclasses
import re

import jax
import numpy as np
import pytest
from scipy import stats

from inductheory.cli import main
from inductheory.experiments._paper_matrix import (
    FULL_SIZE,
    QUICK_SIZE,
    matrix_row,
    row_parameters,
)
from inductheory.experiments._sweep._matrix import check_matrix_grid, point_row
from inductheory.trained import RetrievalTask
from inductheory.trained._transformer_train import sample_retrieval_contexts


def test_distinct_tokens_draw_what_they_drew_before():
    """The draw of key 0 before `vocab` existed (the library at the parent of this change),
    and its definition: the first T of a random permutation of the N tokens per split key."""
    task = RetrievalTask(T=8, N=16, period=4)
    got = np.asarray(sample_retrieval_contexts(jax.random.key(0), task, 3))
    before = [
        [10, 0, 8, 2, 11, 4, 1, 7],
        [0, 3, 9, 5, 14, 1, 8, 4],
        [7, 4, 12, 3, 10, 1, 13, 6],
    ]
    np.testing.assert_array_equal(got, before)
    keys = jax.random.split(jax.random.key(5), 4)
    again = [np.asarray(jax.random.permutation(k, 16)[:8]) for k in keys]
    np.testing.assert_array_equal(
        sample_retrieval_contexts(jax.random.key(5), task, 4), again
    )


def test_tokens_with_replacement_are_iid_uniform_over_the_vocabulary():
    """Chi-square tests on 20,000 contexts of T = 6 over V = 5 symbols: each position's counts
    uniform over the 5 symbols, the pairs (x_0, x_1) and (x_2, x_5) uniform over the 25 pairs
    (independence), and nothing outside 0..V-1. A correct sampler fails one of the 8 tests at
    level 1e-4 with probability below 1e-3."""
    V, T, n = 5, 6, 20_000
    task = RetrievalTask(T=T, N=32, period=3, vocab=V)
    x = np.asarray(sample_retrieval_contexts(jax.random.key(3), task, n))
    assert x.shape == (n, T) and x.dtype == np.int32
    assert x.min() >= 0 and x.max() < V
    for p in range(T):
        counts = np.bincount(x[:, p], minlength=V)
        assert stats.chisquare(counts).pvalue > 1e-4, (p, counts)
    for a, b in ((0, 1), (2, 5)):
        counts = np.bincount(x[:, a] * V + x[:, b], minlength=V * V)
        assert stats.chisquare(counts).pvalue > 1e-4, (a, b, counts)
    # repeats happen at the rate of iid draws: P(x_0 = x_1) = 1/V
    same = np.mean(x[:, 0] == x[:, 1])
    assert abs(same - 1 / V) < 4 * np.sqrt(1 / V * (1 - 1 / V) / n)


def test_a_vocabulary_smaller_than_the_context_is_a_task():
    task = RetrievalTask(T=12, N=8, period=4, vocab=3)
    x = np.asarray(sample_retrieval_contexts(jax.random.key(0), task, 50))
    assert set(np.unique(x)) == {0, 1, 2}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(T=12, N=20, period=12, vocab=1), "vocab must be >= 2, got 1"),
        (dict(T=12, N=20, period=12, vocab=21), "vocab must be <= 20, got 21"),
        (dict(T=12, N=20, period=12, vocab=4.5), "vocab must be an integer"),
        (dict(T=12, N=10, period=12), "N must be >= 12"),
    ],
)
def test_bad_vocabularies_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        RetrievalTask(**kwargs)
    assert "\n" not in str(err.value)


def test_the_distinct_token_records_and_cache_keys_do_not_change():
    """The task's record (the matrix size's JSON, the sweep's spec, every row's cache key)
    names `vocab` only where it is set."""
    assert FULL_SIZE.task.record() == {"T": 96, "N": 128, "period": 24}
    assert FULL_SIZE.to_dict()["task"] == {"T": 96, "N": 128, "period": 24}
    row = matrix_row("W8/S8 8 KV")
    key = row_parameters(row, FULL_SIZE)
    assert key["size"]["task"] == {"T": 96, "N": 128, "period": 24}
    shared = dataclasses.replace(
        FULL_SIZE, task=dataclasses.replace(FULL_SIZE.task, vocab=48)
    )
    assert row_parameters(row, shared)["size"]["task"]["vocab"] == 48


@pytest.mark.parametrize("command", [["matrix"], ["train", "paper"]])
def test_vocab_option_reaches_the_size(command, monkeypatch):
    """`--vocab 48` on `matrix` and `train paper`: the trained size's task draws from 48
    symbols (training stopped at its first row)."""
    from inductheory.cli import _matrix

    seen = {}

    def fake(row, size, cache_dir, **kw):
        seen["task"] = size.task
        raise KeyboardInterrupt

    monkeypatch.setattr(_matrix, "matrix_row_result", fake)
    argv = [*command, "--quick", "--vocab", "48", "--rows", "W4/S4", "--quiet"]
    assert main(argv) == 130
    assert seen["task"] == RetrievalTask(T=96, N=128, period=24, vocab=48)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["matrix", "--vocab", "129"], "vocab must be <= 128, got 129"),
        (["train", "paper", "--vocab", "1"], "argument --vocab: vocab must be >= 2"),
        (
            ["sweep", "matrix", "--vocab", "4", "--grid", "vocab=3"],
            "--grid vocab and --vocab both given",
        ),
        (["sweep", "matrix", "--grid", "vocab=x"], "--grid vocab: values must be"),
        (
            ["sweep", "matrix", "--grid", "row=W4/S4", "--grid", "vocab=200"],
            "grid point row='W4/S4', vocab=200: vocab must be <= 128",
        ),
    ],
)
def test_bad_vocab_options_are_refused_before_work(argv, message, capsys):
    assert main([*argv, "--quick", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert re.search(re.escape(message), err), err


def test_matrix_sweep_grid_of_vocab_sets_each_points_task(monkeypatch, capsys):
    """`sweep matrix --grid vocab=3,48`: the grid reaches `matrix_sweep` typed, and each point's
    size has its own task (the distinct-token size otherwise unchanged)."""
    grid = check_matrix_grid(QUICK_SIZE, {"row": ["W4/S4"], "vocab": [3, 48]})
    assert grid == {"row": ["W4/S4"], "vocab": [3, 48]}
    row, size = point_row(QUICK_SIZE, {"row": "W4/S4", "vocab": 3})
    assert size.task == RetrievalTask(T=96, N=128, period=24, vocab=3)
    assert row == matrix_row("W4/S4") and size.train == QUICK_SIZE.train
    with pytest.raises(ValueError, match="grid values of 'vocab' must be integers"):
        check_matrix_grid(QUICK_SIZE, {"vocab": [2.5]})

    from inductheory.cli import _sweep as cli_sweep_module

    seen = {}

    def fake(size, grid, **kw):
        seen.update(grid=grid, task=size.task)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_sweep_module, "matrix_sweep", fake)
    argv = ["sweep", "matrix", "--quick", "--grid", "row=W4/S4", "--grid", "vocab=3,48"]
    assert main(argv) == 130
    assert seen["grid"] == {"row": ["W4/S4"], "vocab": [3, 48]}
    assert seen["task"] == RetrievalTask(T=96, N=128, period=24)
    capsys.readouterr()


def _fake_result(row, size, cache_dir, **kw):
    """A `RowResult` of 2 seeds without training (every query of phase 7 wrong)."""
    from inductheory.experiments._paper_matrix import RowResult
    from inductheory.trained._transformer_train import PhaseMeasures

    correct = np.full((2, 4, 24), 4)
    correct[:, :, 7] = 0
    measures = PhaseMeasures(
        loss=np.array([1.0, 1.2]),
        correct=correct,
        phase_loss=np.ones((2, 24)),
        queries_per_context=4,
    )
    return RowResult(
        measures=measures,
        initial_loss=np.array([4.8, 4.8]),
        curve_steps=np.arange(3),
        curve=np.ones((2, 3)),
        plateau_change=np.zeros(2),
        wall_s=0.0,
    )


def test_matrix_prints_the_ceilings_beside_each_row_when_tokens_repeat(
    monkeypatch, capsys
):
    """With --vocab the JSON holds each row's ceilings (those of `retrieval_ceilings` for what
    the row can read: every position under full attention, offsets 0..S-2 at W = S), and the
    table their columns; without it the output has neither."""
    import json

    from inductheory.cli import _matrix
    from inductheory.experiments import retrieval_ceilings, retrieval_coverage

    monkeypatch.setattr(_matrix, "matrix_row_result", _fake_result)
    rows = "full attention 8 KV,W8/S8 8 KV"
    argv = ["matrix", "--quick", "--rows", rows, "--quiet"]
    assert main([*argv, "--vocab", "48", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["rows"]
    task = RetrievalTask(T=96, N=128, period=24, vocab=48)
    for name, covered in (
        ("full attention 8 KV", retrieval_coverage(96)),
        ("W8/S8 8 KV", retrieval_coverage(96, 8)),
    ):
        want = retrieval_ceilings(task, covered)
        got = report[name]["ceilings"]
        np.testing.assert_allclose(got["accuracy"], want.accuracy)
        assert got["mean_loss"] == pytest.approx(want.mean_loss)
    assert main([*argv, "--vocab", "48"]) == 0
    out = capsys.readouterr().out
    assert "ceiling mean %" in out and "V = 48" in out
    assert main([*argv, "--json"]) == 0
    assert "ceilings" not in capsys.readouterr().out
