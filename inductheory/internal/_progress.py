"""A minimal progress display on stderr for long runs (no extra dependency)."""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator

# Where the Progress lines of this process go instead of their stream (`report_to`), innermost last.
_SINKS: list[Callable[[str, bool], None]] = []
# Heartbeats told of every Progress line this process writes to its stream (`heartbeat_on`).
_WATCHERS: list[Heartbeat] = []


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
        # the ETA's rate counts from this (time, units done) on: see `update(warmup=True)`
        self._rate_from = (self.start, 0)
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_tenth = -1

    def update(self, n: int = 1, note: str = "", *, warmup: bool = False) -> None:
        """Count `n` more units done and show the line (with `note` after it).

        `warmup=True` says these units' time was mostly one-off work (compiling): the ETA then
        reads the rate of the units after them only, and shows `?` until there are some.
        """
        self.done += n
        now = time.perf_counter()
        if warmup:
            self._rate_from = (now, self.done)
        if not (self.enabled or _SINKS):
            return
        elapsed = now - self.start
        since, done_then = self._rate_from
        eta = (
            f"{(now - since) / (self.done - done_then) * (self.total - self.done):.1f}s"
            if self.done > done_then
            else "?"
        )  # none before the first unit counted at the rate
        counts = f"{self.desc} {self.done}/{self.total}"
        line = f"{counts} [{elapsed:.1f}s elapsed, eta {eta}] {note}".rstrip()
        if _SINKS:
            _SINKS[-1](line, self.done >= self.total)
            return
        tenth = int(10 * self.done / self.total)
        if self._tty or tenth != self._last_tenth or self.done == self.total:
            self._write(line)
        self._last_tenth = tenth

    def note(self, text: str) -> None:
        """Show what is being worked on now, without counting a unit as done."""
        if not (self.enabled or _SINKS):
            return
        line = self._noted(text)
        if _SINKS:
            _SINKS[-1](line, False)
            return
        self._write(line)

    def _noted(self, text: str) -> str:
        """This display's count and elapsed time, then `text` (no ETA: no unit is counted)."""
        elapsed = time.perf_counter() - self.start
        return f"{self.desc} {self.done}/{self.total} [{elapsed:.1f}s elapsed] {text}"

    @contextlib.contextmanager
    def nested(self, every: float = 5.0) -> Iterator[None]:
        """While active, the `Progress` lines of the loops inside one unit of this display (a
        sweep's training, a row's flow batches) are shown after this display's own count: on a
        terminal as they come, otherwise at most one every `every` seconds (and each loop's
        last). Nothing while the display is silent, or routed elsewhere (`report_to`).

        ```python
        with Progress(2, "sweep") as bar:
            with bar.nested():  # "sweep 0/2 [...] train 40/200 ..."
                train(...)  # its own display off
            bar.update()
        ```
        """
        if not self.enabled or _SINKS:
            yield
            return
        shown = [-math.inf]

        def sink(line, finished):
            now = time.perf_counter()
            if self._tty or finished or now - shown[0] >= every:
                shown[0] = now
                self._write(self._noted(line))

        with report_to(sink):
            yield

    def _write(self, line: str) -> None:
        """Show `line`: redrawn in place on a terminal, else a line of its own."""
        self.stream.write(("\r" + line + " " * 8) if self._tty else line + "\n")
        self.stream.flush()
        for watcher in _WATCHERS:
            watcher.seen(line)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.enabled and self._tty and not _SINKS:
            self.stream.write("\n")
            self.stream.flush()
        return False


class Heartbeat:
    """A line for the user when a job has said nothing for `period` seconds: how long it has
    been silent, the last line it sent and whether it is compiling a jax program now (a single
    compiled call can run, or compile, for minutes without a `Progress` line).

    Each line of the job passes through `seen` (or `sink`); `check` emits a heartbeat when the
    job has been silent for `period` (and again after each further `period`). As a context
    manager a daemon thread calls `check` about every second; tests call it themselves with a
    fake `clock`.

    **Arguments:**
    - `emit`: called with each heartbeat line.
    - `period`: seconds of silence before a heartbeat.
    - `clock`: wall seconds (default `time.perf_counter`).
    - `compiling`: seconds the compile running now has taken, or None (default
      `_clock.compiling_for`).

    ```python
    lines = []
    with Heartbeat(lines.append, period=20.0) as beat:
        beat.seen("flow (reduced) 1/4")
    ```
    """

    def __init__(self, emit, period: float = 20.0, *, clock=None, compiling=None):
        if compiling is None:
            from ._clock import compiling_for as compiling
        self.emit, self.period = emit, float(period)
        self.clock = clock or time.perf_counter
        self.compiling = compiling
        self.last_line = None
        # the last progress line and the last heartbeat
        self.last = self.last_beat = self.clock()
        self._stop = threading.Event()
        self._thread = None

    def seen(self, line: str | None = None) -> None:
        """The job sent `line` now: the silence starts again."""
        self.last = self.last_beat = self.clock()
        if line is not None:
            self.last_line = line

    def sink(self, forward):
        """A `report_to` sink that marks each line seen and passes it to `forward(line,
        finished)`."""

        def sink(line, finished):
            self.seen(line)
            forward(line, finished)

        return sink

    def check(self) -> str | None:
        """Emit and return a heartbeat line if the job has been silent for `period`."""
        now = self.clock()
        if now - self.last_beat < self.period:
            return None
        silent = now - self.last
        compiling = self.compiling()
        doing = (
            "computing"
            if compiling is None
            else f"compiling a jax program (for {duration(compiling)})"
        )
        line = f"{doing}; no progress line for {duration(silent)}" + (
            f" (last: {self.last_line})" if self.last_line else ""
        )
        self.last_beat = now
        self.emit(line)
        return line

    def __enter__(self):
        def run():
            while not self._stop.wait(min(1.0, self.period / 4)):
                self.check()

        self._thread = threading.Thread(target=run, name="heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False


# Seconds without a progress line after which a command (`heartbeat_on`), or a figure of
# `reproduce`, says what it is doing.
HEARTBEAT_S = 20.0


@contextlib.contextmanager
def heartbeat_on(stream=None, period: float | None = None) -> Iterator[Heartbeat]:
    """While active, a `Heartbeat` line on `stream` (default stderr) whenever this process has
    written no `Progress` line for `period` seconds (default `HEARTBEAT_S`): a command's compiled
    call can run, or compile, for minutes between two lines of its progress display.

    **Arguments:**
    - `stream`: where the heartbeat lines go (each on a line of its own).
    - `period`: seconds of silence before each heartbeat.

    **Returns:** the `Heartbeat` (its daemon thread stops when the block ends).

    ```python
    with heartbeat_on():
        run_a_long_sweep()
    ```
    """
    from ._clock import listen

    listen()  # so that the heartbeat can say when a compile is what runs
    target = sys.stderr if stream is None else stream
    tty = hasattr(target, "isatty") and target.isatty()

    def emit(line):
        # on a terminal the progress line is redrawn in place: the heartbeat goes below it
        target.write(("\n" if tty else "") + f"inductheory: {line}\n")
        target.flush()

    with Heartbeat(emit, HEARTBEAT_S if period is None else period) as heart:
        _WATCHERS.append(heart)
        try:
            yield heart
        finally:
            _WATCHERS.remove(heart)


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
