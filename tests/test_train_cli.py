"""`inductheory train` end to end: the report against `train` called in-process with the same
settings, the files of --out, and bad combinations refused in one line naming the option."""

import json

import numpy as np
import pytest

import inductheory as it
from inductheory.cli import main
from inductheory.trained import ModelConfig, TrainConfig, train

TASK = dict(L=4, S=3, H=2, N=48, beta=4.0)
TINY = dict(steps=6, M=48, eval_contexts=8, log_points=3, chunk=4, lr=0.5)
ARGS = [
    "train",
    *("--L", "4", "--S", "3", "--H", "2", "--N", "48", "--beta", "4"),
    *("--steps", "6", "--M", "48", "--eval-contexts", "8", "--log-points", "3"),
    *("--chunk", "4", "--lr", "0.5", "--seeds", "2", "--quiet"),
]


@pytest.fixture(scope="module")
def library_run():
    return train(it.Task(**TASK), ModelConfig(), TrainConfig(**TINY), 2)


def test_json_report_matches_the_library_run(library_run, tmp_path, capsys):
    rc = main([*ARGS, "--json", "--out", str(tmp_path)])
    assert rc == 0
    report = json.loads(capsys.readouterr().out)
    assert report["task"]["N"] == 48 and report["seeds"] == 2 and report["seed"] == 0
    assert report["train_config"]["lr"] == 0.5 and report["train_config"]["steps"] == 6
    assert report["model_config"]["embeddings"] == "exact" and report["M"] == 48
    m = library_run.measures
    assert len(report["per_seed"]) == 2
    for i, entry in enumerate(report["per_seed"]):
        assert entry["seed_index"] == i
        assert entry["key_offsets"] == np.asarray(m.key_offsets[i]).tolist()
        assert entry["value_offsets"] == np.asarray(m.value_offsets[i]).tolist()
        np.testing.assert_allclose(entry["phase_accuracy"], m.phase_accuracy[i])
        np.testing.assert_allclose(entry["held_out_loss"], m.loss[i], rtol=1e-12)
        assert len(entry["phase_accuracy"]) == TASK["S"] - 1  # queries "within"
    # the summary, recounted here from the per-seed entries of the report
    s, seeds = report["summary"], report["per_seed"]
    follows = sum(
        all(v == k + 1 for k, v in zip(e["key_offsets"], e["value_offsets"]))
        for e in seeds
    )
    distinct = sum(len(set(e["key_offsets"])) == 2 for e in seeds)
    assert s["seeds"] == 2 and s["value_follows_key_seeds"] == follows
    assert s["distinct_seeds"] == distinct and s["distinct_baseline"] == 0.5
    low, high = s["value_follows_key_interval"]
    assert 0 <= low <= follows / 2 <= high <= 1
    accuracy = np.array([e["phase_accuracy"] for e in seeds])
    np.testing.assert_allclose(s["phase_accuracy_mean"], accuracy.mean(axis=0))
    np.testing.assert_allclose(
        s["phase_gap_mean"], np.mean(accuracy.max(axis=1) - accuracy.min(axis=1))
    )
    key_mass = [x for e in seeds for x in e["argmax_key_mass"]]
    np.testing.assert_allclose(s["argmax_mass_mean"][0], np.mean(key_mass))
    np.testing.assert_allclose(
        s["held_out_loss_mean"], np.mean([e["held_out_loss"] for e in seeds])
    )
    assert s["boundary_accuracy_mean"] is None
    # --out holds train's own files and the report
    for name in ("train.json", "statistics.npz", "models.eqx", "report.json"):
        assert (tmp_path / name).exists()
    assert json.loads((tmp_path / "report.json").read_text()) == report


