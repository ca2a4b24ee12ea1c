"""`analyze_gates`, `load_gate_tensors` and `inductheory gates FILE` on small synthetic files.

The phase a hard selection answers is checked against the library's exact per-phase accuracy of
the same hard selection (`phase_accuracy`, all query phases), the effective offsets against
exp(entropy) computed here in numpy.
"""

import json
import warnings

import numpy as np
import pytest
from safetensors.numpy import save_file
from scipy.special import softmax

import inductheory as it
from inductheory.cli import main
from inductheory.experiments import load_gate_tensors, slot_phases
from inductheory.model import SharedGates


def _task(S, W, H=1):
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", it.TheoryAssumptionWarning
        )  # W > S, all queries
        return it.Task(
            L=max(4, W // S + 2), S=S, H=H, N=4096, beta=4.0, W=W, queries="all"
        )


def _answered(task, gates) -> set:
    return set(np.flatnonzero(np.asarray(it.phase_accuracy(task, gates)) > 0.5))


def _one_hot(W, slots):
    return np.eye(W)[np.asarray(slots)]


def _entropy_number(p):
    p = np.asarray(p, float)
    terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return np.exp(terms.sum(-1))


@pytest.mark.parametrize("S,W", [(4, 4), (4, 6), (4, 8), (3, 5)])
def test_hard_key_slot_answers_the_phase_that_phase_accuracy_says(S, W):
    task = _task(S, W)
    analysis = it.analyze_gates(_one_hot(W, range(W)), probabilities=True, stride=S)
    for r, head in enumerate(analysis.heads):
        assert head.argmax_slot == r and head.effective_offsets == 1.0 and head.sharp
        # a key at the last slot has its value outside the window: no hard selection there
        truth = _answered(task, it.hard_selection(W, [r])) if r <= W - 2 else set()
        assert ({head.phase} - {None}) == truth, (S, W, r)


@pytest.mark.parametrize("S,W", [(4, 5), (3, 6)])
def test_value_and_tied_gates_answer_what_phase_accuracy_says(S, W):
    task = _task(S, W)
    value = it.analyze_gates(
        _one_hot(W, range(W)), probabilities=True, stride=S, branch="value"
    )
    tied = it.analyze_gates(
        _one_hot(W, range(W)), probabilities=True, stride=S, branch="tied"
    )
    for r in range(W):
        # a value at slot r reads the key at r - 1
        truth = _answered(task, it.hard_selection(W, [r - 1])) if r >= 1 else set()
        assert ({value.heads[r].phase} - {None}) == truth
        e = np.eye(W)[[r]]
        assert _answered(task, SharedGates(key=e, value=e)) == set()
        assert tied.heads[r].phase is None
    assert tied.covered_phases == () and tied.uncovered_phases == tuple(range(S))


def test_coverage_is_the_union_that_phase_accuracy_gives_for_the_sharp_heads():
    S, W = 4, 6
    slots = [4, 1, 1, 5]  # phases 0, 1, 1 and none (value outside the window)
    p = _one_hot(W, slots)
    p[1] = (
        0.6 * p[1] + 0.4 / W
    )  # head 1: peak 0.667, effective offsets > 1.5: not sharp
    a = it.analyze_gates(p, probabilities=True, stride=S)
    assert [h.sharp for h in a.heads] == [True, False, True, True]
    sharp_slots = [s for s, h in zip(slots, a.heads) if h.sharp and s <= W - 2]
    truth = _answered(
        _task(S, W, H=len(sharp_slots)), it.hard_selection(W, sharp_slots)
    )
    assert set(a.covered_phases) == truth == {0, 1}
    assert a.uncovered_phases == (2, 3) and a.heads_per_phase == (1, 1, 0, 0)
    assert a.boundary_phase == 3


def test_uniform_gates_have_effective_offsets_w_and_cover_nothing():
    for W in (2, 5, 8):
        a = it.analyze_gates(np.zeros((3, W)))  # equal logits: uniform
        np.testing.assert_allclose(a.per_head("effective_offsets"), W, rtol=1e-12)
        assert not any(h.sharp for h in a.heads) and a.covered_phases == ()


def test_effective_offsets_and_peak_against_numpy():
    rng = np.random.default_rng(0)
    logits = 3 * rng.normal(size=(5, 7))
    a = it.analyze_gates(logits, stride=3)
    p = softmax(logits, axis=-1)
    np.testing.assert_allclose(a.per_head("effective_offsets"), _entropy_number(p))
    np.testing.assert_allclose(a.per_head("peak"), p.max(-1))
    assert a.per_head("argmax_slot").tolist() == p.argmax(-1).tolist()
    assert a.per_head("sharp").tolist() == (_entropy_number(p) <= 1.5).tolist()


def test_heads_and_coverage_are_records_that_round_trip_through_json():
    from inductheory.experiments._gate_files import GateCoverage, GateHead

    logits = np.zeros((2, 3, 8))
    logits[..., 1] = 20.0
    a = it.analyze_gates(logits, stride=4)
    for h in a.heads:
        back = GateHead.from_dict(json.loads(json.dumps(h.to_dict())))
        assert back == h and isinstance(back.index, tuple)
    coverage = GateCoverage.from_dict(json.loads(json.dumps(a.to_dict()["coverage"])))
    assert coverage == a.coverage and coverage.covered_phases == list(a.covered_phases)


def test_logits_and_probabilities_give_the_same_analysis():
    rng = np.random.default_rng(1)
    logits = 5 * rng.normal(size=(2, 3, 8))
    logits[0, 1, 2] = 900.0  # log-sum-exp: no overflow
    from_logits = it.analyze_gates(logits, stride=4)
    from_probs = it.analyze_gates(softmax(logits, -1), probabilities=True, stride=4)
    for field in ("argmax_slot", "phase", "sharp"):
        assert (
            from_logits.per_head(field).tolist() == from_probs.per_head(field).tolist()
        )
    for field in ("effective_offsets", "peak"):
        np.testing.assert_allclose(
            from_logits.per_head(field), from_probs.per_head(field), rtol=1e-12
        )
    assert from_logits.heads[1].effective_offsets == pytest.approx(1.0)
    assert from_logits.covered_phases == from_probs.covered_phases


def test_leading_axes_are_kept_in_order():
    W = 8
    p = np.zeros((2, 3, W))
    slots = np.array([[0, 3, 6], [1, 2, 5]])
    np.put_along_axis(p, slots[..., None], 1.0, axis=-1)
    a = it.analyze_gates(p, probabilities=True, stride=4)
    assert a.shapes == {None: (2, 3)}
    assert a.per_head("argmax_slot").tolist() == slots.tolist()
    assert [h.index for h in a.heads] == [(i, j) for i in range(2) for j in range(3)]
    assert a.per_head("phase").tolist() == [[0, 3, 2], [1, 2, 1]]


def test_a_window_axis_gives_static_and_average_offsets():
    # layer 0: the same slot in every window (static); layer 1: slots 2, 3, 3 (input-dependent)
    W = 4
    p = np.zeros((2, 3, W))
    p[0, :, 1] = 1.0
    p[1] = np.eye(W)[[2, 3, 3]]
    a = it.analyze_gates(p, probabilities=True, window_axis=1)
    assert a.shapes == {None: (2,)}
    mean = p.mean(axis=1)
    np.testing.assert_allclose(a.per_head("effective_offsets"), _entropy_number(mean))
    np.testing.assert_allclose(a.per_head("average_offsets"), [1.0, 1.0])
    assert a.per_head("argmax_slot").tolist() == [1, 3]  # of the window-mean gate
    np.testing.assert_allclose(a.per_head("peak"), [1.0, 2 / 3])
    assert [h.sharp for h in a.heads] == [True, False]  # exp(H(1/3, 2/3)) = 1.89
    moved = it.analyze_gates(np.moveaxis(p, 1, 0), probabilities=True, window_axis=0)
    assert moved.per_head("argmax_slot").tolist() == [1, 3]
    with pytest.raises(ValueError, match="window_axis must name a leading axis"):
        it.analyze_gates(p, probabilities=True, window_axis=2)


def test_slot_phases_with_overlapping_windows():
    assert slot_phases(4, 4) == (0, 1, 2, None)
    assert slot_phases(6, 4) == (0, 1, 2, 3, 0, None)
    assert slot_phases(6, 4, "value") == (None, 0, 1, 2, 3, 0)


def _write(path, tensors):
    if path.suffix == ".npz":
        np.savez(path, **tensors)
    else:
        save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, path)
    return path


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_files_and_globs(tmp_path, suffix):
    key = np.full((2, 8), -20.0)
    key[0, 1] = key[1, 6] = 20.0
    path = _write(
        tmp_path / f"gates{suffix}",
        {
            "layer0.key": key,
            "layer1.key": key[::-1].copy(),
            "layer0.value": np.zeros((2, 8)),
        },
    )
    assert set(load_gate_tensors(path)) == {"layer0.key", "layer1.key", "layer0.value"}
    chosen = load_gate_tensors(path, "layer?.key")
    assert set(chosen) == {"layer0.key", "layer1.key"}
    assert list(load_gate_tensors(path, "layer0.value")) == ["layer0.value"]
    a = it.analyze_gates(chosen, stride=4)
    assert a.per_head("argmax_slot", "layer0.key").tolist() == [1, 6]
    assert a.per_head("argmax_slot", "layer1.key").tolist() == [6, 1]
    assert a.covered_phases == (1, 2) and a.heads_per_phase == (0, 2, 2, 0)


