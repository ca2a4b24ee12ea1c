"""Records of measured numbers that several results share: a count of k in n (with its interval
where a figure adds one), a spread of values, and a mean with its interval."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..internal._records import Record, optional_field


@dataclasses.dataclass(frozen=True)
class Count(Record):
    """`k` of `n` (heads, branches or seeds that have a property), and where given `ci95`, the
    95% interval `[low, high]` of the share k/n."""

    k: int
    n: int
    ci95: list[float] | None = optional_field()

    @classmethod
    def of(cls, flags) -> Count:
        """How many of `flags` (any shape) are true."""
        flags = np.asarray(flags, bool).ravel()
        return cls(k=int(flags.sum()), n=int(flags.size))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Spread(Record):
    """Mean, standard deviation (population), quartiles and, where kept, the range of a set of
    values (`min`, `max`: None when left out)."""

    mean: float
    sd: float
    min: float | None = optional_field()
    q25: float
    median: float
    q75: float
    max: float | None = optional_field()

    @classmethod
    def of(cls, x, *, extremes: bool = True) -> Spread:
        """The spread of the values of `x` (any shape), with their range if `extremes`."""
        x = np.asarray(x, float).ravel()
        q25, q50, q75 = np.percentile(x, [25, 50, 75])
        return cls(
            mean=float(x.mean()),
            sd=float(x.std()),
            min=float(x.min()) if extremes else None,
            q25=float(q25),
            median=float(q50),
            q75=float(q75),
            max=float(x.max()) if extremes else None,
        )


@dataclasses.dataclass(frozen=True)
class MeanInterval(Record):
    """A mean and its 95% interval `ci95` = `[low, high]` (a bootstrap over seeds, or over
    seeds and contexts)."""

    mean: float
    ci95: list[float]


__all__ = ["Count", "MeanInterval", "Spread"]
