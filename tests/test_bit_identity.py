"""The trained models' numbers to the last bit against those recorded before issue 64's moves
(the compressed model's gate paths chosen by its parameters, the formulas it shares with the
paper family in one place): loss, gradient, logits, gates and held-out measures of tiny
configurations of `CompressedModel` (float64) and `Transformer` (float32), every float
compared as its exact hex string (`tests/bit_identity_cases.py`)."""

import json

import pytest
from bit_identity_cases import (
    COMPRESSED,
    FIXTURE,
    PAPER,
    compressed_outputs,
    paper_outputs,
)

RECORDED = json.loads(FIXTURE.read_text())

pytestmark = pytest.mark.slow  # one compile per case: minutes of CPU in all


def _same(new: dict, old: dict) -> None:
    assert sorted(new) == sorted(old)
    for field in old:
        moved = [i for i, (a, b) in enumerate(zip(new[field], old[field])) if a != b]
        assert len(new[field]) == len(old[field]), field
        assert not moved, (
            f"{field}: {len(moved)} of {len(old[field])} numbers moved, first at "
            f"{moved[0]}: {new[field][moved[0]]} against {old[field][moved[0]]}"
        )


@pytest.mark.parametrize("name", sorted(COMPRESSED))
def test_compressed_model_bit_identical(name):
    _same(compressed_outputs(name), RECORDED["compressed"][name])


@pytest.mark.parametrize("name", sorted(PAPER))
def test_transformer_bit_identical(name):
    _same(paper_outputs(name), RECORDED["paper"][name])
