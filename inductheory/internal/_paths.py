"""Where the library keeps files for the user: the XDG cache directory, never the current one."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/inductheory`, or `~/.cache/inductheory` when XDG_CACHE_HOME is unset or
    relative (the XDG spec says relative values are ignored).

    `INDUCTHEORY_CACHE_DIR` overrides both. Holds the persistent JAX compilation cache (`jax/`) and
    cached results of long computations.
    """
    override = os.environ.get("INDUCTHEORY_CACHE_DIR")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "inductheory"


def enable_compilation_cache(directory: str | os.PathLike | None = None) -> Path | None:
    """Keep compiled XLA programs on disk, so a second run of the same shape starts in seconds.

    Uses `directory`, or `user_cache_dir() / "jax"`; `INDUCTHEORY_COMPILATION_CACHE=0` turns it off.
    Every program is stored, small ones too (a CLI run compiles dozens of them).

    **Returns:** the directory used, or None when disabled or not writable.
    """
    import jax

    path = program_cache_dir(directory, "jax")
    if path is None:
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


def program_cache_dir(directory: str | os.PathLike | None, name: str) -> Path | None:
    """The writable directory `directory` (default `user_cache_dir() / name`) for kept programs,
    created if needed; None when `INDUCTHEORY_COMPILATION_CACHE=0` or it cannot be written."""
    if os.environ.get("INDUCTHEORY_COMPILATION_CACHE", "1") == "0":
        return None
    path = Path(directory) if directory is not None else user_cache_dir() / name
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


__all__ = ["enable_compilation_cache", "user_cache_dir"]
