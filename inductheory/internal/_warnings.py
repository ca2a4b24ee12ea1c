"""Warnings that point at the caller's line, not at the library's own files."""

from __future__ import annotations

import os
import sys
import warnings

import equinox as eqx

# Frames in these directories are the library's (or the `eqx.Module` constructor's, through which
# a `Task` or a config is built): a warning names the first frame outside them.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
SKIPPED_PREFIXES = (
    PACKAGE_DIR,
    os.path.dirname(os.path.abspath(eqx.__file__)) + os.sep,
)


def _caller_stacklevel(prefixes: tuple[str, ...]) -> int:
    """The `stacklevel` of the first frame outside `prefixes`, counted from this function's
    caller (Python < 3.12, which has no `skip_file_prefixes`)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(prefixes):
        frame, level = frame.f_back, level + 1
    return level


def warn_at_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """`warnings.warn(message, category)` attributed to the first line outside the package.

    A warning raised deep inside the library (a `Task` built by `run_flow` for a user's call,
    say) names the user's file and line, so `-W error`, filters by module and the one-line
    report of the default filter all point where the setting was chosen.

    **Arguments:**
    - `message`: the warning's text.
    - `category`: its class (a `Warning` subclass).

    **Returns:** nothing.

    ```python
    warn_at_caller("outside the theorems' assumptions: ...", TheoryAssumptionWarning)
    ```
    """
    if sys.version_info >= (3, 12):
        warnings.warn(message, category, skip_file_prefixes=SKIPPED_PREFIXES)
    else:
        # the frame of `warn_at_caller` itself is level 1 of `warnings.warn`
        warnings.warn(
            message, category, stacklevel=_caller_stacklevel(SKIPPED_PREFIXES)
        )


__all__ = ["warn_at_caller"]
