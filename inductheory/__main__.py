"""`python -m inductheory`: the command line through its one entry point, `_entry.main` (the
console script's)."""

import sys

from inductheory._entry import main

sys.exit(main())
