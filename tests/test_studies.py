"""The studies on the paper matrix's task (experiments._studies, figures paper_headline and
open_questions): one cache entry per model whichever way it is asked for, results that keep
their stream and local-path measures through a round trip, and the findings' statistics
against independent computations. No training here (the figures' quick mode trains them)."""

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from inductheory.cli._matrix import _rows, _size, architecture_changes
from inductheory.experiments._measured import MeanInterval
from inductheory.experiments._paper_matrix import (
    FULL_SIZE,
    MECHANISM_ROWS,
    REFERENCE,
    RowMechanisms,
    RowResult,
    changed_row,
    matrix_row,
    row_parameters,
)
from inductheory.experiments._studies import StudyRow
from inductheory.figures._headline_stats import (
    HeadlinePoint,
    analyze,
    pair_finding,
)
from inductheory.figures._matrix_stats import (
    PlateauChange,
    RowSummary,
    SeedLosses,
    stream_summary,
)
from inductheory.trained._stream import StreamMeasures
from inductheory.trained._transformer_train import PhaseMeasures


def _cli_args(**options):
    """The namespace `inductheory matrix` parses, with every option unset but `options`."""
    from inductheory.cli import build_parser

    argv = ["matrix"]
    for k, v in options.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    return build_parser().parse_args(argv)


@pytest.mark.parametrize(
    "study, options",
    [
        (StudyRow("W8/S8 8 KV", vocab=48), dict(rows="W8/S8 8 KV", vocab=48)),
        (
            StudyRow("W8/S8 8 KV", vocab=8, seeds=4),
            dict(rows="W8/S8 8 KV", vocab=8, seeds=4),
        ),
        (
            StudyRow("W8/S8 8 KV", vocab=48, changes=(("local_window", 2),)),
            dict(rows="W8/S8 8 KV", vocab=48, local_window=2),
        ),
        (
            StudyRow("full attention 8 KV", vocab=128, keys=16),
            dict(rows="full attention 8 KV", vocab=128, keys=16),
        ),
        (
            StudyRow("W8/S8 4 KV", overlap_penalty=0.1),
            dict(rows="W8/S8 4 KV", overlap_penalty=0.1),
        ),
    ],
)
def test_a_study_row_and_the_command_line_share_one_cache_entry(study, options):
    args = _cli_args(**options)
    size = _size(args)
    (row,) = _rows(args, size)
    assert row.name == study.matrix_row(FULL_SIZE).name
    assert row_parameters(row, size) == row_parameters(
        study.matrix_row(FULL_SIZE), study.size(FULL_SIZE)
    )


def test_changed_row_names_the_change_and_finds_rows_of_the_matrix():
    row = changed_row(matrix_row("W8/S8 1 KV (reference)"), {"kv_heads": 8}, REFERENCE)
    assert row.name == "W8/S8 8 KV" and row.paper == "w8s8-8kv"
    other = changed_row(matrix_row("W8/S8 8 KV"), {"local_window": 2}, REFERENCE)
    assert other.name == "W8/S8 8 KV with local_window=2" and other.paper is None
    assert other.architecture(REFERENCE).local_window == 2


def test_the_matrix_own_rows_keep_the_matrix_cache_entry():
    study = StudyRow("W8/S8 8 KV")
    assert study.size(FULL_SIZE).to_dict() == FULL_SIZE.to_dict()
    assert "W8/S8 8 KV" in MECHANISM_ROWS  # study_result asks for its mechanisms


def test_keys_need_vocab_and_fewer_keys_than_symbols_on_the_command_line():
    with pytest.raises(ValueError, match="--keys needs --vocab"):
        _size(_cli_args(keys=4))
    with pytest.raises(ValueError, match="keys"):
        _size(_cli_args(vocab=8, keys=8))
    assert architecture_changes(_cli_args(local_window=2)) == {"local_window": 2}


def _stream(seeds=3, period=4, rng=None):
    rng = rng or np.random.default_rng(0)
    queries = rng.integers(5, 20, period)
    return StreamMeasures(
        loss=rng.uniform(0.5, 1.0, seeds),
        local_loss=rng.uniform(0.0, 0.2, seeds),
        retrieval_loss=rng.uniform(1.0, 3.0, seeds),
        retrieval_correct=rng.integers(0, 5, (seeds, period)),
        retrieval_queries=queries,
    )


