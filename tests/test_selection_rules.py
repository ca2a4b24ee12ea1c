"""The selection and accuracy rules at their thresholds, against numpy written out here.

Each rule is checked just inside and just outside its threshold, where a changed comparison
(`>` for `>=`) or a changed tolerance (`1 - 10 delta` for `1 - delta`) gives another answer.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inductheory as it
from inductheory.experiments import NoSelectionWarning
from inductheory.flow import STATUSES
from inductheory.model._logits import TIE_TOLERANCE


def test_top1_at_exactly_the_tie_tolerance_is_a_tie():
    # target logit 0, rival at -TIE_TOLERANCE: the margin equals the tolerance, which is a tie
    # (wrong); twice the tolerance away is correct
    tol = TIE_TOLERANCE
    logits = jnp.array([[0.0, -tol, -5.0], [0.0, -2 * tol, -5.0], [0.0, 0.0, -5.0]])
    correct = np.asarray(
        it.model.top1_correct(logits, jnp.zeros(3), jnp.array([0, 0, 0]))
    )
    assert correct.tolist() == [False, True, False]


def _numpy_pairs(key, value, delta):
    """Per head: the first r with key[r] >= 1 - delta and value[r + 1] >= 1 - delta, else -1."""
    out = []
    for k, v in zip(np.asarray(key), np.asarray(value)):
        hits = [
            r for r in range(len(k) - 1) if k[r] >= 1 - delta and v[r + 1] >= 1 - delta
        ]
        out.append(hits[0] if hits else -1)
    return np.array(out)


@pytest.mark.parametrize("branch", ["key", "value"])
@pytest.mark.parametrize("scale", [0.5, 0.99, 1.0, 1.01, 2.0, 5.0])
def test_selected_offsets_threshold_is_one_minus_delta(scale, branch):
    # one branch holds mass 1 - scale*delta on its offset (key 1, value 2), the other 1:
    # selected iff scale <= 1 (at scale 1 the mass is exactly 1 - delta, which selects)
    delta, S = 1e-3, 4
    r = 1 if branch == "key" else 2
    near = np.full((1, S), scale * delta / (S - 1))
    near[0, r] = 1 - scale * delta
    key, value = (near, np.eye(S)[[2]]) if branch == "key" else (np.eye(S)[[1]], near)
    got = np.asarray(it.selected_offsets(jnp.asarray(key), jnp.asarray(value), delta))
    assert got.tolist() == ([1] if scale <= 1 else [-1])
    assert got.tolist() == _numpy_pairs(key, value, delta).tolist()
    tied = np.asarray(it.model.concentrated_offsets(jnp.asarray(near), delta))
    assert tied.tolist() == ([r] if scale <= 1 else [-1])


@pytest.mark.parametrize("delta", [0.0, 0.5, -1e-3, 0.7])
def test_selection_tolerance_outside_zero_to_half_is_refused(delta):
    gates = jnp.eye(4)[1:2]
    with pytest.raises(ValueError, match=r"delta must lie in \(0, 1/2\)"):
        it.selected_offsets(gates, gates, delta)


def test_a_flow_stopped_before_selection_reports_no_selection():
    # At t_max = 1200 these seeds' heads hold key/value masses between 1 - 10 delta and
    # 1 - delta: the end-of-run reading must use 1 - delta (up to its 1e-6 relative slack)
    task = it.Task(L=8, S=4, H=2, N=10**5, beta=4.0)
    config = it.FlowConfig(rho=0.1, t_max=1200.0)
    with pytest.warns(NoSelectionWarning, match="no seed selected"):
        ps = it.run_flow(task, config, 2).per_seed
    assert np.all(ps.status == STATUSES.index("t_max"))
    delta = config.delta * (1 + 1e-6)
    discriminating = 0
    for i in range(2):
        p = np.asarray(jnp.exp(ps.state[i] - jnp.max(ps.state[i], -1, keepdims=True)))
        p = p / p.sum(-1, keepdims=True)
        expected = _numpy_pairs(p[:, 0], p[:, 1], delta)
        assert ps.selected[i].tolist() == expected.tolist()
        loose = _numpy_pairs(p[:, 0], p[:, 1], 10 * config.delta)
        discriminating += int(np.any(loose != expected))
        keys = [int(np.argmax(k)) if k.max() >= 1 - delta else -1 for k in p[:, 0]]
        assert ps.key_offsets[i].tolist() == keys
    assert discriminating > 0  # the setting separates 1 - delta from 1 - 10 delta


@pytest.mark.parametrize(
    "keys, values, expected",
    [
        ([0, 2], [1, 3], True),
        ([0, 2], [1, 2], False),  # the second head's value sits on its key offset
        ([0, 2], [0, 3], False),  # the first head's value sits on its key offset
        ([1], [3], False),  # two offsets after the key
        ([-1, 0], [0, 1], False),  # no key selected, even with value = key + 1
        ([-1], [-1], False),
        ([3, 3], [4, 4], True),  # shared offsets still follow
    ],
)
def test_value_follows_key_is_value_at_key_plus_one_for_every_head(
    keys, values, expected
):
    assert bool(it.model.value_follows_key(keys, values)) is expected
    batch = it.model.value_follows_key([keys, keys], [values, [-1] * len(keys)])
    assert batch.tolist() == [expected, False]


@pytest.mark.parametrize(
    "offsets, expected",
    [
        ([[0], [1], [2]], True),
        ([[0], [1], [0]], False),  # heads 0 and 2 share
        ([[0, 1], [1, 0]], True),  # distinct in every block
        ([[0, 1], [1, 1]], False),  # shared in the second block
        ([[0], [-1]], False),  # a head that selected nothing
        ([[2]], True),
    ],
)
def test_distinct_within_blocks_against_sets(offsets, expected):
    o = np.asarray(offsets)
    by_sets = bool(
        np.all(o >= 0)
        and all(len(set(o[:, b])) == o.shape[0] for b in range(o.shape[1]))
    )
    distinct = it.model.distinct_within_blocks
    # concrete arrays (compared with numpy) and traced ones (under jit) alike
    for got in (distinct(o), distinct(jnp.asarray(o)), jax.jit(distinct)(o)):
        assert bool(got) is expected is by_sets
    # a batch of them at once: each as alone
    batch = np.stack([o, np.roll(o, 1, axis=0), np.full_like(o, -1)])
    alone = [bool(distinct(x)) for x in batch]
    assert distinct(batch).tolist() == alone
    assert np.asarray(jax.jit(distinct)(batch)).tolist() == alone


def test_distinct_within_blocks_of_concrete_offsets_compiles_nothing():
    from inductheory.internal._compiles import CompileCount

    offsets = np.random.default_rng(0).integers(-1, 4, size=(16, 3, 2))
    counter = CompileCount()
    for n in range(1, 17):  # a shape of its own each
        it.model.distinct_within_blocks(jax.device_put(offsets[:n]))
    assert counter.count().compiles == 0


@pytest.mark.parametrize("scale", [0.5, 1.0, 2.0])
def test_selection_margins_are_the_weakest_mass_minus_one_minus_delta(scale):
    # head 0 holds 1 - scale*delta on key offset 1 and value offset 2, head 1 is hard on (0, 1):
    # both margins equal -(scale - 1) delta, >= 0 exactly when the heads select
    delta, S = 1e-3, 4
    soft = np.full(S, scale * delta / (S - 1))
    soft[1] = 1 - scale * delta
    worst = np.zeros((2, 2, S))
    worst[0, 0], worst[0, 1] = soft, np.roll(soft, 1)
    worst[1, 0], worst[1, 1] = np.eye(S)[0], np.eye(S)[1]
    worst = jnp.asarray(worst)
    expected = (1 - scale * delta) - (1 - delta)
    pair = float(it.flow.selection_margin(worst, delta))
    tied = float(it.flow.concentration_margin(worst, delta))
    assert pair == pytest.approx(expected, abs=1e-15)
    assert tied == pytest.approx(expected, abs=1e-15)
    selects = it.flow.head_selection(worst, delta)
    assert selects.tolist() == ([1, 0] if scale <= 1 else [-1, 0])
    assert it.flow.head_selection(worst, delta, tied=True).tolist() == (
        [1, 0] if scale <= 1 else [-1, 0]
    )


def test_tied_margin_reads_the_key_branch_only():
    # tied gates: the value branch is not a gate of its own, so making it uniform changes nothing
    delta, S = 1e-3, 4
    worst = np.zeros((2, 2, S))
    worst[:, 0] = np.eye(S)[[1, 3]]
    worst[:, 1] = 1.0 / S
    margin = float(it.flow.concentration_margin(jnp.asarray(worst), delta))
    assert margin == pytest.approx(delta, abs=1e-15)  # both keys hard: 1 - (1 - delta)
    assert it.flow.head_selection(jnp.asarray(worst), delta, tied=True).tolist() == [
        1,
        3,
    ]


def test_phase_gap_is_max_minus_min():
    assert float(it.phase_gap(jnp.array([0.2, 0.9, 0.5]))) == pytest.approx(
        0.7, abs=1e-15
    )
    assert float(it.phase_gap(jnp.array([0.25, 0.25]))) == 0.0


def test_offset_histogram_counts_offset_zero_and_leaves_out_no_selection():
    # seeds x heads; -1: the head selected nothing
    selected = np.array([[0, 1], [0, -1], [2, 0]])
    counts = it.experiments.offset_histogram(selected, 3)
    by_hand = [
        [sum(1 for s in selected[:, h] if s == r) for r in range(3)] for h in range(2)
    ]
    assert counts.tolist() == by_hand == [[2, 0, 1], [1, 1, 0]]
