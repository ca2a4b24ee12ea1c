"""The equinox abstract/final pattern for gates, dynamics and geometries: abstract classes hold
only abstract members and shared concrete methods and cannot be instantiated; every concrete class
in the package is final (never subclassed) and overrides no concrete method of its parent."""

import dataclasses
import importlib
import inspect
import pkgutil

import jax
import jax.numpy as jnp
import pytest

import inductheory as it

ABSTRACT = (it.model.AbstractGates, it.flow.AbstractDynamics, it.model.AbstractGeometry)


def _import_package():
    # every module, so that every subclass defined anywhere in the package is registered
    for info in pkgutil.walk_packages(it.__path__, prefix="inductheory."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def _package_subclasses(cls):
    out = []
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("inductheory."):
            out.append(sub)
        out.extend(_package_subclasses(sub))
    return out


def _is_abstract(cls) -> bool:
    return bool(
        cls.__abstractmethods__ or cls.__abstractvars__ or cls.__abstractclassvars__
    )


def _concrete_members(cls) -> set[str]:
    """Names of the non-abstract methods and properties `cls` itself defines."""
    return {
        name
        for name, value in vars(cls).items()
        if not (name.startswith("__") and name.endswith("__"))
        and (inspect.isfunction(value) or isinstance(value, property))
        and name not in cls.__abstractmethods__
    }


@pytest.mark.parametrize("base", ABSTRACT, ids=lambda c: c.__name__)
def test_abstract_classes_cannot_be_instantiated_and_hold_no_fields(base):
    assert _is_abstract(base)
    assert dataclasses.fields(base) == ()
    with pytest.raises(TypeError):
        base()


@pytest.mark.parametrize("base", ABSTRACT, ids=lambda c: c.__name__)
def test_concrete_classes_are_final_and_override_no_concrete_method(base):
    _import_package()
    subclasses = _package_subclasses(base)
    assert subclasses, f"no concrete {base.__name__} in the package"
    shared = _concrete_members(base)
    for cls in subclasses:
        assert not _is_abstract(cls), f"{cls.__name__} leaves abstract members"
        assert getattr(cls, "__final__", False), f"{cls.__name__} is not marked @final"
        assert not _package_subclasses(cls), f"{cls.__name__} is subclassed"
        assert cls.__bases__ == (base,), (
            f"{cls.__name__} does not subclass {base.__name__}"
        )
        overridden = shared & set(vars(cls))
        assert not overridden, f"{cls.__name__} overrides {sorted(overridden)}"


def test_the_known_implementations_are_the_concrete_classes():
    _import_package()
    names = lambda base: {c.__name__ for c in _package_subclasses(base)}
    assert names(it.model.AbstractGates) == {
        "OracleGates",
        "SharedGates",
        "LinearGates",
    }
    assert names(it.flow.AbstractDynamics) == {"ReducedDynamics", "FullDynamics"}
    assert names(it.model.AbstractGeometry) == {"ExactGeometry", "DenseGeometry"}


def test_a_class_missing_an_abstract_member_cannot_be_instantiated():
    class Partial(it.model.AbstractGates):
        p: jnp.ndarray

        def for_context(self, geometry, tokens):
            return it.SharedGates(key=self.p, value=self.p).for_context(
                geometry, tokens
            )

    with pytest.raises(TypeError):
        Partial(jnp.ones((1, 3)) / 3)


def test_geometries_choose_their_paths():
    task = it.Task(L=4, S=3, H=1, N=48)
    exact = it.make_geometry(task)
    dense = exact.dense()
    tokens = it.sample_contexts(jax.random.key(0), task, 1)[0]
    assert exact.exchangeable_tokens and not dense.exchangeable_tokens
    assert exact.context_basis(tokens) is exact and dense.for_task(task) is dense
    assert dense.context_basis(tokens).dim <= task.L * task.S
    assert float(exact.for_task(it.model.task_with(task, kappa=2.0)).kappa) == 2.0
