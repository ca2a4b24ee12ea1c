"""Figure sections of figures/README.md: scannable measured numbers, and an interval for every
share a claim reports; the interval helpers against independent computations."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from inductheory.figures import FIGURES, MeasuredTable
from inductheory.figures._stats import (
    bootstrap_interval,
    interval_text,
    mean_interval,
    median_interval,
    order_statistic_coverage,
    quartile_median_coverage,
    share_text,
    wilson_interval,
)

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("figures", "figures/quick")
FINDINGS_MAX = 400  # characters of a one-line Measured part a reader can still scan
# A count k/n of seeds, contexts or points: n >= 4, so that constants such as 1/2 or 2/3 are not
# counts; not part of a formula (1/(kappa + 1/N), 1/K).
COUNT = re.compile(r"(?<![\w./])(\d+)/(\d+)(?![\w./(])")
# An interval [a, b] (Wilson or order statistics), or a bound stated in words.
INTERVAL = re.compile(
    r"\[\s*\d*\.?\d+(e-?\d+)?\s*,\s*\d*\.?\d+(e-?\d+)?\s*\]|lower bound|upper bound"
)
REACH = 120  # characters after a count within which its interval must follow


def counts_without_interval(claim: str) -> list[str]:
    """The counts k/n (n >= 4, k <= n) of a claim that are not followed by an interval before
    the next count or within REACH characters."""
    found = [
        m for m in COUNT.finditer(claim) if 4 <= int(m[2]) and int(m[1]) <= int(m[2])
    ]
    ends = [m.start() for m in found[1:]] + [len(claim)]
    return [
        m[0]
        for m, end in zip(found, ends)
        if not INTERVAL.search(claim[m.end() : min(end, m.end() + REACH)])
    ]


def committed(folder: str, name: str) -> dict:
    return json.loads((ROOT / folder / "data" / f"{name}.json").read_text())


def test_the_count_check_finds_a_share_without_an_interval():
    assert counts_without_interval("every seed (256/256) selects") == ["256/256"]
    assert (
        counts_without_interval("67/256 = 26% of the seeds (Wilson 95% [0.21, 0.32])")
        == []
    )
    assert counts_without_interval("256/256 each, Wilson 95% lower bound 0.985") == []
    assert counts_without_interval("136/256 [0.47, 0.59]; 1,1: 63/256; 2,2: 57") == [
        "63/256"
    ]
    # constants and formulas are not counts
    assert (
        counts_without_interval("p = 1/2, baseline 2/3, rate 1/(kappa + 1/N), 1/K")
        == []
    )


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", list(FIGURES))
def test_every_claim_states_an_interval_for_each_count(name, folder):
    missing = counts_without_interval(FIGURES[name].claim_text(committed(folder, name)))
    assert not missing, f"{name}: counts without an interval in the claim: {missing}"


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", list(FIGURES))
def test_every_measured_part_is_tables_or_a_short_line(name, folder):
    figure, data = FIGURES[name], committed(folder, name)
    if figure.tables is None:
        assert len(data.get("findings", "")) <= FINDINGS_MAX, (
            f"{name}: a Measured line of {len(data['findings'])} characters; give the "
            "figure tables(data)"
        )
        return
    tables = figure.measured_tables(data)
    assert tables and all(isinstance(t, MeasuredTable) for t in tables)
    for t in tables:
        assert t.rows, f"{name}: an empty table {t.caption!r}"
        cells = [t.caption, *t.columns, *(c for row in t.rows for c in row)]
        assert all(isinstance(c, str) and "\n" not in c for c in cells)
        assert all("nan" not in c.lower().split() for c in cells), (
            f"{name}: NaN in a table"
        )


def test_wilson_interval_rejects_bad_counts():
    # its values are checked against scipy in test_approximate_geometry_figure.py
    with pytest.raises(ValueError, match="n must be >= 1"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match="k must lie in"):
        wilson_interval(5, 4)


def test_share_text_writes_the_count_and_its_interval():
    # the numbers by hand from the Wilson closed form at z = 1.96
    assert share_text(256, 256) == "256/256 [0.985, 1]"
    assert share_text(0, 16) == "0/16 [0, 0.19]"
    assert share_text(6, 10) == "6/10 = 0.60 [0.31, 0.83]"
    assert interval_text(0.0, 0.9999999999999999) == "[0, 1]"


@pytest.mark.parametrize("n", [1, 5, 6, 9, 16, 64, 255, 256])
def test_median_interval_against_the_binomial_distribution(n):
    rng = np.random.default_rng(n)
    x = rng.exponential(size=n)
    r = median_interval(x)
    xs = np.sort(x)
    j = int(np.searchsorted(xs, r.low)) + 1  # 1-based rank of the lower end
    assert r.low == xs[j - 1] and r.high == xs[n - j]
    assert r.median == pytest.approx(np.median(x))
    coverage = 1 - 2 * stats.binom.cdf(j - 1, n, 0.5)
    assert r.coverage == pytest.approx(coverage, abs=1e-12)
    if coverage >= 0.95:  # the narrowest such interval: one rank further in falls short
        assert j == (n + 1) // 2 or 1 - 2 * stats.binom.cdf(j, n, 0.5) < 0.95
    else:  # too few values: the range, and nothing reaches the level
        assert j == 1


def test_median_interval_covers_the_median_as_often_as_it_says():
    rng = np.random.default_rng(0)
    n, trials = 40, 4000
    hits = 0
    for _ in range(trials):
        r = median_interval(rng.normal(size=n))
        hits += r.low <= 0.0 <= r.high
    cover = median_interval(np.zeros(n) + np.arange(n)).coverage
    assert abs(hits / trials - cover) < 4 * math.sqrt(cover * (1 - cover) / trials)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 8, 31, 64, 257])
def test_mean_interval_is_the_bootstrap_of_the_mean(n):
    """`mean_interval` takes every resample's mean at once: the same interval, to the bit, as
    `bootstrap_interval` calling `np.mean` resample by resample; and a percentile interval
    of resampled means, it lies within the sample's range around its mean."""
    values = np.random.default_rng(n).lognormal(size=n)
    m = mean_interval(values)
    assert m.ci95 == bootstrap_interval([values], np.mean)
    assert values.min() <= m.ci95[0] <= m.mean <= m.ci95[1] <= values.max()


