"""Console entry point of `inductheory`: sets the process-wide options of the command line,
then runs it.

`EQX_ON_ERROR=nan` (unless the user set it): equinox runtime checks inside compiled flows then
return NaN instead of calling back to Python, which the command line reports as an explicit
non-finite status; programs without host callbacks can be kept in the persistent compilation
cache, so a second run of the same shape starts in seconds. Equinox reads the variable when it is
first imported, hence this module, which runs before the package is imported. Library users are
not affected.
"""

import os
import sys


def main() -> int:
    os.environ.setdefault("EQX_ON_ERROR", "nan")
    from inductheory.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
