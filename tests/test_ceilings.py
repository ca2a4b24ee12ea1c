"""The exact ceilings of the retrieval task against computations that share nothing with the
derivation: every context of tiny tasks enumerated (the Bayes predictive read off the
enumeration itself), the max-load law of every assignment of balls to bins, and a Monte Carlo
run at the matrix's size on the library's own context sampler."""

import itertools

import jax
import numpy as np
import pytest

from inductheory.experiments import (
    CEILING_POSITIONS_MAX,
    retrieval_ceilings,
    retrieval_coverage,
)
from inductheory.experiments._ceilings import _max_load_tables, _posterior
from inductheory.trained import RetrievalTask
from inductheory.trained._transformer_train import sample_retrieval_contexts


def _brute_force(T, covered, period, V=None, N=None):
    """Per-phase accuracy and log loss of the Bayes reader, from every context: each (context,
    query position) pair, all equally likely, is grouped by what the reader sees, (a, the count
    of every symbol among the successors of a's covered occurrences); the predictive of a group
    is its targets' empirical distribution; ties of the argmax split uniformly."""
    if V is None:
        X = np.array(list(itertools.permutations(range(N), T)))
        symbols = N
    else:
        X = np.array(list(itertools.product(range(V), repeat=T)))
        symbols = V
    nxt = np.roll(X, -1, axis=1)
    keys, targets, phases = [], [], []
    for t in range(T):
        a = X[:, t]
        seen = (X == a[:, None]) & covered[None, :]
        key = a.astype(np.int64)
        for v in range(symbols):
            key = key * (T + 1) + (seen & (nxt == v)).sum(1)
        keys.append(key)
        targets.append(nxt[:, t])
        phases.append(np.full(X.shape[0], t % period))
    key, y, phase = map(np.concatenate, (keys, targets, phases))
    groups, inverse = np.unique(key, return_inverse=True)
    table = np.zeros((groups.size, symbols), np.int64)
    np.add.at(table, (inverse, y), 1)
    best = table.max(1)
    ties = (table == best[:, None]).sum(1)
    hits = table[inverse, y]
    right = np.where(hits == best[inverse], 1.0 / ties[inverse], 0.0)
    loss = -np.log(hits / table.sum(1)[inverse])
    return (
        np.array([right[phase == r].mean() for r in range(period)]),
        np.array([loss[phase == r].mean() for r in range(period)]),
    )


CASES = [  # (T, V, covered, period)
    (6, 2, retrieval_coverage(6), 6),
    (6, 3, retrieval_coverage(6, 3), 6),
    (6, 4, retrieval_coverage(6, 2), 3),
    (7, 3, np.array([1, 0, 1, 1, 0, 0, 1], bool), 7),  # no period: every t its own
    (8, 2, retrieval_coverage(8, 4), 8),
    (8, 3, retrieval_coverage(8, 4, [0]), 4),
    (8, 3, retrieval_coverage(8, 4, [1, 2]), 8),
    (8, 4, retrieval_coverage(8), 4),
    (8, 4, retrieval_coverage(8, 2), 8),
]


@pytest.mark.parametrize("T, V, covered, period", CASES)
def test_ceilings_equal_the_bayes_reader_of_every_context(T, V, covered, period):
    accuracy, loss = _brute_force(T, covered, period, V=V)
    task = RetrievalTask(T=T, N=max(T, V), period=period, vocab=V)
    c = retrieval_ceilings(task, covered)
    np.testing.assert_allclose(c.accuracy, accuracy, rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.loss, loss, rtol=0, atol=1e-12)


def test_distinct_tokens_answer_covered_queries_and_guess_the_rest():
    """T = 6 distinct tokens of N = 7, every permutation: a covered query is answered, an
    uncovered one (nothing seen) is a uniform guess among the N - 1 other tokens."""
    covered = retrieval_coverage(6, 3)
    accuracy, loss = _brute_force(6, covered, 6, N=7)
    c = retrieval_ceilings(RetrievalTask(T=6, N=7, period=6), covered)
    np.testing.assert_allclose(c.accuracy, accuracy, rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.loss, loss, rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.accuracy, [1, 1, 1 / 6] * 2)


