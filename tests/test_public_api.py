"""The public API is curated: `__all__` lists exactly the public names, and nothing stray leaks."""

import types

import inductheory as it


def test_all_lists_exactly_the_public_names():
    public = {
        n
        for n, v in vars(it).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert set(it.__all__) == public
    assert len(it.__all__) == len(set(it.__all__))
    assert not hasattr(it, "jax") and not hasattr(it, "np")


def test_every_imported_distribution_is_declared():
    """Each third-party package the library imports is a dependency in pyproject.toml."""
    import ast
    import pathlib
    import sys
    import tomllib

    root = pathlib.Path(it.__file__).parent
    declared = tomllib.loads((root.parent / "pyproject.toml").read_text())
    names = " ".join(
        declared["project"]["dependencies"]
        + sum(declared["project"]["optional-dependencies"].values(), [])
    )
    imported = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    # the distribution's own modules: the package and its top-level py-modules (the entry point)
    own = {"inductheory", *declared["tool"]["setuptools"].get("py-modules", [])}
    third_party = {
        m for m in imported if m not in sys.stdlib_module_names and m not in own
    }
    aliases = {"netCDF4": "netcdf4"}
    missing = {m for m in third_party if aliases.get(m, m).lower() not in names.lower()}
    assert not missing, (
        f"imported but not declared in pyproject.toml: {sorted(missing)}"
    )
