"""What a figure is: a name, a title, a claim, and the two functions that compute and draw it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..internal._records import Record


class FigureParameters(Record):
    """Base of a figure's typed parameters (use on a frozen dataclass): the settings behind
    its numbers as fields, which its claim reads, and `text()`, the entries of its
    "Parameters." line (figures/_parameters.py holds the figures' records).

    ```python
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class SeedsParameters(FigureParameters):
        seeds: int

        def text(self) -> dict[str, str]:
            return {"flow": f"{self.seeds} seeds"}
    ```
    """

    def text(self) -> dict[str, str]:
        """The "Parameters." line's entries, by name."""
        raise NotImplementedError(f"{type(self).__name__} has no text()")


@dataclasses.dataclass(frozen=True, kw_only=True)
class FigureData(Record):
    """Base of every figure's data: the record its `compute` returns, stored as
    `data/<name>.json` by `to_dict()` and read back by `from_dict()`.

    **Fields:**
    - `parameters`: the settings behind the numbers (printed under the claim): a figure's
      `FigureParameters` record, or a dict of their texts by name.
    - `findings`: one line of the measured values.

    Each figure's subclass adds its own named fields (keyword-only), and may narrow
    `parameters` to its record.
    """

    parameters: dict[str, Any] | FigureParameters
    findings: str

    def parameter_text(self) -> dict[str, Any]:
        """The entries of the "Parameters." line, by name."""
        if isinstance(self.parameters, FigureParameters):
            return self.parameters.text()
        return dict(self.parameters)


@dataclasses.dataclass(frozen=True)
class FigureContext:
    """What a figure's `compute` is run under, made once per `reproduce` run.

    **Fields:**
    - `quick`: the quick mode's small sizes (else the full ones).
    - `cache`: the mode's directory of finished computations (`<cache>/quick` or
      `<cache>/full`), or None: no cache, everything is computed.

    ```python
    data = FIGURES["toy_stability"].compute(FigureContext(quick=True, cache=None))
    ```
    """

    quick: bool
    cache: Path | None = None


@dataclasses.dataclass(frozen=True)
class Figure:
    """One reproducible figure.

    - `name`: file stem of `<out>/<name>.png|.pdf` and `<out>/data/<name>.json`.
    - `title`, `claim`: the heading and the claim printed in figures/README.md (the claim states the
      parameter range and the number of seeds or contexts behind it). `claim(data) -> str` formats
      every measured number from the figure's data, so the claim in a README is that of the data
      beside it; a plain string (a claim not yet written that way) is printed as it is.
    - `data`: the figure's `FigureData` subclass.
    - `compute(context) -> data`: the figure's numbers as that record, with `parameters` and
      `findings`, in the run's `FigureContext` (its mode and cache); expensive parts are cached
      by their parameters.
    - `draw(data) -> matplotlib.figure.Figure`: the drawing, from the data alone (no
      computation), so a figure can be redrawn from its stored JSON.
    - `tables(data) -> list[MeasuredTable]` (optional): the measured numbers as tables, printed
      in figures/README.md in place of the one-line `findings` (which the data keep), so that a
      reader can scan them; computed from the data alone, like `draw`.
    - `cost`: about how many seconds the full computation takes from a fresh cache in the main
      job, after its `after` figures (the committed values: one `benchmarks/bench_reproduce.py`
      run on 2 cores; its wall time, which is its CPU time for every figure but the matrix,
      whose training keeps more than one core busy); it sets the order in which
      `reproduce --jobs` starts figures and the ETA's nominal costs when no previous run's
      times are known (longest first).
    - `after`: figures whose cached computations this one reads (the same trainings): in a run
      with them, `reproduce --jobs` starts it only once they are done, rather than compute the
      same thing beside them. Without them it computes what it reads, and takes `alone_cost`.
    - `study`: the full computation is longer than the main job (`inductheory reproduce`, about
      an hour) can hold. A full run of every figure does not compute it: it redraws the figure
      and its README section from the committed `<out>/data/<name>.json`, and its cost is not
      counted in the run's ETA; `reproduce --only <name>` computes it in full. A quick run
      without `--only` redraws it too (from `figures/quick/data/`), so that the quick run keeps
      its two minutes; `reproduce --quick --only <name>` computes its quick version.
    """

    name: str
    title: str
    claim: str | Callable[[Any], str]
    compute: Callable[[FigureContext], Any]
    draw: Callable[[Any], object]
    cost: float = 0.0
    tables: Callable[[Any], list[MeasuredTable]] | None = None
    data: type[FigureData] = dataclasses.field(kw_only=True)
    after: tuple[str, ...] = dataclasses.field(default=(), kw_only=True)
    alone_cost: float | None = dataclasses.field(default=None, kw_only=True)
    study: bool = dataclasses.field(default=False, kw_only=True)

    def record(self, stored: Mapping | FigureData) -> Any:
        """The figure's data as its record, from the dict stored in `data/<name>.json` (a record
        is returned as it is)."""
        if isinstance(stored, FigureData):
            return stored
        return self.data.from_dict(stored)

    def claim_text(self, stored: Mapping | FigureData) -> str:
        """The claim printed beside the data: `claim(data)`, or `claim` when it is a string."""
        if isinstance(self.claim, str):
            return self.claim
        return self.claim(self.record(stored))

    def parameter_text(self, stored: Mapping | FigureData) -> dict[str, Any]:
        """The entries of the "Parameters." line printed beside the data, by name."""
        return self.record(stored).parameter_text()

    def drawing(self, stored: Mapping | FigureData):
        """The matplotlib figure drawn from the data."""
        return self.draw(self.record(stored))

    def measured_tables(self, stored: Mapping | FigureData) -> list[MeasuredTable]:
        """The measured tables of the data (none without `tables`)."""
        return [] if self.tables is None else self.tables(self.record(stored))


@dataclasses.dataclass(frozen=True)
class MeasuredTable:
    """One table of measured numbers in figures/README.md.

    - `caption`: one line above the table (what is measured, over how many seeds or contexts).
    - `columns`: the header cells.
    - `rows`: the body, already formatted as strings, one list of `len(columns)` cells a row.

    ```python
    MeasuredTable("per-phase accuracy, 256 seeds", ["phase", "accuracy"], [["0", "1.00"]])
    ```
    """

    caption: str
    columns: list[str]
    rows: list[list[str]]

    def __post_init__(self):
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(
                    f"MeasuredTable row {i} has {len(row)} cells, expected "
                    f"{len(self.columns)} (the columns)"
                )

    def markdown(self) -> list[str]:
        """The table as Markdown lines: the caption, a blank line, header, rule and rows."""

        def line(cells):
            return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

        return [
            self.caption,
            "",
            line(self.columns),
            "|" + "|".join("---" for _ in self.columns) + "|",
            *(line(r) for r in self.rows),
        ]
