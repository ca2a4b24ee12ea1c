"""The test run's own settings (tests/conftest.py): the default run compiles with XLA's cheap code
generation, a run that includes the slow target does not."""

import os

import pytest
from conftest import FAST_COMPILE_FLAGS, _deselects_slow


@pytest.mark.parametrize(
    "markexpr, fast",
    [
        ("not slow and not docs", True),  # pyproject.toml's addopts
        ("not slow", True),
        ("not  slow", True),
        ("slow", False),
        ("slow or docs", False),
        ("docs", False),
        ("", False),
    ],
)
def test_only_runs_without_the_slow_target_take_the_fast_flags(markexpr, fast):
    assert _deselects_slow(markexpr) is fast


def test_the_default_run_compiles_with_the_fast_flags(request):
    if not _deselects_slow(request.config.option.markexpr or ""):
        pytest.skip("this run includes the slow target: XLA's default code generation")
    flags = os.environ.get("XLA_FLAGS", "").split()
    assert all(f in flags for f in FAST_COMPILE_FLAGS.split()), flags


def test_properties_draw_fewer_examples_only_in_runs_without_the_slow_target(request):
    import hypothesis
    from conftest import DEFAULT_EXAMPLES, SLOW_EXAMPLES, _hypothesis_profile

    assert DEFAULT_EXAMPLES < SLOW_EXAMPLES
    for markexpr, examples in (
        ("not slow and not docs", DEFAULT_EXAMPLES),
        ("", SLOW_EXAMPLES),
        ("slow", SLOW_EXAMPLES),
    ):
        profile = hypothesis.settings.get_profile(_hypothesis_profile(markexpr))
        assert profile.max_examples == examples and profile.deadline is None
    this_run = _hypothesis_profile(request.config.option.markexpr or "")
    assert hypothesis.settings.default.max_examples == (
        hypothesis.settings.get_profile(this_run).max_examples
    )
