"""Atomic result files keyed by their parameters, so interrupted sweeps lose nothing and resume."""

from __future__ import annotations

import contextlib
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


# Cache directories (os.pathsep-separated) that are read and never written: `reproduce` sets it
# for an unwritable cache directory that holds entries (its worker processes inherit it).
ENV_READ_ONLY_CACHE = "INDUCTHEORY_READ_ONLY_CACHE"


def read_only_cache(directory) -> bool:
    """Whether `directory` is, or lies in, a directory of `INDUCTHEORY_READ_ONLY_CACHE`: its
    entries are read (`load_cached`), nothing is written there (`store_cached`, `cached`).

    **Example:** `read_only_cache("/tmp/cache/quick")` is True with the variable set to
    `/tmp/cache`.
    """
    listed = os.environ.get(ENV_READ_ONLY_CACHE)
    if not listed or directory is None:
        return False
    here = Path(os.path.abspath(directory))
    roots = [Path(os.path.abspath(p)) for p in listed.split(os.pathsep) if p]
    return any(here == root or root in here.parents for root in roots)


@contextlib.contextmanager
def reading_only(directory):
    """Within it, `directory` is a `read_only_cache` (for this process and the processes it
    starts); the environment is restored after."""
    before = os.environ.get(ENV_READ_ONLY_CACHE)
    os.environ[ENV_READ_ONLY_CACHE] = os.pathsep.join(
        p for p in (before, os.path.abspath(directory)) if p
    )
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV_READ_ONLY_CACHE, None)
        else:
            os.environ[ENV_READ_ONLY_CACHE] = before