def _result(seeds=3, period=4, stream=None, mechanisms=None):
    rng = np.random.default_rng(1)
    measures = PhaseMeasures(
        loss=rng.uniform(1, 2, seeds),
        correct=rng.integers(0, 5, (seeds, 6, period)),
        phase_loss=rng.uniform(1, 2, (seeds, period)),
        queries_per_context=4,
    )
    return RowResult(
        measures=measures,
        initial_loss=np.full(seeds, 4.0),
        curve_steps=np.arange(3),
        curve=rng.uniform(1, 2, (seeds, 3)),
        plateau_change=rng.normal(0, 0.01, seeds),
        wall_s=1.0,
        mechanisms=mechanisms,
        stream=stream,
    )


def test_row_results_keep_stream_and_local_path_measures_through_a_round_trip():
    rng = np.random.default_rng(2)
    shape = (3, 2, 2, 8, 1)
    mechanisms = RowMechanisms(
        **{
            f.name: rng.normal(size=shape)
            for f in dataclasses.fields(RowMechanisms)
            if f.default is dataclasses.MISSING
        },
        previous_mass=rng.uniform(size=(3, 1, 8)),
        local_mass=rng.uniform(size=(3, 1, 8)),
        closed_window_accuracy=rng.uniform(size=(3, 4)),
    )
    result = _result(stream=_stream(), mechanisms=mechanisms)
    back = RowResult.from_dict(result.to_dict())
    np.testing.assert_array_equal(
        back.stream.retrieval_correct, result.stream.retrieval_correct
    )
    np.testing.assert_array_equal(
        back.mechanisms.previous_mass, mechanisms.previous_mass
    )
    plain = _result()
    assert (
        "stream" not in plain.to_dict()
    )  # rows without a stream keep their stored form
    assert RowResult.from_dict(plain.to_dict()).stream is None


def test_stream_summary_against_a_direct_computation():
    m = _stream(seeds=5, period=6)
    s = stream_summary(m)
    acc = m.retrieval_correct / m.retrieval_queries  # every phase has queries here
    worst = acc.min(axis=1)
    assert s.retrieval_worst.mean == pytest.approx(worst.mean(), abs=1e-15)
    half = stats.t.ppf(0.975, 4) * worst.std(ddof=1) / math.sqrt(5)
    assert s.retrieval_worst.ci95 == pytest.approx(
        [max(0.0, worst.mean() - half), min(1.0, worst.mean() + half)]
    )
    assert s.loss_per_seed == pytest.approx(m.loss.tolist())


def _point(compressed: bool, acc, vocab=48, boundary=None):
    acc = np.asarray(acc, float)
    mi = MeanInterval(mean=float(acc.mean()), ci95=[0.0, 1.0])
    summary = RowSummary(
        mean_accuracy=mi,
        worst_phase=mi,
        gap=mi,
        boundary_phases=boundary,
        loss=SeedLosses(mean=1.0, per_seed=[1.0] * acc.shape[0]),
        initial_loss=4.0,
        phase_accuracy=acc.mean(axis=0).tolist(),
        phase_accuracy_per_seed=acc.tolist(),
        worst_phase_per_seed=acc.min(axis=1).tolist(),
        plateau_change=PlateauChange(mean=0.0, max_abs=0.01 if compressed else 0.02),
        curve_steps=[0],
        curve=[1.0],
        wall_s=1.0,
    )
    return HeadlinePoint(
        row="W8/S8 8 KV" if compressed else "full attention 8 KV",
        compressed=compressed,
        kv_heads=8,
        vocab=vocab,
        seeds=acc.shape[0],
        summary=summary,
    )


