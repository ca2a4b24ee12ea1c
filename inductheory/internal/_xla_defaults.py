"""XLA options this package sets for the whole process when it is imported, before jax starts its
backend (XLA reads `XLA_FLAGS` once, then). Imports nothing of jax: the package's `__init__`
calls `set_xla_defaults` first.

XLA's CPU backend hands some fusions to the YNNPACK library by default. In jaxlib 0.10.2 one of
those default fusions (a transpose inside a YNNPACK call) ends the process with a segmentation
fault on x86 processors without AVX-512 (seen on an AMD EPYC of family 25: evaluating the paper
family's compressed transformer). So every program compiles with XLA's own loops unless it asks
for YNNPACK itself: the trained models' training chunks do (`jit_with_ynn_fusions`, measured
faster), with fusion kinds that run on those processors too. A user's own `XLA_FLAGS` that name
the option win.
"""

from __future__ import annotations

import importlib.metadata
import os

# The XLA option that picks the YNNPACK fusions (trained/_compile.py names it YNN_FUSION_OPTION).
YNN_FUSION_FLAG = "xla_cpu_experimental_ynn_fusion_type"
# The first jaxlib known to have the option: an older XLA aborts on an unknown flag.
YNN_FLAG_SINCE = (0, 10)


def _jaxlib_version() -> tuple[int, ...]:
    try:
        text = importlib.metadata.version("jaxlib")
    except importlib.metadata.PackageNotFoundError:
        return ()
    parts = []
    for part in text.split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def xla_defaults(flags: str, jaxlib: tuple[int, ...]) -> str:
    """`flags` (an `XLA_FLAGS` value) with no default YNNPACK fusion added, unless the flags
    already name the option or `jaxlib` predates it.

    ```python
    xla_defaults("", (0, 10))  # '--xla_cpu_experimental_ynn_fusion_type='
    ```
    """
    if YNN_FUSION_FLAG in flags or jaxlib < YNN_FLAG_SINCE:
        return flags
    return f"{flags} --{YNN_FUSION_FLAG}=".strip()


def set_xla_defaults() -> None:
    """Put `xla_defaults` into this process's `XLA_FLAGS` (and so its child processes')."""
    flags = os.environ.get("XLA_FLAGS", "")
    new = xla_defaults(flags, _jaxlib_version())
    if new != flags:
        os.environ["XLA_FLAGS"] = new
