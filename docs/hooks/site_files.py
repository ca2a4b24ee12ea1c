"""MkDocs hook: put the repository's figures and notebooks into the site at build time.

The PNG/PDF figures in `figures/` and the notebooks in `notebooks/` stay where `inductheory
reproduce`
and the tests expect them; nothing is copied into `docs/` in git. At build time this hook

- adds `figures/*.png`, `figures/*.pdf` and `notebooks/*.ipynb` to the site's files (the
  notebooks are
  then rendered by mkdocs-jupyter, which is why this runs before the plugins' `on_files`), and
- replaces the marker `<!-- figures/README.md -->` in `docs/figures.md` with the figure sections of
  `figures/README.md` (claim, parameters, measured numbers), its links pointing at `figures/`.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- figures/README.md -->"


@event_priority(100)
def on_files(files, config):
    for pattern in ("figures/*.png", "figures/*.pdf", "notebooks/*.ipynb"):
        for path in sorted(ROOT.glob(pattern)):
            rel = path.relative_to(ROOT).as_posix()
            if files.get_file_from_path(rel) is None:
                files.append(
                    File(
                        rel, str(ROOT), config["site_dir"], config["use_directory_urls"]
                    )
                )
    return files


def figure_sections(readme: str) -> str:
    """The `## ...` sections of figures/README.md, links rewritten relative to docs/figures.md."""
    start = readme.find("\n## ")
    body = readme[start + 1 :] if start >= 0 else readme
    # Links to the figure files: `](name.png)` -> `](figures/name.png)`; leave absolute URLs alone.
    return re.sub(r"\]\((?!https?://|/|#)([^)\s]+)\)", r"](figures/\1)", body)


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "figures.md" and MARKER in markdown:
        readme = (ROOT / "figures" / "README.md").read_text(encoding="utf-8")
        markdown = markdown.replace(MARKER, figure_sections(readme))
    return markdown
