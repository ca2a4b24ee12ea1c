"""Timings as data: one JSON file per benchmark result under benchmarks/results/, and the two
renderings made from them, docs/performance.md and the README's set-up block (a test checks that
both are their rendering).

A benchmark calls `record(...)` with what it measured; the commit, date, processor and cores of
the machine are filled in. Re-timing then changes a data file, never prose:

    python benchmarks/render_performance.py   # docs/performance.md and README.md's block again

```python
from _results import Span, record
record("reproduce-quick", "reproduce", "inductheory reproduce --quick",
       wall_s=Span.of([118.2]), cpu_s=Span.of([229.0]), compiles=953)
```
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PERFORMANCE = ROOT / "docs" / "performance.md"
README = ROOT / "README.md"
# README.md's set-up block, between these two lines, is rendered from the results
BEGIN, END = (
    "<!-- set-up: rendered by benchmarks/render_performance.py -->",
    "<!-- /set-up -->",
)


@dataclasses.dataclass(frozen=True)
class Span:
    """The lowest and highest of `runs` measurements (equal for one run)."""

    low: float
    high: float
    runs: int = 1

    @classmethod
    def of(cls, values) -> Span:
        values = [float(v) for v in values]
        if not values:
            raise ValueError("Span.of: values must hold at least one measurement")
        return cls(min(values), max(values), len(values))


@dataclasses.dataclass(frozen=True)
class Result:
    """One benchmark result, as benchmarks/results/<name>.json stores it.

    **Fields:**
    - `name`: the file stem; `benchmark`: what was measured (results of one benchmark on several
      machines share it: `reproduce`, `reproduce-quick`, `suite`, ...); `command`: the command
      line timed.
    - `commit`: the tree measured; `date`: ISO date; `processor`, `cores`: the machine (cores
      the run could use).
    - `wall_s`, `cpu_s`: seconds (`Span`: the range over its runs; CPU of every process).
    - `peak_rss_gib`, `compiles`, `tests`: where known (peak resident memory of the largest
      process, XLA compiles, tests run).
    - `note`: what else the number needs to be read right (one sentence).
    """

    name: str
    benchmark: str
    command: str
    commit: str
    date: str
    processor: str
    cores: int
    wall_s: Span
    cpu_s: Span | None = None
    peak_rss_gib: float | None = None
    compiles: int | None = None
    tests: int | None = None
    note: str = ""

    def to_dict(self) -> dict:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict) -> Result:
        d = dict(d)
        d["wall_s"] = Span(**d["wall_s"])
        if d.get("cpu_s") is not None:
            d["cpu_s"] = Span(**d["cpu_s"])
        return cls(**d)


def machine() -> tuple[str, int]:
    """This machine's processor (its model name) and the cores this process may run on."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = (
        len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count()
    )
    return name, int(cores or 1)


def slug(text: str) -> str:
    """`text` as a file name's part: `AMD EPYC` -> `amd-epyc`."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def reproduce_command(args) -> str:
    """The `inductheory reproduce` command line a reproduce benchmark timed (its options)."""
    words = ["inductheory reproduce"] + ["--quick"] * args.quick
    words += [f"--only {args.only}"] if args.only else []
    words += [f"--jobs {args.jobs}"] if args.jobs else []
    return " ".join(words)


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or "unknown"


def record(
    name: str, benchmark: str, command: str, folder: Path = RESULTS, **measured
) -> Path:
    """Write `folder`/<name>.json (benchmarks/results/ by default), atomically: the measured
    fields of `Result` (`wall_s` at least) with this tree's commit, today's date and this
    machine. Returns the path."""
    processor, cores = machine()
    result = Result(
        name=name,
        benchmark=benchmark,
        command=command,
        commit=_commit(),
        date=datetime.date.today().isoformat(),
        processor=processor,
        cores=measured.pop("cores", cores),
        **measured,
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    # a rename is atomic: an interrupted run never leaves half a result for the page to read
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(result.to_dict(), indent=1) + "\n")
    os.replace(partial, path)
    return path


def load(folder: Path = RESULTS) -> list[Result]:
    """Every result under `folder`, by benchmark, then date, then name."""
    results = [
        Result.from_dict(json.loads(p.read_text())) for p in folder.glob("*.json")
    ]
    return sorted(results, key=lambda r: (r.benchmark, r.date, r.name))


def duration(s: float) -> str:
    """Seconds as a reader reads them: `42 min 8 s`, `2 min 0 s`, `5.5 s`."""
    if s < 60:
        return f"{s:.1f} s"
    minutes, seconds = divmod(round(s), 60)
    return f"{minutes} min {seconds} s"


def _span(span: Span | None, unit=duration) -> str:
    if span is None:
        return "-"
    if span.runs == 1 or unit(span.low) == unit(span.high):
        return unit(span.low)
    return f"{unit(span.low)} to {unit(span.high)}"


def _cpu_minutes(s: float) -> str:
    return f"{s / 60:.1f}"


def rounded_minutes(results: list[Result], benchmark: str) -> str:
    """The README's one rounded time of `benchmark`: its slowest run over the results, to the
    minute (`about 43 min`)."""
    walls = [r.wall_s.high for r in results if r.benchmark == benchmark]
    if not walls:
        raise ValueError(f"rounded_minutes: no result of benchmark {benchmark!r}")
    return f"about {max(1, round(max(walls) / 60))} min"


def setup_block(results: list[Result]) -> str:
    """README.md's set-up block: the two commands, each with one rounded time."""
    return "\n".join(
        [
            BEGIN,
            f"Regenerate every figure into `figures/` ({rounded_minutes(results, 'reproduce')} "
            f"on 2 CPU cores from empty caches; `--quick` for small versions, "
            f"{rounded_minutes(results, 'reproduce-quick')}; an interrupted run resumes):",
            "",
            "```bash",
            "python -m pip install -e . && inductheory reproduce",
            "```",
            "",
            f"Run the test suite as CI does ({rounded_minutes(results, 'suite')} on 2 CPU "
            "cores; it also builds the docs):",
            "",
            "```bash",
            'python -m pip install -e ".[test,docs]" && python -m pytest -n 2 --dist loadfile',
            "```",
            END,
        ]
    )


