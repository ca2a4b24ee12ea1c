"""Stand-ins for the progress tests: a clock the test moves by hand, figures with costs only."""

from types import SimpleNamespace


class FakeClock:
    """Wall seconds that stand still until a test sets `now`."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def fake_figures(**costs):
    """Figures with a name and a nominal cost each, and no figure they wait for."""
    return [
        SimpleNamespace(name=n, cost=c, after=(), alone_cost=None)
        for n, c in costs.items()
    ]