def test_pair_findings_against_scipy_welch_and_the_regime_rule():
    rng = np.random.default_rng(3)
    full = rng.uniform(0.40, 0.50, (6, 4))
    compressed = rng.uniform(0.55, 0.62, (5, 4))
    compressed[:, 3] = rng.uniform(0.0, 0.03, 5)  # the boundary phase collapses
    f = pair_finding(_point(False, full), _point(True, compressed, boundary=[3]))
    test = stats.ttest_ind(full.mean(axis=1), compressed.mean(axis=1), equal_var=False)
    low, high = test.confidence_interval(0.95)
    assert f.mean_deficit.ci95 == pytest.approx([low, high], rel=1e-9)
    covered = compressed[:, :3].mean(axis=1)
    assert f.covered_minus_baseline.mean == pytest.approx(
        covered.mean() - full.mean(axis=1).mean()
    )
    assert f.guess == pytest.approx(1 / 48)
    # deficit under 5 points, worst phase far below full attention's: the paper's regime
    assert f.regime == (100 * f.mean_deficit.mean <= 5) and f.regime
    assert f.plateau == 0.02
    uniform = pair_finding(_point(False, full), _point(True, full[:5], boundary=[3]))
    assert not uniform.regime  # no phase collapses
    analysis = analyze([_point(False, full), _point(True, compressed, boundary=[3])])
    assert len(analysis.pairs) == 1 and "V=48" in analysis.text


def test_open_questions_rows_count_covered_phases_and_the_path_by_hand():
    from inductheory.figures.open_questions import coordination_point, local_row

    rng = np.random.default_rng(4)
    seeds, S, period = 3, 8, 24
    # (seeds, layers, branches, kv, channels): key gates of 2 layers x 4 KV heads
    peak = rng.integers(0, S, (seeds, 2, 2, 4, 1))
    static = rng.uniform(1.0, 3.0, (seeds, 2, 2, 4, 1))
    peak[0, :, 0] = 0  # seed 0: every key gate on offset 0, the value gates on 0 too
    peak[0, :, 1] = 0
    static[0] = 1.0
    fields = {
        f.name: np.zeros((seeds, 1))
        for f in dataclasses.fields(RowMechanisms)
        if f.default is dataclasses.MISSING
    }
    fields.update(peak=peak, static=static, mass=static, avg=static)
    # knockouts (seeds, layers, q_heads, period); rotations by -1 and +1
    knockout = rng.uniform(size=(seeds, 2, 8, period))
    rotated = rng.uniform(size=(seeds, 2, period))
    fields.update(
        knockout_accuracy=knockout,
        base_accuracy=rng.uniform(size=(seeds, period)),
        rotations=np.array([-1, 1]),
        rotated_accuracy=rotated,
    )
    mechanisms = RowMechanisms(
        **fields,
        previous_mass=rng.uniform(size=(seeds, 1, 8)),
        local_mass=rng.uniform(size=(seeds, 1, 8)),
        closed_window_accuracy=rng.uniform(size=(seeds, period)),
    )
    result = _result(seeds=seeds, period=period, mechanisms=mechanisms)
    study = StudyRow("W8/S8 4 KV", overlap_penalty=1.0)
    point = coordination_point(study, FULL_SIZE, result)
    by_hand = [
        len(
            {
                int(peak[s, layer, 0, kv, 0])
                for layer in range(2)
                for kv in range(4)
                if static[s, layer, 0, kv, 0] <= 2.0
            }
        )
        for s in range(seeds)
    ]
    assert point.covered_per_seed == by_hand and point.covered_per_seed[0] == 1
    assert point.overlap_penalty == 1.0 and point.kv_heads == 4
    local = local_row(
        StudyRow("W8/S8 8 KV", changes=(("local_window", 2),)), FULL_SIZE, result
    )
    assert local.local_window == 2
    assert local.previous_mass_per_seed == pytest.approx(
        mechanisms.previous_mass[:, 0].max(axis=-1)
    )
    closed = mechanisms.closed_window_accuracy[:, [7, 15, 23]].mean(axis=1)
    assert local.closed_boundary_per_seed == pytest.approx(closed)
    # key = value = 0 on a concentrated gate answers phase S - 1 through the path
    assert local.boundary_gate_per_seed[0]
    assert [(g.layer, g.kv_head) for g in local.path_gates_per_seed[0]] == [
        (layer, kv) for layer in range(2) for kv in range(4)
    ]
    assert all(g.key_peak == g.value_peak == 0 for g in local.path_gates_per_seed[0])
    boundary = [7, 15, 23]
    # the most damaging single head of the first and of the last layer
    for s in range(seeds):
        by_head = [
            [knockout[s, layer, q, boundary].mean() for q in range(8)]
            for layer in (0, 1)
        ]
        assert local.knocked_path_boundary_per_seed[s] == pytest.approx(min(by_head[0]))
        assert local.knocked_reader_boundary_per_seed[s] == pytest.approx(
            min(by_head[1])
        )
        assert local.path_heads_per_seed[s] == sum(
            v >= 0.5 for v in mechanisms.previous_mass[s, 0]
        )
        assert local.rotated_boundary_per_seed[s] == pytest.approx(
            rotated[s, 1, boundary].mean()
        )
    # only a boundary answered takes the loss under the within-window reader's: at most the
    # boundary's eighth of the queries guessing among the N = 128 tokens, and more than zero
    assert 0 < local.no_boundary_loss <= math.log(128) / S
    assert local.crossed_step_per_seed == [None] * seeds  # curves of 1-2 nats
    dipping = dataclasses.replace(
        result, curve=np.array([[2.0, 1.0, 0.9]] * 2 + [[2, 0.5, 0.3]])
    )
    crossed = local_row(
        StudyRow("W8/S8 8 KV", changes=(("local_window", 2),)), FULL_SIZE, dipping
    ).crossed_step_per_seed
    assert crossed == [None, None, 1]
    back = type(local).from_dict(local.to_dict())
    assert back.path_gates_per_seed == local.path_gates_per_seed


