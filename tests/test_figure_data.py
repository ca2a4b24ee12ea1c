"""Every figure's data is a typed record: the committed data read into it and written back are the
same JSON, and the record's fields are what the figure's drawing, claim and tables read."""

import json
from pathlib import Path

import pytest

from inductheory.figures import FIGURES, FigureData
from inductheory.internal._io import to_json

ROOT = Path(__file__).resolve().parents[1]
STORED = [
    (name, folder)
    for name in FIGURES
    for folder in ("figures/data", "figures/quick/data")
    if (ROOT / folder / f"{name}.json").exists()
]


@pytest.mark.parametrize("name,folder", STORED)
def test_committed_data_round_trip_through_the_record(name, folder):
    figure = FIGURES[name]
    stored = json.loads((ROOT / folder / f"{name}.json").read_text())
    record = figure.record(stored)
    assert isinstance(record, figure.data) and isinstance(record, FigureData)
    assert json.loads(to_json(record.to_dict(), sort_keys=True)) == stored


def test_a_record_refuses_unknown_and_missing_fields():
    figure = FIGURES["theorem2_trajectories"]
    stored = json.loads((ROOT / "figures/data/theorem2_trajectories.json").read_text())
    with pytest.raises(ValueError, match="no field"):
        figure.data.from_dict({**stored, "surprise": 1})
    with pytest.raises(ValueError, match="missing field 'runs'"):
        figure.data.from_dict({k: v for k, v in stored.items() if k != "runs"})
