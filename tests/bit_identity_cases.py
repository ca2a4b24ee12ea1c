"""Tiny configurations of the two trained models and their outputs as exact float hex strings.

`tests/bit_identity.json` holds what the code computed when it was written (issue 64: the
trained model's gate dispatch and the formulas it shares with the paper family were moved);
`tests/test_bit_identity.py` recomputes the outputs and compares every float to the last bit.
Regenerate (only where a change of numbers is intended) with

    PYTHONPATH=. python tests/bit_identity_cases.py
"""

from __future__ import annotations

import json
import pathlib

import equinox as eqx
import jax
import numpy as np

import inductheory  # noqa: F401  (float64, the XLA flags)
from inductheory.model import sample_contexts
from inductheory.model._task import quiet_task
from inductheory.trained import ModelConfig, init_model, measure
from inductheory.trained._architecture import Architecture, RetrievalTask
from inductheory.trained._mechanisms import gate_offsets
from inductheory.trained._model import general_path
from inductheory.trained._modules import init_transformer
from inductheory.trained._transformer_train import (
    phase_measures,
    sample_retrieval_contexts,
)

FIXTURE = pathlib.Path(__file__).with_name("bit_identity.json")

# name -> (task keywords, ModelConfig keywords, general path)
COMPRESSED = {
    "theorem": ({}, {}, False),
    "theorem_tied": ({}, dict(tied=True), False),
    "theorem_general": ({}, {}, True),
    "linear_bias": ({}, dict(bias=True), False),
    "linear_bias_tied": ({}, dict(bias=True, tied=True), False),
    "bias": ({}, dict(gates="bias"), False),
    "bias_tied": ({}, dict(gates="bias", tied=True), False),
    "uniform": ({}, dict(gates="uniform"), False),
    "local": ({}, dict(local_window=2), False),
    "windows_bias": (dict(W=4, queries="all"), dict(gates="bias"), False),
    "approx_maps_two": (
        dict(d=12),
        dict(embeddings="approximate", maps="learned", layers=2, unembedding="learned"),
        False,
    ),
    "learned_all": (
        {},
        dict(
            embeddings="learned",
            d=6,
            maps="learned",
            unembedding="learned",
            layers=2,
            bias=True,
            tied=True,
            local_window=2,
        ),
        False,
    ),
    "learned_bias_gates": (
        {},
        dict(embeddings="learned", d=6, gates="bias", layers=2),
        False,
    ),
    "learned_uniform": ({}, dict(embeddings="learned", d=6, gates="uniform"), False),
}

# name -> Architecture keywords (d=8, 2 query heads over 1 KV head of width 4, 2 layers)
PAPER = {
    "scalar": dict(W=4, S=4),
    "vector_tied": dict(W=4, S=2, gate="vector", tied=True),
    "uniform": dict(W=4, S=4, gate="uniform", position_bias=False),
    "shared_local": dict(W=4, S=4, payload="shared", local_window=2, mlp=True),
    "first_full": dict(W=4, S=4, first_layer_full=True, position_bias=False),
    "full": dict(attention="full"),
}


def _hex(tree) -> list[str]:
    """Every float of every leaf, in leaf order, as exact hex strings (ints as decimal)."""
    out = []
    for leaf in jax.tree_util.tree_leaves(tree):
        a = np.asarray(leaf)
        if a.dtype.kind == "f":
            out.extend(float(x).hex() for x in a.astype(np.float64).ravel())
        else:
            out.extend(str(int(x)) for x in a.ravel())
    return out


def _perturb(model, seed):
    """Every inexact array leaf moved by N(0, 0.3^2) noise (generic values, no symmetry)."""
    params, fixed = eqx.partition(model, eqx.is_inexact_array)
    leaves, tree = jax.tree_util.tree_flatten(params)
    keys = jax.random.split(jax.random.key(seed), len(leaves))
    new = [
        leaf + (0.3 * jax.random.normal(k, leaf.shape)).astype(leaf.dtype)
        for leaf, k in zip(leaves, keys)
    ]
    return eqx.combine(jax.tree_util.tree_unflatten(tree, new), fixed)


