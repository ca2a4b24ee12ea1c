"""Arguments and output shared by the subcommands.

Every numeric option is parsed by a validating `type=` function (`int_type`, `float_type`,
`list_type`) that checks syntax, finiteness and range and names the option, so a bad value ends
as one line `inductheory CMD: error: argument --X: ...` with exit status 2, never a traceback
from deep inside the library.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import math
import os
import re
import sys
from pathlib import Path

from ..internal._devices import MAX_CPU_DEVICES
from ..internal._io import probe_writable, to_json
from ..internal._table import format_table  # noqa: F401 (re-exported for the subcommands)
from ..model._objective import OBJECTIVES
from ..model._task import QUERY_SETS, Task

# Largest integer sizes: int64 for seeds (jax.random.key), float64's exact integers for the
# vocabulary of closed-form paths, int32 where token ids or counts live in int32 arrays.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
EXACT_FLOAT_INT = 2**53
# Largest vocabulary on paths that hold token ids (int32 contexts: full flow, oracle, Monte Carlo).
TOKEN_ID_MAX = INT32_MAX

# Exit statuses of the command line.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_MEMORY, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class CLIError(Exception):
    """A condition the command reports in one line and exits with `code` (default 2)."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


class NonFiniteResult(CLIError):
    """A computed result holds NaN or inf: reported, never printed as null with exit 0."""

    def __init__(self, message: str):
        super().__init__(message, EXIT_FAILED)


class OneLineParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose errors are one line: `PROG: error: MESSAGE` (exit 2).
    A command may set `unrecognized_hint(extras) -> str` (empty: none): said after its list of
    unrecognized arguments, e.g. the command that does take them. A command with an optional
    family subcommand (`add_family`) takes its own options before the family's word only if
    the family is not given: `train paper` reads every option after `paper`."""

    unrecognized_hint = None
    family_word = None

    def _own_args(self) -> list[str]:
        """The raw arguments this parser saw before its family's word."""
        raw = getattr(self, "_raw_args", [])
        if self.family_word in raw:
            raw = raw[: raw.index(self.family_word)]
        return raw

    def error(self, message):
        # an option of another command followed by a value reads as a positional (`train
        # --kv-heads 8`: "invalid choice: '8'"): the hint names the options this parser does
        # not take and the command that does
        foreign = [
            a
            for a in self._own_args()
            if a.split("=")[0] not in self._option_string_actions
        ]
        hint = self.unrecognized_hint(foreign) if self.unrecognized_hint else ""
        if hint and "unrecognized arguments" not in message:
            message += hint
        self.exit(
            EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n"
        )

    def parse_known_args(self, args=None, namespace=None):
        self._raw_args = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if self.family_word is not None and getattr(namespace, "family", None):
            before = self._own_args()
            if before:  # the family's parser would overwrite them with its defaults
                self.error(
                    f"options of `{self.prog} {self.family_word}` go after "
                    f"{self.family_word!r}, got {' '.join(before)} before it"
                )
        if extras and " " in self.prog:
            # a command's own options (a nested command refused its own first): name the
            # command and its help, not the top level's
            hint = self.unrecognized_hint(extras) if self.unrecognized_hint else ""
            self.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return namespace, extras


def command_prefix(args) -> str:
    """The command as typed, for its one-line errors: `inductheory sweep train paper`."""
    words = (getattr(args, n, None) for n in ("command", "kind", "family"))
    return " ".join(["inductheory", *filter(None, words)])


def add_family(parser, word: str):
    """An optional subcommand `word` of command `parser` (`train paper`): the parser that takes
    the family's options, every one after `word`."""
    parser.family_word = word
    family = parser.add_subparsers(dest="family", metavar=word, required=False)
    return family


# --- validating argument types ----------------------------------------------------------------

_INT = re.compile(r"[+-]?\d+")


def _parse_int(text: str, name: str, minimum=None, maximum=None) -> int:
    t = text.strip().replace("_", "")
    if _INT.fullmatch(t):
        value = int(t)
    else:
        # "1e3" is accepted when it is an exact integer; "1.5", "1e400", "inf", "nan" are not
        try:
            f = float(t)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} must be an integer, got {text!r}"
            ) from None
        if not math.isfinite(f) or f != int(f) or abs(f) > EXACT_FLOAT_INT:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}")
        value = int(f)
    if minimum is not None and value < minimum:
        raise argparse.ArgumentTypeError(
            f"{name} must be >= {minimum}, got {text.strip()}"
        )
    if maximum is not None and value > maximum:
        raise argparse.ArgumentTypeError(
            f"{name} must be <= {maximum}, got {text.strip()}"
        )
    return value


