"""The package's shape: subpackages by concept, imports that run one way, a small top level.

Layers, lowest first: internal <- model <- (oracle, flow, toy) <- trained <- experiments <-
(figures, cli). A module may import its own subpackage and any lower layer; the theorems
(oracle, flow) and the toy do not import each other, and the library never imports figures or
cli.
"""

import ast
import types
from pathlib import Path

import pytest

import inductheory as it

PACKAGE = Path(it.__file__).parent
LAYER = {
    "internal": 0,
    "model": 1,
    "oracle": 2,
    "flow": 2,
    "toy": 2,
    "trained": 3,
    "experiments": 4,
    "figures": 5,
    "cli": 6,
}
SUBPACKAGES = sorted(LAYER)


def _subpackage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "inductheory" else None


def _imports(path: Path, source: str) -> list[tuple[int, str]]:
    """(line, absolute module) of every inductheory import in `path`, function bodies
    included."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                names = (
                    [target]
                    if node.module
                    else [f"{target}.{a.name}" for a in node.names]
                )
            else:
                names = [node.module or ""]
            found += [(node.lineno, n) for n in names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return [(line, m) for line, m in found if m.split(".")[0] == "inductheory"]


def _upward_imports(path: Path, source: str | None = None) -> list[str]:
    if source is None:
        source = path.read_text(encoding="utf-8")
    own = _subpackage_of(
        ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    )
    if own not in LAYER:
        return []
    bad = []
    for line, module in _imports(path, source):
        target = _subpackage_of(module)
        if target is None or target == own:
            if target is None and module == "inductheory":
                bad.append(f"{path.name}:{line} imports the top-level package")
            continue
        if target not in LAYER:  # a top-level private module
            continue
        if LAYER[target] > LAYER[own] or (LAYER[target] == LAYER[own] and own != "cli"):
            bad.append(f"{path.relative_to(PACKAGE)}:{line} imports {module}")
    return bad


def test_imports_run_one_way():
    bad = [b for path in sorted(PACKAGE.rglob("*.py")) for b in _upward_imports(path)]
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def test_the_layering_check_catches_an_upward_import():
    """The check itself can fail: a model module importing the flow, and one theorem
    importing the other, are reported."""
    upward = (
        "from ..flow._config import FlowConfig\nfrom ..internal._io import to_json\n"
    )
    assert _upward_imports(PACKAGE / "model" / "_probe.py", upward) == [
        "model/_probe.py:1 imports inductheory.flow._config"
    ]
    lateral = "def f():\n    from ..oracle._point import oracle_point\n"
    assert _upward_imports(PACKAGE / "flow" / "_probe.py", lateral) == [
        "flow/_probe.py:2 imports inductheory.oracle._point"
    ]
    top = "import inductheory as it\n"
    assert _upward_imports(PACKAGE / "experiments" / "_probe.py", top) == [
        "_probe.py:1 imports the top-level package"
    ]


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_each_subpackage_says_what_lives_there_and_what_it_may_import(name):
    module = getattr(it, name, None) or __import__(
        f"inductheory.{name}", fromlist=["_"]
    )
    doc = module.__doc__ or ""
    assert len(doc.split()) >= 15, f"inductheory.{name} has no module docstring"
    if name not in ("figures", "cli"):
        assert "May import" in doc or "may import" in doc, name


def test_no_flat_private_modules_left_at_the_top():
    flat = sorted(p.name for p in PACKAGE.glob("_*.py") if not p.name.startswith("__"))
    assert flat == [], flat  # everything lives in a subpackage


def test_top_level_is_small_and_infrastructure_free():
    public = [n for n, v in vars(it).items() if not n.startswith("_")]
    names = [n for n in public if not isinstance(getattr(it, n), types.ModuleType)]
    assert len(names) <= 60
    for infra in ("use_cpu_devices", "enable_compilation_cache", "broadcast_lanes"):
        assert not hasattr(it, infra) and hasattr(it.internal, infra)
