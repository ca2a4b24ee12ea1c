"""The front door: README.md within its budget, its set-up block and docs/performance.md rendered
from benchmarks/results/, docs/cli.md's table from the command line's registry, docs/index.md's
results at a glance from the figures' data, and no run-by-run timings in the prose."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_LINES = 120  # the budget: a researcher reads it in five minutes
TIMING_LINES = (
    3  # lines with a time, a processor or a memory size (the set-up block's two)
)
TIMING = re.compile(
    r"\b\d+(\.\d+)? ?(s|sec|min|minutes|CPU-min\w*|CPU-s|GiB|MiB)\b|EPYC|Xeon|peak RSS",
)
COMMANDS = (
    "python -m pip install -e . && inductheory reproduce",
    'python -m pip install -e ".[test,docs]" && python -m pytest -n 2 --dist loadfile',
)


def _module(path: Path, name: str):
    import sys

    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses read their module's namespace
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path.parent))


def _prose(text: str) -> list[str]:
    # the lines outside fenced code blocks
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def test_readme_within_budget():
    text = README.read_text()
    lines = text.splitlines()
    assert len(lines) <= README_LINES, (
        f"README.md has {len(lines)} lines, budget {README_LINES}"
    )
    timing = [line for line in _prose(text) if TIMING.search(line)]
    assert len(timing) <= TIMING_LINES, timing


def test_readme_first_screen_has_picture_and_the_two_commands():
    lines = README.read_text().splitlines()
    first = "\n".join(lines[:35])
    assert "![" in first and "figures/overview.png" in first
    for command in COMMANDS:
        assert command in first


@pytest.mark.parametrize("page", ["getting-started.md", "cli.md"])
def test_docs_pages_carry_no_timing_history(page):
    prose = _prose((ROOT / "docs" / page).read_text())
    history = [
        line
        for line in prose
        if re.search(r"\d+ min \d+ s|CPU-min|\bin \w+ runs\b|alternating pairs,", line)
    ]
    assert not history, history


def test_performance_page_and_readme_block_are_their_rendering():
    results = _module(ROOT / "benchmarks" / "_results.py", "_results")
    loaded = results.load()
    assert loaded, "no benchmarks/results/*.json"
    assert (ROOT / "docs" / "performance.md").read_text() == results.performance_page(
        loaded
    ), (
        "docs/performance.md is not its rendering: run python benchmarks/render_performance.py"
    )
    text = README.read_text()
    assert results.with_setup_block(text, loaded) == text, (
        "README.md's set-up block is not its rendering: run python "
        "benchmarks/render_performance.py"
    )


def test_readme_times_are_the_slowest_results_rounded():
    # an independent reading of the result files: the slowest wall of each benchmark, in minutes
    import json

    walls: dict[str, float] = {}
    for path in (ROOT / "benchmarks" / "results").glob("*.json"):
        d = json.loads(path.read_text())
        walls[d["benchmark"]] = max(walls.get(d["benchmark"], 0.0), d["wall_s"]["high"])
    text = README.read_text()
    for benchmark in ("reproduce", "reproduce-quick", "suite"):
        assert f"about {max(1, round(walls[benchmark] / 60))} min" in text, benchmark


def test_result_files_name_their_machine_and_commit():
    import json

    for path in (ROOT / "benchmarks" / "results").glob("*.json"):
        d = json.loads(path.read_text())
        assert d["name"] == path.stem
        for key in ("command", "commit", "date", "processor", "cores", "wall_s"):
            assert d.get(key) not in (None, ""), (path.name, key)
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", d["date"]), path.name
        assert d["wall_s"]["low"] <= d["wall_s"]["high"], path.name


@pytest.mark.parametrize("page", ["cli.md", "index.md"])
def test_generated_doc_blocks_are_their_rendering(page):
    render = _module(ROOT / "docs" / "render.py", "docs_render")
    path = ROOT / "docs" / page
    text = path.read_text()
    assert render.with_block(path, text) == text, (
        f"docs/{page}'s generated block is not its rendering: run python docs/render.py"
    )


def test_cli_table_lists_every_subcommand():
    from inductheory.cli import SUBCOMMANDS

    text = (ROOT / "docs" / "cli.md").read_text()
    for name in SUBCOMMANDS:
        assert f"| [`{name}`](#{name}) |" in text
        assert f"\n## {name}\n" in text  # the row's link has its section


def test_readme_command_lines_parse():
    from inductheory.cli import build_parser

    parser = build_parser()
    text = README.read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    lines = [line for block in blocks for line in block.splitlines()]
    tour = [line.split("#")[0] for line in lines if line.startswith("inductheory ")]
    assert len(tour) >= 5
    for line in tour:
        parser.parse_args(shlex.split(line)[1:])