def performance_page(results: list[Result]) -> str:
    """docs/performance.md: every result, grouped by benchmark."""
    lines = [
        "# Performance",
        "",
        "<!-- rendered by benchmarks/render_performance.py from benchmarks/results/*.json: "
        "do not edit by hand -->",
        "",
        "Every number below is a measurement a benchmark wrote to `benchmarks/results/` (one "
        "JSON file per result: command, commit, date, processor, cores, wall and CPU time, peak "
        "memory and compiles where known). Re-timing changes a data file; this page and the "
        "README's rounded times are rendered from them "
        "(`python benchmarks/render_performance.py`), and a test checks that they are.",
        "",
        "Wall and CPU times are ranges over a result's runs; CPU counts every process (the "
        "command and its workers); the processor is the machine's model name (the first "
        "machine's was not recorded). The benchmarks that write results here:",
        "",
        "- `python benchmarks/bench_reproduce.py [--quick] [--only NAMES]`: the first run of "
        "`inductheory reproduce` from empty caches, with per-figure CPU and compile shares;",
        "- `python benchmarks/bench_compiles.py --quick`: its compiles and persistent-cache hits "
        "from a cold and a warm compilation cache;",
        "- `python benchmarks/bench_cores.py --quick`: a quick run's workers on cores of their own "
        "against workers sharing every core, in alternating pairs;",
        "- `python benchmarks/bench_suite.py`: the default test suite, as CI runs it.",
        "",
        "Side-by-side benchmarks that print their comparison (speed and memory of one "
        "computation two ways): `benchmarks/bench_flow.py`, `bench_sweep.py` (one and two CPU "
        "devices), `bench_oracle.py`, `bench_train.py`, `bench_programs.py` (the programs a "
        "training compiles when only its learning rate, schedule, steps or weight decay "
        "change), `bench_matrix.py` (the paper matrix's training step against a matmul of its "
        "FLOPs) and `benchmarks/mutation.py [--sample 40]` (plants one-operator bugs in the "
        "model, loss, selection and flow-summary code and counts those the tests catch). "
        "Each of them writes its result here when run through "
        "`python benchmarks/run.py BENCH.py [ARGS]` (wall, CPU of every process, peak memory, "
        "and its closing comparison line as the note).",
        "",
    ]
    for benchmark in sorted({r.benchmark for r in results}):
        mine = [r for r in results if r.benchmark == benchmark]
        lines += [
            f"## {benchmark}",
            "",
            f"`{mine[-1].command}`",
            "",
            "| date | commit | processor | cores | runs | wall | CPU-min | peak RSS | compiles "
            "| tests |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in mine:
            cells = [
                r.date,
                r.commit,
                r.processor,
                str(r.cores),
                str(r.wall_s.runs),
                _span(r.wall_s),
                _span(r.cpu_s, _cpu_minutes),
                "-" if r.peak_rss_gib is None else f"{r.peak_rss_gib:.1f} GiB",
                "-" if r.compiles is None else f"{r.compiles:,}",
                "-" if r.tests is None else f"{r.tests:,}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
        notes = [f"- {r.date}, {r.commit}: {r.note}" for r in mine if r.note]
        lines += ["", *notes, ""] if notes else [""]
    return "\n".join(lines).rstrip() + "\n"


def with_setup_block(readme: str, results: list[Result]) -> str:
    """`readme` with its set-up block replaced by the rendering of `results`."""
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(readme):
        raise ValueError(f"README.md has no set-up block ({BEGIN} ... {END})")
    return pattern.sub(lambda _: setup_block(results), readme)
