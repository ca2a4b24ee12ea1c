"""The documentation site builds with `mkdocs build --strict` and stays inside the repository."""

from __future__ import annotations

import ast
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


def _check_rendering():
    """docs/check_rendering.py as a module (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "check_rendering", ROOT / "docs" / "check_rendering.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


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
    for n in range(1, 12):
        assert f'id="{n}-' in html, f"theory page lacks the heading of §{n}"
    assert 'class="arithmatex"' in html  # math went through pymdownx.arithmatex


@needs_mkdocs
def test_trained_page_is_built(site):
    html = (site / "trained" / "index.html").read_text(encoding="utf-8")
    for anchor in ("the-model", "equivalence-with-the-full-flow"):
        assert f'id="{anchor}"' in html, f"trained page lacks the section {anchor}"
    assert 'class="arithmatex"' in html


def test_theory_and_home_pages_link_the_trained_page():
    """In their text, not only through the navigation every page carries."""
    for page in ("theory.md", "index.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        assert "](trained.md)" in text, f"docs/{page} does not link docs/trained.md"


@needs_mkdocs
def test_api_notebook_and_figure_pages_are_built(site):
    assert "inductheory.Task" in (site / "api" / "config" / "index.html").read_text(
        encoding="utf-8"
    )
    for name in ("oracle_explorer", "flow_explorer", "two_head_toy", "train_explorer"):
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


def _docstrings(tree: ast.AST):
    """Every docstring-like string of a module: module, class, function and attribute docs."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            yield node.lineno, node.value.value


def test_no_docstring_line_starts_with_a_quote_marker():
    """Markdown reads a line that starts with `>` as a block quote, so the API reference would
    drop the `>` of `>= 1 - delta`; fenced code may hold such lines."""
    bad = []
    for path in sorted((ROOT / "inductheory").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for lineno, doc in _docstrings(tree):
            fence = False
            for line in doc.splitlines():
                stripped = line.lstrip()
                if stripped.startswith("```"):
                    fence = not fence
                elif not fence and stripped.startswith(">"):
                    bad.append(f"{path.relative_to(ROOT)}:{lineno}: {stripped}")
    assert not bad, "rewrap so no docstring line starts with '>':\n" + "\n".join(bad)


@needs_mkdocs
def test_api_pages_have_no_block_quotes(site):
    for page in sorted((site / "api").rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        assert "<blockquote>" not in html, f"{page.relative_to(site)} has a block quote"


@needs_mkdocs
def test_site_loads_nothing_from_the_network(site):
    """Scripts, stylesheets and fonts are the site's own (MathJax is vendored): no browser."""
    check = _check_rendering()
    assert check.external_assets(site) == []
    assert check.pages_without_renderer(site) == []


@pytest.mark.docs
@needs_mkdocs
def test_math_renders_offline_in_chromium(site):
    """The docs target: the theory page, a notebook page and an API page, opened in headless
    Chromium with no network, show their formulas rendered by the vendored MathJax."""
    check = _check_rendering()
    chromium = check.find_chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    problems = check.check_site(site, chromium)
    assert not problems, "\n".join(problems)


@needs_mkdocs
def test_long_signatures_are_formatted(site):
    """mkdocstrings breaks a long signature one parameter a line only with a formatter (ruff, in
    the docs extra); without one FlowConfig's signature is a single line off the page."""
    html = (site / "api" / "flows" / "index.html").read_text(encoding="utf-8")
    start = html.index('id="inductheory.FlowConfig"')
    signature = html[html.index('class="doc-signature', start) :]
    signature = signature[: signature.index("</code>")]
    assert (
        signature.count("__codelineno") > 10 * 3
    )  # three anchors per line, one line a field