def _parse_float(
    text: str, name: str, low=None, high=None, low_open=False, high_open=False
) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{name} must be a number, got {text!r}"
        ) from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(
            f"{name} must be a finite number, got {text.strip()!r}"
        )
    if low is not None and (value < low or (low_open and value == low)):
        raise argparse.ArgumentTypeError(
            f"{name} must be {'>' if low_open else '>='} {low}, got {text.strip()}"
        )
    if high is not None and (value > high or (high_open and value == high)):
        raise argparse.ArgumentTypeError(
            f"{name} must be {'<' if high_open else '<='} {high}, got {text.strip()}"
        )
    return value + 0.0  # -0.0 is 0.0 (echoed in JSON, keys of caches)


def int_type(name: str, minimum: int | None = None, maximum: int | None = INT32_MAX):
    """argparse `type=`: an integer in [minimum, maximum] (exact floats such as 1e3 accepted)."""

    def parse(text):
        return _parse_int(text, name, minimum, maximum)

    parse.__name__ = name  # argparse names the type in its messages
    return parse


def float_type(
    name: str,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open=False,
    high_open=False,
):
    """argparse `type=`: a finite float in the given (open or closed) range."""

    def parse(text):
        return _parse_float(text, name, low, high, low_open, high_open)

    parse.__name__ = name
    return parse


def list_type(
    name: str,
    kind: str = "float",
    low=None,
    high=None,
    *,
    low_open=False,
    high_open=False,
):
    """argparse `type=`: a comma-separated list of ints or finite floats; empty items are errors
    (`0,,2`), an empty string is an empty list (the command decides whether that is allowed)."""

    def parse(text):
        if text.strip() == "":
            return []
        items = text.split(",")
        if any(x.strip() == "" for x in items):
            raise argparse.ArgumentTypeError(f"{name} has an empty item: {text!r}")
        if kind == "int":
            return [_parse_int(x, name, low, high) for x in items]
        return [_parse_float(x, name, low, high, low_open, high_open) for x in items]

    parse.__name__ = name
    return parse


def betas_type(name: str):
    """argparse `type=` (given the option's name): two comma-separated moment decays `b1,b2`,
    each in [0, 1), as a tuple."""
    items = list_type(name, "float", 0, 1, high_open=True)

    def parse(text):
        values = items(text)
        if len(values) != 2:
            raise argparse.ArgumentTypeError(
                f"{name} must be two numbers b1,b2 in [0, 1), got {text!r}"
            )
        return tuple(values)

    parse.__name__ = name
    return parse


def output_dir_type(text: str) -> Path:
    """argparse `type=` for an output directory: non-empty, not an existing file, and writable
    (or creatable) — checked before any computation starts."""
    return check_output_dir(text)


output_dir_type.__name__ = "output directory"


# Bytes kept free below PATH_MAX for what a command writes inside its output directory, e.g.
# "blocks/.block-00000.npz.XXXXXXXX.tmp" or "data/.theorem2_trajectories.json.XXXXXXXX.tmp".
OUTPUT_NAME_RESERVE = 64


def _exists(path: Path) -> bool:
    """`path.exists()`, False where asking fails (a name too long: ENAMETOOLONG, a loop)."""
    try:
        return path.exists()
    except OSError:
        return False


def _path_limit(path: Path, name: str, default: int) -> int:
    """`os.pathconf` of the nearest existing ancestor of `path` (`default` where unknown)."""
    probe = path.absolute()
    while not _exists(probe) and probe != probe.parent:
        probe = probe.parent
    try:
        return os.pathconf(probe, name)
    except (OSError, ValueError, AttributeError):
        return default


