"""Figure claims are formatted from the figures' data: every claim rendered from the committed
data stands in the README beside that data, and a claim changes when its data's numbers do (so
a hand-typed number fails)."""

import json
from pathlib import Path

import pytest

from inductheory.figures import FIGURES

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("figures", "figures/quick")

# Figures whose claim states no measured number: their numbers are in tables rendered from the
# data (`Figure.tables`), checked below to change with it.
NUMBERS_IN_TABLES = {"paper_matrix", "paper_mechanisms"}
# Not converted yet (long claims whose every number is still to be traced to the data):
NOT_CONVERTED: set[str] = set()
PENDING = NUMBERS_IN_TABLES | NOT_CONVERTED


def committed(folder: str, name: str) -> dict:
    """The committed data of figure `name` in `folder`."""
    return json.loads((ROOT / folder / "data" / f"{name}.json").read_text())


def perturbed(value, ints: bool = True):
    """`value` with every float changed (times 0.73 in [0, 1], so that shares stay shares, else
    times 1.37) and (with `ints`) every int (not bool) plus 1, at every depth; strings and the
    rest as they are."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value + 1 if ints else value
    if isinstance(value, float):
        return value * (0.73 if 0 <= value <= 1 else 1.37)
    if isinstance(value, list):
        return [perturbed(v, ints) for v in value]
    if isinstance(value, dict):
        return {k: perturbed(v, ints) for k, v in value.items()}
    return value


def perturbed_claim(name: str, data: dict) -> str:
    """The claim of figure `name` rendered from `data` with its numbers changed: floats and ints,
    or floats alone where changed ints no longer fit the data (sizes used as indices)."""
    figure = FIGURES[name]
    try:
        return figure.claim_text(perturbed(data))
    except (IndexError, KeyError, ValueError):
        return figure.claim_text(perturbed(data, ints=False))


def test_the_pending_figures_are_registered_and_plain_strings():
    assert PENDING <= set(FIGURES), sorted(PENDING - set(FIGURES))
    for name in PENDING:
        assert isinstance(FIGURES[name].claim, str), (
            f"{name}: its claim is a function of its data now; remove it from PENDING"
        )


@pytest.mark.parametrize("name", sorted(set(FIGURES) - PENDING))
def test_a_converted_claim_is_a_function_of_the_data(name):
    assert callable(FIGURES[name].claim), (
        f"{name}: its claim is a plain string; format its numbers from the data"
    )


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", list(FIGURES))
def test_every_claim_rendered_from_the_data_stands_in_the_readme(name, folder):
    claim = FIGURES[name].claim_text(committed(folder, name))
    readme = (ROOT / folder / "README.md").read_text()
    assert f"**Claim.** {claim}\n" in readme, (
        f"{name}: the claim rendered from {folder}/data differs from {folder}/README.md; "
        "render it again with benchmarks/render_readme.py"
    )


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", sorted(set(FIGURES) - PENDING))
def test_a_claim_changes_with_its_data(name, folder):
    figure, data = FIGURES[name], committed(folder, name)
    assert perturbed_claim(name, data) != figure.claim_text(data), (
        f"{name}: the claim does not change when the data's numbers do"
    )


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", sorted(NUMBERS_IN_TABLES))
def test_a_claim_without_numbers_has_tables_that_change_with_the_data(name, folder):
    figure, data = FIGURES[name], committed(folder, name)
    assert figure.tables is not None

    def rendered(d):
        return [t.markdown() for t in figure.measured_tables(d)]

    assert rendered(perturbed(data, ints=False)) != rendered(data)
