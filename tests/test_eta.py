"""The ETA of `reproduce` (internal/_eta.py and its use by `FigureConsole`): pure functions of the
expected and measured seconds, checked with fake clocks; no timed assertion."""

from __future__ import annotations

import pytest
from fake_progress import FakeClock, fake_figures

from inductheory.internal._eta import FLOOR, Eta, basis, describe, estimate
from inductheory.internal._progress import duration


def test_the_basis_says_whether_the_expectations_were_measured():
    assert basis(["a", "b"], {"a": 1.0, "b": 2.0}) == "earlier runs' times"
    assert basis(["a", "b"], {}) == "nominal costs"
    assert basis(["a", "b"], {"a": 1.0}) == "earlier runs' times and nominal costs"


def test_no_estimate_before_enough_of_the_work_is_measured():
    expected = {"a": 10.0, "b": 90.0}
    assert estimate(expected, {}, {"a": 5.0}).seconds is None
    assert estimate(expected, {"a": 10.0}, {"b": 1.0}).seconds is None  # 10% < 25%
    assert estimate(expected, {"a": 10.0}, {"b": 1.0}, after=0.1).seconds == 89.0


def test_the_expectations_are_scaled_by_the_finished_work_but_not_below_the_floor():
    expected = {"a": 100.0, "b": 100.0, "c": 100.0}
    # twice as slow as expected: c is expected to take 200 s
    assert estimate(expected, {"a": 200.0, "b": 200.0}, {}).seconds == 200.0
    # ten times as fast (a warm compilation cache on small figures): never below FLOOR
    fast = estimate(expected, {"a": 10.0, "b": 10.0}, {})
    assert fast.scale == FLOOR and fast.seconds == FLOOR * 100.0


def test_a_figure_past_its_estimate_is_named_never_counted_as_nearly_done():
    # the case of the issue: a long trained figure runs for minutes past its expectation while
    # small figures are left; the estimate of the others is not "about 10 s left" for the run
    expected = {"small1": 10.0, "small2": 10.0, "long": 600.0, "last": 10.0}
    done = {"small1": 10.0, "small2": 10.0}
    eta = estimate(expected, done, {"long": 900.0}, jobs=2, after=0.0)
    assert eta.past == ("long",) and eta.seconds == 10.0
    text = describe(eta, duration)
    assert (
        text == "about 10.0 s left for the rest (nominal costs); long past its estimate"
    )
    # nothing left but the long one: no number at all
    alone = estimate(expected, {**done, "last": 10.0}, {"long": 900.0}, after=0.0)
    assert (
        alone.seconds is None and describe(alone, duration) == "long past its estimate"
    )


def test_running_figures_count_what_is_left_of_their_expectation_jobs_at_a_time():
    expected = {n: 100.0 for n in "abcde"}
    eta = estimate(expected, {"a": 50.0, "b": 50.0}, {"c": 20.0, "d": 20.0}, jobs=2)
    # scale 0.5: c and d have 30 s left each, e 50 s; two at a time, at least the longest
    assert eta.seconds == pytest.approx((30 + 30 + 50) / 2)
    solo = estimate({"a": 10.0, "b": 100.0}, {"a": 10.0}, {}, jobs=4, after=0.0)
    assert solo.seconds == 100.0


def test_the_words_name_the_basis():
    words = describe(Eta(125.0, (), "earlier runs' times"), duration)
    assert words == f"about {duration(125.0)} left (earlier runs' times)"
    assert describe(Eta(None), duration) is None
    both = describe(Eta(None, ("a", "b")), duration)
    assert both == "a, b past their estimates"


def test_the_status_lines_say_the_basis_and_a_figure_past_its_estimate(capsys):
    from inductheory.figures._timings import FigureConsole

    clock = FakeClock()
    previous = {"a": 10.0, "b": 100.0, "c": 300.0}
    status = FigureConsole(
        fake_figures(a=1, b=1, c=1), previous, True, jobs=2, clock=clock
    )
    status.eta_after = 0.0
    status.started("c")
    status.started("a")
    clock.now = 10.0
    status.finished("a", 10.0)  # as expected: c has 290 s left, b 100
    status.started("b")
    clock.now = 40.0
    status.quiet_for(5.0)
    clock.now = 400.0  # both past their expectation: no number
    status.quiet_for()
    status.finished("b", 390.0)  # 400 s for 110 expected: c's 300 s scale with them
    err = capsys.readouterr().err.splitlines()
    basis = "(earlier runs' times)"
    assert err[2] == f"done a (10.0 s); 1/3, about {duration(290.0)} left {basis}"
    assert err[4] == (
        f"still running: c (40.0 s), b (30.0 s); about {duration(260.0)} left {basis}"
    )
    assert err[5] == (
        "still running: c (6 min 40 s), b (6 min 30 s); b, c past their estimates"
    )
    left = 400.0 / 110.0 * 300.0 - 400.0
    assert err[6] == f"done b (6 min 30 s); 2/3, about {duration(left)} left {basis}"


def test_the_status_names_a_figure_past_its_estimate(capsys):
    from inductheory.figures._timings import FigureConsole

    clock = FakeClock()
    status = FigureConsole(
        fake_figures(a=10, b=10, c=600, d=10), {}, True, jobs=2, clock=clock
    )
    status.eta_after = 0.0
    for name in "ac":
        status.started(name)
    clock.now = 10.0
    status.finished("a", 10.0)
    status.started("b")
    clock.now = 20.0
    status.finished("b", 10.0)
    status.started("d")
    clock.now = 700.0  # c past its 600 s; d past too
    status.quiet_for()
    err = capsys.readouterr().err.splitlines()
    assert err[-1].endswith("; c, d past their estimates")
    assert "about" not in err[-1]


def test_a_figure_read_from_the_figure_cache_keeps_the_earlier_time():
    from inductheory.figures._timings import FigureTimes, kept_timings

    def times(wall_s, compiles):
        return FigureTimes(wall_s, wall_s, 0.0, compiles, 0, 1)

    previous = {"a": 50.0, "b": 20.0}
    results = {
        "a": times(0.4, 0),  # read whole from the figure cache
        "b": times(30.0, 12),
        "c": times(0.3, 0),  # nothing earlier: its time is all there is
    }
    assert kept_timings(previous, results) == {"a": 50.0, "b": 30.0, "c": 0.3}