def test_text_table(capsys):
    assert main(ARGS[:-3] + ["--seeds", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "key r" in out and "value = key + 1: " in out and "/1 seeds" in out


@pytest.mark.parametrize(
    "extra, flag",
    [
        (["--embeddings", "learned"], "--d"),
        (["--maps", "learned"], "--maps"),
        (["--unembedding", "learned"], "--unembedding"),
        (["--eps", "0.3"], "--eps"),
        (["--embeddings", "approximate"], "--embeddings approximate"),
        (["--d", "8"], "--d"),
        (["--batch", "8"], "--M"),  # ARGS give --M: only --batch full uses it
        (["--gates", "uniform", "--bias"], "--bias"),
        (["--optimizer", "no_such_optimizer"], "--optimizer"),
        (["--batch", "0"], "--batch"),
        (["--layers", "3"], "--layers"),
        (["--weight-decay", "-1"], "--weight-decay"),
    ],
)
def test_bad_combinations_are_one_line_naming_the_option(extra, flag, capsys):
    assert main([*ARGS, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("inductheory train")
    assert flag in err


def test_population_batch_without_a_closed_form(capsys):
    i = ARGS.index("--M")
    args = ARGS[:i] + ARGS[i + 2 :]
    assert main([*args, "--batch", "population"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--batch population" in err


def _tiny_train(task=None, **changes):
    config = TrainConfig(**{**TINY, **changes})
    return train(it.Task(**TASK) if task is None else task, ModelConfig(), config, 2)


def test_train_sweep_equals_separate_train_calls():
    config = (ModelConfig(), TrainConfig(**TINY))
    ds = it.sweep("train", it.Task(**TASK), {"lr": [0.25, 0.5]}, config=config, seeds=2)
    assert ds.attrs["kind"] == "train" and ds.attrs["seed"] == 0
    for lr in (0.25, 0.5):
        run, point = _tiny_train(lr=lr), ds.sel(lr=lr)
        m = run.measures
        np.testing.assert_array_equal(point.key_offsets, m.key_offsets)
        np.testing.assert_array_equal(point.value_offsets, m.value_offsets)
        np.testing.assert_allclose(point.phase_accuracy, m.phase_accuracy)
        np.testing.assert_allclose(point.argmax_mass, m.argmax_mass, rtol=1e-12)
        np.testing.assert_allclose(point.held_out_loss, m.loss, rtol=1e-12)
        np.testing.assert_allclose(
            point.final_loss, run.statistics.loss[:, -1], rtol=1e-12
        )
        follows = np.mean(
            np.all(m.value_offsets == np.asarray(m.key_offsets) + 1, axis=1)
        )
        assert float(point.value_is_key_plus_one_fraction) == follows
        distinct = np.mean(m.key_offsets[:, 0] != m.key_offsets[:, 1])
        assert float(point.distinct_fraction) == distinct


def test_sweep_train_cli_points_equal_train_calls(tmp_path, capsys):
    i = ARGS.index("--seeds")  # the sweep's own --seeds, then its grid
    options = [*ARGS[1:i], *ARGS[i + 2 :]]
    argv = ["sweep", "train", *options, "--seeds", "2", "--grid", "beta=2,4"]
    assert main([*argv, "--json", "--out", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "train" and report["grid"] == {"beta": [2.0, 4.0]}
    for point in report["points"]:
        run = _tiny_train(it.Task(**{**TASK, "beta": point["beta"]}))
        assert point["key_offsets"] == np.asarray(run.measures.key_offsets).tolist()
        assert point["value_offsets"] == np.asarray(run.measures.value_offsets).tolist()
        np.testing.assert_allclose(point["phase_accuracy"], run.measures.phase_accuracy)
        np.testing.assert_allclose(
            point["final_loss"], run.statistics.loss[:, -1], rtol=1e-12
        )
    assert (tmp_path / "sweep.nc").exists() and (tmp_path / "points.json").exists()
    # the same sweep again resumes from its stored blocks
    assert main([*argv, "--json", "--out", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["points"] == report["points"]


def test_sweep_train_refuses_grid_values_and_options(capsys):
    task = it.Task(**TASK)
    with pytest.raises(ValueError, match="lr"):
        it.sweep("train", task, {"lr": [0.5, -1.0]}, config=TrainConfig(**TINY))
    with pytest.raises(ValueError, match="not swept by a train sweep"):
        it.sweep("train", task, {"delta": [0.1]}, config=TrainConfig(**TINY))
    with pytest.raises(ValueError, match="grid point N=50: balanced samples"):
        it.sweep("train", task, {"N": [48, 50]}, config=TrainConfig(**TINY))
    with pytest.raises(ValueError, match="config must be a TrainConfig"):
        it.sweep("train", task, {"lr": [0.5]}, config=it.FlowConfig())
    assert main(["sweep", "train", "--grid", "lr=0.1", "--maps", "learned"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--maps" in err
