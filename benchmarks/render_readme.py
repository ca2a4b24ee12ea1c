"""Render figures/README.md (or figures/quick/README.md) again from the committed data.

For a change of a claim's wording or of a table's labels only: the numbers come from the stored
data/*.json, as `inductheory reproduce` renders them (a test checks that the committed README is
this rendering).

    python benchmarks/render_readme.py figures
    python benchmarks/render_readme.py figures/quick --quick
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from inductheory.figures import figure_names, readme


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    path = args.folder / "README.md"
    command = re.search(r"Command: `([^`]*)`", path.read_text()).group(1)
    data = {
        name: json.loads((args.folder / "data" / f"{name}.json").read_text())
        for name in figure_names()
    }
    path.write_text(readme(data, args.quick, command))


if __name__ == "__main__":
    main()
