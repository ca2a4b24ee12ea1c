"""How long the work left of a run of several jobs should take: pure functions of the jobs'
expected seconds, the seconds the finished ones took and how long the running ones have run.

The expected seconds come from earlier runs' measured times where known, else from nominal costs
(`basis` names which). Once the finished jobs hold enough of the expected work, every
expectation is scaled by how long they took against theirs, but never below `FLOOR` of it: the
jobs done first are not the jobs left (small, compile-bound jobs sped up by a warm compilation
cache say little of a long training), and an estimate that is too short is the dishonest one.
A running job past its expectation has no estimate left: it is named as past its estimate,
never counted as nearly done.
"""

from __future__ import annotations

from typing import NamedTuple

# The least share of its expected seconds a job left is expected to take.
FLOOR = 0.5


class Eta(NamedTuple):
    """The estimate of the work left.

    - `seconds`: seconds the jobs left within their expectation should take (`jobs` at a time,
      never less than the longest of them); None when there is no estimate (too little of the
      work measured, or nothing left but jobs past their expectation).
    - `past`: the running jobs already past their expectation (no estimate of their rest).
    - `basis`: where the expectations come from (`basis`).
    - `scale`: the factor applied to the expectations.
    """

    seconds: float | None
    past: tuple[str, ...] = ()
    basis: str = "nominal costs"
    scale: float = 1.0


def basis(names, measured) -> str:
    """Which expectations a run of jobs `names` rests on: `earlier runs' times` when `measured`
    (a mapping) holds every job, `nominal costs` when it holds none, else both."""
    known = sum(n in measured for n in names)
    if names and known == len(names):
        return "earlier runs' times"
    if known == 0:
        return "nominal costs"
    return "earlier runs' times and nominal costs"


def estimate(
    expected: dict[str, float],
    done: dict[str, float],
    running: dict[str, float],
    *,
    jobs: int = 1,
    after: float = 0.25,
    source: str = "nominal costs",
) -> Eta:
    """The `Eta` of the jobs of `expected` (seconds each) not in `done` (the seconds each
    finished one took); `running`: how long each running one has run.

    No estimate until the finished jobs hold `after` of the expected work. The jobs' expected
    seconds are then scaled by the finished ones' measured against expected seconds (at least
    `FLOOR`); a running job's share is what is left of its scaled expectation, and a running
    job past it is listed in `past`, not counted.

    ```python
    estimate({"a": 10, "b": 30}, {"a": 20.0}, {"b": 5.0}, after=0.2).seconds  # 2 * 30 - 5
    ```
    """
    total = sum(expected.values())
    finished = sum(expected[n] for n in done if n in expected)
    left = [n for n in expected if n not in done]
    if not left or finished <= 0 or finished < after * total:
        return Eta(None, basis=source)
    scale = max(sum(done[n] for n in done if n in expected) / finished, FLOOR)
    seconds, past = [], []
    for n in left:
        share = scale * expected[n] - running.get(n, 0.0)
        if n in running and share <= 0:
            past.append(n)
        else:
            seconds.append(share)
    if not seconds:
        return Eta(None, tuple(past), source, scale)
    return Eta(max(sum(seconds) / jobs, max(seconds)), tuple(past), source, scale)


def describe(eta: Eta, duration) -> str | None:
    """The words of `eta` for a progress line (`duration` formats seconds), or None when it has
    nothing to say.

    ```python
    describe(Eta(200.0, ("b",), "nominal costs"), lambda s: f"{s:.0f} s")
    # 'about 200 s left for the rest (nominal costs); b past its estimate'
    ```
    """
    past = ""
    if eta.past:
        past = ", ".join(eta.past) + (
            " past its estimate" if len(eta.past) == 1 else " past their estimates"
        )
    if eta.seconds is None:
        return past or None
    rest = " for the rest" if eta.past else ""
    text = f"about {duration(eta.seconds)} left{rest} ({eta.basis})"
    return f"{text}; {past}" if past else text


__all__ = ["Eta", "basis", "describe", "estimate"]
