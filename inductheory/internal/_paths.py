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

    Uses `directory`, or `user_cache_dir() / "jax" / compilation_cache_name()`: one folder per
    jaxlib version and host CPU (see there); `INDUCTHEORY_COMPILATION_CACHE=0` turns it off.
    Every program is stored, small ones too (a CLI run compiles dozens of them).

    jax keys each entry on the program, the jaxlib version, the backend, the compile options and
    the `XLA_FLAGS` in the environment when it compiles (XLA reads them once, when jax starts its
    backend: they must not change after that, and nothing in this package changes them then).

    **Returns:** the directory used, or None when disabled or not writable.
    """
    import jax

    if directory is None:
        directory = user_cache_dir() / "jax" / compilation_cache_name()
    path = program_cache_dir(directory, "jax")
    if path is None:
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


def compilation_cache_name() -> str:
    """The folder of the compilation cache for this jaxlib and this host CPU, e.g.
    `jaxlib-0.10.2-cpu-3f9a1c2e`.

    jax's own key holds the jaxlib version but, on the CPU backend, nothing of the processor: XLA
    compiles for the host's instruction set, so a cache in a home directory shared by machines
    of different processors could serve one of them code it cannot run. The processor's model
    and feature flags (Linux's /proc/cpuinfo; the platform's name elsewhere) pick the folder, and
    so does the jaxlib version, so that an upgrade starts a fresh folder and the old one can be
    deleted whole.
    """
    import hashlib
    import platform

    from jax._src.lib import version_str

    try:
        text = Path("/proc/cpuinfo").read_text()
        lines = [
            line
            for line in text.splitlines()
            if line.split(":")[0].strip() in ("model name", "flags", "Features")
        ]
        machine = "\n".join(sorted(set(lines)))
    except OSError:
        machine = ""
    machine += "|" + platform.machine() + "|" + platform.processor()
    digest = hashlib.sha256(machine.encode()).hexdigest()[:8]
    return f"jaxlib-{version_str}-{platform.machine() or 'cpu'}-{digest}"


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
