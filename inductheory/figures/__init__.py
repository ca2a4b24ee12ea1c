"""The theorem figures: one module per figure (its computation, drawing and claim), a
registry, one style.

Data flow: the library (config, model, loss, flows, oracle, toy) -> `inductheory.figures` ->
the CLI.
Nothing in the library imports this package.

```python
from inductheory.figures import figure_names, reproduce
reproduce("figures/quick", quick=True, only=["toy_stability"])
```
"""

from ._figure import (
    Figure,
    FigureContext,
    FigureData,
    FigureParameters,
    MeasuredTable,
)
from ._overview import draw_overview, overview
from ._readme import readme
from ._registry import FIGURES, figure_names
from ._reproduce import FigureRun, redraw, reproduce

__all__ = [
    "FIGURES",
    "Figure",
    "FigureContext",
    "FigureData",
    "FigureParameters",
    "FigureRun",
    "MeasuredTable",
    "draw_overview",
    "figure_names",
    "overview",
    "readme",
    "redraw",
    "reproduce",
]