def _bad_files(tmp_path):
    good = np.zeros((2, 4))
    nan, inf = good.copy(), good.copy()
    nan[1, 2], inf[0, 0] = np.nan, np.inf
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"not a zip archive")
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x08\x00")
    np.savez(tmp_path / "objects.npz", g=np.array([None, 1.0], dtype=object))
    (tmp_path / "gates.pt").write_bytes(b"")
    return [
        (_write(tmp_path / "scalar.npz", {"g": np.float64(3.0)}), None, "is a scalar"),
        (_write(tmp_path / "nan.npz", {"g": nan}), None, "must be finite"),
        (_write(tmp_path / "inf.safetensors", {"g": inf}), None, "must be finite"),
        (_write(tmp_path / "one.npz", {"g": np.zeros((3, 1))}), None, "at least 2"),
        (
            _write(tmp_path / "named.npz", {"a": good, "b": good}),
            "c*",
            "available: a, b",
        ),
        (tmp_path / "gates.pt", None, "unknown gate file type"),
        (tmp_path / "absent.npz", None, "no such file"),
        (corrupt, None, "cannot read it as .npz"),
        (broken, None, "cannot read it as .safetensors"),
        (tmp_path / "objects.npz", None, "cannot read it as .npz"),
    ]


def test_bad_files_are_one_line_errors_naming_file_and_constraint(tmp_path):
    for path, tensor, message in _bad_files(tmp_path):
        with pytest.raises(ValueError) as err:
            load_gate_tensors(path, tensor)
        text = str(err.value)
        assert message in text and "\n" not in text and text.startswith(str(path)), text


