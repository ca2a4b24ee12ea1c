"""Study figures (`Figure.study`): longer than the main job can hold, so a full `reproduce` of
every figure redraws them from their committed data, `--only NAME` computes them in full, and
a quick run redraws them too (its budget is two minutes); `--only` computes them in either
mode. Checked with two stub figures in place of the registry, computed in this process (no
workers), without a cache."""

from __future__ import annotations

import json
import warnings

import pytest

import inductheory.figures._reproduce as module
from inductheory.figures._figure import Figure, FigureData
from inductheory.internal._warnings import FigureNote


def _stub(name: str, study: bool, computed: list[str], drawn: list) -> Figure:
    def compute(context):
        computed.append(name)
        return FigureData(
            parameters={"quick": context.quick}, findings=f"{name} computed"
        )

    def draw(data):
        import matplotlib.pyplot as plt

        drawn.append((name, data))
        return plt.figure(figsize=(1, 1))

    return Figure(
        name=name,
        title=f"The {name} figure",
        claim=lambda data: f"{name} claims: {data.findings}.",
        compute=compute,
        draw=draw,
        cost=7200.0 if study else 10.0,
        data=FigureData,
        study=study,
    )


@pytest.fixture
def stubs(monkeypatch):
    """The registry holds only "plain" (an ordinary figure) and "study" (a study figure);
    returns the names computed, the (name, data) drawn and the figures each console was
    given, in order."""
    computed, drawn, consoles = [], [], []
    for name in list(module.FIGURES):
        monkeypatch.delitem(module.FIGURES, name)
    for name, study in (("plain", False), ("study", True)):
        monkeypatch.setitem(module.FIGURES, name, _stub(name, study, computed, drawn))

    class RecordingConsole(module.FigureConsole):
        def __init__(self, figures, *args, **kwargs):
            consoles.append([f.name for f in figures])
            super().__init__(figures, *args, **kwargs)

    monkeypatch.setattr(module, "FigureConsole", RecordingConsole)
    return computed, drawn, consoles


def _run(out, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = module.reproduce(out, cache=False, progress=False, **kwargs)
    return results, [w for w in caught if issubclass(w.category, FigureNote)]


COMMITTED = {"parameters": {"quick": False}, "findings": "study committed"}


def test_a_full_run_redraws_a_study_from_its_committed_data(stubs, tmp_path):
    computed, drawn, consoles = stubs
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "study.json").write_text(json.dumps(COMMITTED))
    results, notes = _run(tmp_path)
    assert computed == ["plain"] and list(results) == ["plain"] and not notes
    # the study's cost is not the main job's: its console (the ETA) never saw it
    assert consoles == [["plain"]]
    (data,) = [d for name, d in drawn if name == "study"]
    assert data.findings == "study committed"  # drawn from the stored data
    assert (tmp_path / "study.png").stat().st_size > 0
    assert json.loads((tmp_path / "data" / "study.json").read_text()) == COMMITTED
    readme = (tmp_path / "README.md").read_text()
    assert "study claims: study committed." in readme
    assert "plain claims: plain computed." in readme
    assert readme.index("## The plain figure") < readme.index("## The study figure")


def test_a_full_run_without_a_studys_data_says_how_to_make_them(stubs, tmp_path):
    computed, drawn, _ = stubs
    results, notes = _run(tmp_path)
    assert computed == ["plain"] and list(results) == ["plain"]
    (note,) = notes
    text = str(note.message)
    assert "study" in text and "`inductheory reproduce --only study`" in text
    assert "\n" not in text
    assert [name for name, _ in drawn] == ["plain"]
    assert not (tmp_path / "data" / "study.json").exists()
    assert "## The study figure" not in (tmp_path / "README.md").read_text()


def test_only_computes_a_study_in_full(stubs, tmp_path):
    computed, _, consoles = stubs
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "study.json").write_text(json.dumps(COMMITTED))
    results, notes = _run(tmp_path, only=["study"])
    assert computed == ["study"] and list(results) == ["study"] and not notes
    assert consoles == [["study"]]
    stored = json.loads((tmp_path / "data" / "study.json").read_text())
    assert (
        stored["findings"] == "study computed"
        and stored["parameters"]["quick"] is False
    )


def test_a_quick_run_redraws_the_studies_and_only_computes_them(stubs, tmp_path):
    # the quick run keeps its two-minute budget: a study's quick data are made with --only
    computed, _, consoles = stubs
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "study.json").write_text(json.dumps(COMMITTED))
    results, notes = _run(tmp_path, quick=True)
    assert computed == ["plain"] and list(results) == ["plain"] and not notes
    assert consoles == [["plain"]]
    results, _ = _run(tmp_path, quick=True, only=["study"])
    assert computed == ["plain", "study"] and list(results) == ["study"]
    stored = json.loads((tmp_path / "data" / "study.json").read_text())
    assert stored["findings"] == "study computed" and stored["parameters"]["quick"]
