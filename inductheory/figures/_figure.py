"""What a figure is: a name, a title, a claim, and the two functions that compute and draw it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Figure:
    """One reproducible figure.

    - `name`: file stem of `<out>/<name>.png|.pdf` and `<out>/data/<name>.json`.
    - `title`, `claim`: the heading and the claim printed in figures/README.md (the claim states the
      parameter range and the number of seeds or contexts behind it).
    - `compute(quick, cache_dir) -> dict`: JSON-able numbers, with `parameters` (dict of
      strings) and
      `findings` (one line of measured values); expensive parts are cached by their parameters.
    - `draw(data) -> matplotlib.figure.Figure`: the drawing, from the data alone (no
      computation), so
      a figure can be redrawn from its stored JSON.
    - `cost`: about how many seconds the full computation takes on one core, from a fresh
      cache; only
      the order in which `reproduce --jobs` starts figures when no previous run's times are known
      (longest first).
    """

    name: str
    title: str
    claim: str
    compute: Callable[[bool, Path | None], dict]
    draw: Callable[[dict], object]
    cost: float = 0.0