def test_bad_values_are_one_line_errors():
    cases = [
        (dict(gates=np.full((2, 4), 0.3), probabilities=True), "sum to 1"),
        (dict(gates=np.array([[1.2, -0.2]]), probabilities=True), "must be >= 0"),
        (dict(gates=np.zeros((2, 4)), stride=5), "stride must be an integer in 2..W"),
        (dict(gates=np.zeros((2, 4)), branch="both"), "branch must be one of"),
        (dict(gates=np.zeros((2, 4)), sharp_below=0.5), "sharp_below must be"),
        (dict(gates={"a": np.zeros(4), "b": np.zeros(5)}), "same number of window"),
        (dict(gates=np.zeros((0, 4))), "has no heads"),
        (dict(gates=np.array(["a", "b"])), "must hold real numbers"),
        (dict(gates={}), "at least one tensor"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message) as err:
            it.analyze_gates(**kwargs)
        assert "\n" not in str(err.value)


def _cli(capsys, *argv):
    code = main(["gates", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_json_reports_every_head(tmp_path, capsys):
    logits = np.full((2, 3, 8), -30.0)
    logits[0, 0, 1] = logits[0, 1, 3] = logits[1, 2, 5] = 30.0
    path = _write(tmp_path / "model.safetensors", {"blocks.gate_bias": logits})
    code, out, err = _cli(capsys, path, "--stride", "4", "--json")
    assert code == 0, err
    data = json.loads(out)
    heads = data["heads"]
    assert [h["index"] for h in heads] == [[i, j] for i in range(2) for j in range(3)]
    assert [h["argmax_slot"] for h in heads] == [1, 3, 0, 0, 0, 5]
    np.testing.assert_allclose(
        [h["effective_offsets"] for h in heads],
        _entropy_number(softmax(logits, -1)).ravel(),
    )
    assert [h["phase"] for h in heads if h["sharp"]] == [1, 3, 1]
    assert data["coverage"]["covered_phases"] == [1, 3]
    assert data["coverage"]["uncovered_phases"] == [0, 2]
    assert data["tensors"] == [{"name": "blocks.gate_bias", "shape": [2, 3]}]
    assert data["window"] == 8 and data["stride"] == 4


def test_cli_table_and_probabilities(tmp_path, capsys):
    path = _write(tmp_path / "p.npz", {"g": np.eye(4)[[0, 2]]})
    code, out, _ = _cli(capsys, path, "--probabilities")
    assert code == 0
    assert "covered phases: 0 2; uncovered: 1 3" in out
    assert "boundary phase 3: not covered (no gate answers it with W = S)" in out


def test_cli_bad_input_exits_2_with_one_line(tmp_path, capsys):
    path = _write(tmp_path / "g.npz", {"g": np.zeros((2, 4))})
    for argv in (
        [path, "--tensor", "missing"],
        [tmp_path / "nothing.safetensors"],
        [path, "--stride", "9"],
        [path, "--probabilities"],
    ):
        code, out, err = _cli(capsys, *argv)
        assert code == 2 and out == "", argv
        assert err.startswith("inductheory gates: error: ") and err.count("\n") == 1


def test_npy_file_is_one_tensor_named_by_its_stem(tmp_path):
    path = tmp_path / "bias.npy"
    np.save(path, np.eye(5)[[3]])
    tensors = load_gate_tensors(path)
    assert list(tensors) == ["bias"] and tensors["bias"].dtype == np.float64
    a = it.analyze_gates(tensors, probabilities=True, stride=3)
    assert a.heads[0].argmax_slot == 3 and a.heads[0].phase == 0  # 3 mod 3, value at 4
    with pytest.raises(ValueError, match="available: bias"):
        load_gate_tensors(path, "other")
