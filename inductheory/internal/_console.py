"""The console of a run of named jobs (`reproduce`'s figures): what runs, each job's progress
lines and heartbeats, when each is done, an honest ETA, and the total time, on stderr.

The jobs' own progress reaches it through `_progress.report_to` and `Heartbeat` (in this process)
or through a worker pool's events (`_pool`); it only decides what to print and when.
"""

from __future__ import annotations

import sys
import threading
import time

from ._eta import Eta, describe as eta_words, estimate as eta_estimate
from ._progress import duration


class Console:
    """What a run of named jobs tells the user on stderr: which jobs run, each one's progress
    (prefixed with its name, at most every `every` seconds), a line at least every `quiet`
    seconds while jobs run, when each is done, an ETA once it means something, and the total
    time. `reproduce` prints its figures through it (`figures._timings.FigureConsole`).

    The ETA (`_eta.estimate`) rests on the seconds `expected` of each job (by name; `basis`
    says where they come from, see `_eta.basis`), scaled by how long the jobs done so far took
    against their expectation (never below half of it); it is printed only once the finished
    jobs hold `eta_after` of the expected work: before that the scale is a guess (nominal costs
    are off by factors of two, and a previous run's times say nothing of what its cache now
    saves). A running job past its expectation is named as such, never counted as nearly done.
    `noun` names the jobs in the total line; `clock` gives the seconds (tests pass a fake one).

    ```python
    console = Console({"a": 10.0, "b": 30.0}, "nominal costs", enabled=True)
    console.started("a")
    console.finished("a", 12.0)  # done a (12 s); 1/2
    ```
    """

    def __init__(
        self,
        expected: dict[str, float],
        basis: str,
        enabled: bool,
        every: float = 5.0,
        *,
        jobs: int = 1,
        quiet: float = 30.0,
        eta_after: float = 0.25,
        noun: str = "jobs",
        clock=time.perf_counter,
    ):
        # a job expected to take no time at all still counts for a second (the ETA's shares)
        self.expected = {name: float(s) or 1.0 for name, s in expected.items()}
        self.basis, self.noun = basis, noun
        self.enabled, self.every, self.stream = enabled, every, sys.stderr
        self.jobs, self.quiet, self.eta_after, self.clock = (
            jobs,
            quiet,
            eta_after,
            clock,
        )
        self.start = clock()
        self.running: list[str] = []
        self.done: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.compile: dict[str, float] = {}
        self.last_line: dict[str, float] = {}
        self.last_text: dict[str, str] = {}
        self.loops: dict[str, int] = {}
        self.started_at: dict[str, float] = {}
        self.last_write = self.start
        self._lock = threading.Lock()

    def _write(self, text: str) -> None:
        with self._lock:  # heartbeats come from another thread in a run without workers
            self.last_write = self.clock()
            if self.enabled:
                self.stream.write(text + "\n")
                self.stream.flush()

    def started(self, name: str) -> None:
        if name not in self.running and name not in self.done:
            self.running.append(name)
            self.started_at[name] = self.clock()
            self._write("running: " + ", ".join(self.running))

    def quiet_for(self, seconds: float | None = None) -> None:
        """After `seconds` (default `quiet`) without a line, say what is still running, for how
        long, and the last progress each running job reported."""
        now = self.clock()
        seconds = self.quiet if seconds is None else seconds
        if self.running and now - self.last_write >= seconds:
            parts = []
            for n in self.running:
                last = self.last_text.get(n)
                parts.append(
                    f"{n} ({duration(now - self.started_at[n])}"
                    + (f"; last: {last}" if last else "")
                    + ")"
                )
            eta = self.eta_text()
            self._write(
                "still running: "
                + ", ".join(parts)
                + ("" if eta is None else f"; {eta}")
            )

    def line(self, name: str, text: str, finished: bool = False) -> None:
        # `finished`: the line of a loop's last unit (a flow batch, an oracle map), counted
        self.loops[name] = self.loops.get(name, 0) + bool(finished)
        self.last_text[name] = text
        now = self.clock()
        if now - self.last_line.get(name, -self.every) >= self.every:
            self.last_line[name] = now
            count = f" ({self.loops[name]} done)" if self.loops[name] else ""
            self._write(f"  {name}{count}: {text}")

    def beat(self, name: str, text: str) -> None:
        """A `Heartbeat` of job `name`: printed at once (they come `HEARTBEAT_S` seconds
        apart), without replacing its last progress line."""
        if name in self.running:
            self._write(f"  {name}: {text}")

    def estimate(self) -> Eta:
        """The `_eta.Eta` of the jobs left (see `_eta.estimate`)."""
        now = self.clock()
        return eta_estimate(
            self.expected,
            self.done,
            {n: now - self.started_at[n] for n in self.running},
            jobs=self.jobs,
            after=self.eta_after,
            source=self.basis,
        )

    def eta(self) -> float | None:
        """Seconds left for the jobs within their expectation, or None while the finished
        jobs hold less than `eta_after` of the expected work (or nothing is left but jobs
        already past their expectation)."""
        return self.estimate().seconds

    def eta_text(self) -> str | None:
        """The ETA in words (how long, on what basis, which jobs are past their estimate),
        or None when there is none yet."""
        return eta_words(self.estimate(), duration)

    def finished(
        self, name: str, wall_s: float, cpu_s: float = 0.0, compile_s: float = 0.0
    ) -> None:
        if name in self.running:
            self.running.remove(name)
        self.done[name] = wall_s
        self.cpu[name], self.compile[name] = cpu_s, compile_s
        text = (
            f"done {name} ({duration(wall_s)}); {len(self.done)}/{len(self.expected)}"
        )
        eta = self.eta_text()
        if eta is not None:
            text += f", {eta}"
        self._write(text)

    def total(self, cpu_s: float | None = None) -> None:
        """The total wall time; with `cpu_s` (every process of the run) also the CPU time, the
        cores it kept busy on average and the share of the jobs' CPU spent compiling."""
        wall = self.clock() - self.start
        text = f"total {duration(wall)}"
        if cpu_s is not None and wall > 0:
            jobs_cpu = sum(self.cpu.values())
            text += f"; CPU {duration(cpu_s)} ({cpu_s / wall:.1f} cores busy on average"
            if jobs_cpu > 0:
                text += (
                    f", {100 * sum(self.compile.values()) / jobs_cpu:.0f}% of the "
                    f"{self.noun}' CPU tracing and compiling"
                )
            text += ")"
        self._write(text)
