"""Every `it.NAME` and `inductheory.NAME...` that the package's docstrings and strings, and the
documentation, name resolves to something that exists: a function that moved (say from the top
level into a subpackage) leaves no reference behind."""

import ast
import importlib
import re
from pathlib import Path

import pytest

import inductheory as it

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "inductheory"
# `it.a.b` or `inductheory.a.b`, not part of a longer name or path
NAME = re.compile(r"(?<![\w./-])(?:it|inductheory)((?:\.[A-Za-z_]\w*)+)")
# prose about the package, besides its own sources (figures/README.md holds the figures' claims)
DOCUMENTS = [
    ROOT / "README.md",
    ROOT / "figures" / "README.md",
    ROOT / "proofs" / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "notebooks").glob("*.ipynb")),
]


def resolves(dotted: str) -> bool:
    """Whether `inductheory` + `dotted` is an attribute chain or an importable module."""
    parts = dotted.strip(".").split(".")
    obj = it
    for i, part in enumerate(parts):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module("inductheory." + ".".join(parts[: i + 1]))
        except ImportError:
            return False
    return True


def _strings(path: Path):
    """Every string constant of a module (docstrings, messages, claims), with its line; not the
    pieces of f-strings (`f"inductheory.cli._{name}"` names nothing until formatted)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pieces = {
        id(v)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for v in node.values
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in pieces
        ):
            yield node.lineno, node.value


def _unresolved(texts):
    return [
        f"{where}: {m.group(0)}"
        for where, text in texts
        for m in NAME.finditer(text)
        if not resolves(m.group(1))
    ]


def test_the_package_names_only_what_exists():
    texts = [
        (f"{path.relative_to(ROOT)}:{line}", text)
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in _strings(path)
    ]
    assert _unresolved(texts) == []


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_documentation_names_only_what_exists(path):
    text = path.read_text(encoding="utf-8")
    assert _unresolved([(path.relative_to(ROOT), text)]) == []


def test_a_name_that_left_the_top_level_is_caught():
    assert resolves(".flow.tail_coefficients") and resolves(".internal._memory")
    assert _unresolved([("probe", "see `it.use_cpu_devices()`")]) == [
        "probe: it.use_cpu_devices"
    ]
