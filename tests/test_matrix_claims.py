"""The matrix's and the mitigations' claims say no more than their data: intervals that contain
their estimates (checked against scipy and for coverage on a simulated case), the ordering's tau
under seed resampling (against a direct loop), coverage over the within-window phases, and the
paper's stride-2 number named with its model wherever it appears."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from inductheory.experiments import _paper_matrix as pm
from inductheory.experiments._mitigations import PAPER
from inductheory.figures import mitigations as mit, paper_matrix as fig
from inductheory.figures._stats import (
    resampled_kendall_tau,
    t_interval,
    welch_interval,
)

ROOT = Path(__file__).resolve().parents[1]
SIZES = [("figures", pm.FULL_SIZE), ("figures/quick", pm.QUICK_SIZE)]


def stored(folder: str, name: str) -> dict:
    return json.loads((ROOT / folder / "data" / f"{name}.json").read_text())


def test_t_interval_is_scipys_and_contains_its_estimate():
    rng = np.random.default_rng(0)
    for n in (2, 3, 8, 30):
        v = rng.gamma(0.5, 0.01, n)
        got = t_interval(v, support=(-np.inf, np.inf))
        want = stats.ttest_1samp(v, 0.0).confidence_interval(0.95)
        assert got.mean == pytest.approx(v.mean())
        np.testing.assert_allclose(got.ci95, [want.low, want.high], rtol=1e-12)
        clipped = t_interval(v)  # accuracies: clipped to [0, 1], still around the mean
        assert 0 <= clipped.ci95[0] <= clipped.mean <= clipped.ci95[1] <= 1
    assert t_interval([0.3, 0.3, 0.3]).ci95 == [0.3, 0.3]
    # one seed: no spread to measure, the interval claims nothing (the whole support)
    assert t_interval([0.5]).ci95 == [0.0, 1.0] and t_interval([0.5]).mean == 0.5
    with pytest.raises(ValueError, match="t_interval: need >= 1 finite values, got 0"):
        t_interval([])
    with pytest.raises(ValueError, match="t_interval: need >= 1 finite values"):
        t_interval([0.5, np.nan])


def test_welch_interval_is_scipys():
    rng = np.random.default_rng(1)
    for na, nb in ((8, 8), (3, 5)):
        a, b = rng.normal(0.9, 0.05, na), rng.normal(0.8, 0.2, nb)
        got = welch_interval(a, b)
        want = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
        assert got.mean == pytest.approx(a.mean() - b.mean())
        np.testing.assert_allclose(got.ci95, [want.low, want.high], rtol=1e-10)
    assert welch_interval([1.0, 1.0], [0.5, 0.5]).ci95 == [0.5, 0.5]


def test_worst_phase_interval_covers_the_expected_worst_phase_of_a_simulated_matrix():
    """Seeds of a simulated model, 24 phases, each phase's accuracy drawn per seed near zero and
    measured on 1024 queries (as the matrix's reference row): the t interval over 8 seeds of
    each seed's measured worst phase covers the expected measured worst phase (200,000 seeds by
    Monte Carlo) in about 95% of 400 matrices, and always contains its own estimate."""
    rng = np.random.default_rng(2)
    queries, period, seeds = 1024, 24, 8

    def worst(n):
        p = rng.uniform(0.001, 0.008, (n, period))
        return (rng.binomial(queries, p) / queries).min(axis=1)

    truth = worst(200_000).mean()
    covered = 0
    for _ in range(400):
        m = t_interval(worst(seeds))
        assert m.ci95[0] <= m.mean <= m.ci95[1]
        covered += m.ci95[0] <= truth <= m.ci95[1]
    # 95% nominal: 380 expected (sd 4.4); outside [360, 395] fails with p < 1e-4
    assert 360 <= covered <= 395, covered


def test_resampled_tau_is_a_direct_loop_over_seed_resamples():
    """Each resample draws every row's seeds with replacement, row after row, from one
    generator; tau-a of the resampled means (scipy's tau without ties) against the reference."""
    rng = np.random.default_rng(3)
    groups = [
        rng.normal(mu, 0.1, n) for mu, n in ((0.9, 8), (0.7, 8), (0.6, 5), (0.1, 8))
    ]
    reference = [75.3, 39.8, 31.9, 19.2]
    got = resampled_kendall_tau(groups, reference, resamples=300, seed=7)
    draws = np.random.default_rng(7)
    taus = []
    for _ in range(300):
        means = [g[draws.integers(0, g.size, g.size)].mean() for g in groups]
        taus.append(stats.kendalltau(means, reference).statistic)
    assert got.median == pytest.approx(np.median(taus))
    np.testing.assert_allclose(got.ci95, np.percentile(taus, [2.5, 97.5]))
    assert (got.low, got.high) == pytest.approx((min(taus), max(taus)))


def _intervals(value, path=""):
    """Every (path, estimate, [low, high]) of a stored record: means and medians with `ci95`."""
    if isinstance(value, dict):
        for key in ("mean", "median"):
            if "ci95" in value and key in value:
                yield path, value[key], value["ci95"]
        for k, v in value.items():
            yield from _intervals(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _intervals(v, f"{path}[{i}]")


@pytest.mark.parametrize("folder, size", SIZES)
def test_every_reported_interval_contains_its_estimate(folder, size):
    data = stored(folder, "paper_matrix")
    found = list(_intervals(data))
    assert len(found) > 3 * len(
        data["rows"]
    )  # every row's measures, and the analysis's
    for path, estimate, (low, high) in found:
        assert low <= estimate <= high, (path, estimate, low, high)


@pytest.mark.parametrize("folder, size", SIZES)
def test_committed_data_are_their_restatement(folder, size):
    """The committed data are what `restated` recomputes from their stored rows (the figure's
    current statistics), for both figures."""
    data = stored(folder, "paper_matrix")
    again = fig.restated(data, size).to_dict()
    assert json.loads(json.dumps(again)) == data
    m = stored(folder, "mitigations")
    assert json.loads(json.dumps(mit.restated(m).to_dict())) == m


def test_coverage_counts_within_window_offsets_only():
    """A W8/S8 row that answers every phase but the boundary covers all 7 within-window offsets
    (the boundary's 0 does not count against it); one offset lost in one window's phase is an
    offset not covered."""
    data = stored("figures", "paper_matrix")
    rows = {name: fig.RowSummary.from_dict(r) for name, r in data["rows"].items()}
    acc = np.ones((8, 24))
    acc[:, 7::8] = 0.0  # the boundary phases
    acc[3, 2 + 8] = 0.1  # seed 3 misses offset 2 in its second window
    for name in fig.KV_ROWS:
        rows[name] = fig.RowSummary.from_dict(
            {**data["rows"][name], "phase_accuracy_per_seed": acc.tolist()}
        )
    for c in fig.analyze(rows, pm.FULL_SIZE).coverage.values():
        assert c.within_offsets == list(range(7))
        assert c.boundary_phases == [7, 15, 23]
        assert c.covered_offsets_per_seed == [7, 7, 7, 6, 7, 7, 7, 7]
        assert c.seeds_covering_every_offset == 7


def test_ordering_states_what_the_intervals_resolve():
    """On the committed matrix: the pairs whose gap intervals separate, checked pair by pair,
    and the discordant pairs of the point estimates against the paper's gaps."""
    data = stored("figures", "paper_matrix")
    o = fig.FIGURE.record(data).analysis.ordering
    gap = {n: data["rows"][n]["gap"] for n in o.rows}
    paper = dict(zip(o.rows, o.paper_gap))
    pairs = o.separated + o.overlapping
    assert len(pairs) == len(o.rows) * (len(o.rows) - 1) // 2
    for m, n in pairs:
        assert gap[m]["mean"] >= gap[n]["mean"]
        apart = gap[m]["ci95"][0] > gap[n]["ci95"][1]
        assert apart == ([m, n] in o.separated)
        assert (paper[m] < paper[n]) == ([m, n] in o.discordant)


def test_the_stride_two_number_is_named_with_its_model_wherever_it_appears():
    """6.09 is DeepSeek-V4.1-Flash's on the 128K needle task: never in the chain of the
    controlled family's gaps, and named with its model in the claim, the tables and the
    findings; the controlled settings carry table 8's models."""
    assert not PAPER["S=2"]["controlled"]
    assert "DeepSeek-V4.1-Flash" in PAPER["S=2"]["model"]
    keys = {
        "W8/S8": "reference-42",
        "W8/S4": "w8s4",
        "W8/S6": "w8s6",
        "uniform": "uniform",
    }
    for name, key in keys.items():
        assert PAPER[name]["controlled"]
        assert PAPER[name]["model"] == pm.PAPER_TABLE8[key].model
        assert PAPER[name]["gap"] == pm.PAPER_TABLE8[key].gap
    data = mit.FIGURE.record(stored("figures", "mitigations"))
    claim = mit.FIGURE.claim_text(data)
    chain = claim[claim.index("controlled family (1 KV head;") :].split(")")[0]
    assert "75.3%" in chain and "6.09" not in chain
    for sentence in claim.split(". "):
        if "6.09" in sentence:
            assert "DeepSeek-V4.1-Flash" in sentence, sentence
    for table in mit.tables(data):
        for row in table.rows:
            if "6.09" in " ".join(row):
                assert "DeepSeek-V4.1-Flash" in " ".join(row), row
    for part in data.findings.split("; "):
        if "6.09" in part:
            assert "DeepSeek-V4.1-Flash" in part, part
