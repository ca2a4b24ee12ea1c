"""`inductheory reproduce`: regenerate every theorem figure (the README's main job)."""

from __future__ import annotations

import shlex
from pathlib import Path

from ._common import int_type, print_json
from ._declare import QUIET, Option, add_options, output_dir, prose, switch

MAX_DEFAULT_JOBS = (
    4  # each process holds its own compiled programs (a few GiB for the full figures)
)


def default_jobs() -> int:
    """CPU cores available to this process (at most MAX_DEFAULT_JOBS); 1 on an accelerator, whose
    memory one process already claims."""
    import jax

    from ..internal._devices import usable_cores

    if jax.default_backend() != "cpu":
        return 1
    return max(1, min(len(usable_cores()), MAX_DEFAULT_JOBS))


HELP = "regenerate the theorem figures into figures/ (PNG, PDF, data, README)"
DESCRIPTION = prose(
    """
    Compute and draw every theorem figure. Finished computations are cached by their
    parameters, so an interrupted run resumes where it stopped.
    """
)


def register(sub) -> None:
    p = sub.add_parser("reproduce", help=HELP, description=DESCRIPTION)
    add_options(
        p,
        output_dir(
            "output directory (default figures/, and figures/quick/ with --quick); one "
            "holding the other mode's figures is refused"
        ),
        switch(
            "--quick",
            "small versions (about 2 minutes on 2 idle cores from empty caches, half of "
            "it compiling; well under a minute once cached)",
        ),
        Option(
            "--only",
            "comma-separated figure names (default all; a run of all redraws the study "
            "figures from their committed data, --only computes them)",
            str,
        ),
        Option(
            "--cache",
            "cache directory of finished computations (default: inductheory/reproduce in "
            "the user's cache directory, $XDG_CACHE_HOME or ~/.cache)",
            Path,
        ),
        switch("--no-cache", "recompute everything"),
        Option(
            "--jobs",
            "figures computed at once, each in its own process (default: the CPU cores, "
            f"at most {MAX_DEFAULT_JOBS}; 1 on a GPU); the numbers do not depend on it",
            int_type("--jobs", minimum=1),
        ),
        switch("--list", "list the figure names and exit"),
        QUIET,
        switch("--json", "print each figure's findings as JSON"),
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from ..figures import figure_names, reproduce
    from ..figures._reproduce import DEFAULT_OUT

    if args.list:
        print("\n".join(figure_names()))
        return 0
    only = None
    if args.only is not None:
        only = [x.strip() for x in args.only.split(",") if x.strip()]
        if not only:
            raise ValueError(
                f"--only names no figure (got {args.only!r}); choose from {figure_names()}"
            )
    if args.no_cache and args.cache is not None:
        raise ValueError("--cache and --no-cache contradict each other")
    out = DEFAULT_OUT[args.quick] if args.out is None else args.out
    # the canonical command (progress and cache flags do not change the figures), so a rerun as the
    # README says leaves figures/README.md as it is
    command = (
        "inductheory reproduce"
        + (" --quick" if args.quick else "")
        + (f" --out {shlex.quote(str(out))}" if Path(out) != Path("figures") else "")
    )
    cache = False if args.no_cache else (args.cache or True)
    jobs = args.jobs if args.jobs is not None else default_jobs()
    results = reproduce(
        out,
        quick=args.quick,
        only=only,
        cache=cache,
        progress=not args.quiet,
        command=command,
        jobs=jobs,
    )
    summary = {
        name: {"findings": run.findings, **run.times.to_dict()}
        for name, run in results.items()
    }
    if args.json:
        print_json(summary)
    else:
        for name, d in summary.items():
            print(f"{name}: {d['findings']}  [{d['wall_s']:.1f}s]")
        print(f"figures written to {out}/")
    return 0
