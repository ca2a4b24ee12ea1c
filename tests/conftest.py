import os
import shutil
import tempfile

import hypothesis
import pytest

# Tests never write the user's cache directory, and the library's own caches (the CLI's compilation
# cache, the program store) stay off; tests of those caches turn them on explicitly.
os.environ.setdefault(
    "INDUCTHEORY_CACHE_DIR", tempfile.mkdtemp(prefix="inductheory-test-cache-")
)
os.environ.setdefault("INDUCTHEORY_COMPILATION_CACHE", "0")

# One persistent XLA cache for the whole run, shared through the environment by the xdist workers,
# CLI subprocesses and notebook kernels: many tests compile the same programs (about a fifth of the
# default run's time on 2 cores). It starts empty and is removed at the end (pytest_unconfigure), so
# every run compiles from scratch once. Counting tests are unaffected: jax reports a program read
# from this cache as a backend compile too.
_SESSION_XLA_CACHE = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _SESSION_XLA_CACHE = tempfile.mkdtemp(prefix="inductheory-test-xla-")
    os.environ.update(
        JAX_COMPILATION_CACHE_DIR=_SESSION_XLA_CACHE,
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0",
    )

import jax  # noqa: E402

import inductheory  # noqa: F401,E402  (enables float64 before any test builds arrays)

# in case a plugin imported jax before this file set its environment
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

# A test process traces and compiles hundreds of programs: the command line's settings of the
# garbage collector (inductheory/internal/_gc.py) cut the share of its CPU spent in collections.
from inductheory.internal import tune_garbage_collector  # noqa: E402

tune_garbage_collector()

# Properties without their own `@settings` draw DEFAULT_EXAMPLES examples in the default run and
# SLOW_EXAMPLES in a run that includes the slow target (pytest_configure picks the profile), so
# the slow target keeps the longer search. Profiles: "default" and "ci" (derandomized), each with
# a "-slow" twin.
DEFAULT_EXAMPLES, SLOW_EXAMPLES = 10, 25
for _name, _derandomize in (("default", False), ("ci", True)):
    for _suffix, _examples in (("", DEFAULT_EXAMPLES), ("-slow", SLOW_EXAMPLES)):
        hypothesis.settings.register_profile(
            _name + _suffix,
            deadline=None,
            max_examples=_examples,
            derandomize=_derandomize,
            print_blob=True,
        )


def _hypothesis_profile(markexpr: str) -> str:
    base = "ci" if os.environ.get("CI") else "default"
    return base if _deselects_slow(markexpr) else base + "-slow"


# The default run compiles hundreds of small programs and runs each briefly: XLA's cheaper code
# generation cuts its time by about a third (measured on 2 cores), and its older loop emitters
# (`--xla_cpu_use_fusion_emitters=false`) compile the diffrax flows faster still (tests/test_flow_
# full.py and test_flow_reduced.py together: 139 CPU-s against 228 without them); subprocesses,
# notebook kernels and xdist workers inherit them. Not under `-m slow`, which regenerates
# every figure and compares it with the committed numbers: the constrained frontier of
# phase_uniformity moves by 3e-4 relative under it. XLA reads the flags when jax first builds its
# backend, after this hook (importing inductheory does not); tests/test_suite_settings.py checks
# that the default run has them.
from inductheory.internal._pool import FAST_COMPILE_FLAGS  # noqa: E402  (the same flags)


def _deselects_slow(markexpr: str) -> bool:
    # the default `-m 'not slow and not docs'` (pyproject.toml), or any run that leaves slow out
    return "not slow" in " ".join(markexpr.split())


def pytest_configure(config):
    hypothesis.settings.load_profile(_hypothesis_profile(config.option.markexpr or ""))
    if not _deselects_slow(config.option.markexpr or ""):
        return
    if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (
            f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE_FLAGS}".strip()
        )


def pytest_unconfigure(config):
    if (
        _SESSION_XLA_CACHE is not None
    ):  # only the process that made it (not the xdist workers)
        shutil.rmtree(_SESSION_XLA_CACHE, ignore_errors=True)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Free each test file's compiled XLA programs when it ends: every CPU executable holds its
    own memory mappings, and a worker that keeps all of a suite's programs passes the kernel's
    limit on mappings per process (vm.max_map_count, 65530 by default) and dies."""
    yield
    import gc

    import jax

    jax.clear_caches()
    gc.collect()
