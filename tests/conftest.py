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
