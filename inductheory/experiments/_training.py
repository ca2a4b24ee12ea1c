"""The across-seed summary of a trained compressed model (`summarize_training`): the measures the
relaxation ladder reports per rung, read from one `train` run's held-out measures.

```python
from inductheory.experiments._training import summarize_training
s = summarize_training(train(task, ModelConfig(), TrainConfig(lr=0.5, steps=200, M=48), 8))
s.value_follows_key_share, s.distinct_share, s.distinct_baseline
```
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..internal._counts import embedding_dimension
from ..internal._memory import (
    BACKWARD_COPIES,
    F64,
    MemoryEstimate,
    contexts_bytes,
    geometry_bytes,
    loss_bytes,
    with_total,
)
from ..internal._records import field_values
from ..model._gates import distinct_within_blocks, value_follows_key
from ..trained._config import (
    Embeddings,
    Maps,
    ModelConfig,
    TrainConfig,
    Unembedding,
)
from ..trained._train import TrainRun, log_steps
from ._flows import independent_distinct_baseline

# The branches of a gate, in the order of every (..., 2) axis.
BRANCHES = ("key", "value")


def _pair(a) -> tuple[float, float]:
    return tuple(float(x) for x in np.asarray(a))


@dataclasses.dataclass(frozen=True)
class TrainingSummary:
    """The measures of `seeds` trained seeds on held-out contexts, over seeds (and heads).

    Pairs are (key, value). Offsets are the argmax of each head's mean gate (`measure`).

    **Fields:**
    - `seeds`, `heads`: seeds summarized and heads per seed.
    - `argmax_mass_mean`, `argmax_mass_std`, `argmax_mass_min`: the mean gate mass on the argmax
      offset, its mean, standard deviation and minimum over seeds and heads.
    - `value_follows_key_seeds`: seeds whose every head has value offset = key offset + 1.
    - `distinct_seeds`: seeds whose heads' key offsets are pairwise distinct;
      `distinct_baseline`: that share for heads choosing independently and uniformly
      (`independent_distinct_baseline`).
    - `static_offsets_mean`, `avg_offsets_mean`: the static and average effective numbers of
      offsets (docs/theory.md §9), mean over seeds and heads.
    - `phase_accuracy_mean`: per query phase, the mean over seeds of its top-1 accuracy;
      `phase_gap_mean`: the mean over seeds of each seed's gap (max - min over phases);
      `phase_gap_of_mean`: the gap of `phase_accuracy_mean`.
    - `boundary_accuracy_mean`: with `queries="all"`, the mean accuracy of the boundary phase
      S-1 (the last phase); None otherwise.
    - `mean_accuracy_mean`, `held_out_loss_mean`: over every held-out query, mean over seeds.
    - `train_loss_mean`: the training loss after the last step, mean over seeds.

    The shares are counts over `seeds` (`value_follows_key_share`, `distinct_share`), so an
    interval can be put on them.
    """

    seeds: int
    heads: int
    argmax_mass_mean: tuple[float, float]
    argmax_mass_std: tuple[float, float]
    argmax_mass_min: tuple[float, float]
    value_follows_key_seeds: int
    distinct_seeds: int
    distinct_baseline: float
    static_offsets_mean: tuple[float, float]
    avg_offsets_mean: tuple[float, float]
    phase_accuracy_mean: tuple[float, ...]
    phase_gap_mean: float
    phase_gap_of_mean: float
    boundary_accuracy_mean: float | None
    mean_accuracy_mean: float
    held_out_loss_mean: float
    train_loss_mean: float

    @property
    def value_follows_key_share(self) -> float:
        """`value_follows_key_seeds / seeds`."""
        return self.value_follows_key_seeds / self.seeds

    @property
    def distinct_share(self) -> float:
        """`distinct_seeds / seeds`."""
        return self.distinct_seeds / self.seeds

    def to_dict(self) -> dict:
        """The fields in field order, then the two shares."""
        out = field_values(self)
        out["value_follows_key_share"] = self.value_follows_key_share
        out["distinct_share"] = self.distinct_share
        return out


def summarize_training(run: TrainRun) -> TrainingSummary:
    """The across-seed summary of a `train` run's held-out measures (pure, numpy).

    **Arguments:**
    - `run`: a `TrainRun` (its `measures`, each with a leading seed axis, and the last logged
      training loss).

    **Returns:** a `TrainingSummary`.

    ```python
    s = summarize_training(train(task, ModelConfig(), TrainConfig(steps=100, M=48), 8))
    s.argmax_mass_mean  # (key, value)
    ```
    """
    m = run.measures
    key, value = np.asarray(m.key_offsets), np.asarray(m.value_offsets)
    seeds, heads = key.shape
    mass = np.asarray(m.argmax_mass).reshape(seeds * heads, 2)
    accuracy = np.asarray(m.phase_accuracy)  # (seeds, phases)
    per_phase = accuracy.mean(axis=0)
    distinct = np.asarray(distinct_within_blocks(key[..., None]))
    return TrainingSummary(
        seeds=int(seeds),
        heads=int(heads),
        argmax_mass_mean=_pair(mass.mean(axis=0)),
        argmax_mass_std=_pair(mass.std(axis=0)),
        argmax_mass_min=_pair(mass.min(axis=0)),
        value_follows_key_seeds=int(np.sum(value_follows_key(key, value))),
        distinct_seeds=int(np.sum(distinct)),
        distinct_baseline=independent_distinct_baseline(
            heads, run.task.W, run.model_config.tied
        ),
        static_offsets_mean=_pair(
            np.asarray(m.static_offsets).reshape(-1, 2).mean(axis=0)
        ),
        avg_offsets_mean=_pair(np.asarray(m.avg_offsets).reshape(-1, 2).mean(axis=0)),
        phase_accuracy_mean=tuple(float(a) for a in per_phase),
        phase_gap_mean=float(np.mean(np.asarray(m.phase_gap))),
        phase_gap_of_mean=float(per_phase.max() - per_phase.min()),
        # the boundary phase S-1 is queried, as the last phase, only with queries="all"
        boundary_accuracy_mean=float(per_phase[-1])
        if run.task.queries == "all"
        else None,
        mean_accuracy_mean=float(np.mean(np.asarray(m.mean_accuracy))),
        held_out_loss_mean=float(np.mean(np.asarray(m.loss))),
        train_loss_mean=float(np.mean(run.statistics.loss[:, -1])),
    )


def train_bytes(
    task, model_config: ModelConfig, train_config: TrainConfig, seeds: int
) -> MemoryEstimate:
    """Bytes of a `train` run, by part (and `total`): the geometry, the sample and held-out
    contexts, every seed's loss with its gradient on one batch (and a first layer's attention),
    its parameters with two optimizer moments, and the logged statistics.

    **Arguments:** the arguments of `train`.

    **Returns:** `{part: bytes, ..., "total": bytes}` (`inductheory.internal._memory`).
    """
    N, L, W, H = int(task.N), task.L, task.W, task.H
    learned = model_config.embeddings is Embeddings.LEARNED
    exact = model_config.embeddings is Embeddings.EXACT
    dim = model_config.d if learned else embedding_dimension(N, task.eps, task.d)
    batch = train_config.batch
    # population: the closed form, about one context's loss per query phase
    rows = {"full": train_config.M, "population": task.S}.get(batch, batch)
    tied = exact and model_config.unembedding is Unembedding.TIED
    columns = L * task.S + 1 if tied else N
    hidden = None if exact else dim
    layers, T = model_config.layers, L * task.S
    # gate vectors; learned embeddings, unembedding and maps (and the first layer's maps)
    params = (
        H * 2 * W * dim
        + (N * dim if learned else 0)
        + (N * dim if model_config.unembedding is Unembedding.LEARNED else 0)
        + 4 * H * dim * dim * ((model_config.maps is Maps.LEARNED) + layers - 1)
    )
    logged = log_steps(train_config.steps, train_config.log_points).size
    return with_total(
        geometry=0 if learned else geometry_bytes(N, task.eps, task.d),
        contexts=contexts_bytes(train_config.M + train_config.eval_contexts, L, task.S),
        loss=seeds * loss_bytes(rows, L, W, H, columns, hidden),
        # a first, uncompressed layer: causal attention over the L*S positions per head
        first_layer=F64 * BACKWARD_COPIES * seeds * rows * (layers - 1) * H * T * T,
        parameters=F64 * 3 * seeds * params,  # with two optimizer moments
        statistics=F64 * seeds * logged * (H * 2 * (2 * W + 2) + 1),
    )


__all__ = ["BRANCHES", "TrainingSummary", "summarize_training", "train_bytes"]
