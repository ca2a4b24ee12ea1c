"""Recompute the analysis of the paper_matrix and mitigations figures from their committed data
and draw them again, without training or running a flow.

For a change of the figures' statistics or of their comparison with the paper: both figures
store what their analysis needs (per-seed, per-phase accuracies; the mitigation table), so
`paper_matrix.restated` and `mitigations.restated` give the data that `inductheory reproduce`
would (a test checks the committed data against them).

    python benchmarks/restate_figures.py figures
    python benchmarks/restate_figures.py figures/quick --quick
    python benchmarks/render_readme.py figures   # then the README (--quick likewise)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from inductheory.experiments._paper_matrix import FULL_SIZE, QUICK_SIZE
from inductheory.figures import mitigations, paper_matrix, redraw
from inductheory.internal._io import write_json_atomic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    data = args.folder / "data"

    def stored(name):
        return json.loads((data / f"{name}.json").read_text())

    size = QUICK_SIZE if args.quick else FULL_SIZE
    new = {
        "paper_matrix": paper_matrix.restated(stored("paper_matrix"), size),
        "mitigations": mitigations.restated(stored("mitigations")),
    }
    for name, record in new.items():
        write_json_atomic(data / f"{name}.json", record.to_dict())
    redraw(args.folder, only=list(new))


if __name__ == "__main__":
    main()
