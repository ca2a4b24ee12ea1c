"""Warnings that point at the caller's line, not at the library's own files."""

from __future__ import annotations

import contextlib
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


class FigureNote(UserWarning):
    """Not a fault: what a figure says once about an outcome it runs on purpose (flows past the
    regime boundary that select nothing, say), in place of a warning per run. The command line
    prints it as a note; filters treat it as any warning."""


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


def rewarn(category: type[Warning], message: str) -> None:
    """`warn_at_caller(message, category)`, as `UserWarning` for a category that cannot be made
    from a message alone."""
    try:
        category(message)
    except Exception:
        category = UserWarning
    warn_at_caller(message, category)


@contextlib.contextmanager
def warnings_named(prefix: str, report=None):
    """Warnings raised in the body say where they came from: each distinct one (category and
    text) once, as `"{prefix}: {message}"`.

    Without `report` they are raised again when the body ends (also when it raises), attributed
    to the caller's line (`warn_at_caller`), so the caller's filters and handlers apply; with
    `report`, `report(category, text)` gets each one as it occurs (a worker process sends them to
    its parent). Filters set inside the body (`assumptions_silenced`) still silence theirs.

    ```python
    with warnings_named("figure weak_spots"):
        compute()  # NoSelectionWarning("figure weak_spots: no seed selected ...")
    ```
    """
    seen: set = set()
    pending: list = []

    def collect(message, category, filename, lineno, file=None, line=None):
        key = (category, str(message))
        if key in seen:
            return
        seen.add(key)
        text = f"{prefix}: {message}"
        if report is None:
            pending.append((category, text))
        else:
            report(category, text)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = collect
            yield
    finally:
        for category, text in pending:
            rewarn(category, text)


__all__ = ["FigureNote", "warn_at_caller"]
