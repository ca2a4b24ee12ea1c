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
)
from ._toy import (
    corner_losses as corner_losses,
)
from ._toy import (
    escape_rate_grid as escape_rate_grid,
)
from ._toy import (
    escape_rates as escape_rates,
)
from ._toy import (
    logistic_loss as logistic_loss,
)
from ._toy import (
    split_advantage as split_advantage,
)
from ._toy import (
    symmetric_stability_boundary as symmetric_stability_boundary,
)
from ._toy import (
    toy_flow as toy_flow,
)
from ._toy import (
    toy_gradient as toy_gradient,
)
from ._toy import (
    toy_loss as toy_loss,
)
from ._toy import (
    toy_margins as toy_margins,
)