def check_output_name(path: Path) -> None:
    """Refuse an output directory name that the writers would fail on after computing:
    not encodable as UTF-8, a component longer than NAME_MAX, or a path leaving no room
    below PATH_MAX for the files written in it (`argparse.ArgumentTypeError`)."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raw = os.fsencode(text)
        raise argparse.ArgumentTypeError(
            f"the output directory {raw!r} is not a valid UTF-8 name (the results name it "
            "in JSON and text files); choose a UTF-8 name"
        ) from None
    name_max = _path_limit(path, "PC_NAME_MAX", 255)
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > name_max:
            raise argparse.ArgumentTypeError(
                f"the output directory name {part[:40]}... is {size} bytes: longer than "
                f"the file system allows ({name_max}, NAME_MAX); choose a shorter name"
            )
    path_max = _path_limit(path, "PC_PATH_MAX", 4096)
    size = len(os.fsencode(str(path.absolute())))
    if size + OUTPUT_NAME_RESERVE >= path_max:
        raise argparse.ArgumentTypeError(
            f"the output directory's path is {size} bytes: the files written in it "
            f"would exceed the file system's {path_max}-byte limit (PATH_MAX, keeping "
            f"{OUTPUT_NAME_RESERVE} for their names); choose a shorter path"
        )


def check_output_dir(text) -> Path:
    """`text` as a directory that can be written, or `argparse.ArgumentTypeError` naming why.

    Checks the name (`check_output_name`), creates the directory (and parents) and writes and
    removes a probe file in it: the only reliable test (permission bits say nothing for root or
    on read-only file systems)."""
    if str(text).strip() == "":
        raise argparse.ArgumentTypeError("the output directory must not be empty")
    path = Path(text)
    check_output_name(path)
    if _exists(path) and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} exists and is not a directory")
    try:
        probe_writable(path)
    except OSError as err:
        raise argparse.ArgumentTypeError(
            f"cannot write into {path}: {err.strerror or err}"
        ) from None
    return path


# --- the task --------------------------------------------------------------------------------


def config_defaults(cls) -> dict:
    """The default of every keyword of `cls`'s constructor (a config class or `Task`): where the
    command line's defaults come from, and what tests/test_cli_defaults.py compares them with."""
    return {
        name: p.default
        for name, p in inspect.signature(cls).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def ints(minimum: int | None = None, maximum: int | None = INT32_MAX):
    """A `ConfigOption.type`: integers in [minimum, maximum], named by the option."""
    return lambda name: int_type(name, minimum, maximum)


def floats(low=None, high=None, *, low_open=False, high_open=False):
    """A `ConfigOption.type`: finite floats in the range, named by the option."""
    return lambda name: float_type(
        name, low, high, low_open=low_open, high_open=high_open
    )


def option_flag(name: str) -> str:
    """`--NAME` of a config field (underscores as dashes)."""
    return "--" + name.replace("_", "-")


def _shown(value) -> str:
    """A default as the help states it (floats short: 0.1, 1e6, 1e-8)."""
    if not isinstance(value, float):
        return str(value)
    return re.sub(
        r"e([+-])0*(\d)", lambda m: "e" + m[1].lstrip("+") + m[2], f"{value:g}"
    )


@dataclasses.dataclass(frozen=True)
class ConfigOption:
    """One option setting the config field NAME (`--NAME`, underscores as dashes), declared once:
    its default is the config class's (`config_defaults`), a boolean field is a switch, `type`
    (given the option's name for its messages, e.g. `ints(1)`) or `choices` check the value.

    `unset`: the parser's default is None, so that a command can tell an option given from one
    left out (options of one mode only); the help still states the config's default."""

    name: str
    help: str
    type: object = None
    choices: tuple | None = None
    metavar: str | None = None
    # whether the help ends in "(default X)" (False: the help says its default itself)
    show_default: bool = True
    unset: bool = False

    @property
    def flag(self) -> str:
        return option_flag(self.name)

    def add(self, group, cls) -> None:
        """Add the option to `group` (a parser or an argument group), its default `cls`'s."""
        default = config_defaults(cls)[self.name]
        shown = f" (default {_shown(default)})" if self.show_default else ""
        if isinstance(default, bool):
            assert default is False, self.name  # a switch turns on what is off
            group.add_argument(self.flag, action="store_true", help=self.help)
            return
        extra = {
            k: v
            for k, v in (
                ("type", None if self.type is None else self.type(self.flag[2:])),
                ("choices", self.choices),
                ("metavar", self.metavar),
            )
            if v is not None
        }
        group.add_argument(
            self.flag,
            default=None if self.unset else default,
            help=self.help + shown,
            **extra,
        )


def add_config_options(group, cls, options) -> None:
    """Add every `ConfigOption` of `options` (setting fields of `cls`) to `group`."""
    for option in options:
        option.add(group, cls)


def config_from_args(cls, options, args, **extra):
    """`cls` of parsed `options` (an option left unset: the config's default) and `extra`."""
    values = {o.name: getattr(args, o.name) for o in options}
    return cls(**{k: v for k, v in values.items() if v is not None}, **extra)


@dataclasses.dataclass(frozen=True)
class TaskOption:
    """One option of the task (`--NAME` sets the `Task` field NAME): its type and help, declared
    once for every subcommand (`add_task_arguments`, `task_from_args`, the toy's options)."""

    name: str
    type: object
    help: str
    choices: tuple | None = None
    # whether the help ends in "(default X)" (False: the help says its default itself)
    show_default: bool = True

    def add(self, group, default) -> None:
        """Add `--NAME` with `default` to `group` (a parser or an argument group)."""
        shown = f" (default {default})" if self.show_default else ""
        extra = {"choices": self.choices} if self.choices else {"type": self.type}
        group.add_argument(
            f"--{self.name}", default=default, help=self.help + shown, **extra
        )


TASK_OPTIONS = {
    o.name: o
    for o in (
        TaskOption("L", int_type("L", 2), "blocks per context"),
        TaskOption("S", int_type("S", 2), "offsets per block, the stride"),
        TaskOption("H", int_type("H", 1), "heads"),
        TaskOption("N", int_type("N", 1, EXACT_FLOAT_INT), "vocabulary size"),
        TaskOption(
            "gamma",
            float_type("gamma", 0, low_open=True),
            "attention inverse temperature, > 0",
        ),
        TaskOption(
            "beta", float_type("beta", 0, low_open=True), "unembedding scale, > 0"
        ),
        TaskOption("kappa", float_type("kappa", 0), "shared embedding component, >= 0"),
        TaskOption(
            "W",
            int_type("W", 1),
            "window: positions each entry summarizes, S <= W <= L*S (default S; "
            "docs/theory.md §10)",
            show_default=False,
        ),
        TaskOption(
            "queries",
            None,
            "query phases: within (0..S-2, default) or all (0..S-1, with the boundary phase)",
            choices=QUERY_SETS,
            show_default=False,
        ),
        TaskOption(
            "eps",
            float_type("eps", 0, 1, high_open=True),
            "target geometry error in [0, 1) (approximate geometry)",
            show_default=False,
        ),
        TaskOption(
            "d",
            int_type("d", 2),
            "embedding dimension (approximate geometry)",
            show_default=False,
        ),
    )
}
GEOMETRY_OPTIONS = ("eps", "d")
# The command line's task: `Task`'s own defaults, and the paper's setting for the sizes (which
# `Task` does not default) and beta (`Task` defaults to 1; the paper's figures use 4).
TASK_DEFAULTS = {
    **config_defaults(Task),
    **{"L": 8, "S": 4, "H": 2, "N": 4096, "beta": 4.0},
}


def add_task_arguments(
    parser: argparse.ArgumentParser, *, geometry: bool = True, **defaults
):
    """--L --S --H --N --gamma --beta --kappa --W --queries and the geometry (--eps or --d,
    --seed), from `TASK_OPTIONS`; `defaults` replace `TASK_DEFAULTS` for this command."""
    defaults = {**TASK_DEFAULTS, **defaults}
    g = parser.add_argument_group("task")
    for name, option in TASK_OPTIONS.items():
        if name not in GEOMETRY_OPTIONS:
            option.add(g, defaults[name])
    if geometry:
        geo = parser.add_argument_group("geometry (default: exact, eps = 0)")
        for name in GEOMETRY_OPTIONS:
            TASK_OPTIONS[name].add(geo, defaults[name])
    parser.add_argument(
        "--seed",
        type=int_type("seed", 0, INT64_MAX),
        default=0,
        help="PRNG seed, 0 <= seed < 2^63 (default 0)",
    )


def task_from_args(args) -> Task:
    """The `Task` of parsed `add_task_arguments` options (a field without its option: the
    command line's default)."""
    return Task(
        **{name: getattr(args, name, TASK_DEFAULTS[name]) for name in TASK_OPTIONS}
    )


def add_objective_arguments(group) -> None:
    """--objective, --tau, --coordination: what a flow or the oracle minimizes (`Objective`)."""
    group.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default="mean",
        help="mean: the population loss (default); worst-phase: soft maximum of the "
        "per-phase losses",
    )
    group.add_argument(
        "--tau",
        type=float_type("tau", 0, low_open=True),
        default=None,
        help="with --objective worst-phase: temperature of its soft maximum, > 0 (default 1)",
    )
    group.add_argument(
        "--coordination",
        type=float_type("coordination", 0),
        default=None,
        help="weight LAMBDA >= 0 of the overlap penalty LAMBDA sum_{h != h'} <pK_h, "
        "pK_h'> (default none)",
    )