@pytest.mark.parametrize("n, B", [(0, 3), (1, 1), (5, 1), (6, 3), (7, 4), (4, 6)])
def test_max_load_law_equals_every_assignment_of_balls_to_bins(n, B):
    P1, P2 = _max_load_tables(n, B)
    want1, want2 = np.zeros(n + 1), np.zeros(n + 1)
    for bins in itertools.product(range(B), repeat=n):
        load = np.bincount(bins, minlength=B)
        M = load.max()
        want1[M] += 1
        want2[M] += 1 / (1 + (load == M).sum())
    np.testing.assert_allclose(P1[n], want1 / B**n, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(P2[n], want2 / B**n, rtol=1e-12, atol=1e-15)


def test_monte_carlo_of_the_bayes_reader_at_the_matrix_size():
    """T = 96, V = 48, offsets 0-6 of S = 8 covered: 1,500 contexts of the library's sampler,
    every query answered by the Bayes predictive from the (k, m) posterior and the counts it
    sees. The mean accuracy, the boundary phase and the loss agree with the exact values within
    4 standard errors over contexts (the contexts are independent; a context's queries not)."""
    task = RetrievalTask(T=96, N=128, period=24, vocab=48)
    covered = retrieval_coverage(96, 8)
    exact = retrieval_ceilings(task, covered)
    X = np.asarray(sample_retrieval_contexts(jax.random.key(11), task, 1500))
    nxt = np.roll(X, -1, axis=1)
    seen = (X[:, :, None] == X[:, None, :]) & covered[None, None, :]  # (n, t, p)
    counts = np.einsum("ntp,npv->ntv", seen.astype(float), np.eye(48)[nxt])
    k = seen.sum(2)
    m = np.take_along_axis(counts, X[..., None], 2)[..., 0].astype(int)
    _, pA, wc, wu = _posterior(covered, 48, 8)
    score = wc[k, m][..., None] * counts / np.maximum(k - m, 1)[..., None]
    score += (wu[k, m] / 47)[..., None]
    np.put_along_axis(score, X[..., None], pA[k, m][..., None], 2)
    best = np.isclose(score, score.max(2, keepdims=True), rtol=1e-10, atol=0)
    right = np.take_along_axis(best, nxt[..., None], 2)[..., 0] / best.sum(2)
    loss = -np.log(np.take_along_axis(score, nxt[..., None], 2)[..., 0])
    for sample, want in (
        (right.mean(1), exact.mean_accuracy),
        (right[:, 7::8].mean(1), exact.accuracy[7::8].mean()),
        (loss.mean(1), exact.mean_loss),
    ):
        se = sample.std(ddof=1) / np.sqrt(sample.size)
        assert abs(sample.mean() - want) < 4 * se, (sample.mean(), want, se)


def test_ceilings_at_the_matrix_size_are_ordered():
    """Distinct tokens: full attention answers everything, W8/S8 all but the boundary (1/8 of
    the queries, a guess among 127). Tokens that repeat (V = 16, 48, 128): the ceilings fall as V
    shrinks (not below: at V = 8 and 16 full attention's are both 28.4%), and
    the compressor's covered phases sit above full attention's (less ambiguity)."""
    w8s8 = retrieval_coverage(96, 8)
    distinct = RetrievalTask(T=96, N=128, period=24)
    assert retrieval_ceilings(distinct).mean_accuracy == 1.0
    c = retrieval_ceilings(distinct, w8s8)
    assert c.mean_accuracy == pytest.approx(7 / 8 + 1 / 8 / 127, abs=1e-12)
    means = []
    for V in (16, 48, 128):
        task = RetrievalTask(T=96, N=128, period=24, vocab=V)
        f, w = retrieval_ceilings(task), retrieval_ceilings(task, w8s8)
        covered_phases = np.delete(w.accuracy, np.arange(7, 24, 8))
        assert covered_phases.min() > f.accuracy.max()
        assert w.mean_accuracy < f.mean_accuracy
        means.append(f.mean_accuracy)
    assert means == sorted(means)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: retrieval_coverage(12, 5), "S must divide T = 12, got 5"),
        (lambda: retrieval_coverage(12, 4, [3]), "offsets must be <= 2, got 3"),
        (lambda: retrieval_coverage(12, offsets=[0]), "offsets need a stride S"),
        (
            lambda: retrieval_ceilings(
                RetrievalTask(T=12, N=12, period=4, vocab=3), np.ones(8, bool)
            ),
            "covered must be 12 booleans",
        ),
        (
            lambda: retrieval_ceilings(RetrievalTask(T=300, N=300, period=4, vocab=3)),
            f"covered positions must be <= {CEILING_POSITIONS_MAX}, got 300",
        ),
    ],
)
def test_bad_input_is_refused_in_one_line(call, message):
    with pytest.raises(ValueError, match=message) as err:
        call()
    assert "\n" not in str(err.value)
