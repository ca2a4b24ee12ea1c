"""The figures' typed parameters (issue 64): the claims read record fields, never text; each
record renders the committed README's "Parameters." line; and `reproduce` hands every figure
one `FigureContext` (its mode and cache)."""

import ast
import json
import warnings
from pathlib import Path

import pytest

import inductheory.figures._reproduce as module
from inductheory.figures import FIGURES, _stats
from inductheory.figures._figure import (
    Figure,
    FigureContext,
    FigureData,
    FigureParameters,
)
from inductheory.figures._parameters import exponent_text

ROOT = Path(__file__).resolve().parents[1]
FIGURES_DIR = ROOT / "inductheory" / "figures"
FOLDERS = ("figures", "figures/quick")
TYPED = [
    name for name, f in FIGURES.items() if f.data.__annotations__.get("parameters")
]


def test_the_figures_that_read_parameters_have_records():
    assert sorted(TYPED) == sorted(
        [
            "approximate_geometry",
            "boundary",
            "convergence_rates",
            "coverage",
            "effective_offsets",
            "mitigations",
            "phase_uniformity",
            "regime_boundary",
            "relaxation_ladder",
            "theorem1_oracle",
            "toy_stability",
        ]
    )


def _regex_calls(path: Path) -> list[str]:
    """The `re.<function>(...)` calls in a module's source, as `name:line`."""
    tree = ast.parse(path.read_text())
    return [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "re"
    ]


def test_no_figure_module_reads_parameters_with_a_regular_expression():
    assert not hasattr(_stats, "stored_parameter")
    calls = [c for p in sorted(FIGURES_DIR.glob("*.py")) for c in _regex_calls(p)]
    # the only regular expressions left: the previous README's command line and the
    # headings' anchors, neither a parameter
    assert {c.split(":")[0] for c in calls} <= {"_readme.py", "_headlines.py"}, calls
    for name in ("_readme.py", "_headlines.py"):
        source = (FIGURES_DIR / name).read_text()
        assert "parameters" not in "".join(
            line for line in source.splitlines() if "re." in line
        )


def test_no_claim_indexes_its_parameters_by_name():
    for path in sorted(FIGURES_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "parameters"
            ):
                raise AssertionError(f"{path.name}:{node.lineno} indexes .parameters")


def _committed_parameters_line(folder: str, name: str) -> str:
    """The "Parameters." line of `name`'s section in the committed README, as it reads."""
    text = (ROOT / folder / "README.md").read_text()
    section = next(
        chunk for chunk in text.split("\n## ") if f"![{name}]({name}.png)" in chunk
    )
    (line,) = [x for x in section.splitlines() if x.startswith("**Parameters.** ")]
    return line.removeprefix("**Parameters.** ")


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", TYPED)
def test_the_record_renders_the_committed_parameters_line(name, folder):
    path = ROOT / folder / "data" / f"{name}.json"
    if not path.exists():
        pytest.skip(f"no {path}")
    stored = json.loads(path.read_text())
    record = FIGURES[name].record(stored)
    assert isinstance(record.parameters, FigureParameters)
    # typed values, not their text
    assert not all(isinstance(v, str) for v in stored["parameters"].values())
    again = type(record.parameters).from_dict(record.parameters.to_dict())
    assert again == record.parameters
    text = record.parameter_text()
    ordered = sorted(text.items(), key=lambda kv: (kv[0] != "task", kv[0]))
    assert "; ".join(f"{k} = {v}" for k, v in ordered) == _committed_parameters_line(
        folder, name
    )


def test_a_changed_field_changes_the_line_and_the_claim():
    stored = json.loads((ROOT / "figures/data/coverage.json").read_text())
    figure = FIGURES["coverage"]
    claim = figure.claim_text(stored)
    stored["parameters"]["seeds"] = 128
    assert "128 seeds per point" in figure.parameter_text(stored)["flow"]
    assert figure.claim_text(stored) != claim


def test_exponent_text():
    assert [exponent_text(x) for x in (1e-3, 1e7, 50_000, 1e-6)] == [
        "1e-3",
        "1e7",
        "5e4",
        "1e-6",
    ]


def _stub(seen: list) -> Figure:
    def compute(context):
        seen.append(context)
        return FigureData(parameters={"quick": context.quick}, findings="stub")

    def draw(data):
        import matplotlib.pyplot as plt

        return plt.figure(figsize=(1, 1))

    return Figure("stub", "Stub", "none", compute, draw, data=FigureData)


@pytest.mark.parametrize(
    "cache,expected",
    [(False, None), ("given", "given/quick"), (True, "default/reproduce/quick")],
)
def test_reproduce_hands_one_context_to_compute(cache, expected, tmp_path, monkeypatch):
    seen = []
    monkeypatch.setitem(module.FIGURES, "stub", _stub(seen))
    monkeypatch.setattr(module, "default_cache_dir", lambda: tmp_path / "default")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module.reproduce(
            tmp_path / "out",
            quick=True,
            only=["stub"],
            cache=tmp_path / cache if cache == "given" else cache,
            progress=False,
        )
    want = None if expected is None else tmp_path / expected
    assert seen == [FigureContext(quick=True, cache=want)]
