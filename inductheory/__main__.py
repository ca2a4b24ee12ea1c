"""`python -m inductheory`: the command line through its one entry point,
`_inductheory_entry.main` (the console script's)."""

import sys

from _inductheory_entry import main

sys.exit(main())
