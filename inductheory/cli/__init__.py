"""The `inductheory` command line: one module per subcommand, each with `register(subparsers)`."""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

# Each name is a module inductheory/cli/_<name>.py exposing register(subparsers).
SUBCOMMANDS = ("loss", "flow", "oracle", "sweep", "reproduce", "toy")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inductheory",
        description="Theory simulator for the idealized induction task behind chunked KV-cache phase sensitivity.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"inductheory.cli._{name}").register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from .._paths import enable_compilation_cache

    enable_compilation_cache()  # a second run of the same shape reuses compiled programs
    shown = set()

    def show(message, category, filename, lineno, file=None, line=None):
        # Settings outside the theorems' assumptions: one plain line each, as soon as they occur.
        if str(message) not in shown:
            shown.add(str(message))
            print(f"inductheory: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        try:
            return int(args.func(args) or 0)
        except ValueError as err:
            print(f"inductheory {args.command}: error: {err}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
