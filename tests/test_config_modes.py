"""Modes of the configs are `StrEnum`s: given as strings, stored as members, and read the same in
JSON and cache keys as the plain strings."""

import dataclasses
import json

import pytest

import inductheory as it
from inductheory.flow._config import Init, Sample
from inductheory.internal._io import parameter_key, to_json

MODES = [
    (it.FlowConfig, "dynamics", it.Dynamics),
    (it.FlowConfig, "sample", Sample),
    (it.FlowConfig, "init", Init),
    (it.ModelConfig, "embeddings", it.Embeddings),
    (it.ModelConfig, "maps", it.Maps),
    (it.ModelConfig, "unembedding", it.Unembedding),
    (it.ModelConfig, "gates", it.GateClass),
]


@pytest.mark.parametrize("kind", [m[2] for m in MODES])
def test_members_hash_and_serialise_as_their_strings(kind):
    for member in kind:
        enum_params = {"mode": member, "x": 1}
        plain = {"mode": member.value, "x": 1}
        assert parameter_key(enum_params) == parameter_key(plain)
        assert to_json(enum_params, sort_keys=True) == to_json(plain, sort_keys=True)
        assert json.dumps(enum_params) == json.dumps(plain)


def test_config_fields_hold_members():
    assert it.FlowConfig(dynamics="full").dynamics is it.Dynamics.FULL
    assert it.FlowConfig().to_dict()["dynamics"] is it.Dynamics.REDUCED
    full = it.FlowConfig(dynamics="full", sample="iid", init="projected")
    assert full.sample is Sample.IID and full.init is Init.PROJECTED
    config = it.ModelConfig(
        embeddings="learned", d=4, maps="learned", unembedding="learned", gates="bias"
    )
    assert config.embeddings is it.Embeddings.LEARNED
    assert config.maps is it.Maps.LEARNED
    assert config.unembedding is it.Unembedding.LEARNED
    assert config.gates is it.GateClass.BIAS
    assert config == it.ModelConfig(
        embeddings=it.Embeddings.LEARNED,
        d=4,
        maps=it.Maps.LEARNED,
        unembedding=it.Unembedding.LEARNED,
        gates=it.GateClass.BIAS,
    )
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    assert json.loads(to_json(fields))["embeddings"] == "learned"


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda: it.FlowConfig(dynamics="x"),
            "dynamics must be one of reduced, full, got 'x'",
        ),
        (
            lambda: it.FlowConfig(dynamics="full", sample="x"),
            "sample must be one of balanced, iid, got 'x'",
        ),
        (
            lambda: it.FlowConfig(dynamics="full", init="x"),
            "init must be one of ball, projected, got 'x'",
        ),
        (
            lambda: it.ModelConfig(embeddings="x"),
            "embeddings must be one of exact, approximate, learned, got 'x'",
        ),
        (
            lambda: it.ModelConfig(maps="x"),
            "maps must be one of identity, learned, got 'x'",
        ),
        (
            lambda: it.ModelConfig(unembedding="x"),
            "unembedding must be one of tied, learned, got 'x'",
        ),
        (
            lambda: it.ModelConfig(gates="x"),
            "gates must be one of linear, bias, uniform, got 'x'",
        ),
    ],
)
def test_unknown_mode_names_the_field_and_its_choices(make, message):
    with pytest.raises(ValueError, match=message):
        make()
