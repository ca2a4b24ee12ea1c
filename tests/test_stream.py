"""The stream with local targets (`RetrievalTask(vocab=V, keys=K)`): local successors follow
the fixed bigram table, a key's successor is uniform, the share of retrieval queries at every
position is the Markov chain's (computed from its transition matrix), and the measures score
the local and retrieval queries apart."""

import equinox as eqx
import jax
import numpy as np
import pytest
from scipy import stats

from inductheory.trained import (
    Architecture,
    RetrievalTask,
    init_transformer,
    sample_retrieval_contexts,
    stream_masks,
    stream_measures,
)
from inductheory.trained._mechanisms import query_outcomes
from inductheory.trained._train import seed_model

TASK = RetrievalTask(T=24, N=32, period=8, vocab=20, keys=4)


def test_the_bigram_table_is_one_cycle_through_every_symbol():
    G = TASK.bigram_successors()
    assert sorted(G) == list(range(20))  # a permutation
    x, seen = 0, []
    for _ in range(20):
        seen.append(x)
        x = G[x]
    assert x == 0 and sorted(seen) == list(range(20))  # a single cycle
    np.testing.assert_array_equal(G, TASK.bigram_successors())  # fixed


def test_stream_successors_follow_the_table_after_local_tokens_and_are_uniform_after_keys():
    """Every local token (but the last position's, whose successor is the first token) is
    followed by G of it; over 4,000 contexts the successors of keys are uniform over the 20
    symbols and the first token too (chi-square, level 1e-4)."""
    x = np.asarray(sample_retrieval_contexts(jax.random.key(2), TASK, 4000))
    G = TASK.bigram_successors()
    local = x[:, :-1] >= 4
    np.testing.assert_array_equal(x[:, 1:][local], G[x[:, :-1][local]])
    after_keys = x[:, 1:][~local]
    assert stats.chisquare(np.bincount(after_keys, minlength=20)).pvalue > 1e-4
    assert stats.chisquare(np.bincount(x[:, 0], minlength=20)).pvalue > 1e-4


def test_share_of_retrieval_queries_is_the_chains():
    """P(x_p is a key) = (pi_0 P^p) summed over the keys, pi_0 uniform, P the transition matrix
    (a key's row uniform, a local x's row e_{G(x)}); 4,000 contexts agree within 4 standard
    errors at every position."""
    V, K = 20, 4
    G = TASK.bigram_successors()
    P = np.zeros((V, V))
    P[:K] = 1 / V
    P[np.arange(K, V), G[K:]] = 1.0
    pi = np.full(V, 1 / V)
    want = []
    for _ in range(TASK.T):
        want.append(pi[:K].sum())
        pi = pi @ P
    x = np.asarray(sample_retrieval_contexts(jax.random.key(5), TASK, 4000))
    got = (x < K).mean(0)
    se = np.sqrt(np.array(want) * (1 - np.array(want)) / 4000)
    assert np.all(np.abs(got - want) < 4 * se), (got, want)


def test_stream_measures_score_local_and_retrieval_queries_apart():
    """On two untrained models: the loss is `query_outcomes`' mean over every query, the local
    and retrieval losses its means over the masks, and the retrieval counts per phase those of
    the masks (computed here position by position)."""
    arch = Architecture(d=16, q_heads=2, head_dim=8, W=4, S=4)
    models = eqx.filter_vmap(init_transformer, in_axes=(None, None, 0))(
        TASK, arch, jax.random.split(jax.random.key(0), 2)
    )
    contexts = sample_retrieval_contexts(jax.random.key(1), TASK, 16)
    m = stream_measures(models, TASK, contexts)
    local, retrieval = map(np.asarray, stream_masks(TASK, contexts))
    assert not np.any(local & retrieval) and not np.any(local[:, -1])
    x = np.asarray(contexts)
    np.testing.assert_array_equal(retrieval, x < 4)
    phases = np.arange(24) % 8
    for s in range(2):
        model = seed_model(models, s)
        correct, losses = map(np.asarray, query_outcomes(model, contexts))
        np.testing.assert_allclose(m.loss[s], losses.mean(), rtol=1e-6)
        np.testing.assert_allclose(m.local_loss[s], losses[local].mean(), rtol=1e-6)
        np.testing.assert_allclose(
            m.retrieval_loss[s], losses[retrieval].mean(), rtol=1e-6
        )
        for r in range(8):
            here = retrieval & (phases == r)[None]
            assert m.retrieval_queries[r] == here.sum()
            assert m.retrieval_correct[s, r] == (correct & here).sum()
    assert m.retrieval_accuracy.shape == (2, 8)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(keys=4), "keys needs vocab"),
        (dict(vocab=20, keys=20), "keys must be <= 19, got 20"),
        (dict(vocab=20, keys=0), "keys must be >= 1, got 0"),
    ],
)
def test_bad_streams_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        RetrievalTask(T=24, N=32, period=8, **kwargs)
    assert "\n" not in str(err.value)


def test_the_stream_is_named_in_the_record_only_where_set():
    assert TASK.record() == {"T": 24, "N": 32, "period": 8, "vocab": 20, "keys": 4}
    assert "keys" not in RetrievalTask(T=24, N=32, period=8, vocab=20).record()
    with pytest.raises(ValueError, match="needs a stream task"):
        stream_masks(RetrievalTask(T=24, N=32, period=8), np.zeros((1, 24), int))
