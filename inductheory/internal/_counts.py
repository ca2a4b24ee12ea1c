"""Counts and sizes that both the model and the memory estimates need, each written once.

The memory estimates (`_memory`) must know, before anything is built, what the model will build:
whether a task's geometry is exact, the embedding dimension it will have, how many offsets a head
can select and how many vertex configurations the oracle will enumerate. The model, the oracle
and the estimates all call the functions here, so an estimate cannot drift from what it estimates.
They are plain integer arithmetic (no JAX), which is why they live below the model.

```python
from inductheory.internal._counts import vertex_count
vertex_count(H=2, L=8, W=4, multisets=True)  # 12870 block multisets
```
"""

from __future__ import annotations

import math


def is_exact_geometry(eps: float | None, d: int | None) -> bool:
    """Whether a task with coherence `eps` and dimension `d` has the exact geometry: no `d` and
    no (or zero) `eps`."""
    return d is None and not eps


def dimension_for_eps(N: int, eps: float) -> int:
    """A first guess of d for random directions to reach coherence `eps`.

    A pair of random unit vectors in R^{d'} has $P(|\\langle v, w \\rangle| > t) \\approx 2
    e^{-d' t^2 / 2}$;
    a union bound over the N^2/2 pairs gives $d' \\approx 4 \\log N / \\varepsilon^2$, and
    d = d' + 1
    adds the shared direction u.
    """
    return max(2, math.ceil(4 * math.log(max(N, 2)) / eps**2) + 1)


def embedding_dimension(N: int, eps: float | None, d: int | None) -> int:
    """The embedding dimension a task will use: d when given, N + 1 for the exact geometry, else
    the first guess for eps (`dimension_for_eps`; `approximate_geometry` may enlarge it)."""
    if d is not None:
        return int(d)
    if is_exact_geometry(eps, d):
        return N + 1
    return dimension_for_eps(N, eps)


def selectable_offsets(W: int, tied: bool = False) -> int:
    """How many offsets one head can hard-select in a window of W slots.

    A (key, value) pair selects r with value at r + 1, so r ranges over 0..W-2 (W - 1
    choices); a tied gate ($p^K = p^V$) selects any of the W slots.

    **Example:** `selectable_offsets(4) == 3`, `selectable_offsets(4, tied=True) == 4`.
    """
    return W if tied else W - 1


def vertex_count(
    H: int,
    L: int,
    W: int,
    *,
    tied: bool = False,
    multisets: bool,
    cap: int | None = None,
) -> int:
    """How many vertex configurations the oracle enumerates, at most `cap` (None: no cap).

    With c = `selectable_offsets(W, tied)` offsets per head: $c^{HL}$ configurations, or with
    `multisets` one per multiset of L block types, $\\binom{c^H + L - 1}{L}$.

    With a cap the count is bounded in logarithms first, so a huge H or L answers at once instead
    of building an integer with billions of digits.
    """
    c = selectable_offsets(W, tied)
    if cap is None:
        return math.comb(c**H + L - 1, L) if multisets else c ** (H * L)
    # both counts are >= c^H (L >= 1): above the cap, it is the answer
    if c > 1 and H * math.log(c) > math.log(cap) + 1:
        return cap
    base = c**H
    if not multisets:
        if c > 1 and H * L * math.log(c) > math.log(cap) + 1:
            return cap
        return min(cap, base**L)
    if base == 1:
        return 1
    # C(base + L - 1, L) >= L + 1 grows with L: stop multiplying once past the cap
    count = 1
    for i in range(1, L + 1):
        count = count * (base + i - 1) // i
        if count >= cap:
            return cap
    return count
