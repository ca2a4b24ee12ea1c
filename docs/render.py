"""Render the generated blocks of the documentation again: docs/cli.md's table of subcommands
(from the command line's registry) and docs/index.md's results at a glance (from the figures'
stored data). A test checks that both pages hold their rendering.

    python docs/render.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inductheory.cli import subcommand_table  # noqa: E402
from inductheory.figures import FIGURES, figure_names  # noqa: E402
from inductheory.figures._headlines import anchor, glance_lines  # noqa: E402

CLI, INDEX = ROOT / "docs" / "cli.md", ROOT / "docs" / "index.md"
BLOCKS = {
    CLI: ("<!-- subcommands: rendered by docs/render.py -->", "<!-- /subcommands -->"),
    INDEX: ("<!-- glance: rendered by docs/render.py -->", "<!-- /glance -->"),
}


def rendered(path: Path) -> list[str]:
    """The lines of `path`'s generated block, between its two markers."""
    if path == CLI:
        return subcommand_table()
    folder = ROOT / "figures"
    data = {
        n: json.loads((folder / "data" / f"{n}.json").read_text())
        for n in figure_names()
    }
    return glance_lines(
        data, lambda name: "figures.md#" + anchor(FIGURES[name].title, collapse=True)
    )


def with_block(path: Path, text: str) -> str:
    """`text` (the page) with its block replaced by its rendering."""
    begin, end = BLOCKS[path]
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"{path.name} has no generated block ({begin} ... {end})")
    body = "\n".join([begin, "", *rendered(path), "", end]).replace("\n\n\n", "\n\n")
    return pattern.sub(lambda _: body, text)


def main() -> int:
    for path in BLOCKS:
        path.write_text(with_block(path, path.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
