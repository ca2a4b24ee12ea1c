"""A minimal progress display on stderr for long runs (no extra dependency)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

# Where the Progress lines of this process go instead of their stream (`report_to`), innermost last.
_SINKS: list[Callable[[str, bool], None]] = []


@contextlib.contextmanager
def report_to(sink: Callable[[str, bool], None]) -> Iterator[None]:
    """Send every `Progress` line of this process to `sink(line, finished)` while active.

    For a process that does one long job for someone else (a figure in `reproduce`'s worker): the
    library's loops (flow seeds, oracle contexts and points) keep their progress silent by default,
    and here it is routed, whatever their `enabled`, to whoever prints for the user. `finished` is
    True for the line of a loop's last unit.

    **Arguments:**
    - `sink`: called with each line (no newline) and whether that loop is finished.

    ```python
    lines = []
    with report_to(lambda line, finished: lines.append(line)):
        with Progress(2, "seeds", enabled=False) as bar:
            bar.update()
            bar.update()
    ```
    """
    _SINKS.append(sink)
    try:
        yield
    finally:
        _SINKS.remove(sink)


def announce(line: str) -> None:
    """Send `line` to whoever `report_to` routes this process's progress to (nothing otherwise):
    what a long job starts on, between the counted loops of `Progress`.

    ```python
    announce("flow (reduced) S=4 H=2, 256 seeds: computing")
    ```
    """
    if _SINKS:
        _SINKS[-1](line, False)


class Progress:
    """Counts finished units of work and shows `desc done/total elapsed eta` on stderr.

    On a terminal the line is redrawn in place; otherwise a line is printed about every 10%.
    `enabled=False` silences it (tests, `--json` pipelines that want clean stderr), except while
    `report_to` routes this process's progress elsewhere.

    ```python
    with Progress(10, "seeds") as bar:
        for _ in range(10):
            bar.update()
    ```
    """

    def __init__(
        self, total: int, desc: str = "", *, enabled: bool = True, stream=None
    ):
        self.total, self.desc, self.enabled = max(int(total), 1), desc, enabled
        self.stream = stream if stream is not None else sys.stderr
        self.done, self.start = 0, time.perf_counter()
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_tenth = -1

    def update(self, n: int = 1, note: str = "") -> None:
        self.done += n
        if not (self.enabled or _SINKS):
            return
        elapsed = time.perf_counter() - self.start
        eta = (
            f"{elapsed / self.done * (self.total - self.done):.1f}s"
            if self.done
            else "?"
        )  # none before the first unit
        counts = f"{self.desc} {self.done}/{self.total}"
        line = f"{counts} [{elapsed:.1f}s elapsed, eta {eta}] {note}".rstrip()
        if _SINKS:
            _SINKS[-1](line, self.done >= self.total)
            return
        tenth = int(10 * self.done / self.total)
        if self._tty:
            self.stream.write("\r" + line + " " * 8)
            self.stream.flush()
        elif tenth != self._last_tenth or self.done == self.total:
            self.stream.write(line + "\n")
            self.stream.flush()
        self._last_tenth = tenth

    def note(self, text: str) -> None:
        """Show what is being worked on now, without counting a unit as done."""
        if not (self.enabled or _SINKS):
            return
        elapsed = time.perf_counter() - self.start
        line = f"{self.desc} {self.done}/{self.total} [{elapsed:.1f}s elapsed] {text}"
        if _SINKS:
            _SINKS[-1](line, False)
            return
        self.stream.write(("\r" + line + " " * 8) if self._tty else line + "\n")
        self.stream.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.enabled and self._tty and not _SINKS:
            self.stream.write("\n")
            self.stream.flush()
        return False


def duration(seconds: float) -> str:
    """A wall time for people: `12.3 s`, `4 min 12 s`, `2 h 5 min`.

    ```python
    duration(252.4)  # "4 min 12 s"
    ```
    """
    if seconds < 60:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"
