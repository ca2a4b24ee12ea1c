"""Mitigation and coordination tables: exact measures against a literal computation."""

from __future__ import annotations

import itertools
import math
import types

import jax
import numpy as np
import pytest

import inductheory as it
from inductheory.experiments._mitigations import hard_gate_choices

TASK = dict(H=2, T=12, N=64, beta=4.0, gamma=1.0, kappa=1.0)


def literal_phase_measures(task, key, value):
    """Per-phase loss and top-1 accuracy from the definitions of docs/theory.md §10,
    position by position.

    Entry l holds positions lS + o (mod T), o < W; head h scores entry l by gamma * sum_o
    pK_h(o) [lS+o = t],
    the token at u gets beta * sum_{h,l} a_{h,l} sum_o pV_h(o) [lS+o = u]; N - T outside
    tokens get 0.
    """
    L, S, W, T, N = task.L, task.S, task.W, task.L * task.S, task.N
    key, value = np.asarray(key, float), np.asarray(value, float)
    phases = range(task.n_phases)
    loss, acc = np.zeros(task.n_phases), np.zeros(task.n_phases)
    for p in phases:
        per_query_loss, per_query_acc = [], []
        for t in (p + l * S for l in range(L)):  # every query position of the phase
            logits = np.zeros(T)
            for h in range(task.H):
                scores = np.array(
                    [
                        task.gamma
                        * sum(key[h, o] for o in range(W) if (l * S + o) % T == t)
                        for l in range(L)
                    ]
                )
                a = np.exp(scores - scores.max())
                a /= a.sum()
                for l in range(L):
                    for o in range(W):
                        logits[(l * S + o) % T] += task.beta * a[l] * value[h, o]
            target = logits[(t + 1) % T]
            log_z = math.log(np.sum(np.exp(logits)) + (N - T))
            per_query_loss.append(log_z - target)
            others = np.delete(logits, (t + 1) % T)
            per_query_acc.append(float(target > max(others.max(), 0.0)))
        loss[p], acc[p] = np.mean(per_query_loss), np.mean(per_query_acc)
    return loss, acc


def random_gates(seed, H, W):
    k = jax.random.split(jax.random.key(seed))
    return it.SharedGates(
        key=jax.nn.softmax(3 * jax.random.normal(k[0], (H, W))),
        value=jax.nn.softmax(3 * jax.random.normal(k[1], (H, W))),
    )


@pytest.mark.parametrize("S,W", [(2, 2), (3, 5), (4, 8)])
def test_gate_measures_match_the_literal_model(S, W):
    task = it.experiments.mitigation_task(S, W, **TASK)
    for gates in (
        it.uniform_gates(2, W),
        random_gates(S * W, 2, W),
        it.hard_selection(W, [0, W - 2]),
    ):
        m = it.experiments.gate_measures(task, gates)
        loss, acc = literal_phase_measures(task, gates.key, gates.value)
        np.testing.assert_allclose(m.loss, loss, rtol=1e-10)
        np.testing.assert_array_equal(m.accuracy, acc)
        np.testing.assert_allclose(m.target_probability, np.exp(-loss), rtol=1e-10)
        assert m.gap == acc.max() - acc.min() and m.worst_accuracy == acc.min()
        assert m.mean_loss == pytest.approx(loss.mean(), rel=1e-10)


def test_hard_gate_choices_are_every_multiset_of_pairs():
    c = hard_gate_choices(2, 3)
    assert c.shape == (math.comb(9 + 1, 2), 2, 2)
    assert len({tuple(sorted(map(tuple, x))) for x in c.tolist()}) == len(c)


def test_best_hard_selection_is_the_least_loss_vertex():
    task = it.experiments.mitigation_task(2, 3, **TASK)
    eye = np.eye(3)
    best = min(
        literal_phase_measures(task, eye[[i, k]], eye[[j, m]])[0].mean()
        for (i, j), (k, m) in itertools.product(
            itertools.product(range(3), repeat=2), repeat=2
        )
    )
    gates, choice, loss = it.experiments.best_hard_selection(task)
    assert loss == pytest.approx(best, rel=1e-10)
    assert literal_phase_measures(task, gates.key, gates.value)[
        0
    ].mean() == pytest.approx(best, rel=1e-10)
    assert choice.shape == (2, 2)


def _hard_logits(W, pairs, scale=30.0):
    """Biases (H, 2, W) whose softmax is within e^-30 of the hard gate (key i, value j) per head."""
    b = np.zeros((len(pairs), 2, W))
    for h, (i, j) in enumerate(pairs):
        b[h, 0, i] = b[h, 1, j] = scale
    return b


