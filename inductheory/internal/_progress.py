"""A minimal progress display on stderr for long runs (no extra dependency)."""

from __future__ import annotations

import sys
import time


class Progress:
    """Counts finished units of work and shows `desc done/total elapsed eta` on stderr.

    On a terminal the line is redrawn in place; otherwise a line is printed about every 10%.
    `enabled=False` silences it (tests, `--json` pipelines that want clean stderr).

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
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        eta = (
            f"{elapsed / self.done * (self.total - self.done):.1f}s"
            if self.done
            else "?"
        )  # none before the first unit
        counts = f"{self.desc} {self.done}/{self.total}"
        line = f"{counts} [{elapsed:.1f}s elapsed, eta {eta}] {note}".rstrip()
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
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        line = f"{self.desc} {self.done}/{self.total} [{elapsed:.1f}s elapsed] {text}"
        self.stream.write(("\r" + line + " " * 8) if self._tty else line + "\n")
        self.stream.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.enabled and self._tty:
            self.stream.write("\n")
            self.stream.flush()
        return False