def result_checksum(result) -> str:
    """The sha256 of a result's canonical JSON (sorted keys), held by its cache entry: a result
    whose bytes changed after it was written (a flipped digit is still valid JSON) no longer
    matches it.

    **Example:** `result_checksum({"loss": 0.5}) == result_checksum({"loss": 0.5})`.
    """
    text = json.dumps(result, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


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
            elif stored.get("checksum") != result_checksum(stored["result"]):
                problem = (
                    "fails its checksum (its result changed after it was written)"
                    if "checksum" in stored
                    else "has no checksum of its result"
                )
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
    The entry holds the `result_checksum` of the result, so that bytes changed in it later are
    found when it is read (`load_cached`). Nothing is written in a `read_only_cache`.
    """
    data = json.loads(to_json(result))
    if directory is not None and not read_only_cache(directory):
        version = library_version()
        path = _entry_path(directory, params, version)
        entry = {"params": params, "version": version, "result": data}
        try:
            if path.is_dir():
                raise IsADirectoryError(f"{path} is a directory")
            write_json_atomic(path, {**entry, "checksum": result_checksum(data)})
        except OSError as err:
            warnings.warn(
                f"cache entry {path} could not be written ({err}); the result is not cached",
                CacheWarning,
                stacklevel=2,
            )
    return data


def cached(directory, params: dict, compute: Callable[[], dict]) -> dict:
    """The result for `params`, read from `directory` if a previous run finished it, else computed.

    Each finished point is one JSON file `<hash>.json` holding
    `{"params": ..., "version": ..., "result": ...}`, written atomically (unique temporary name,
    then a rename), so a sweep interrupted at any moment resumes at its first unfinished point and
    concurrent runs never read a partial file. The hash covers `params` and the library version
    (`library_version`): results of older code are never reused silently. A damaged entry
    (truncated, garbage, wrong structure, a result that fails its checksum, a directory in its
    place, unreadable) is reported by its
    path with a `CacheWarning` and recomputed, never a crash; an entry that cannot be written is
    reported the same way and the computed result returned. With `directory=None`, always
    computes. A shared per-user location is `default_cache_dir()`.
    """
    if directory is None:
        return compute()
    stored = load_cached(directory, params)
    if stored is not None:
        return stored
    if read_only_cache(directory):
        return store_cached(directory, params, compute())
    path = _entry_path(directory, params, library_version())
    before = _modified(path)
    with _computing(path):
        # another process computing the same entry held the lock: take its result
        if _modified(path) != before:
            stored = load_cached(directory, params)
            if stored is not None:
                return stored
        return store_cached(directory, params, compute())


def _modified(path: Path):
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


@contextlib.contextmanager
def _computing(path: Path):
    """Hold the lock of entry `path` while computing it, so that a process asking for the same
    entry meanwhile waits for it instead of computing it twice (figures computed at once share
    runs). Without flock, or where the lock cannot be made, nothing is held."""
    try:
        import fcntl

        folder = path.parent / ".computing"
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / path.stem, os.O_CREAT | os.O_RDWR, 0o644)
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # releases the lock


# --- output directories: one command's outputs each, never mixed ------------------------------

# The record of what a directory holds, written when a command first claims it.
OUTPUT_RECORD = ".inductheory-out"
_held: dict[
    str, int
] = {}  # directory -> descriptor holding its shared lock (this process)


def _lock(fd: int, exclusive: bool) -> bool:
    """Lock the directory descriptor `fd` (flock); exclusive locks do not wait. True if locked."""
    try:
        import fcntl
    except (
        ImportError
    ):  # no flock here: nothing proves a directory idle, so nothing is cleaned
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_SH)
    except OSError:
        return False
    return True


def _clean_temporaries(directory: Path) -> None:
    # Temporary files of `_atomic_write` left by a killed process (called only while no other
    # process holds the directory, so none of them is being written).
    for folder in (directory, directory / "blocks", directory / "data"):
        for tmp in folder.glob(".*.tmp") if folder.is_dir() else ():
            if tmp.name.startswith(
                ".inductheory-probe."
            ):  # another command's writability probe
                continue
            try:
                tmp.unlink()
            except OSError:
                pass


def _legacy_owner(directory: Path) -> dict | None:
    """What a directory written before records existed holds, from its files (None: unknown)."""
    if (directory / "sweep.json").is_file():
        try:
            kind = json.loads((directory / "sweep.json").read_text())["spec"]["kind"]
            return {"command": f"sweep {kind}", "parameters": None}
        except (OSError, ValueError, KeyError, TypeError):
            return {"command": "sweep", "parameters": None}
    if (directory / "flow.json").is_file():
        return {"command": "flow", "parameters": None}
    if (directory / "summary.csv").is_file():
        return {"command": "oracle --sweep", "parameters": None}
    readme = directory / "README.md"
    if readme.is_file() and (directory / "data").is_dir():
        try:
            text = readme.read_text()
        except (OSError, UnicodeDecodeError):
            return None
        for mode, quick in (("Mode: quick", True), ("Mode: full", False)):
            if mode in text:
                return {"command": "reproduce", "parameters": {"quick": quick}}
    return None


def _read_record(path: Path) -> dict | None:
    """The record at `path`, or None (missing; or damaged, reported by a `CacheWarning`, after
    which the directory is recognized by its files as if it had no record)."""
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        record, problem = None, f"cannot be read ({type(err).__name__})"
    else:
        problem = "does not hold a record {command, parameters}"
    if isinstance(record, dict) and isinstance(record.get("command"), str):
        return record
    warnings.warn(
        f"output record {path} {problem}; writing it again", CacheWarning, stacklevel=4
    )
    return None


def _only_record(directory: Path) -> bool:
    """Whether `directory` holds nothing but its record (a claim whose command then failed)."""
    return all(
        p.name == OUTPUT_RECORD
        or p.name.endswith(".tmp")
        or (p.is_dir() and not any(p.iterdir()))
        for p in directory.iterdir()
    )


def _describe(record: dict) -> str:
    text = f"`inductheory {record['command']}`"
    parameters = record.get("parameters")
    if record["command"] == "reproduce" and isinstance(parameters, dict):
        text += " --quick" if parameters.get("quick") else " (full)"
    return text


def _refuse(directory: Path, stored: dict, wanted: dict, where: str) -> None:
    same = stored["command"] == wanted["command"]
    raise ValueError(
        f"--out {directory} holds the output of {_describe(stored)}"
        + (
            " with other parameters"
            if same and wanted["command"] != "reproduce"
            else ""
        )
        + f" ({where}), not of {_describe(wanted)}; choose another directory, or delete it "
        "to start over"
    )


def _compatible(stored: dict, wanted: dict) -> bool:
    # a sweep whose manifest cannot be read: any sweep kind may claim it (the blocks record
    # their own sweep, and the manifest is rewritten)
    unknown_sweep = stored["command"] == "sweep" and wanted["command"].startswith(
        "sweep "
    )
    if stored["command"] != wanted["command"] and not unknown_sweep:
        return False
    was, now = stored.get("parameters"), wanted.get("parameters")
    # an unknown side (a directory from before records, a kind that checks its own manifest)
    return was is None or now is None or was == now


def probe_writable(path: str | os.PathLike) -> None:
    """Create `path` and write and remove a probe file in it; `OSError` if it cannot be written.

    Permission bits say nothing for root or on read-only file systems: only a write tells.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(dir=path, prefix=".inductheory-probe.", suffix=".tmp")
    os.close(fd)
    os.unlink(probe)


def claim_output_dir(
    directory: str | os.PathLike, command: str, parameters: dict | None = None
) -> Path:
    """Claim `directory` for the outputs of `command` run with `parameters`, or refuse.

    A directory holds the outputs of one command with one set of parameters: the first claim
    records them (`.inductheory-out`, created atomically, so of two concurrent first claims one
    wins and the other is compared with it); a later claim by the same command and parameters
    resumes (or rewrites the same files), any other is refused. Directories written before the
    record existed are recognized by their files (`sweep.json`, `flow.json`, `summary.csv`, a
    figures README's mode). While this process holds the directory (until
    `release_output_dir`), other processes can claim it too but do not clean it: the first claim
    of an idle directory removes the temporary files a killed write left (`.*.tmp`).

    **Arguments:**
    - `directory`: the output directory (created if missing).
    - `command`: what writes it, e.g. `"flow"` or `"sweep loss"`.
    - `parameters`: JSON-able data the outputs depend on (`None`: not compared, for commands
      that check their own manifest).

    **Returns:** the directory, as a `Path`.

    **Raises:** `ValueError` naming what the directory holds and what to do.

    ```python
    claim_output_dir("runs/a", "flow", {"seeds": 4})
    claim_output_dir("runs/a", "flow", {"seeds": 4})  # the same run: fine
    claim_output_dir("runs/a", "flow", {"seeds": 8})  # ValueError: holds ... other parameters
    ```
    """
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    key = str(path.resolve())
    wanted = json.loads(to_json({"command": command, "parameters": parameters}))
    record_path = path / OUTPUT_RECORD
    fd = _held.get(key)
    fresh = fd is None
    if fresh:
        fd = os.open(path, os.O_RDONLY)
    try:
        alone = fresh and _lock(fd, exclusive=True)
        if alone:
            _clean_temporaries(path)
        stored = _read_record(record_path)
        if stored is not None and alone and _only_record(path):
            stored = None  # a claim whose command stopped before writing anything
            os.unlink(record_path)
        if stored is None:
            legacy = _legacy_owner(path)
            if legacy is not None and not _compatible(legacy, wanted):
                _refuse(path, legacy, wanted, "found by its files")
            if os.path.lexists(record_path):  # damaged (reported): replaced
                try:
                    write_json_atomic(record_path, wanted)
                except OSError as err:
                    raise ValueError(
                        f"{record_path} records what --out {path} holds and cannot be "
                        f"replaced ({err.strerror or err}); delete it to start over"
                    ) from None
                stored = wanted
            else:
                stored = _create_record(record_path, wanted)
        if not _compatible(stored, wanted):
            _refuse(path, stored, wanted, f"recorded in {record_path}")
        if fresh:
            # keep a shared lock while this process writes: others must not clean
            if alone:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_SH)
            else:
                _lock(fd, exclusive=False)
    except BaseException:
        if fresh:
            os.close(fd)
        raise
    _held[key] = fd
    return path


