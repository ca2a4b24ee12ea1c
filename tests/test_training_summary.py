"""`summarize_training` against numbers worked out by hand from made-up measures."""

import types

import numpy as np
import pytest

import inductheory as it
from inductheory.experiments import summarize_training
from inductheory.trained import ModelConfig

# queries="all" is outside the theorems' assumptions: said by the Task, not under test here
pytestmark = pytest.mark.filterwarnings("ignore:outside the theorems")


def _run(queries="within", tied=False):
    # 3 seeds, 2 heads, W = S = 4: the measures are chosen, not computed
    task = it.Task(L=4, S=4, H=2, N=64, queries=queries)
    phases = 4 if queries == "all" else 3
    measures = types.SimpleNamespace(
        key_offsets=np.array([[0, 1], [2, 2], [1, 0]]),
        value_offsets=np.array([[1, 2], [3, 0], [2, 1]]),
        argmax_mass=np.array(
            [
                [[0.9, 0.8], [0.7, 0.6]],
                [[0.5, 0.4], [0.3, 0.2]],
                [[1.0, 1.0], [0.1, 0.0]],
            ]
        ),
        static_offsets=np.full((3, 2, 2), 2.0) + np.array([0.0, 1.0]),
        avg_offsets=np.full((3, 2, 2), 1.0) + np.array([0.0, 0.5]),
        phase_accuracy=np.array(
            [[1.0, 0.0, 0.5, 0.25][:phases]] * 2 + [[0.5] * phases]
        ),
        phase_gap=np.array([1.0, 1.0, 0.0]),
        mean_accuracy=np.array([0.5, 0.5, 0.5]),
        loss=np.array([1.0, 2.0, 3.0]),
    )
    statistics = types.SimpleNamespace(
        loss=np.array([[9.0, 4.0], [9.0, 5.0], [9.0, 6.0]])
    )
    return types.SimpleNamespace(
        task=task,
        model_config=ModelConfig(tied=tied),
        measures=measures,
        statistics=statistics,
    )


def test_summary_of_made_up_measures():
    s = summarize_training(_run())
    assert (s.seeds, s.heads) == (3, 2)
    key_mass = [0.9, 0.7, 0.5, 0.3, 1.0, 0.1]
    value_mass = [0.8, 0.6, 0.4, 0.2, 1.0, 0.0]
    assert s.argmax_mass_mean == pytest.approx((3.5 / 6, 3.0 / 6))
    assert s.argmax_mass_std == pytest.approx((np.std(key_mass), np.std(value_mass)))
    assert s.argmax_mass_min == pytest.approx((0.1, 0.0))
    # seed 0: 0->1, 1->2 (both follow); seed 1: 2->3 but 2->0; seed 2: 1->2, 0->1
    assert s.value_follows_key_seeds == 2 and s.value_follows_key_share == 2 / 3
    # key offsets distinct in seeds 0 and 2, equal in seed 1
    assert s.distinct_seeds == 2
    assert s.distinct_baseline == pytest.approx(2 / 3)  # 2 heads over W - 1 = 3 offsets
    assert s.static_offsets_mean == pytest.approx((2.0, 3.0))
    assert s.avg_offsets_mean == pytest.approx((1.0, 1.5))
    assert s.phase_accuracy_mean == pytest.approx((2.5 / 3, 0.5 / 3, 1.5 / 3))
    assert s.phase_gap_mean == pytest.approx(2 / 3)
    assert s.phase_gap_of_mean == pytest.approx(2 / 3)
    assert s.boundary_accuracy_mean is None
    assert s.mean_accuracy_mean == 0.5
    assert s.held_out_loss_mean == 2.0 and s.train_loss_mean == 5.0
    assert set(s.to_dict()) >= {"value_follows_key_share", "distinct_share"}


def test_boundary_phase_and_tied_baseline():
    s = summarize_training(_run(queries="all", tied=True))
    assert s.boundary_accuracy_mean == pytest.approx(1.0 / 3)  # (0.25 + 0.25 + 0.5) / 3
    assert s.distinct_baseline == pytest.approx(
        3 / 4
    )  # tied: 2 heads over W = 4 offsets
