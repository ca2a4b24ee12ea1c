"""Options declared as data (`inductheory/cli/_declare.py`): what `add_options` gives argparse."""

import argparse

import pytest

from inductheory.cli._declare import (
    QUIET,
    Option,
    add_options,
    count,
    output_dir,
    prose,
    switch,
)


def _parser(*options):
    p = argparse.ArgumentParser(exit_on_error=False)
    add_options(p, *options)
    return p


def test_count_states_its_default_and_checks_its_bound():
    option = count("--seeds", 2, 16, "number of seeds")
    assert option.help == "number of seeds (default 16)"
    p = _parser(option)
    assert p.parse_args([]).seeds == 16
    assert p.parse_args(["--seeds", "1e1"]).seeds == 10
    with pytest.raises(argparse.ArgumentError, match="seeds must be >= 2"):
        p.parse_args(["--seeds", "1"])
    assert count("--chunk", 1, None, "automatic").help == "automatic"


def test_switches_positionals_and_plain_options():
    p = _parser(
        Option("file", "a file"),
        QUIET,
        switch("--tied", "one gate"),
        Option("--only", "names", str, metavar="NAMES"),
        Option("--branch", "role", default="key", choices=("key", "value")),
        Option("--seeds", argparse.SUPPRESS, dest="old_seeds"),
        output_dir("where"),
    )
    args = p.parse_args(["f.npz", "--quiet", "--branch", "value"])
    assert (args.file, args.quiet, args.tied, args.only) == ("f.npz", True, False, None)
    assert (args.branch, args.old_seeds, args.out) == ("value", None, None)
    with pytest.raises(argparse.ArgumentError):
        p.parse_args(["f.npz", "--branch", "other"])
    assert "NAMES" in p.format_help() and "--seeds" not in p.format_help()


def test_prose_is_one_line():
    assert (
        prose("""
        two
        lines  here
    """)
        == "two lines here"
    )
