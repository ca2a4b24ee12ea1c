"""Every Python block of README.md and docs/*.md runs, page by page in one namespace, at small
sizes; a block followed by a ```text title="output"``` block must print exactly that.

A block that is not meant to run in the default suite is marked on the line above it, with the
reason: `<!-- docs-test: slow: REASON -->` (it runs under `pytest -m slow`, with the rest of its
page) or `<!-- docs-test: skip: REASON -->` (never run). Sizes: seed counts and step budgets above
`SMALL` are cut to it, unless `INDUCTHEORY_DOCS_FULL_SIZES=1` is set (the way the notebooks read
`INDUCTHEORY_NOTEBOOK_QUICK`); a block whose text the cut changes has its output left unchecked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FULL_SIZES_ENV = "INDUCTHEORY_DOCS_FULL_SIZES"
SMALL = {"seeds": 16, "steps": 8}
FENCE = re.compile(
    r"(?:<!-- docs-test: (?P<mark>slow|skip): (?P<reason>[^>]*?) -->\n)?"
    r"```python\n(?P<code>.*?)```"
    r'(?:\s*```text title="output"\n(?P<output>.*?)```)?',
    re.S,
)


@dataclasses.dataclass(frozen=True)
class Block:
    page: str
    line: int
    code: str
    mark: str | None
    reason: str | None
    output: str | None


def blocks(path: Path) -> list[Block]:
    text = path.read_text()
    return [
        Block(
            path.name,
            text.count("\n", 0, m.start("code")) + 1,
            m.group("code"),
            m.group("mark"),
            m.group("reason"),
            m.group("output"),
        )
        for m in FENCE.finditer(text)
    ]


def small(code: str) -> str:
    if os.environ.get(FULL_SIZES_ENV) == "1":
        return code

    def cut(m):
        return f"{m.group(1)}={min(int(m.group(2)), SMALL[m.group(1)])}"

    return re.sub(rf"\b({'|'.join(SMALL)})=(\d+)\b", cut, code)


def run_page(path: Path, *, slow: bool, tmp_path: Path, monkeypatch) -> int:
    # in a folder of its own (blocks write runs/...), with the repository's figures beside them
    (tmp_path / "figures").symlink_to(ROOT / "figures")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    ran = 0
    for b in blocks(path):
        if b.mark == "skip" or (b.mark == "slow" and not slow):
            continue
        code = small(b.code)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the pages show warnings on purpose
            try:
                exec(compile(code, f"{b.page}:{b.line}", "exec"), namespace)
            except Exception as err:
                raise AssertionError(
                    f"{b.page}, block at line {b.line}: {err!r}"
                ) from err
        if b.output is not None and code == b.code:
            assert out.getvalue().rstrip() == b.output.rstrip(), f"{b.page}:{b.line}"
        ran += 1
    return ran


def test_every_mark_names_its_reason():
    for path in PAGES:
        for b in blocks(path):
            if b.mark is not None:
                assert len(b.reason.split()) >= 3, f"{b.page}:{b.line}"


def test_pages_have_python_blocks():
    counted = {path.name: len(blocks(path)) for path in PAGES}
    assert counted["README.md"] >= 1 and counted["getting-started.md"] >= 3


@pytest.mark.parametrize("path", [p for p in PAGES if blocks(p)], ids=lambda p: p.name)
def test_python_blocks_run(path, tmp_path, monkeypatch):
    run_page(path, slow=False, tmp_path=tmp_path, monkeypatch=monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    [p for p in PAGES if any(b.mark == "slow" for b in blocks(p))],
    ids=lambda p: p.name,
)
def test_python_blocks_run_with_the_slow_ones(path, tmp_path, monkeypatch):
    run_page(path, slow=True, tmp_path=tmp_path, monkeypatch=monkeypatch)
