"""Every notebook in notebooks/ runs top to bottom, headless, at reduced sizes.

Each notebook reads `INDUCTHEORY_NOTEBOOK_QUICK=1` from its environment and shrinks its grids,
seed counts and solver budgets; the kernel inherits the environment of this process, so the
variable (and `MPLBACKEND=Agg`) is set here before the kernel starts. Any cell error fails the test.

At quick sizes compiling dominates (each shape of the oracle minimizer or of a flow compiles once,
then runs in milliseconds), so the kernel inherits the suite's XLA flags (tests/conftest.py) that
trade generated-code speed for compile speed, with the same numbers to rounding. The
notebooks' widgets (ipywidgets, in the `test` extra) run headless: their callbacks
are called once with the default values, so the outputs land in the cells.
"""

from __future__ import annotations

import json
import pathlib
import re
import time
import warnings

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
KERNEL = "python3"
# Per cell: in quick mode the slowest cell takes about 6 s on an idle core. Kept short because
# a stall lasts exactly this long: now and then the reply to a cell is in the kernel's socket
# but pyzmq's asyncio poll misses its wake-up, and only the final check at the timeout finds it
# (flow_explorer's cell 5, 300 s under the former timeout of 300 s, three times in eleven suite
# runs; the test passed each time).
CELL_TIMEOUT_S = 60
MAX_BYTES = 300_000


def _require_kernel() -> None:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(KERNEL)
    except NoSuchKernel:
        pytest.fail(
            f"no Jupyter kernel named {KERNEL!r}: install the test extra (`pip install "
            '-e ".[test]"`, which '
            f"brings ipykernel) or register one with `python -m ipykernel install --sys-prefix`"
        )


def _require_widgets() -> None:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        pytest.fail(
            "the notebooks' live controls need ipywidgets: install the test extra "
            '(`pip install -e ".[test]"`)'
        )


# A run past this many seconds says, as a warning in the summary, which step took the time (how
# the stall above was found).
SLOW_NOTEBOOK_S = 120


def _execute_timed(client) -> dict[str, float]:
    """Run every cell as `NotebookClient.execute` does (raising CellExecutionError with the
    traceback on the first failing cell); returns the seconds of the kernel's start, of each
    code cell and of the kernel's shutdown."""
    seconds: dict[str, float] = {}
    client.reset_execution_trackers()
    start = time.perf_counter()
    with client.setup_kernel():
        seconds["kernel start"] = time.perf_counter() - start
        for index, cell in enumerate(client.nb.cells):
            start = time.perf_counter()
            client.execute_cell(
                cell, index, execution_count=client.code_cells_executed + 1
            )
            if cell.cell_type == "code":
                seconds[f"cell {index}"] = time.perf_counter() - start
        client.set_widgets_metadata()
        start = time.perf_counter()
    seconds["kernel shutdown"] = time.perf_counter() - start
    return seconds


def test_at_least_three_notebooks():
    assert len(NOTEBOOKS) >= 3, (
        f"expected at least three notebooks in {NOTEBOOK_DIR}, found {NOTEBOOKS}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_small_and_quick_aware(path):
    assert path.stat().st_size < MAX_BYTES, (
        f"{path.name} is {path.stat().st_size} bytes (limit {MAX_BYTES})"
    )
    nb = json.loads(path.read_text())
    cells = nb["cells"]
    assert cells[0]["cell_type"] == "markdown", (
        "the first cell must say what the notebook shows"
    )
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert any("INDUCTHEORY_NOTEBOOK_QUICK" in src for src in code[:2]), (
        "a parameters cell near the top must read QUICK"
    )
    assert sum(c["cell_type"] == "markdown" for c in cells) >= 3, (
        "explain the steps in Markdown"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_first_cell_cites_the_theory_page_and_says_how_to_open(path):
    first = "".join(json.loads(path.read_text())["cells"][0]["source"])
    assert "THEORY.md" not in first, (
        "cite the theory page as `docs/theory.md §n` (THEORY.md is not in the repository)"
    )
    assert re.search(r"docs/theory\.md §\d", first), (
        "the first cell must cite the theory page as `docs/theory.md §n`"
    )
    assert 'pip install -e ".[notebooks]"' in first and "jupyter lab" in first, (
        "the first cell must say how to open the notebook: python -m pip install -e "
        '".[notebooks]" && jupyter lab notebooks/'
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    _require_kernel()
    _require_widgets()
    monkeypatch.setenv("INDUCTHEORY_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name=KERNEL,
        allow_errors=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    seconds = _execute_timed(client)
    total = sum(seconds.values())
    if total > SLOW_NOTEBOOK_S:
        slowest = sorted(seconds.items(), key=lambda item: -item[1])[:3]
        warnings.warn(
            f"{path.name} took {total:.0f} s (usually under {SLOW_NOTEBOOK_S} s); slowest steps: "
            + ", ".join(f"{step} {s:.0f} s" for step, s in slowest),
            stacklevel=1,
        )
    # the quick switch reached the kernel
    printed = "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )
    assert "QUICK=True" in printed, (
        "the kernel did not see INDUCTHEORY_NOTEBOOK_QUICK=1"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_no_outputs(path):
    """Executed copies go outside notebooks/ (`jupyter nbconvert --to notebook --execute
    notebooks/X.ipynb --output-dir /tmp/inductheory-notebooks`): the committed ones stay clean."""
    nb = json.loads(path.read_text())
    dirty = [
        i
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "code"
        and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, (
        f"{path.name}: cells {dirty} hold outputs; clear them before committing"
    )