def fake_runner(pairs_per_seed):
    def runner(task, config, seeds):
        b = [
            _hard_logits(task.W, pairs_per_seed[s % len(pairs_per_seed)])
            for s in range(seeds)
        ]
        sel = [
            [
                i if j == i + 1 else -1
                for i, j in pairs_per_seed[s % len(pairs_per_seed)]
            ]
            for s in range(seeds)
        ]
        return types.SimpleNamespace(
            final_biases=np.array(b),
            selected=np.array(sel),
            status=["selected"] * seeds,
        )

    return runner


def test_table_rows_against_the_literal_model():
    seeds_pairs = [[(0, 1), (1, 2)], [(0, 1), (0, 1)], [(1, 2), (2, 3)]]
    rows = it.experiments.mitigation_table(
        [(3, 4)], seeds=3, runner=fake_runner(seeds_pairs), **TASK
    )
    assert [r.gates for r in rows] == ["learned", "hard optimum", "uniform"]
    task = it.experiments.mitigation_task(3, 4, **TASK)
    eye = np.eye(4)
    per_seed = [
        literal_phase_measures(task, eye[[i for i, _ in p]], eye[[j for _, j in p]])
        for p in seeds_pairs
    ]
    gaps = [a.max() - a.min() for _, a in per_seed]
    learned = rows[0]
    assert learned.gap.mean == pytest.approx(
        np.mean(gaps)
    ) and learned.gap.sd == pytest.approx(np.std(gaps))
    np.testing.assert_allclose(
        learned.accuracy, np.mean([a for _, a in per_seed], axis=0), atol=1e-12
    )
    np.testing.assert_allclose(
        learned.loss, np.mean([l for l, _ in per_seed], axis=0), rtol=1e-8
    )
    assert learned.selections == {"0,1": 1, "0,0": 1, "1,2": 1}
    assert learned.choice is None and "choice" not in learned.to_dict()
    assert rows[1].choice is not None and rows[1].selections is None
    assert set(rows[2].to_dict()) == set(rows[0].to_dict()) - {"selections", "status"}
    assert type(learned).from_dict(learned.to_dict()) == learned
    for row in rows[
        1:
    ]:  # deterministic gates: the gap is max - min of the per-phase accuracy
        assert row.seeds == 1 and row.gap.mean == max(row.accuracy) - min(row.accuracy)
    u_loss, u_acc = literal_phase_measures(
        task, np.full((2, 4), 0.25), np.full((2, 4), 0.25)
    )
    np.testing.assert_allclose(rows[2].loss, u_loss, rtol=1e-10)
    np.testing.assert_allclose(rows[2].target_probability, np.exp(-u_loss), rtol=1e-10)
    assert rows[2].mean_accuracy.mean == u_acc.mean()


def test_the_boundary_phase_is_never_answered_at_w_equal_s():
    rows = it.experiments.mitigation_table(
        [(3, 3), (4, 4)], seeds=2, runner=fake_runner([[(0, 1), (1, 2)]]), **TASK
    )
    assert all(r.accuracy[r.S - 1] == 0.0 for r in rows)


def test_coordination_rows_count_distinct_heads_and_the_worst_phase():
    pairs = [[(0, 1), (1, 2)], [(0, 1), (0, 1)]]
    rows = it.experiments.coordination_table(
        [{}],
        shapes=((2, 3),),
        queries=("within",),
        seeds=4,
        runner=fake_runner(pairs),
        T=12,
        N=64,
        beta=4.0,
    )
    (row,) = rows
    assert row.distinct_fraction == 0.5 and row.selected_seeds == 4
    # within queries at S=3: phases 0, 1; seed 0 answers both, seed 1 only phase 0
    assert row.worst_accuracy.mean == 0.5 and row.gap.mean == 0.5


@pytest.mark.slow
def test_orderings_found_in_the_figure_hold_on_few_seeds():
    """Learned gates keep a gap where uniform gates tie everywhere; the uniform target
    probability is the
    lowest; no learned seed ends below the best hard gate's loss (H=2, T=48, N=4096, 8 seeds)."""
    rows = it.experiments.mitigation_table(
        [(4, 4), (4, 8)], seeds=8, H=2, T=48, N=4096, beta=4.0
    )
    for learned, hard, uniform in zip(rows[::3], rows[1::3], rows[2::3]):
        assert uniform.gap.mean == 0 and uniform.mean_accuracy.mean == 0
        assert learned.gap.q25 == 1
        assert uniform.mean_target_probability.mean < min(
            learned.mean_target_probability.q25,
            hard.mean_target_probability.mean,
        )
        assert learned.mean_loss.q25 >= hard.mean_loss.mean - 1e-12