def compressed_outputs(name: str) -> dict[str, list[str]]:
    """Loss, gradient, logits, gates and measures of one `COMPRESSED` case."""
    task_kw, config_kw, general = COMPRESSED[name]
    task = quiet_task(
        L=4, S=3, H=2, N=16, gamma=0.9, beta=3.0, kappa=1.5, **(task_kw | {})
    )
    model = init_model(task, ModelConfig(**config_kw), jax.random.key(3))
    params, fixed = eqx.partition(model, model.trainable())
    leaves, tree = jax.tree_util.tree_flatten(params)
    keys = jax.random.split(jax.random.key(5), len(leaves))
    leaves = [
        leaf + 0.5 * jax.random.normal(k, leaf.shape) for leaf, k in zip(leaves, keys)
    ]
    model = eqx.combine(jax.tree_util.tree_unflatten(tree, leaves), fixed)
    if general:
        model = general_path(model)
    contexts = sample_contexts(jax.random.key(1), task, 3)
    params, fixed = eqx.partition(model, model.trainable())

    @eqx.filter_jit
    def run(params, fixed, contexts):
        model = eqx.combine(params, fixed)
        value, grad = jax.value_and_grad(
            lambda p: eqx.combine(p, fixed).loss(contexts)
        )(params)
        return (
            value,
            grad,
            model.logits(contexts[0]),
            model.gate_probabilities(contexts[0]),
            model.head_outputs(contexts[0]),
        )

    value, grad, logits, gates, heads = run(params, fixed, contexts)
    out = {
        "loss": _hex(value),
        "grad": _hex(grad),
        "logits": _hex(logits),
        "gates": _hex(gates),
        "measure": _hex(measure(model, contexts)),
        "heads": _hex(heads),
    }
    if config_kw.get("gates") in ("bias", "uniform") and not task_kw:
        if config_kw.get("embeddings") is None:
            out["population"] = _hex(model.population_loss())
    return out


def paper_outputs(name: str) -> dict[str, list[str]]:
    """Loss, gradient, gates and held-out measures of one `PAPER` case (float32)."""
    task = RetrievalTask(T=16, N=20, period=4)
    arch = Architecture(d=8, q_heads=2, kv_heads=1, head_dim=4, **PAPER[name])
    model = _perturb(init_transformer(task, arch, jax.random.key(2)), 4)
    contexts = sample_retrieval_contexts(jax.random.key(1), task, 3)
    params, fixed = eqx.partition(model, eqx.is_inexact_array)

    @eqx.filter_jit
    def run(params, fixed, contexts):
        model = eqx.combine(params, fixed)
        value, grad = jax.value_and_grad(
            lambda p: eqx.combine(p, fixed).loss(contexts)
        )(params)
        stacked = jax.tree_util.tree_map(
            lambda a: a[None] if eqx.is_array(a) else a, model
        )
        return (
            value,
            grad,
            model.logits(contexts[0]),
            model.gate_probabilities(contexts[0]),
            phase_measures(stacked, task, contexts),
            gate_offsets(model, contexts) if arch.learned_gates else None,
        )

    value, grad, logits, gates, phases, offsets = run(params, fixed, contexts)
    out = {
        "loss": _hex(value),
        "grad": _hex(grad),
        "logits": _hex(logits),
        "gates": _hex(gates),
        "phases": _hex(phases),
    }
    if offsets is not None:
        out["offsets"] = _hex(offsets)
    return out


def all_outputs() -> dict:
    return {
        "compressed": {name: compressed_outputs(name) for name in COMPRESSED},
        "paper": {name: paper_outputs(name) for name in PAPER},
    }


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(all_outputs(), indent=0, sort_keys=True) + "\n")
    # the same outputs op by op (not jitted) are not recorded: the trainings run jitted
    print(f"wrote {FIXTURE}")
