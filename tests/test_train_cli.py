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