def _resampled_one_call_per_draw(groups, resamples, seed):
    # the bootstrap's definition: per resample, each group in turn, one call of the generator
    rng = np.random.default_rng(seed)
    groups = [np.asarray(g, float) for g in groups]
    draws = [
        [rng.integers(0, g.size, g.size) for g in groups] for _ in range(resamples)
    ]
    return [g[np.stack([d[k] for d in draws])] for k, g in enumerate(groups)]


@pytest.mark.parametrize("trial", range(40))
def test_the_resamples_are_those_of_one_call_per_group_and_resample(trial):
    """`_resampled` draws every resample in one call; the generator gives the same draws as one
    call per resample and group, so the bootstrap intervals are those of the definition, to the
    bit (groups of 1 to 69 values, 1 to 3 groups, 1 to 299 resamples)."""
    from inductheory.figures._stats import _resampled

    rng = np.random.default_rng(1000 + trial)
    groups = [rng.normal(size=rng.integers(1, 70)) for _ in range(rng.integers(1, 4))]
    resamples, seed = int(rng.integers(1, 300)), int(rng.integers(0, 2**31))
    got = _resampled(groups, resamples, seed)
    want = _resampled_one_call_per_draw(groups, resamples, seed)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.array_equal(g, w)


def test_median_interval_rejects_bad_input():
    with pytest.raises(ValueError, match="values"):
        median_interval([])
    with pytest.raises(ValueError, match="values"):
        median_interval([1.0, float("nan")])
    with pytest.raises(ValueError, match="level"):
        median_interval([1.0, 2.0], level=1.0)


def test_quartiles_bound_the_median_at_least_as_surely_as_stated():
    # the bound against scipy's binomial, and against simulation (numpy's quartiles of normal
    # samples around the true median 0)
    for n in (16, 17, 64, 256):
        j = math.ceil((n - 1) / 4) + 1
        assert quartile_median_coverage(n) == pytest.approx(
            1 - 2 * stats.binom.cdf(j - 1, n, 0.5), abs=1e-12
        )
    rng = np.random.default_rng(1)
    for n in (5, 16):
        q = np.quantile(rng.normal(size=(20000, n)), [0.25, 0.75], axis=1)
        hits = np.mean((q[0] <= 0) & (0 <= q[1]))
        bound = quartile_median_coverage(n)
        assert hits >= bound - 4 * math.sqrt(bound * (1 - bound) / 20000)
    assert order_statistic_coverage(6, 1) == pytest.approx(1 - 2 / 64)
    with pytest.raises(ValueError, match="1 <= j"):
        order_statistic_coverage(6, 4)
    with pytest.raises(ValueError, match="n must be >= 2"):
        quartile_median_coverage(1)
