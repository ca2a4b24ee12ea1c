import jax
import numpy as np
import pytest
from hypothesis import given, strategies as st
from strategies import make_task, seeds

import inductheory as it

# Each (L, S, N) compiles its own sampler: six shapes in which every pair of values of L in {2, 5},
# S in {2, 4} and N - L*S in {0, 1, 40} occurs, with hypothesis drawing the seeds.
SHAPES = [(2, 2, 0), (5, 4, 0), (2, 4, 1), (5, 2, 1), (2, 4, 40), (5, 2, 40)]


@given(st.sampled_from(SHAPES), seeds)
def test_contexts_hold_distinct_in_range_tokens(shape, seed):
    L, S, extra = shape
    task = make_task(L=L, S=S, H=1, N=L * S + extra)
    ctx = np.asarray(it.sample_contexts(jax.random.key(seed), task, 16))
    assert ctx.shape == (16, L, S)
    assert ctx.min() >= 0 and ctx.max() < task.N
    for c in ctx:
        assert len(np.unique(c)) == L * S


def test_same_seed_same_contexts():
    task = make_task(L=4, S=3, H=1, N=50)
    a = it.sample_contexts(jax.random.key(7), task, 32)
    b = it.sample_contexts(jax.random.key(7), task, 32)
    c = it.sample_contexts(jax.random.key(8), task, 32)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_sampling_is_uniform_over_tokens_and_slots():
    # Each slot is marginally uniform over V: chi-square against the uniform law.
    task = make_task(L=4, S=3, H=1, N=24)
    ctx = np.asarray(it.sample_contexts(jax.random.key(0), task, 20000))
    for slot in [(0, 0), (3, 2), (1, 1)]:
        counts = np.bincount(ctx[:, slot[0], slot[1]], minlength=24)
        expected = 20000 / 24
        chi2 = np.sum((counts - expected) ** 2 / expected)
        assert chi2 < 60, (slot, chi2)  # 23 dof: P(chi2 > 60) < 1e-4
    # with N = L*S every context is a permutation; the last slot must not be biased to large ids
    assert abs(ctx[:, 3, 2].mean() - 11.5) < 0.2


def test_sampling_large_vocabulary_is_cheap_and_distinct():
    task = make_task(L=8, S=4, H=1, N=10**6)
    ctx = np.asarray(it.sample_contexts(jax.random.key(1), task, 64))
    assert all(len(np.unique(c)) == 32 for c in ctx)


def test_balanced_sample_puts_every_token_equally_often_at_every_offset():
    task = make_task(L=4, S=3, H=1, N=48)
    ctx = np.asarray(it.balanced_contexts(jax.random.key(0), task, 3))
    assert ctx.shape == (3 * 48 // 4, 4, 3)
    for c in ctx:
        assert len(np.unique(c)) == 12
    for r in range(3):
        counts = np.bincount(ctx[:, :, r].ravel(), minlength=48)
        np.testing.assert_array_equal(counts, 3)


def test_balanced_sample_needs_divisibility():
    with pytest.raises(ValueError, match="to divide N"):
        it.balanced_contexts(jax.random.key(0), make_task(L=4, S=3, H=1, N=50), 1)


def test_query_slots_enumerate_non_final_slots():
    blocks, offsets = it.model.query_slots(4, 3)
    assert sorted(zip(blocks.tolist(), offsets.tolist())) == [
        (l, r) for l in range(4) for r in range(2)
    ]
