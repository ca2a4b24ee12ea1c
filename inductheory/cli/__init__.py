"""The `inductheory` command line: one module per subcommand, each with `register(subparsers)`.

Exit statuses: 0 success; 1 the run finished but its result is not valid (non-finite numbers,
failed flow seeds without `--allow-failures`) or an unexpected internal error; 2 a bad argument
or setting; 3 the run would not fit in memory (refused before allocating); 130 interrupted
(Ctrl-C). Every error is one line on stderr, `inductheory CMD: error: ...`; set
`INDUCTHEORY_DEBUG=1` to get the Python traceback of unexpected errors as well.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
import warnings

from ._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_MEMORY,
    EXIT_USAGE,
    CLIError,
    OneLineParser,
    command_prefix,
)

# Each name is a module inductheory/cli/_<name>.py exposing register(subparsers).
SUBCOMMANDS = (
    "loss",
    "flow",
    "oracle",
    "sweep",
    "train",
    "matrix",
    "reproduce",
    "toy",
    "gates",
)
DEBUG_ENV = "INDUCTHEORY_DEBUG"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="inductheory",
        description="Theory simulator for the idealized induction task behind chunked "
        "KV-cache phase sensitivity.",
        epilog="Exit status: 0 ok, 1 invalid result or failed seeds, 2 bad argument, 3 "
        "not enough memory, "
        "130 interrupted. INDUCTHEORY_DEBUG=1 shows tracebacks of unexpected errors.",
    )
    from ..internal._io import library_version

    parser.add_argument(
        "--version", action="version", version=f"inductheory {library_version()}"
    )
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=OneLineParser
    )
    for name in SUBCOMMANDS:
        importlib.import_module(f"inductheory.cli._{name}").register(sub)
    return parser


def subcommand_table() -> list[str]:
    """docs/cli.md's table of subcommands, from the parser's own registry (`SUBCOMMANDS` and each
    subcommand's help), as Markdown lines; a test checks that the page holds it."""
    import argparse

    parser = build_parser()
    action = next(
        a for a in parser._actions if isinstance(a, argparse._SubParsersAction)
    )
    helps = {c.dest: c.help for c in action._choices_actions}
    lines = ["| Subcommand | What it does |", "| --- | --- |"]
    lines += [f"| [`{name}`](#{name}) | {helps[name]} |" for name in SUBCOMMANDS]
    return lines


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except (
        SystemExit
    ) as exit_:  # --help (0) or a bad argument (2, one line already printed)
        return (
            exit_.code
            if isinstance(exit_.code, int)
            else (0 if exit_.code is None else EXIT_USAGE)
        )
    from ..internal._devices import use_cpu_devices
    from ..internal._paths import enable_compilation_cache
    from ..internal._programs import enable_program_store
    from ..internal._progress import heartbeat_on

    # a second run of the same shape reuses traced (stored) and compiled (cached) programs
    if enable_compilation_cache() is not None:
        enable_program_store()
    shown = set()
    # the command as typed: `inductheory sweep train paper: error: ...`
    prefix = command_prefix(args)

    from ..internal._warnings import FigureNote

    def show(message, category, filename, lineno, file=None, line=None):
        # Settings outside the theorems' assumptions: one plain line each, as soon as they occur.
        if str(message) not in shown:
            shown.add(str(message))
            kind = "note" if issubclass(category, FigureNote) else "warning"
            print(f"inductheory: {kind}: {_one_line(message)}", file=sys.stderr)

    def error(message, code):
        print(f"{prefix}: error: {_one_line(message)}", file=sys.stderr)
        return code

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        try:
            if (
                getattr(args, "cpu_devices", None) is not None
            ):  # before anything starts jax
                try:
                    use_cpu_devices(args.cpu_devices)
                except (
                    RuntimeError
                ) as err:  # main() called in a process whose jax already started
                    raise CLIError(str(err)) from None
            if getattr(args, "quiet", False) or args.command == "reproduce":
                # reproduce says what each figure's worker does itself
                return int(args.func(args) or 0)
            with heartbeat_on():
                return int(args.func(args) or 0)
        except CLIError as err:
            return error(err, err.code)
        except (ValueError, argparse.ArgumentTypeError) as err:
            return error(err, EXIT_USAGE)
        except MemoryError as err:
            # a MemoryError raised by an allocation has no message: never an empty line
            return error(
                str(err) or "out of memory while computing; try a smaller run",
                EXIT_MEMORY,
            )
        except KeyboardInterrupt:
            note = getattr(
                args,
                "interrupt_message",
                "interrupted; finished results (cached points) are kept",
            )
            return error(note, EXIT_INTERRUPTED)
        except Exception as err:  # last resort: one line, the traceback only on request
            if "RESOURCE_EXHAUSTED" in str(err):  # XLA could not allocate
                return error(f"out of memory: {str(err).splitlines()[0]}", EXIT_MEMORY)
            if os.environ.get(DEBUG_ENV):
                traceback.print_exc()
            return error(
                f"unexpected {type(err).__name__}: {err} (set {DEBUG_ENV}=1 for the traceback)",
                EXIT_FAILED,
            )
        finally:
            from ..internal._io import release_output_dirs

            release_output_dirs()  # the --out directories this command claimed


if __name__ == "__main__":
    sys.exit(main())
