"""Training objectives beyond the mean loss: coordination across heads and the worst phase.

The paper's second open question asks whether explicit coordination across heads can make
retrieval uniform over phases. Two coordinations, both functions of per-phase losses and key gates:

- overlap penalty: $\\lambda \\sum_{h \\ne h'} \\langle p^K_h, p^K_{h'} \\rangle$ (averaged
  over entries
  or windows where gates differ), which pushes heads onto different offsets;
- worst-phase objective: the soft maximum $\\tau \\log \\frac1P \\sum_p e^{\\ell_p / \\tau}$
  of the P
  per-phase losses, which tends to the mean loss as $\\tau \\to \\infty$ and to the worst phase's
  loss as $\\tau \\to 0$.
"""

from __future__ import annotations

import enum

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..internal._modes import _enum
from ._task import _require_real, traced_value


class ObjectiveKind(enum.StrEnum):
    """How an `Objective` combines the per-phase losses.

    - `MEAN`: their mean, the population loss of the theorems.
    - `WORST_PHASE`: their soft maximum at a temperature tau (`soft_maximum`).

    A member is the string of its value (`ObjectiveKind.MEAN == "mean"`), so `Objective` and
    `FlowConfig` take either, and JSON, cache keys and command-line choices read the same.
    """

    MEAN = "mean"
    WORST_PHASE = "worst-phase"


OBJECTIVES = tuple(m.value for m in ObjectiveKind)


def overlap(key: Float[Array, "*windows heads offsets"]) -> Float[Array, ""]:
    """$\\sum_{h \\ne h'} \\langle p^K_h, p^K_{h'} \\rangle$, averaged over any leading
    (entry or window) axes.

    0 exactly when the heads' key gates have disjoint supports; 2 for two heads on the same vertex.
    """
    total = jnp.sum(key, axis=-2)
    pairs = jnp.sum(total * total, axis=-1) - jnp.sum(key * key, axis=(-2, -1))
    return jnp.mean(pairs)


def soft_maximum(losses: Float[Array, " phases"], tau) -> Float[Array, ""]:
    """$\\tau \\log \\frac1P \\sum_p e^{\\ell_p/\\tau}$ (log-sum-exp): between the mean and
    the maximum."""
    return tau * (jax.nn.logsumexp(losses / tau) - jnp.log(losses.shape[-1]))


class Objective(eqx.Module):
    """What a flow or the oracle minimizes, given per-phase losses and key gates.

    $J = \\text{combine}(\\ell_0, \\dots, \\ell_{P-1}) + \\lambda\\, \\text{overlap}(p^K)$
    with combine the
    mean (`kind="mean"`) or `soft_maximum` at temperature `tau` (`kind="worst-phase"`). The default,
    mean with no penalty term (`coordination=None`), is the population loss of the theorems.

    **Arguments:**
    - `kind`: `"mean"` or `"worst-phase"` (an `ObjectiveKind` or its value; static).
    - `tau`: temperature of the soft maximum, > 0 (traced).
    - `coordination`: the overlap penalty's weight lambda, >= 0 (traced), or None for no penalty
      term at all (a static choice: the program then has no overlap term).

    ```python
    Objective("worst-phase", tau=0.1)(jnp.array([1.0, 3.0]), key_gates)  # close to 3
    ```
    """

    kind: ObjectiveKind = eqx.field(static=True)
    tau: Float[Array, ""]
    coordination: Float[Array, ""] | None

    def __init__(
        self,
        kind: ObjectiveKind | str = "mean",
        tau: float = 1.0,
        coordination: float | None = None,
    ):
        kind = _enum(ObjectiveKind, "objective", kind)
        tau = _require_real("tau", tau)
        if tau <= 0:
            raise ValueError(f"tau must be > 0, got {tau}")
        if coordination is not None:
            coordination = _require_real("coordination", coordination)
            if coordination < 0:
                raise ValueError(
                    "coordination must be >= 0 (the overlap penalty's weight lambda), "
                    f"got {coordination}"
                )
            coordination = traced_value(coordination)
        self.kind = kind
        self.tau, self.coordination = traced_value(tau), coordination

    @classmethod
    def of_values(cls, kind: str, tau, coordination) -> Objective:
        """An objective from values validated earlier (e.g. by `FlowConfig`), which may be traced
        under jit or vmap, so they are not validated again."""
        goal = object.__new__(cls)
        for name, value in (
            ("kind", ObjectiveKind(kind)),  # static: a member, whatever it was given
            ("tau", tau),
            ("coordination", coordination),
        ):
            object.__setattr__(goal, name, value)
        return goal

    @property
    def is_default(self) -> bool:
        """Whether this is the plain mean loss with no penalty term (a static property)."""
        return self.kind is ObjectiveKind.MEAN and self.coordination is None

    def combine(self, losses: Float[Array, " phases"]) -> Float[Array, ""]:
        """The mean or the soft maximum of the per-phase losses."""
        if self.kind is ObjectiveKind.MEAN:
            return jnp.mean(losses)
        return soft_maximum(losses, self.tau)

    def __call__(
        self,
        losses: Float[Array, " phases"],
        key: Float[Array, "*windows heads offsets"],
    ) -> Float[Array, ""]:
        value = self.combine(losses)
        if self.coordination is None:
            return value
        return value + self.coordination * overlap(key)


__all__ = ["OBJECTIVES", "Objective", "ObjectiveKind", "overlap", "soft_maximum"]
