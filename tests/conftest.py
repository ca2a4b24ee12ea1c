import os

import hypothesis

import inductheory  # noqa: F401  (enables float64 before any test builds arrays)

hypothesis.settings.register_profile("default", deadline=None, max_examples=25, print_blob=True)
hypothesis.settings.register_profile("ci", deadline=None, max_examples=25, derandomize=True, print_blob=True)
hypothesis.settings.load_profile("ci" if os.environ.get("CI") else "default")
