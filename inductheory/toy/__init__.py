"""The two-head toy of the theory page (§8): S = 2, keys only, an idealized value readout.
Its landscape, split advantage, escape rates and gradient flow in closed form.

Stands on its own: may import `inductheory.internal` and `inductheory.model` only.

```python
import inductheory as it
it.toy.split_advantage(it.toy.ToyConfig(beta=4.0, gamma=1.0, L=8, K=100))
```
"""

from ._toy import (
    ToyConfig as ToyConfig,
    corner_losses as corner_losses,
    escape_rate_grid as escape_rate_grid,
    escape_rates as escape_rates,
    logistic_loss as logistic_loss,
    split_advantage as split_advantage,
    symmetric_stability_boundary as symmetric_stability_boundary,
    toy_flow as toy_flow,
    toy_gradient as toy_gradient,
    toy_loss as toy_loss,
    toy_margins as toy_margins,
)
