"""Intervals for the numbers the figures report: Wilson score intervals for shares, order-statistic
intervals for medians (and how surely quartiles bound a median), and their text in
figures/README.md.

```python
from inductheory.figures._stats import share_text, wilson_interval
wilson_interval(256, 256)  # (0.985..., 1.0)
share_text(67, 256)  # '67/256 = 0.262 [0.212, 0.319]'
```
"""

from __future__ import annotations

import dataclasses
import math
import typing

import numpy as np

from ..experiments._measured import Count, MeanInterval
from ..internal._records import Record

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def spearman(a, b) -> float:
    """Spearman's rank correlation of `a` and `b` (scipy's, ties averaged); NaN where either is
    constant.

    **Example:** `spearman([1, 2, 3], [3, 1, 2]) == -0.5`.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    # imported here, not with the module: scipy.stats adds 0.3 s to every process's start
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial share k/n (95% for the default z).

    **Arguments:**

    - `k`: the count of successes, `0 <= k <= n`.
    - `n`: the number of trials, `n >= 1`.
    - `z`: the normal quantile of the two-sided confidence level.

    **Returns:**

    `(low, high)`, clipped to [0, 1].

    ```python
    wilson_interval(20, 20)  # (0.839, 1.0)
    ```
    """
    if n < 1:
        raise ValueError(f"wilson_interval: n must be >= 1, got {n}")
    if not 0 <= k <= n:
        raise ValueError(f"wilson_interval: k must lie in [0, n={n}], got {k}")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_count(k: int, n: int) -> Count:
    """`k` of `n` as a `Count` with its Wilson 95% interval (`[0, 1]` for n = 0: nothing
    counted, nothing known).

    **Example:** `wilson_count(3, 8).ci95` is `wilson_interval(3, 8)` as a list.
    """
    low, high = wilson_interval(k, n) if n else (0.0, 1.0)
    return Count(k=int(k), n=int(n), ci95=[low, high])


def interval_text(low: float, high: float, digits: int = 2) -> str:
    """`[low, high]` with `digits` decimals; an end at exactly 0 or 1 is written `0` or `1`."""

    def end(x):
        # the ends at k = 0 or k = n are 0 or 1 up to rounding of the closed form
        return str(round(x)) if min(abs(x), abs(x - 1)) < 1e-12 else f"{x:.{digits}f}"

    return f"[{end(low)}, {end(high)}]"


def share_text(k: int, n: int, digits: int | None = None) -> str:
    """A share as `k/n = p [low, high]` with its Wilson 95% interval (`k/n [low, 1]` when k = n,
    `k/n [0, high]` when k = 0: the share itself is then plain).

    **Arguments:**

    - `k`, `n`: the count and the number of trials (as for `wilson_interval`).
    - `digits`: decimals of the share and of the interval ends; by default 2, and 3 from
      n = 100 on (where the interval is narrower than 0.01 near 0 and 1).

    **Returns:**

    The text, e.g. `'6/10 = 0.60 [0.31, 0.83]'` or `'256/256 [0.985, 1]'`.
    """
    k, n = int(k), int(n)
    if digits is None:
        digits = 3 if n >= 100 else 2
    lo, hi = wilson_interval(k, n)
    ci = interval_text(lo, hi, digits)
    if k in (0, n):
        return f"{k}/{n} {ci}"
    return f"{k}/{n} = {k / n:.{digits}f} {ci}"


def compact(x: float, digits: int = 3, sci: bool | None = None) -> str:
    """`x` to `digits` significant digits, as a claim writes it: `4`, `0.1`, `4096`, `1e-3`
    (and with `sci=True` `3.7e3`); a plain number keeps every digit of its integer part.

    **Arguments:**

    - `digits`: significant digits (trailing zeros dropped).
    - `sci`: the exponent form; by default for |x| < 0.01 or |x| >= 1e5 (and never for 0).

    **Returns:** the text, with the exponent unpadded (`1e-3`, `1e6`).
    """
    if sci is None:
        sci = x != 0 and not 1e-2 <= abs(x) < 1e5
    # no exponent form for the integer part of a plain number (4096, not 4.1e3)
    whole = len(str(int(abs(x))))
    text = f"{x:.{digits - 1}e}" if sci else f"{x:.{max(digits, whole)}g}"
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def span_text(values, fmt=compact, sep: str = "-") -> str:
    """The range of `values` as `low-high` (`sep` between) with `fmt`, one value when both ends
    read alike."""
    low, high = fmt(float(np.min(values))), fmt(float(np.max(values)))
    return low if low == high else f"{low}{sep}{high}"


