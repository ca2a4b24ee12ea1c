"""Atomic result files keyed by their parameters, so interrupted sweeps lose nothing and resume."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np


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
    """JSON text of results holding numpy/JAX arrays and scalars (NaN becomes null, +-inf "inf"/"-inf")."""
    return json.dumps(_to_jsonable(obj), **kwargs)


def _atomic_write(path: Path, write: Callable[[str], None]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
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


def load_cached(directory, params: dict):
    """The stored result for `params` in `directory`, or None if no finished one is there."""
    if directory is None:
        return None
    path = Path(directory) / f"{parameter_key(params)}.json"
    if not path.exists():
        return None
    with open(path) as f:
        stored = json.load(f)
    if stored.get("params") == json.loads(to_json(params)):
        return stored["result"]
    return None


def store_cached(directory, params: dict, result: dict) -> dict:
    """Store `result` for `params` atomically (nothing with `directory=None`); returns it as JSON data."""
    if directory is not None:
        write_json_atomic(Path(directory) / f"{parameter_key(params)}.json", {"params": params, "result": result})
    return json.loads(to_json(result))


def cached(directory, params: dict, compute: Callable[[], dict]) -> dict:
    """The result for `params`, read from `directory` if a previous run finished it, else computed.

    Each finished point is one JSON file `<hash>.json` holding `{"params": ..., "result": ...}`,
    written atomically, so a sweep interrupted at any moment resumes at its first unfinished point.
    With `directory=None`, always computes.
    """
    if directory is None:
        return compute()
    stored = load_cached(directory, params)
    if stored is not None:
        return stored
    return store_cached(directory, params, compute())