def objective_from_args(args) -> dict:
    """`objective`, `tau` and `coordination` of parsed `add_objective_arguments` options; `--tau`
    without `--objective worst-phase` is an error (the mean objective has no temperature)."""
    if args.tau is not None and args.objective != "worst-phase":
        raise CLIError(
            "--tau applies to --objective worst-phase only (the temperature of its soft "
            "maximum; the mean objective has none)"
        )
    return {
        "objective": args.objective,
        "tau": 1.0 if args.tau is None else args.tau,
        "coordination": args.coordination,
    }


def require_token_ids(task: Task, what: str) -> None:
    """Paths that hold token ids store them as int32: N must fit."""
    if task.N > TOKEN_ID_MAX:
        raise CLIError(
            f"{what} stores token ids as int32: N must be <= {TOKEN_ID_MAX}, got {task.N}"
        )


# --- output ----------------------------------------------------------------------------------


def add_cpu_devices_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cpu-devices",
        type=int_type("cpu-devices", 1, MAX_CPU_DEVICES),
        default=None,
        metavar="N",
        help="split the CPU into N devices and shard the lanes over them (e.g. the "
        "number of cores; "
        "faster, numbers may differ from one device in the last digits; default one device)",
    )


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def print_json(obj) -> None:
    print(to_json(obj, indent=2, sort_keys=True))


