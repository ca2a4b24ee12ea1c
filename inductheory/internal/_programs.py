"""Traced programs kept between processes: a store of `jax.export`ed lane programs.

The persistent compilation cache (`enable_compilation_cache`) skips XLA's compile in a second
process, but not the tracing that computes its key: for a gradient flow, tracing diffrax takes
seconds. The program store keeps the traced, lowered program itself (a serialized
`jax.export.Exported`), keyed on everything that sets it: the argument tree and shapes (which hold
the static fields), the source of this package, the versions of jax and of the libraries it
traces, the backend and the process-wide options. A second process deserializes it in
milliseconds and calls it; the call is the same StableHLO, so it computes the same numbers. Each
file records its own key: a file found under a key it was not exported for (copied or renamed),
damaged or from an older version is reported by a `CacheWarning` naming it and exported again.

Off by default; the command line turns it on (`enable_program_store`). Programs with host callbacks
(equinox's runtime checks unless `EQX_ON_ERROR=nan`) cannot be exported; they run as usual.
"""

from __future__ import annotations

import functools
import hashlib
import os
import warnings
from pathlib import Path

import jax
import numpy as np

from ._io import CacheWarning, _atomic_write
from ._paths import program_cache_dir

_store: dict = {"directory": None}
_loaded: dict[str, object] = {}

_refused: set[str] = set()


def enable_program_store(directory: str | os.PathLike | None = None) -> Path | None:
    """Keep exported lane programs on disk in `directory` (default `user_cache_dir() / "programs"`).

    `INDUCTHEORY_COMPILATION_CACHE=0` turns it off along with the compilation cache.

    **Returns:** the directory used, or None when disabled or not writable.
    """
    path = program_cache_dir(directory, "programs")
    if path is not None:
        _store["directory"] = path
    return path


def disable_program_store() -> None:
    """Stop using the store (programs already loaded in this process are forgotten too)."""
    _store["directory"] = None
    _loaded.clear()


@functools.lru_cache(maxsize=1)
def _source_digest() -> str:
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _environment() -> str:
    from importlib.metadata import version

    versions = [
        f"{name}={version(name)}"
        for name in ("jax", "jaxlib", "diffrax", "equinox", "optimistix")
    ]
    device = jax.devices()[0]
    return "|".join(
        versions
        + [
            device.platform,
            device.device_kind,
            str(jax.config.jax_enable_x64),
            os.environ.get("EQX_ON_ERROR", ""),
            _source_digest(),
        ]
    )


def program_store_directory() -> Path | None:
    """The store's directory, or None when the store is off."""
    return _store["directory"]


def program_key(name: str, args) -> str:
    """The store's key of program `name` called on `args`: a hash of the argument tree (with its
    static fields), the leaves' shapes and dtypes, and `_environment()`."""
    return _key(name, *jax.tree.flatten(args))


def _key(name: str, leaves, treedef) -> str:
    shapes = [(np.shape(x), str(np.asarray(x).dtype)) for x in leaves]
    text = "\n".join([name, str(treedef), repr(shapes), _environment()])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def stored_call(name: str, fn, args):
    """`jax.jit(fn)(*args)`, through the program store when it is on (single-device programs only).

    The first call of a key exports the traced program and writes it atomically; later calls, in
    this or any process, load it instead of tracing `fn`. Falls back to `jax.jit(fn)` when the
    store is off, there are several devices, or the program cannot be exported.
    """
    directory = _store["directory"]
    if directory is None or len(jax.devices()) != 1:
        return _jitted(fn)(*args)
    leaves, treedef = jax.tree.flatten(args)
    key = _key(name, leaves, treedef)
    if key in _refused:
        return _jitted(fn)(*args)
    call = _loaded.get(key)
    if call is None:
        path = Path(directory) / f"{name}-{key}.jaxexport"
        exported = _load(path, name, key)
        if exported is None:
            flat = lambda *xs: fn(*jax.tree.unflatten(treedef, xs))  # noqa: E731
            specs = [
                jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype) for x in leaves
            ]
            try:
                exported = jax.export.export(jax.jit(flat))(*specs)
                blob = exported.serialize()
            except Exception:  # host callbacks or other non-serializable parts
                _refused.add(key)
                return _jitted(fn)(*args)
            data = _header(name, key) + blob
            _atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))
        call = _loaded[key] = jax.jit(exported.call)
    return call(*leaves)


# A stored program starts with this line and its own key: a file is used only under the key it
# was exported for (a file copied or renamed to another program's name is exported again).
_MAGIC = b"inductheory-program 1\n"


def _header(name: str, key: str) -> bytes:
    return _MAGIC + f"{name}-{key}\n".encode()


def _load(path: Path, name: str, key: str):
    """The program stored at `path` for `name` and `key`, or None (missing; or damaged or
    foreign, reported by a `CacheWarning` naming the file, then exported again)."""
    if not path.exists():
        return None
    try:
        data = path.read_bytes()
    except OSError as err:
        problem = f"cannot be read ({type(err).__name__})"
    else:
        header = _header(name, key)
        if not data.startswith(_MAGIC):
            problem = "records no key (damaged, or written by an older version)"
        elif not data.startswith(header):
            problem = "was exported for another program (its recorded key differs)"
        else:
            try:
                return jax.export.deserialize(bytearray(data[len(header) :]))
            except Exception as err:  # damaged or from an incompatible jax
                problem = f"cannot be deserialized ({type(err).__name__})"
    warnings.warn(
        f"stored program {path} {problem}; exporting it again",
        CacheWarning,
        stacklevel=3,
    )
    return None


@functools.cache
def _jitted(fn):
    return jax.jit(fn)


__all__ = [
    "disable_program_store",
    "enable_program_store",
    "program_key",
    "program_store_directory",
    "stored_call",
]
