"""The loss half of the paper's headline on the retrieval task: a stream in which most queries
have a local target and the retrieval queries are a minority, scored apart
(docs/trained.md, "A stream with local targets").

The stream is `RetrievalTask(vocab=V, keys=K)`: a key (symbol < K) is followed by a value drawn
uniformly, so its target is found only in the context (a retrieval query); every other symbol
x by its fixed bigram successor G(x), a target the model can learn from the query token alone.
Training minimizes the mean loss over every query, as a language model's; `stream_measures`
reports that loss beside the loss of the local queries and the accuracy of the retrieval
queries per phase, as the paper reports a validation loss beside retrieval accuracy.

May import: `inductheory.internal`, `inductheory.model`, `._architecture`, `._mechanisms`,
`._modules`.
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Int

from ._architecture import RetrievalTask
from ._mechanisms import query_outcomes
from ._modules import Transformer


def stream_masks(
    task: RetrievalTask, contexts: Int[Array, "contexts positions"]
) -> tuple[Bool[Array, "contexts positions"], Bool[Array, "contexts positions"]]:
    """`(local, retrieval)` masks of the queries of stream contexts: retrieval where the query
    token is a key (its target was drawn uniformly), local where it is not, except at the last
    position, whose successor on the cycle is the first token (drawn uniformly, not G's): that
    query is in neither set, only in the overall loss.

    ```python
    task = RetrievalTask(T=24, N=32, period=24, vocab=32, keys=4)
    local, retrieval = stream_masks(task, sample_retrieval_contexts(key, task, 8))
    ```
    """
    if task.keys is None:
        raise ValueError("stream_masks needs a stream task (RetrievalTask keys set)")
    retrieval = contexts < task.keys
    last = jnp.arange(task.T) == task.T - 1
    return ~retrieval & ~last, retrieval


@dataclasses.dataclass(frozen=True)
class StreamMeasures:
    """Held-out measures of each seed on a stream task (numpy, leading axis seeds).

    - `loss` (seeds,): mean cross-entropy over every query (the language-model loss).
    - `local_loss`, `retrieval_loss` (seeds,): mean cross-entropy over the local and the
      retrieval queries (`stream_masks`).
    - `retrieval_correct` (seeds, period): right retrieval queries (top-1, ties wrong) per
      phase (position mod `period`), summed over the contexts.
    - `retrieval_queries` (period,): retrieval queries per phase (the same contexts for every
      seed).
    """

    loss: np.ndarray
    local_loss: np.ndarray
    retrieval_loss: np.ndarray
    retrieval_correct: np.ndarray
    retrieval_queries: np.ndarray

    @property
    def retrieval_accuracy(self) -> np.ndarray:
        """(seeds, period): right retrieval queries over retrieval queries, per phase."""
        return self.retrieval_correct / np.maximum(self.retrieval_queries, 1)

    @property
    def mean_retrieval_accuracy(self) -> np.ndarray:
        """Mean over phases, (seeds,)."""
        return self.retrieval_accuracy.mean(axis=1)

    @property
    def worst_retrieval_accuracy(self) -> np.ndarray:
        return self.retrieval_accuracy.min(axis=1)


def stream_measures(
    models: Transformer, task: RetrievalTask, contexts: Int[Array, "contexts positions"]
) -> StreamMeasures:
    """`StreamMeasures` of stacked models (leading axis seeds) on held-out stream contexts:
    every query's loss and top-1 correctness from `query_outcomes`, averaged over every query,
    the local ones and the retrieval ones (NaN where there are none), and counted per phase
    for the retrieval queries.

    **Arguments:**
    - `models`: a `Transformer` with a leading seed axis (`TransformerRun.models`).
    - `task`: the stream task (`keys` set); `contexts` (n, T) of it.

    **Returns:** `StreamMeasures`.

    ```python
    task = RetrievalTask(T=96, N=128, period=24, vocab=128, keys=16)
    run = train_transformer(task, arch, config, 2)
    m = stream_measures(run.models, task, held_out_contexts(task, config, 0))
    m.loss, m.local_loss, m.retrieval_accuracy
    ```
    """
    local, retrieval = stream_masks(task, contexts)
    n, T, P = contexts.shape[0], task.T, task.period

    def per_phase(values):
        return jnp.sum(values.reshape(n, T // P, P), axis=(0, 1))

    def mean(values, mask):
        return jnp.sum(jnp.where(mask, values, 0.0)) / jnp.sum(
            mask
        )  # nan without queries

    def one(model):
        correct, losses = query_outcomes(model, contexts)
        return (
            jnp.mean(losses),
            mean(losses, local),
            mean(losses, retrieval),
            per_phase((correct & retrieval).astype(jnp.int32)),
        )

    loss, local_loss, retrieval_loss, right = eqx.filter_jit(eqx.filter_vmap(one))(
        models
    )
    return StreamMeasures(
        loss=np.asarray(loss),
        local_loss=np.asarray(local_loss),
        retrieval_loss=np.asarray(retrieval_loss),
        retrieval_correct=np.asarray(right),
        retrieval_queries=np.asarray(per_phase(retrieval.astype(jnp.int32))),
    )


__all__ = ["StreamMeasures", "stream_masks", "stream_measures"]