def _create_record(path: Path, record: dict) -> dict:
    """Write `record` at `path` unless one exists (atomically: a temporary file, then a hard
    link that fails if `path` exists); the record now at `path`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(to_json(record, indent=2, sort_keys=True) + "\n")
        os.chmod(tmp, 0o666 & ~_umask())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return _read_record(path) or record
        except OSError:  # no hard links on this file system: exclusive creation instead
            try:
                with open(path, "x") as f:
                    f.write(to_json(record, indent=2, sort_keys=True) + "\n")
            except FileExistsError:
                return _read_record(path) or record
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return record


def release_output_dir(directory: str | os.PathLike) -> None:
    """Release a directory claimed by `claim_output_dir` in this process (nothing if none)."""
    fd = _held.pop(str(Path(directory).resolve()), None)
    if fd is not None:
        os.close(fd)


def release_output_dirs() -> None:
    """Release every directory this process claimed (the command line does so when it ends)."""
    for key in list(_held):
        os.close(_held.pop(key))


@contextlib.contextmanager
def claimed_output_dir(directory, command: str, parameters: dict | None = None):
    """`claim_output_dir` for the body of a `with` (nothing when `directory` is None); released
    at its end unless this process held the directory before (a command line's claim)."""
    if directory is None:
        yield None
        return
    held = str(Path(directory).resolve()) in _held
    path = claim_output_dir(directory, command, parameters)
    try:
        yield path
    finally:
        if not held:
            release_output_dir(path)
