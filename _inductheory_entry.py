"""The one entry point of the command line: the console script `inductheory` and `python -m
inductheory` both run `main`, which sets the process-wide options of the command line, then runs
it.

`EQX_ON_ERROR=nan` (unless the user set it): equinox runtime checks inside compiled flows then
return NaN instead of calling back to Python, which the command line reports as an explicit
non-finite status; programs without host callbacks can be kept in the persistent compilation
cache, so a second run of the same shape starts in seconds. Equinox reads the variable when it is
first imported, hence this module, which runs before the package is imported. `python -m
inductheory` imports the package before its `__main__` runs, so the package's `__init__` calls
`command_line_environment` first when `run_as_main_module()` says that this process is that
command. Library users are not affected.
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


def main() -> int:
    command_line_environment()
    from inductheory.cli import main as cli_main
    from inductheory.internal import tune_garbage_collector

    tune_garbage_collector()
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