def test_path_seeds_split_the_window_rows_by_the_answer_rule():
    from inductheory.experiments._measured import MeanInterval
    from inductheory.figures._open_questions import (
        LocalRow,
        boundary_answers,
        path_seeds,
    )

    acc = np.full((3, 24), 0.9)
    acc[:, [7, 15, 23]] = [[0.9], [0.01], [0.5]]  # seeds 0, 2 answer (0.5 >= 0.45)
    answers = boundary_answers(acc, 8)
    mi = MeanInterval(mean=0.5, ci95=[0.0, 1.0])
    row = LocalRow(
        local_window=2,
        seeds=3,
        steps=5600,
        boundary=answers,
        mean=mi,
        worst_within=mi,
        previous_mass_per_seed=[0.9, 0.1, 0.6],
        closed_boundary_per_seed=[0.01, 0.01, 0.02],
        path_heads_per_seed=[3, 0, 1],
        knocked_path_boundary_per_seed=[0.5, 0.01, 0.3],
        knocked_reader_boundary_per_seed=[0.1, 0.01, 0.0],
        crossed_step_per_seed=[2000, None, 3000],
    )
    plain = dataclasses.replace(row, local_window=0, previous_mass_per_seed=None)
    seeds = path_seeds([plain, row])
    assert answers.answered_per_seed() == [True, False, True]
    assert seeds.answered["previous"] == [0.9, 0.6]
    assert seeds.answered["crossed"] == [2000, 3000]
    assert seeds.answered["heads"] == [3, 1] and seeds.answered["reader"] == [0.1, 0.0]
    assert seeds.others["previous"] == [0.1] and seeds.others["path"] == [0.01]


def test_seed_overlap_against_counting_the_draws():
    from inductheory.experiments._measured import MeanInterval
    from inductheory.figures._open_questions import LocalRow, boundary_answers
    from inductheory.figures.open_questions import seed_overlap

    def row(w, answering, vocab=None):
        acc = np.full((8, 24), 0.9)
        acc[:, [7, 15, 23]] = 0.01
        acc[answering] = 0.9  # these seeds answer the boundary
        mi = MeanInterval(mean=0.5, ci95=[0.0, 1.0])
        b = boundary_answers(acc, 8)
        return LocalRow(
            vocab=vocab,
            local_window=w,
            seeds=8,
            steps=5600,
            boundary=b,
            mean=mi,
            worst_within=mi,
        )

    rows = [row(1, [0, 2]), row(2, [0, 2]), row(8, [0, 7]), row(2, [0, 2], vocab=48)]
    one, two, shared, chance, pairs = seed_overlap(rows)
    # both draws of 2 of 8 seeds the same pair: 1 of C(8, 2) = 28 equally likely pairs
    assert (one.local_window, two.local_window, shared) == (1, 2, [0, 2])
    assert chance == pytest.approx(1 / math.comb(8, 2), rel=1e-12) and pairs == 3
    # one shared seed of two draws of 2: 1 - C(6, 2) / C(8, 2) of the second draw meet it
    _, _, shared, chance, _ = seed_overlap([rows[1], rows[2]])
    assert shared == [0]
    assert chance == pytest.approx(1 - math.comb(6, 2) / math.comb(8, 2), rel=1e-12)
    assert seed_overlap([row(1, [1]), row(2, [3])]) is None
