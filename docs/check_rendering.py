"""Check that the documentation site renders its math offline, in a real browser.

Builds the site (`mkdocs build --strict`) into a temporary directory, serves it on 127.0.0.1,
opens the theory page, a notebook page and an API page in headless Chromium with every host name
but 127.0.0.1 unresolvable (so nothing can come from the network), and counts the formulas
MathJax rendered (`mjx-container` elements). It fails when a page has fewer than its minimum, when a
formula failed to parse (`mjx-merror`), when raw TeX delimiters (`\\(`, `\\[`, or `$...$` in a
notebook's markdown cell) remain in the page's text outside code, or when any page of the site
loads a script, stylesheet or font from another host or a page with math does not load the
vendored MathJax. A missing or broken renderer therefore fails it: no formula is counted.

**Arguments** (command line):

- `--site DIR`: check an already built site instead of building one.
- `--chromium PATH`: the browser (default: `chromium` on PATH, else `/usr/bin/chromium`).

**Returns:** exit status 0 when every check passes, 1 otherwise; the counts are printed.

Example (Debian: `apt-get install chromium`), from the repository root:

```
python docs/check_rendering.py
python -m pytest -m docs          # the same check, as the docs target of the test suite
```
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# page (relative to the site root) -> fewest rendered formulas accepted; the theory page has
# hundreds, the trained-model page over a hundred, a notebook's markdown cells at least a few, an
# API page's docstrings dozens
PAGES = {
    "theory/": 200,
    "trained/": 100,
    "notebooks/flow_explorer/": 5,
    "api/flows/": 40,
}
RENDERER = "javascripts/vendor/mathjax/tex-chtml.js"

# Text of these elements is not prose: code keeps its `$` and `\(`, a rendered formula its TeX.
_SKIP = {"script", "style", "code", "pre", "textarea", "svg", "mjx-container"}
_VOID = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
    "track", "wbr",
}  # fmt: skip
_RAW_TEX = re.compile(r"\\\(|\\\[")
_RAW_DOLLAR = re.compile(r"\$[^$\s][^$]*\$")
_EXTERNAL = re.compile(
    r"<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=[\"'](?:https?:)?//[^\"']+",
    re.I,
)
_CSS_EXTERNAL = re.compile(
    r"@import\s+(?:url\()?[\"']?(?:https?:)?//|url\([\"']?https?://"
)


def find_chromium() -> str | None:
    """The Chromium executable: `chromium` on PATH, else `/usr/bin/chromium`, else None."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


def build_site(out: Path) -> None:
    """`mkdocs build --strict` of the repository into `out`; raises with mkdocs' output."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
        )


@contextlib.contextmanager
def serve(site: Path) -> Iterator[str]:
    """Serve `site` on 127.0.0.1 (a free port) while the block runs; yields the base URL."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:  # one line per request is noise here
            pass

    handler = functools.partial(Quiet, directory=str(site))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()
            thread.join()


def dump_dom(url: str, chromium: str, *, timeout: float = 120) -> str:
    """The DOM of `url` after its scripts ran, from headless Chromium, offline but for 127.0.0.1."""
    with tempfile.TemporaryDirectory(prefix="inductheory-chromium-") as profile:
        proc = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                # every host but the local server fails to resolve: a CDN cannot stand in
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                # virtual time runs the page's scripts (MathJax typesets asynchronously) until
                # the page is idle or the budget is spent
                "--virtual-time-budget=10000",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if proc.returncode != 0 or "</html>" not in proc.stdout:
        raise RuntimeError(
            f"chromium failed on {url} (rc {proc.returncode}):\n{proc.stderr}"
        )
    return proc.stdout


