"""The one entry point of the command line: the console script `inductheory` and `python -m
inductheory` both run `main`, which sets the process-wide options of the command line, then runs
it.

`EQX_ON_ERROR=nan` (unless the user set it): equinox runtime checks inside compiled flows then
return NaN instead of calling back to Python, which the command line reports as an explicit
non-finite status; programs without host callbacks can be kept in the persistent compilation
cache, so a second run of the same shape starts in seconds. Equinox reads the variable when it is
first imported, and both entry points import this package before `main` runs (the console
script imports `inductheory._entry`; `python -m inductheory` imports the package before its
`__main__`), so the package's `__init__` calls `command_line_environment` first, before it
imports equinox, when `is_command_line()` says that this process is the command. This module
imports nothing heavy. Library users are not affected.
"""

import os
import sys

# The process-wide options of the command line (set unless the user set them).
COMMAND_LINE_ENVIRONMENT = {"EQX_ON_ERROR": "nan"}


def command_line_environment() -> None:
    """Set the command line's process-wide options, before equinox is imported."""
    for name, value in COMMAND_LINE_ENVIRONMENT.items():
        os.environ.setdefault(name, value)


def run_as_main_module(name: str = "inductheory") -> bool:
    """Whether this process is `python -m <name>` and is still importing the package before its
    `__main__` runs (Python sets `sys.argv[0]` to "-m" until then)."""
    if sys.argv[:1] != ["-m"]:
        return False
    args = getattr(sys, "orig_argv", [])[1:]
    for i, arg in enumerate(args):
        if arg == "-m":
            return args[i + 1 : i + 2] == [name]
        if arg.startswith("-m"):
            return arg[2:] == name
    return False


def is_console_script(name: str = "inductheory") -> bool:
    """Whether this process runs the console script `name` (the script pip writes, whose
    `sys.argv[0]` is its path: `.../bin/inductheory`, or `inductheory.exe` on Windows)."""
    if not sys.argv:
        return False
    # either separator: a Windows launcher's path read on any system
    script = sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1]
    return os.path.splitext(script)[0] == name


def is_command_line() -> bool:
    """Whether this process is the command line (`is_console_script` or
    `run_as_main_module`)."""
    return is_console_script() or run_as_main_module()


def main() -> int:
    command_line_environment()
    from inductheory.cli import main as cli_main
    from inductheory.internal import tune_garbage_collector

    tune_garbage_collector()
    return cli_main()
