import os
import tempfile

import hypothesis

# Tests never write the user's cache directory, and compiled programs are not persisted (a test that
# counts compilations must see them); tests of the cache itself set these explicitly.
os.environ.setdefault("INDUCTHEORY_CACHE_DIR", tempfile.mkdtemp(prefix="inductheory-test-cache-"))
os.environ.setdefault("INDUCTHEORY_COMPILATION_CACHE", "0")

# Tests compile hundreds of small programs and run each briefly: XLA's cheaper code generation cuts
# the default suite's time by about a third (measured on 2 cores); subprocesses inherit it. The
# numbers checked against committed data are compared with tolerances that this does not touch.
FAST_COMPILE_FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE_FLAGS}".strip()

import inductheory  # noqa: F401  (enables float64 before any test builds arrays)

hypothesis.settings.register_profile("default", deadline=None, max_examples=25, print_blob=True)
hypothesis.settings.register_profile("ci", deadline=None, max_examples=25, derandomize=True, print_blob=True)
hypothesis.settings.load_profile("ci" if os.environ.get("CI") else "default")
