"""The documentation site builds with `mkdocs build --strict` and stays inside the repository."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"

needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None,
    reason="mkdocs is not installed (install the docs extra: pip install -e '.[docs]')",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (
        f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    )
    return out


@needs_mkdocs
def test_theory_page_is_built_with_its_sections(site):
    theory = site / "theory" / "index.html"
    assert theory.is_file()
    html = theory.read_text(encoding="utf-8")
    assert "§4" in html
    for n in range(1, 11):
        assert f'id="{n}-' in html, f"theory page lacks the heading of §{n}"
    assert 'class="arithmatex"' in html  # math went through pymdownx.arithmatex


@needs_mkdocs
def test_api_notebook_and_figure_pages_are_built(site):
    assert "inductheory.Task" in (site / "api" / "config" / "index.html").read_text(
        encoding="utf-8"
    )
    for name in ("oracle_explorer", "flow_explorer", "two_head_toy"):
        assert (site / "notebooks" / name / "index.html").is_file()
    figures = (site / "figures" / "index.html").read_text(encoding="utf-8")
    for png in sorted((ROOT / "figures").glob("*.png")):
        assert (site / "figures" / png.name).is_file()
        assert png.name in figures


@needs_mkdocs
def test_no_page_points_outside_the_repository(site):
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        for bad in (
            " ".join(("shared", "folder")),
            "../" + "shared",
        ):  # spelled apart: the repo never names it
            assert bad not in text, f"{page.relative_to(site)} contains {bad!r}"


def test_every_public_name_has_an_api_entry():
    """Each public name of inductheory/__init__.py appears as `::: inductheory.NAME` in
    docs/api/."""
    import inductheory

    documented = set()
    for page in API.glob("*.md"):
        documented |= set(
            re.findall(
                r"^::: inductheory\.(\w+)\s*$", page.read_text(encoding="utf-8"), re.M
            )
        )
    public = {
        name
        for name, value in vars(inductheory).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert not public - documented, (
        f"add to a page under docs/api/: {sorted(public - documented)}"
    )
    assert not documented - public, f"not public names: {sorted(documented - public)}"
