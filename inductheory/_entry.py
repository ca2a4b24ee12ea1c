"""The one entry point of the command line: the console script `inductheory` and `python -m
inductheory` both run `main`, which sets the process-wide options of the command line, then runs
it.

`EQX_ON_ERROR=nan` (unless the user set it): equinox runtime checks inside compiled flows then
return NaN instead of calling back to Python, which the command line reports as an explicit
non-finite status; programs without host callbacks can be kept in the persistent compilation
cache, so a second run of the same shape starts in seconds. Equinox reads the variable when it is
first imported: the package's `__init__` imports no equinox (its names load on first use), and
neither does this module before `main` has set the variable, so both entry points set it in time.
Library users are not affected.

May import: nothing of `inductheory` at module level (`main` imports the command line).
"""

import os
import sys

# The process-wide options of the command line (set unless the user set them).
COMMAND_LINE_ENVIRONMENT = {"EQX_ON_ERROR": "nan"}


def command_line_environment() -> None:
    """Set the command line's process-wide options, before equinox is imported."""
    for name, value in COMMAND_LINE_ENVIRONMENT.items():
        os.environ.setdefault(name, value)


def main() -> int:
    """Run the command line (`inductheory.cli.main`) with its process-wide options set and the
    garbage collector tuned; returns its exit status.

    ```python
    sys.exit(main())  # what the console script and `python -m inductheory` do
    ```
    """
    command_line_environment()
    from .cli import main as cli_main
    from .internal import tune_garbage_collector

    tune_garbage_collector()
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
