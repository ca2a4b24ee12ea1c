"""Command-line options as declarations: one record per option, added to a parser by
`add_options`, and the options several commands share declared once here.

An `Option` holds what `add_argument` takes; `count` declares the common integer option with a
lower bound whose help ends in its default. The task's and the configs' options are declared in
`_common.py` (`TASK_OPTIONS`, `ConfigOption`) and `_training_options.py`.
"""

from __future__ import annotations

import dataclasses

from ._common import INT32_MAX, int_type, output_dir_type


@dataclasses.dataclass(frozen=True)
class Option:
    """One option (or positional argument) as data: its `flag` and the keywords of
    `add_argument` that are set (None: argparse's own default).

    **Example:** `add_options(parser, Option("--list", "list and exit", action="store_true"))`.
    """

    flag: str
    help: str | None = None
    type: object = None
    default: object = None
    metavar: str | None = None
    choices: tuple | None = None
    action: str | None = None
    dest: str | None = None

    def add(self, group) -> None:
        """Add the option to `group` (a parser or an argument group)."""
        keywords = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "flag" and getattr(self, f.name) is not None
        }
        if "action" not in keywords and self.flag.startswith("-"):
            keywords["default"] = (
                self.default
            )  # an option left out reads as its default
        group.add_argument(self.flag, **keywords)


def count(
    flag: str, minimum: int, default, help: str, maximum: int | None = INT32_MAX
) -> Option:
    """An integer option `flag` >= `minimum` (<= `maximum`), named in its messages by the flag
    without dashes; the help ends in "(default X)" unless `default` is None.

    **Returns:** the `Option`.

    **Example:** `count("--restarts", 1, 32, "random starts")` (help "random starts (default
    32)").
    """
    shown = "" if default is None else f" (default {default})"
    return Option(
        flag, help + shown, int_type(flag[2:], minimum, maximum), default=default
    )


def switch(flag: str, help: str) -> Option:
    """A flag that turns something on (`store_true`).

    **Returns:** the `Option`. **Example:** `switch("--tied", "one gate per head")`.
    """
    return Option(flag, help, action="store_true")


def output_dir(help: str) -> Option:
    """`--out`: an output directory checked before any computation (`output_dir_type`).

    **Returns:** the `Option`. **Example:** `output_dir("directory for flow.npz")`.
    """
    return Option("--out", help, output_dir_type)


def add_options(group, *options: Option) -> None:
    """Add every option to `group` (a parser or an argument group), in order.

    **Arguments:**
    - `group`: an `argparse` parser or argument group.
    - `options`: `Option` records.

    **Example:** `add_options(p, QUIET, count("--seeds", 1, 16, "number of seeds"))`.
    """
    for option in options:
        option.add(group)


# Options several commands share, declared once.
QUIET = switch("--quiet", "no progress display")
LIST = switch("--list", "list the rows and exit")
ALLOW_FAILURES = switch(
    "--allow-failures",
    "exit 0 even when seeds fail (max_steps, nonfinite, solver_error)",
)
TIED = switch("--tied", "one gate per head and entry for key and value")


__all__ = [
    "ALLOW_FAILURES",
    "LIST",
    "Option",
    "QUIET",
    "TIED",
    "add_options",
    "count",
    "output_dir",
    "switch",
]


def prose(text: str) -> str:
    """A help text written as an indented block (a triple-quoted string), as one line:
    argparse reflows descriptions itself.

    **Returns:** `text` with every run of whitespace one space, stripped.

    **Example:** `prose(\"\"\"two\n    lines\"\"\") == "two lines"`.
    """
    return " ".join(text.split())