def nonfinite_paths(obj, path="") -> list[tuple[str, float]]:
    """Every NaN or inf float (or array entry) in a nested result, with its key path."""
    import numpy as np

    found = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            found += nonfinite_paths(v, f"{path}.{k}" if path else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            found += nonfinite_paths(v, f"{path}[{i}]")
    elif isinstance(obj, (float, np.floating)):
        if not math.isfinite(float(obj)):
            found.append((path, float(obj)))
    elif hasattr(obj, "shape") and hasattr(obj, "dtype"):
        a = np.asarray(obj)
        if a.dtype.kind in "fc":
            bad = np.argwhere(~np.isfinite(a))
            if bad.size:
                idx = tuple(int(i) for i in bad[0])
                found.append((f"{path}{list(idx) if idx else ''}", float(a[idx].real)))
    return found


def require_finite(result, what: str, *, skip=()) -> None:
    """Raise `NonFiniteResult` naming the first non-finite quantity of `result` (keys in `skip`
    at the top level are not checked)."""
    if isinstance(result, dict):
        result = {k: v for k, v in result.items() if k not in skip}
    bad = nonfinite_paths(result)
    if bad:
        names = ", ".join(f"{p} = {v}" for p, v in bad[:3]) + (
            f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        )
        raise NonFiniteResult(
            f"{what} is not finite: {names}; the settings are beyond float64 "
            "(try a smaller beta or gamma)"
        )


def eprint(*a) -> None:
    print(*a, file=sys.stderr)


# Options that change how a result is shown, not what is computed (or written).
PRESENTATION_OPTIONS = frozenset(
    {"json", "quiet", "out", "per_seed", "cpu_devices", "chunk", "allow_failures"}
    | {"interrupt_message"}  # not an option: the command's note on Ctrl-C
)


def claim_out(args, command: str, *, parameters: bool = True) -> None:
    """Claim `args.out` for `command` (nothing without `--out`): a directory holding another
    command's outputs, or this command's with other parameters, is refused (exit 2) before
    anything is computed; the same command again resumes or rewrites the same files.

    `parameters`: compare the command's options (every option but `PRESENTATION_OPTIONS`);
    False for commands that compare their own manifest (`sweep`).
    """
    from ..internal._io import claim_output_dir

    if getattr(args, "out", None) is None:
        return
    options = None
    if parameters:
        options = {
            k: str(v) if isinstance(v, Path) else v
            for k, v in sorted(vars(args).items())
            if k not in PRESENTATION_OPTIONS
            and (v is None or isinstance(v, (bool, int, float, str, list, tuple, Path)))
        }
    claim_output_dir(args.out, command, options)
