"""The figures' cache when it cannot be written or has been tampered with (issue 65): a
read-only cache directory is read and never written, with one warning; one that cannot be
created warns once and the run goes on without a cache; a cached result whose bytes changed is
found by its checksum and recomputed with a warning, never used."""

from __future__ import annotations

import errno
import json
import warnings

import pytest

import inductheory.figures._readme as readme_module
import inductheory.figures._reproduce as module
from inductheory.internal._io import (
    CacheWarning,
    cached,
    load_cached,
    read_only_cache,
    result_checksum,
)


def _files(directory):
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def _fake_make(calls):
    """A figure that caches two results: one the cache holds, one it does not."""

    def make(name, context, out, report=None):
        mode_cache = context.cache

        def known():
            raise AssertionError("the cached entry was not read")

        calls.append(mode_cache)
        found = cached(mode_cache, {"point": 1}, known) if mode_cache else {"v": 1.25}
        fresh = cached(mode_cache, {"point": 2}, lambda: {"v": 2.5})
        (out / "data" / f"{name}.json").write_text(json.dumps([found, fresh]))
        data = module.FigureData(parameters={}, findings="")
        return module.FigureRun(name, data, module.FigureTimes(1.0, 1.0, 0.0, 0, 0, 1))

    return make


def _unwritable(path):
    raise PermissionError(errno.EACCES, "Permission denied", str(path))


@pytest.fixture
def fake_run(monkeypatch):
    calls = []
    monkeypatch.setattr(module, "_make", _fake_make(calls))
    monkeypatch.setattr(readme_module, "readme", lambda *args: "readme\n")
    monkeypatch.setattr(module, "probe_writable", _unwritable)
    return calls


def _reproduce(tmp_path, cache):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module.reproduce(
            tmp_path / "out",
            quick=True,
            only=["coverage"],
            cache=cache,
            progress=False,
        )
    return [w for w in caught if issubclass(w.category, CacheWarning)]


def test_a_read_only_cache_is_read_and_never_written(tmp_path, fake_run):
    cache = tmp_path / "cache"
    mode = cache / "quick"
    mode.mkdir(parents=True)
    # an entry written beforehand, while the directory was writable
    assert cached(mode, {"point": 1}, lambda: {"v": 1.25}) == {"v": 1.25}
    before = _files(cache)
    said = _reproduce(tmp_path, cache)
    assert len(said) == 1, [str(w.message) for w in said]
    assert "cannot be written (Permission denied)" in str(said[0].message)
    assert "entries are read" in str(said[0].message)
    assert _files(cache) == before  # no entry, lock or timings written
    data = json.loads((tmp_path / "out" / "data" / "coverage.json").read_text())
    assert data == [{"v": 1.25}, {"v": 2.5}]
    assert not read_only_cache(mode)  # the process's environment is restored


def test_a_cache_that_cannot_be_created_warns_once_and_the_run_goes_on(
    tmp_path, fake_run
):
    cache = tmp_path / "nowhere"
    said = _reproduce(tmp_path, cache)
    assert len(said) == 1 and "cannot be created" in str(said[0].message)
    assert fake_run == [None]  # computed without a cache
    assert not cache.exists()


# --- a corrupted entry -----------------------------------------------------------------------


def _flip(path, old: bytes, new: bytes):
    raw = path.read_bytes()
    assert raw.count(old) == 1, raw
    path.write_bytes(raw.replace(old, new))


@pytest.mark.parametrize(
    "old, new", [(b"0.123456", b"0.923456"), (b"17", b"71"), (b'"label"', b'"lab3l"')]
)
def test_a_result_whose_bytes_changed_is_recomputed_with_a_warning(tmp_path, old, new):
    """Flipped bytes that leave valid JSON (a digit, a key): the checksum tells."""
    result = {"loss": 0.123456, "count": 17, "label": "x"}
    calls = []

    def compute():
        calls.append(1)
        return result

    assert cached(tmp_path, {"p": 1}, compute) == result
    (entry,) = tmp_path.glob("*.json")
    stored = json.loads(entry.read_text())
    # the checksum is of the result's canonical JSON, computed here independently
    import hashlib

    text = json.dumps(result, sort_keys=True, separators=(",", ":"))
    assert stored["checksum"] == hashlib.sha256(text.encode()).hexdigest()
    assert stored["checksum"] == result_checksum(result)
    _flip(entry, old, new)
    with pytest.warns(CacheWarning, match="fails its checksum"):
        again = cached(tmp_path, {"p": 1}, compute)
    assert again == result and len(calls) == 2  # recomputed, never the changed bytes
    assert load_cached(tmp_path, {"p": 1}) == result  # rewritten whole


def test_an_entry_without_a_checksum_is_recomputed(tmp_path):
    cached(tmp_path, {"p": 1}, lambda: {"v": 1})
    (entry,) = tmp_path.glob("*.json")
    stored = json.loads(entry.read_text())
    del stored["checksum"]
    entry.write_text(json.dumps(stored))
    with pytest.warns(CacheWarning, match="has no checksum"):
        assert cached(tmp_path, {"p": 1}, lambda: {"v": 2}) == {"v": 2}
