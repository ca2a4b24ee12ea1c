import os
import tempfile

import hypothesis

# Tests never write the user's cache directory, and compiled programs are not persisted (a test that
# counts compilations must see them); tests of the cache itself set these explicitly.
os.environ.setdefault("INDUCTHEORY_CACHE_DIR", tempfile.mkdtemp(prefix="inductheory-test-cache-"))
os.environ.setdefault("INDUCTHEORY_COMPILATION_CACHE", "0")

import inductheory  # noqa: F401  (enables float64 before any test builds arrays)

hypothesis.settings.register_profile("default", deadline=None, max_examples=25, print_blob=True)
hypothesis.settings.register_profile("ci", deadline=None, max_examples=25, derandomize=True, print_blob=True)
hypothesis.settings.load_profile("ci" if os.environ.get("CI") else "default")


# The default run compiles hundreds of small programs and runs each briefly: XLA's cheaper code
# generation cuts its time by about a third (measured on 2 cores); subprocesses and xdist workers
# inherit it. Not under `-m slow`, which regenerates every figure and compares it with the committed
# numbers: the constrained frontier of phase_uniformity moves by 3e-4 relative under it. XLA reads
# the flags when jax first builds its backend, after this hook (importing inductheory does not).
FAST_COMPILE_FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def pytest_configure(config):
    if (config.option.markexpr or "").strip() != "not slow":
        return
    if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE_FLAGS}".strip()
