"""Atomic result files keyed by their parameters, so interrupted sweeps lose nothing and resume."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ._version import __version__


def _to_jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return _to_jsonable(obj.item())
    if hasattr(obj, "shape") and hasattr(obj, "tolist"):  # numpy or jax arrays
        return _to_jsonable(np.asarray(obj).tolist())
    if isinstance(obj, float) and not np.isfinite(obj):
        return None if np.isnan(obj) else ("inf" if obj > 0 else "-inf")
    return obj


def to_json(obj: Any, **kwargs) -> str:
    """JSON text of results holding numpy/JAX arrays and scalars (NaN becomes null, +-inf
    "inf"/"-inf")."""
    return json.dumps(_to_jsonable(obj), **kwargs)


class CacheWarning(UserWarning):
    """A cache entry that could not be used (damaged, stale or unwritable): it is recomputed."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic_write(path: Path, write: Callable[[str], None]) -> None:
    # A unique temporary name in the target's directory (mkstemp), then an atomic rename: two
    # concurrent writers of one path never see each other's partial files, the last rename wins.
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(
            tmp, 0o666 & ~_umask()
        )  # mkstemp makes 0600; results are ordinary files (0644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path, obj: Any) -> None:
    """Write `obj` as JSON to `path` via a temporary file and an atomic rename."""

    def write(tmp):
        with open(tmp, "w") as f:
            f.write(to_json(obj, indent=2, sort_keys=True))
            f.write("\n")

    _atomic_write(Path(path), write)


def write_text_atomic(path, text: str) -> None:
    """Write `text` to `path` via a temporary file and an atomic rename."""

    def write(tmp):
        with open(tmp, "w") as f:
            f.write(text)

    _atomic_write(Path(path), write)


def write_npz_atomic(path, **arrays) -> None:
    """Write arrays to a compressed .npz at `path` atomically."""

    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **{k: np.asarray(v) for k, v in arrays.items()})

    _atomic_write(Path(path), write)


def parameter_key(params: dict) -> str:
    """A short stable hash of a JSON-able parameter dict (the file name of its result)."""
    text = to_json(params, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def library_version() -> str:
    """The version of the inductheory code that computes results (part of every cache key).

    `inductheory.__version__` (read lazily: `_io` is imported while the package initializes), or
    `internal._version.__version__` before the package is imported; both are that one string.

    **Example:** `library_version() == inductheory.__version__`.
    """
    version = getattr(sys.modules.get("inductheory"), "__version__", None)
    return str(__version__ if version is None else version)


def default_cache_dir() -> Path:
    """The per-user cache directory of finished computations, following the XDG base directories:
    `user_cache_dir()` (`$XDG_CACHE_HOME/inductheory` for an absolute XDG_CACHE_HOME, else
    `~/.cache/inductheory`; `INDUCTHEORY_CACHE_DIR` overrides both).

    Nothing is created here; `cached` creates the directory on its first write. Entries are keyed
    by their parameters and the library version (`library_version`), so the directory can be shared
    by every project and deleted at any time.

    ```python
    cached(default_cache_dir() / "oracle", params, compute)
    ```
    """
    from ._paths import user_cache_dir

    return user_cache_dir()


def _read_entry(path: Path, params_json, version: str):
    """The stored result at `path`, or None (missing; or damaged/stale, reported by a warning)."""
    if not os.path.lexists(path):
        return None
    problem = None
    try:
        if path.is_dir():
            problem = "is a directory, not a result file"
        else:
            with open(path) as f:
                stored = json.load(f)
            if (
                not isinstance(stored, dict)
                or "params" not in stored
                or "result" not in stored
            ):
                problem = "does not hold {params, result} (wrong structure)"
            elif stored["params"] != params_json:
                problem = "holds the result of other parameters"
            elif stored.get("version") != version:
                problem = f"was computed by inductheory {stored.get('version')!r}, not {version!r}"
            else:
                return stored["result"]
    except (
        OSError,
        UnicodeDecodeError,
        ValueError,
    ) as err:  # unreadable, truncated or garbage
        problem = f"cannot be read ({type(err).__name__}: {err})"
    warnings.warn(
        f"cache entry {path} {problem}; recomputing it", CacheWarning, stacklevel=3
    )
    return None


def _entry_path(directory, params: dict, version: str) -> Path:
    return (
        Path(directory)
        / f"{parameter_key({'params': params, 'version': version})}.json"
    )


def load_cached(directory, params: dict):
    """The stored result for `params` in `directory` computed by this library version, or None
    (missing; damaged or stale entries are reported by a `CacheWarning` and ignored)."""
    if directory is None:
        return None
    version = library_version()
    return _read_entry(
        _entry_path(directory, params, version), json.loads(to_json(params)), version
    )


def store_cached(directory, params: dict, result: dict) -> dict:
    """Store `result` for `params` atomically (nothing with `directory=None`); returns it as
    JSON data.

    A failed write is reported by a `CacheWarning`, never an error: the result is still returned.
    """
    if directory is not None:
        version = library_version()
        path = _entry_path(directory, params, version)
        try:
            if path.is_dir():
                raise IsADirectoryError(f"{path} is a directory")
            write_json_atomic(
                path, {"params": params, "version": version, "result": result}
            )
        except OSError as err:
            warnings.warn(
                f"cache entry {path} could not be written ({err}); the result is not cached",
                CacheWarning,
                stacklevel=2,
            )
    return json.loads(to_json(result))


def cached(directory, params: dict, compute: Callable[[], dict]) -> dict:
    """The result for `params`, read from `directory` if a previous run finished it, else computed.

    Each finished point is one JSON file `<hash>.json` holding
    `{"params": ..., "version": ..., "result": ...}`, written atomically (unique temporary name,
    then a rename), so a sweep interrupted at any moment resumes at its first unfinished point and
    concurrent runs never read a partial file. The hash covers `params` and the library version
    (`library_version`): results of older code are never reused silently. A damaged entry
    (truncated, garbage, wrong structure, a directory in its place, unreadable) is reported by its
    path with a `CacheWarning` and recomputed, never a crash; an entry that cannot be written is
    reported the same way and the computed result returned. With `directory=None`, always
    computes. A shared per-user location is `default_cache_dir()`.
    """
    if directory is None:
        return compute()
    stored = load_cached(directory, params)
    if stored is not None:
        return stored
    return store_cached(directory, params, compute())
