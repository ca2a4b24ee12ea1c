"""Recompute the analysis of the paper_matrix and mitigations figures from their committed data
and draw them again, without training or running a flow.

For a change of the figures' statistics or of their comparison with the paper: both figures
store what their analysis needs (per-seed, per-phase accuracies; the mitigation table), so
`paper_matrix.restated` and `mitigations.restated` give the data that `inductheory reproduce`
would (a test checks the committed data against them).

    python benchmarks/restate_figures.py figures   # or figures/quick (its size is read from
    python benchmarks/render_readme.py figures     # the stored parameters); then the README
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from inductheory.experiments._paper_matrix import FULL_SIZE, QUICK_SIZE
from inductheory.figures import mitigations, paper_matrix, redraw
from inductheory.internal._io import write_json_atomic


def restate(folder: Path) -> None:
    """Restate and redraw both figures of `folder` (`figures` or `figures/quick`)."""
    data = folder / "data"
    matrix = json.loads((data / "paper_matrix.json").read_text())
    # the size whose parameters the stored matrix has (full or quick)
    (size,) = [
        s
        for s in (FULL_SIZE, QUICK_SIZE)
        if paper_matrix.parameters(s) == matrix["parameters"]
    ]
    new = {
        "paper_matrix": paper_matrix.restated(matrix, size),
        "mitigations": mitigations.restated(
            json.loads((data / "mitigations.json").read_text())
        ),
    }
    for name, record in new.items():
        write_json_atomic(data / f"{name}.json", record.to_dict())
    redraw(folder, only=list(new))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    restate(parser.parse_args().folder)