def grid_text(values) -> str:
    """A grid as `{16, ..., 4096} (powers of 2)` when it doubles at each step, else every value."""
    values = [compact(float(v)) for v in values]
    doubling = all(float(b) == 2 * float(a) for a, b in zip(values, values[1:]))
    if doubling and len(values) > 4:
        return f"{{{values[0]}, ..., {values[-1]}}} (powers of 2)"
    return "{" + ", ".join(values) + "}"


def plural(n: int, noun: str) -> str:
    """`n` and `noun`, plural unless n is 1: `1 seed`, `2 seeds`."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


class MedianInterval(typing.NamedTuple):
    """A median with a distribution-free interval from two order statistics.

    - `median`: the sample median (numpy's).
    - `low`, `high`: the order statistics x_(j) and x_(n+1-j) (1-based) bracketing it.
    - `coverage`: the exact coverage of [low, high] for the population median of a continuous
      distribution, 1 - 2 P(Bin(n, 1/2) < j); at least the level asked for, except for samples
      too small to reach it (then j = 1, the range).
    """

    median: float
    low: float
    high: float
    coverage: float


# The bootstrap's defaults: resamples, confidence level and the generator's seed.
RESAMPLES, LEVEL, SEED = 2000, 0.95, 0


def bootstrap_interval(
    groups,
    statistic,
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> list[float]:
    """Percentile interval (`level`) of `statistic(*groups)` over `resamples` bootstrap
    resamples of each group (with replacement, within each group), from a fixed `seed`.

    **Arguments:**
    - `groups`: sequences of per-seed values, resampled independently.
    - `statistic`: a function of the resampled groups, e.g. `np.mean`.

    **Returns:** `[low, high]`.

    ```python
    bootstrap_interval([[1.0, 2.0, 3.0]], np.mean)
    ```
    """
    resampled = _resampled(groups, resamples, seed)
    stats = [statistic(*(r[i] for r in resampled)) for i in range(resamples)]
    return _percentile_interval(stats, level)


def _resampled(groups, resamples: int, seed: int) -> list[np.ndarray]:
    """Each group's bootstrap resamples, (resamples, size) each: resample by resample, each
    group drawn in turn from one generator of `seed`. One call draws them all, each position
    bounded by its group's size: the generator then gives the draws of a call per resample and
    group, in that order (tested), at an eighth of the time."""
    rng = np.random.default_rng(seed)
    groups = [np.asarray(g, float) for g in groups]
    sizes = [g.size for g in groups]
    bounds = np.repeat(sizes, sizes)
    draws = rng.integers(0, np.broadcast_to(bounds, (resamples, bounds.size)))
    ends = np.cumsum(sizes)
    return [g[draws[:, e - g.size : e]] for g, e in zip(groups, ends)]


def _percentile_interval(stats, level: float) -> list[float]:
    tail = (1 - level) / 2 * 100
    return [float(np.percentile(stats, tail)), float(np.percentile(stats, 100 - tail))]


def mean_interval(values) -> MeanInterval:
    """The mean of `values` (flattened) with its bootstrap 95% interval (`bootstrap_interval`
    with `np.mean`, the means of every resample taken at once).

    ```python
    mean_interval([1.0, 2.0, 3.0]).mean  # 2.0
    ```
    """
    v = np.asarray(values, float).ravel()
    (resampled,) = _resampled([v], RESAMPLES, SEED)
    return MeanInterval(
        mean=float(v.mean()), ci95=_percentile_interval(resampled.mean(axis=1), LEVEL)
    )


def mean_text(m: MeanInterval, digits: int = 2) -> str:
    """A mean with its interval as text: `0.53 [0.47, 0.59]`."""
    return f"{m.mean:.{digits}f} {interval_text(*m.ci95, digits)}"


def median_interval(values, level: float = 0.95) -> MedianInterval:
    """The order-statistic interval of the median: the narrowest [x_(j), x_(n+1-j)] whose
    coverage 1 - 2 P(Bin(n, 1/2) < j) is at least `level`.

    **Arguments:**

    - `values`: a non-empty 1-d sample (NaN not allowed).
    - `level`: the coverage asked for, in (0, 1).

    **Returns:**

    A `MedianInterval`.

    ```python
    median_interval(range(256))  # low, high about the 44% and 56% quantiles
    ```
    """
    x = np.sort(np.asarray(values, dtype=np.float64).ravel())
    n = x.size
    if n < 1 or not np.all(np.isfinite(x)):
        raise ValueError(
            "median_interval: values must be a non-empty sample of finite numbers"
        )
    if not 0 < level < 1:
        raise ValueError(f"median_interval: level must lie in (0, 1), got {level}")

    j = 1
    while j + 1 <= (n + 1) // 2 and order_statistic_coverage(n, j + 1) >= level:
        j += 1
    return MedianInterval(
        float(np.median(x)),
        float(x[j - 1]),
        float(x[n - j]),
        order_statistic_coverage(n, j),
    )


def order_statistic_coverage(n: int, j: int) -> float:
    """The probability that [x_(j), x_(n+1-j)] (1-based order statistics of n values from a
    continuous distribution) contains its median: 1 - 2 P(Bin(n, 1/2) < j).

    **Arguments:**

    - `n`: the sample size, `n >= 1`.
    - `j`: the rank of the lower end, `1 <= j <= (n + 1) / 2`.

    **Returns:**

    The coverage, exact (integer binomial sums).

    ```python
    order_statistic_coverage(6, 1)  # 0.96875: the range of 6 values
    ```
    """
    if n < 1 or not 1 <= j <= (n + 1) / 2:
        raise ValueError(
            f"order_statistic_coverage: need n >= 1 and 1 <= j <= (n + 1)/2, got n={n}, j={j}"
        )
    return 1 - 2 * sum(math.comb(n, i) for i in range(j)) / 2**n


def quartile_median_coverage(n: int) -> float:
    """How surely the quartiles of n values (numpy's linear interpolation) bound the median:
    [q25, q75] contains [x_(j), x_(n+1-j)] with j = ceil((n - 1) / 4) + 1, so its coverage is
    at least `order_statistic_coverage(n, j)`.

    **Arguments:**

    - `n`: the sample size, `n >= 2`.

    **Returns:**

    The lower bound on the coverage.

    ```python
    quartile_median_coverage(16)  # 0.92...
    ```
    """
    if n < 2:
        raise ValueError(f"quartile_median_coverage: n must be >= 2, got {n}")
    return order_statistic_coverage(n, math.ceil((n - 1) / 4) + 1)


@dataclasses.dataclass(frozen=True)
class KendallTau(Record):
    """Kendall's tau-a of two rankings: `tau` = (concordant - discordant) / pairs, the
    `concordant` and `discordant` pairs, `ties` (pairs tied in either ranking, counted in
    neither) and all `pairs`."""

    tau: float
    concordant: int
    discordant: int
    ties: int
    pairs: int


def kendall_tau(values, reference) -> KendallTau:
    """Kendall's tau-a between two rankings of the same items.

    **Arguments:**
    - `values`, `reference`: numbers per item (equal length >= 2).

    ```python
    kendall_tau([3, 2, 1], [30, 20, 10]).tau  # 1.0
    ```
    """
    a, b = np.asarray(values, float), np.asarray(reference, float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(
            "values and reference must be 1-d of one length >= 2, got shapes "
            f"{a.shape} and {b.shape}"
        )
    i, j = np.triu_indices(a.size, 1)
    s = np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])
    c, d = int(np.sum(s > 0)), int(np.sum(s < 0))
    return KendallTau(
        tau=(c - d) / i.size,
        concordant=c,
        discordant=d,
        ties=int(i.size - c - d),
        pairs=int(i.size),
    )


def t_interval(
    values, level: float = LEVEL, support: tuple[float, float] = (0.0, 1.0)
) -> MeanInterval:
    """The mean of `values` with its Student t interval, mean +- t_{n-1} s / sqrt(n) (s the
    sample standard deviation), clipped to `support`. Symmetric about the mean before the clip,
    so it always contains its estimate.

    Used for one value per seed: each seed's value holds its own held-out sampling noise, so the
    spread over seeds covers both sources. The interval is of the expected value of one seed's
    measure, as measured; for a minimum (maximum) over noisy phases that lies below (above) the
    extreme of the noiseless phase accuracies.

    One value (one seed) has no spread to measure: its interval is the whole `support`, which
    contains the estimate and claims nothing.

    **Arguments:**
    - `values`: at least 1 finite number.
    - `level`: the coverage, in (0, 1).
    - `support`: the range the quantity lives in (accuracies and gaps: [0, 1]).

    **Returns:** a `MeanInterval`.

    ```python
    t_interval([0.1, 0.2, 0.3]).ci95  # [0, 0.448]: [-0.048, 0.448] clipped to [0, 1]
    ```
    """
    v = np.asarray(values, np.float64).ravel()
    if v.size < 1 or not np.all(np.isfinite(v)):
        raise ValueError(f"t_interval: need >= 1 finite values, got {v.size}")
    if not 0 < level < 1:
        raise ValueError(f"t_interval: level must lie in (0, 1), got {level}")
    lo, hi = support
    if v.size == 1:
        return MeanInterval(mean=float(v[0]), ci95=[lo, hi])
    from scipy.stats import t as student_t

    mean = float(v.mean())
    half = float(student_t.ppf((1 + level) / 2, v.size - 1) * v.std(ddof=1))
    half /= math.sqrt(v.size)
    return MeanInterval(mean=mean, ci95=[max(lo, mean - half), min(hi, mean + half)])


def welch_interval(a, b, level: float = LEVEL) -> MeanInterval:
    """The difference of two independent means, mean(a) - mean(b), with Welch's t interval:
    +- t_nu sqrt(s_a^2/n_a + s_b^2/n_b), nu by the Welch-Satterthwaite formula (the two
    standard errors equal to zero: the interval is the point).

    **Arguments:** `a`, `b`: at least 2 finite values each (one per seed of two models).

    **Returns:** a `MeanInterval` of the difference.

    ```python
    welch_interval([0.9, 1.0, 0.95], [0.5, 0.6, 0.7]).mean  # 0.35
    ```
    """
    a, b = (np.asarray(x, np.float64).ravel() for x in (a, b))
    if min(a.size, b.size) < 2:
        raise ValueError(
            f"welch_interval: need >= 2 values each, got {a.size}, {b.size}"
        )
    from scipy.stats import t as student_t

    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    diff = float(a.mean() - b.mean())
    if va + vb == 0:
        return MeanInterval(mean=diff, ci95=[diff, diff])
    nu = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = float(student_t.ppf((1 + level) / 2, nu) * math.sqrt(va + vb))
    return MeanInterval(mean=diff, ci95=[diff - half, diff + half])


@dataclasses.dataclass(frozen=True)
class ResampledTau(Record):
    """Kendall's tau-a under resampling (`resampled_kendall_tau`): the `median` over
    `resamples`, the 95% percentile interval `ci95` and the range `low`-`high`."""

    median: float
    ci95: list[float]
    low: float
    high: float
    resamples: int


def resampled_kendall_tau(
    groups, reference, *, resamples: int = RESAMPLES, seed: int = SEED
) -> ResampledTau:
    """Kendall's tau-a between the means of `groups` (one group of per-seed values per item)
    and `reference`, over bootstrap resamples of each group's seeds (with replacement, each
    group independently: `bootstrap_interval`'s draws).

    **Arguments:**
    - `groups`: per item, its per-seed values.
    - `reference`: one number per item (the ranking compared with).

    **Returns:** a `ResampledTau`.

    ```python
    resampled_kendall_tau([[1.0, 2.0], [3.0, 4.0]], [1, 2]).median  # 1.0
    ```
    """
    means = np.stack([r.mean(axis=1) for r in _resampled(groups, resamples, seed)])
    taus = np.array([kendall_tau(m, reference).tau for m in means.T])
    return ResampledTau(
        median=float(np.median(taus)),
        ci95=_percentile_interval(taus, LEVEL),
        low=float(taus.min()),
        high=float(taus.max()),
        resamples=resamples,
    )
