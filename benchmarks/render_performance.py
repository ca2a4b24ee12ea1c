"""Render docs/performance.md and README.md's set-up block from benchmarks/results/*.json.

Run it after a benchmark wrote a result (a test checks that both are their rendering):

    python benchmarks/render_performance.py
"""

from __future__ import annotations

import sys

from _results import PERFORMANCE, README, load, performance_page, with_setup_block


def main() -> int:
    results = load()
    PERFORMANCE.write_text(performance_page(results))
    README.write_text(with_setup_block(README.read_text(), results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