class _Math(html.parser.HTMLParser):
    """Counts rendered formulas and collects prose text (outside code and formulas)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.formulas = 0
        self.errors = 0
        self.text: list[str] = []  # prose of the page
        self.cells: list[str] = []  # prose of notebook markdown cells
        self._stack: list[str] = []
        self._skip = 0  # depth inside elements of _SKIP
        self._cell: int | None = None  # stack depth of the enclosing markdown cell

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "mjx-container":
            self.formulas += 1
        elif tag == "mjx-merror":
            self.errors += 1
        if tag in _VOID:
            return
        self._stack.append(tag)
        if tag in _SKIP:
            self._skip += 1
        classes = (dict(attrs).get("class") or "").split()
        if self._cell is None and "jp-RenderedMarkdown" in classes:
            self._cell = len(self._stack)

    def handle_endtag(self, tag) -> None:
        if tag in _VOID or tag not in self._stack:
            return
        while self._stack:  # a serialized DOM closes every element; be lenient anyway
            top = self._stack.pop()
            if top in _SKIP:
                self._skip -= 1
            if self._cell is not None and len(self._stack) < self._cell:
                self._cell = None
            if top == tag:
                break

    def handle_data(self, data) -> None:
        if self._skip:
            return
        self.text.append(data)
        if self._cell is not None:
            self.cells.append(data)


@dataclass
class PageReport:
    """What one page showed: rendered formulas, parse errors and leftover raw TeX."""

    page: str
    formulas: int
    errors: int
    raw: list[str] = field(default_factory=list)

    def problems(self, minimum: int) -> list[str]:
        """Why this page fails (empty when it passes)."""
        out = []
        if self.formulas < minimum:
            out.append(
                f"{self.page}: {self.formulas} rendered formulas, expected >= {minimum}"
            )
        if self.errors:
            out.append(
                f"{self.page}: {self.errors} formulas failed to parse (mjx-merror)"
            )
        if self.raw:
            out.append(f"{self.page}: raw TeX left in the text: {self.raw[:5]}")
        return out


def inspect_dom(page: str, dom: str) -> PageReport:
    """Count the formulas of a dumped DOM and find raw TeX left in its prose."""
    parser = _Math()
    parser.feed(dom)
    parser.close()
    text, cells = "".join(parser.text), "".join(parser.cells)

    def around(match: re.Match, source: str) -> str:
        return source[max(match.start() - 30, 0) : match.end() + 30].replace("\n", " ")

    raw = [around(m, text) for m in _RAW_TEX.finditer(text)]
    raw += [around(m, cells) for m in _RAW_DOLLAR.finditer(cells)]
    return PageReport(page, parser.formulas, parser.errors, raw)


def external_assets(site: Path) -> list[str]:
    """Scripts, stylesheets, fonts and images that a built page would load from another host."""
    found = []
    for path in sorted(site.rglob("*")):
        if path.suffix not in (".html", ".css"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        pattern = _EXTERNAL if path.suffix == ".html" else _CSS_EXTERNAL
        found += [
            f"{path.relative_to(site)}: {m.group(0)}" for m in pattern.finditer(text)
        ]
    return found


def pages_without_renderer(site: Path) -> list[str]:
    """Pages with math (arithmatex output or notebook markdown) that do not load the renderer."""
    if not (site / RENDERER).is_file():
        return [f"{RENDERER} is missing from the site"]
    missing = []
    for path in sorted(site.rglob("*.html")):
        text = path.read_text(encoding="utf-8", errors="replace")
        has_math = 'class="arithmatex"' in text or "jp-RenderedMarkdown" in text
        if has_math and RENDERER not in text:
            missing.append(f"{path.relative_to(site)} does not load {RENDERER}")
    return missing


def check_site(site: Path, chromium: str, pages: dict[str, int] = PAGES) -> list[str]:
    """Every problem found in a built site (empty when it renders); prints the counts."""
    problems = [f"loads from the network: {a}" for a in external_assets(site)]
    problems += pages_without_renderer(site)
    with serve(site) as base:
        for page, minimum in pages.items():
            report = inspect_dom(page, dump_dom(base + page, chromium))
            print(
                f"{page}: {report.formulas} rendered formulas (minimum {minimum}), "
                f"{report.errors} errors, {len(report.raw)} raw TeX"
            )
            problems += report.problems(minimum)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, help="an already built site to check")
    parser.add_argument("--chromium", help="the Chromium executable")
    args = parser.parse_args(argv)
    chromium = args.chromium or find_chromium()
    if chromium is None:
        print("chromium not found (Debian: apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="inductheory-site-") as tmp:
        site = args.site
        if site is None:
            site = Path(tmp)
            build_site(site)
        problems = check_site(site, chromium)
    for problem in problems:
        print("FAIL", problem, file=sys.stderr)
    print("math renders offline" if not problems else f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
