"""Adversarial command lines for `inductheory`: each must end in a correct result
(exit 0)
or a one-line error (exit != 0), never a traceback, a silent wrong answer or a hang.

Run all of them and print the counts:

    PYTHONPATH=. python tests/adversarial_cases.py [-v]

`tests/test_robust_cli.py` runs one case per class by default and every case under `-m slow`.

A case is `Case(argv, expect, match, env, check)`:
- `expect="ok"`: exit 0 and `check(stdout)` (default: any JSON printed parses and holds no NaN/null
  outside the keys that may legitimately be null);
- `expect="error"`: exit != 0 and exactly one `error:` line on stderr containing `match`;
`{tmp}` in an argument or an environment value is replaced by a fresh temporary directory,
`{file}` by an existing file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable

TINY_ORACLE = [
    "--L",
    "4",
    "--S",
    "3",
    "--H",
    "1",
    "--N",
    "64",
    "--restarts",
    "2",
    "--steps",
    "5",
    "--polish-steps",
    "5",
    "--rounds",
    "1",
    "--vertex-starts",
    "1",
    "--quiet",
]
TINY_TASK = ["--L", "4", "--S", "3", "--H", "1", "--N", "64"]
TINY_FLOW = [
    "--L",
    "4",
    "--S",
    "3",
    "--H",
    "1",
    "--N",
    "64",
    "--t-max",
    "1e4",
    "--n-save",
    "4",
    "--quiet",
]
TINY_LOSS_SWEEP = [
    "sweep",
    "loss",
    "--L",
    "4",
    "--S",
    "3",
    "--H",
    "1",
    "--N",
    "64",
    "--select",
    "0",
    "--quiet",
    "--out",
    "{tmp}",
    "--grid",
    "beta=1",
]


def _full_figures(path):
    """A directory of full figures as `reproduce` leaves it (its README names the mode)."""
    os.makedirs(os.path.join(path, "data"))
    with open(os.path.join(path, "README.md"), "w") as f:
        f.write("# Theorem figures\n\nMode: full. Command: `inductheory reproduce`.\n")


SWEEP_FLOW = ["sweep", "flow", *TINY_FLOW, "--seeds", "2"]
# keys whose value may be null in a correct result
NULLABLE = {
    "eps",
    "d",
    "batch_size",
    "N_below",
    "N_star",
    "fit",
    "t_selection",
    "selected_offsets",
    "key_offsets",
    "value_offsets",
    "first_chunk_s_including_compile",
    "sample",
}
BIG = str(2**64)


@dataclasses.dataclass
class Case:
    argv: list
    expect: str = "error"
    match: str = ""
    env: dict = dataclasses.field(default_factory=dict)
    check: Callable[[str], bool] | None = None
    klass: str = ""  # the class of case (one per class runs by default)
    # run first in the same {tmp}: command lines (each must exit 0) or callables of the path
    setup: list = dataclasses.field(default_factory=list)


def _nulls(obj, key=None):
    if isinstance(obj, dict):
        return [n for k, v in obj.items() for n in _nulls(v, k)]
    if isinstance(obj, list):
        return [n for v in obj for n in _nulls(v, key)]
    if obj is None and key not in NULLABLE:
        return [key]
    if isinstance(obj, float) and not math.isfinite(obj):
        return [key]
    return []


def default_check(out: str) -> bool:
    text = out.strip()
    if not text.startswith("{"):
        return "nan" not in text.lower().split() and "inf" not in text.lower().split()
    return not _nulls(json.loads(text))


def _json(out):
    return json.loads(out)


def loss_check(expected_acc=None):
    def check(out):
        d = _json(out)
        ok = math.isfinite(d["population_loss"]) and all(
            0 <= a <= 1 for a in d["phase_accuracy"]
        )
        return (
            ok
            and (expected_acc is None or d["phase_accuracy"] == expected_acc)
            and default_check(out)
        )

    return check


def flow_check(out):
    d = _json(out)
    s = d["summary"]
    if (
        s["selected_seeds"] == 0
    ):  # nothing to summarize: the distinct fraction is null, not a number
        ok = s["distinct_fraction"] is None
    else:
        ok = 0 <= s["distinct_fraction"] <= 1
    d["summary"] = {k: v for k, v in s.items() if k != "distinct_fraction"}
    return ok and not _nulls(d)


def toy_check(out):
    d = _json(out)
    return d["split_advantage"] >= 0 and all(
        math.isfinite(v) for k, v in d.items() if k != "config"
    )


def E(argv, match="", klass="", **kw):
    return Case(list(argv), "error", match, klass=klass, **kw)


def OK(argv, check=None, klass="", **kw):
    return Case(list(argv), "ok", check=check, klass=klass, **kw)


def cases() -> list[Case]:
    L = ["loss", "--json"]
    c = [
        # --- top level
        E([], "required", "top-level"),
        E(["nope"], "invalid choice"),
        OK(["--version"], lambda out: out.startswith("inductheory ")),
        E(["--bogus"], "required"),
        # --- loss: valid settings, including extremes, must give correct numbers
        OK([*L, "--uniform"], loss_check(), "loss-ok"),
        OK([*L, "--select", "0,2"], loss_check([1.0, 0.0, 1.0])),
        OK(
            [*L, "--select", "0,2", "--gamma", "1e3"],
            loss_check([1.0, 0.0, 1.0]),
            "huge-gamma",
        ),
        OK([*L, "--select", "0,2", "--gamma", "1e6"], loss_check([1.0, 0.0, 1.0])),
        OK([*L, "--select", "0,2", "--gamma", "1e300"], loss_check([1.0, 0.0, 1.0])),
        OK([*L, "--select", "0,2", "--beta", "1e-300"], loss_check()),
        OK([*L, "--select", "0,2", "--beta", "1e300"], loss_check([1.0, 0.0, 1.0])),
        OK([*L, "--select", "0,2", "--kappa", "0"], loss_check()),
        OK([*L, "--select", "0,2", "--kappa", "1e300"], loss_check()),
        OK([*L, "--select", "0,2", "--N", str(2**53)], loss_check([1.0, 0.0, 1.0])),
        OK([*L, "--select", "0,2", "--N", "32"], loss_check()),
        OK(
            [*L, "--select", "0,1,2", "--H", "3", "--N", "64"],
            loss_check([1.0, 1.0, 1.0]),
        ),
        OK(
            [
                *L,
                "--select",
                "0",
                "--L",
                "4",
                "--S",
                "3",
                "--H",
                "1",
                "--N",
                "64",
                "--eps",
                "0.5",
            ],
            loss_check(),
            "loss-monte-carlo",
        ),
        OK(
            [
                *L,
                "--select",
                "0",
                "--L",
                "4",
                "--S",
                "3",
                "--H",
                "1",
                "--N",
                "64",
                "--d",
                "16",
                "--seed",
                "7",
            ],
            loss_check(),
        ),
        OK(
            [
                *L,
                "--select",
                "0",
                "--L",
                "4",
                "--S",
                "3",
                "--H",
                "1",
                "--N",
                "64",
                "--contexts",
                "2",
            ],
            loss_check(),
        ),
        OK(["loss", "--uniform", "--N", "1_000"]),
        OK(["loss", "--select", "0,2", "--N", "1e4"]),
        # --- loss: malformed --select
        E(["loss", "--select", "0,,2"], "no empty item", "select"),
        E(["loss", "--select", "1e20"], "comma-separated integers"),
        E(["loss", "--select", str(10**20) + ",0"], "<= 2"),
        E(["loss", "--select", "a"], "comma-separated integers"),
        E(["loss", "--select", ""], "comma-separated integers"),
        E(["loss", "--select", " "], "comma-separated integers"),
        E(["loss", "--select=-1,0"], ">= 0"),
        E(
            ["loss", "--select", "-1,0"], "expected one argument"
        ),  # argparse: "-1,0" looks like an option
        E(["loss", "--select", "0,3"], "<= 2"),
        E(["loss", "--select", "0"], "one offset per head"),
        E(["loss", "--select", "0,1,2"], "one offset per head"),
        E(["loss", "--select", "0.5,1"], "comma-separated integers"),
        E(["loss", "--select", "nan,1"], "comma-separated integers"),
        E(["loss", "--select", "0,2", "--uniform"], "not allowed with"),
        E(["loss"], "required"),
        # --- loss: bad numbers
        E(["loss", "--uniform", "--N", "1e400"], "N must be an integer", "huge-number"),
        E(["loss", "--uniform", "--N", "inf"], "N must be an integer"),
        E(["loss", "--uniform", "--N", "nan"], "N must be an integer"),
        E(["loss", "--uniform", "--N", "-5"], "N must be >= 1"),
        E(["loss", "--uniform", "--N", "0"], "N must be >= 1"),
        E(["loss", "--uniform", "--N", "10"], "N must be >= L*S"),
        E(["loss", "--uniform", "--N", str(2**53 + 1)], "N must be <="),
        E(["loss", "--uniform", "--N", "10" * 200], "N must be <="),
        E(["loss", "--uniform", "--L", "1"], "L must be >= 2"),
        E(["loss", "--uniform", "--L", "1e21"], "L must be an integer"),
        E(["loss", "--uniform", "--L", str(10**21)], "L must be <="),
        E(["loss", "--uniform", "--S", "1"], "S must be >= 2"),
        E(["loss", "--uniform", "--H", "0"], "H must be >= 1"),
        E(["loss", "--uniform", "--H", "2.5"], "H must be an integer"),
        E(["loss", "--uniform", "--gamma", "0"], "gamma must be > 0"),
        E(["loss", "--uniform", "--gamma", "-1"], "gamma must be > 0"),
        E(["loss", "--uniform", "--gamma", "nan"], "gamma must be a finite number"),
        E(["loss", "--uniform", "--gamma", "inf"], "gamma must be a finite number"),
        E(["loss", "--uniform", "--beta", "nan"], "beta must be a finite number"),
        E(["loss", "--uniform", "--beta", "1e400"], "beta must be a finite number"),
        E(["loss", "--uniform", "--beta=-inf"], "beta must be a finite number"),
        E(["loss", "--uniform", "--beta", "x"], "beta must be a number"),
        E(["loss", "--uniform", "--kappa", "-1"], "kappa must be >= 0"),
        E(["loss", "--uniform", "--eps", "1"], "eps must be < 1"),
        E(["loss", "--uniform", "--eps", "-0.1"], "eps must be >= 0"),
        E(["loss", "--uniform", "--eps", "nan"], "eps must be a finite number"),
        E(
            ["loss", "--uniform", "--eps", "0", "--d", "5"],
            "eps = 0 is the exact geometry",
        ),
        E(["loss", "--uniform", "--d", "1"], "d must be >= 2"),
        E(["loss", "--uniform", "--d", "5", "--eps", "0.1"], "too small for eps"),
        E(["loss", "--uniform", "--seed", BIG], "seed must be <=", klass="huge-seed"),
        E(["loss", "--uniform", "--seed", "-1"], "seed must be >= 0"),
        E(["loss", "--uniform", "--seed", "1.5"], "seed must be an integer"),
        E(
            ["loss", "--uniform", "--seed", "3"],
            "--seed only applies to Monte Carlo",
            "ignored-option",
        ),
        E(["loss", "--uniform", "--contexts", "0"], "contexts must be >= 1"),
        E(
            ["loss", "--uniform", "--N", "100000", "--eps", "0.01"],
            "needs about",
            klass="memory",
        ),
        E(["loss", "--uniform", "--N", "3000000000", "--contexts", "2"], "int32"),
        E(
            ["loss", "--uniform", "--N", "4096", "--eps", "0.3"],
            "needs about",
            env={"INDUCTHEORY_MAX_BYTES": "1000"},
        ),
        E(
            ["loss", "--uniform", "--contexts", "2"],
            "INDUCTHEORY_MAX_BYTES must be an integer",
            env={"INDUCTHEORY_MAX_BYTES": "lots"},
        ),
        # memory estimates right both ways: the exact geometry is O(1) in N (not refused), a
        # sweep is estimated before anything runs (refused in seconds), a huge H at once
        OK(
            ["loss", "--select", "1", "--L", "4", "--S", "3", "--H", "1"]
            + ["--N", "2147483647", "--contexts", "4", "--json"],
            klass="exact-huge-N",
            env={"INDUCTHEORY_MAX_BYTES": str(2**30)},
        ),
        OK(
            ["sweep", "oracle", *TINY_ORACLE, "--N", "2147483647", "--grid", "beta=1,2"]
            + ["--json"],
            env={"INDUCTHEORY_MAX_BYTES": str(2**30)},
        ),
        OK(
            ["oracle", *TINY_ORACLE, "--N", "2147483647", "--json"],
            env={"INDUCTHEORY_MAX_BYTES": str(2**30)},
        ),
        E(
            ["sweep", "flow", *TINY_FLOW, "--grid", "beta=1,2", "--seeds", "100000000"],
            "needs about",
            "sweep-memory",
        ),
        E(
            [
                "sweep",
                "flow",
                *TINY_FLOW,
                "--grid",
                "beta=1,2",
                "--n-save",
                "1000000000",
            ],
            "needs about",
        ),
        E(
            ["sweep", "loss", "--select", "0", "--H", "1", "--grid", "beta=1,2"]
            + ["--block", "1000000000"],
            "needs about",
        ),
        E(
            ["sweep", "oracle", *TINY_ORACLE, "--H", "100000000", "--grid", "beta=1,2"],
            "needs about",
            "huge-H-memory",
        ),
        E(["oracle", *TINY_ORACLE, "--H", "100000000"], "needs about"),
        # --- toy
        OK(["toy", "--json"], toy_check, "toy-ok"),
        OK(["toy", "--json", "--beta", "1e154"], toy_check, "toy-overflow"),
        OK(["toy", "--json", "--beta", "1e300"], toy_check),
        OK(["toy", "--json", "--beta", "1e-300"], toy_check),
        OK(["toy", "--json", "--gamma", "1e6"], toy_check),
        OK(["toy", "--json", "--gamma", "1e300", "--beta", "1e300"], toy_check),
        OK(["toy", "--json", "--K", "1e300"], toy_check),
        OK(["toy", "--json", "--K", "1e-300"], toy_check),
        OK(["toy", "--json", "--L", "2"], toy_check),
        OK(["toy", "--json", "--L", str(2**53)], toy_check),
        E(["toy", "--L", "1e21"], "L must be an integer"),
        E(["toy", "--L", str(10**21)], "L must be <="),
        E(["toy", "--L", "1"], "L must be >= 2"),
        E(["toy", "--L", "abc"], "L must be an integer"),
        E(["toy", "--beta", "nan"], "beta must be a finite number"),
        E(["toy", "--beta", "inf"], "beta must be a finite number"),
        E(["toy", "--beta", "0"], "beta must be > 0"),
        E(["toy", "--K", "0"], "K must be > 0"),
        E(["toy", "--K", "nan"], "K must be a finite number"),
        E(["toy", "--gamma", "0"], "gamma must be > 0"),
        E(["toy", "--N", "5"], "unrecognized"),
        # --- the compressor family: matrix, sweep matrix, gates --paper (refused before work)
        E(["matrix", "--rows", "nonsense"], "row must be one of", "matrix-refusals"),
        E(["matrix", "--seeds", "0"], "seeds must be >= 1"),
        E(["matrix", "--seeds", "2.5"], "seeds must be an integer"),
        E(["matrix", "--steps", "-5"], "steps must be >= 1"),
        E(["matrix", "--local-window", "-1"], "local_window must be >= 0"),
        E(["matrix", "--kv-heads", "3", "--q-heads", "8"], "multiple of kv_heads"),
        E(["matrix", "--bogus", "1"], "matrix: error: unrecognized arguments: --bogus"),
        E(
            [
                "matrix",
                "--quick",
                "--rows",
                "W8/S8 1 KV (reference)",
                "--export-gates",
                "{tmp}/missing/x.safetensors",
            ],
            "existing directory",
        ),
        E(
            ["matrix", "--quick", "--rows", "W8/S8 1 KV (reference)"]
            + ["--seeds", "1000000000"],
            "training 1000000000 seeds needs about",
        ),
        E(["sweep", "matrix", "--grid", "seeds=1,2"], "not swept by a matrix sweep"),
        E(["sweep", "matrix", "--rows", "x"], "sweep matrix: error: unrecognized"),
        # the family's options given to the theorem model's trainers: where they are taken
        E(
            ["train", "--kv-heads", "8", "--payload=shared"],
            "--kv-heads, --payload: the paper's compressor family, trained by "
            "`inductheory train paper`",
        ),
        # an option of the family with a separate value reads as a positional: still named
        E(["train", "--kv-heads", "8"], "--kv-heads: the paper's compressor family"),
        E(["train", "paper", "--gates", "bias"], "train paper: error: unrecognized"),
        E(["train", "paper", "--kv-heads", "3"], "multiple of kv_heads"),
        E(["sweep", "train", "--L", "4"], "sweep train needs --grid"),
        # the family's options go after its word; the command's own are not the family's
        E(
            ["train", "--seeds", "2", "paper"],
            "go after 'paper', got --seeds 2 before it",
        ),
        E(
            ["sweep", "train", "--grid", "kv_heads=1,8", "paper"],
            "options of `inductheory sweep train paper` go after 'paper'",
        ),
        E(
            ["train", "--L", "4", "--S", "3", "--d", "8", "--steps", "0"],
            "steps must be >= 1, got 0 (see",  # no pointer to the family for --S or --d
        ),
        E(
            ["sweep", "train", "paper", "--grid", "M=2"],
            "not swept by a matrix sweep",
        ),
        E(
            ["sweep", "train", "--grid", "N=10", "--no-position-bias"],
            "--no-position-bias: the paper's compressor family",
        ),
        E(["gates", "{tmp}/none.safetensors", "--paper"], "no such file"),
        E(["gates", "{file}", "--paper"], "unknown gate file type"),
        E(["gates", "{file}", "--paper", "--branch", "sideways"], "invalid choice"),
        # --- oracle
        OK(["oracle", *TINY_ORACLE, "--json"], None, "oracle-ok"),
        OK(["oracle", *TINY_ORACLE, "--json", "--gamma", "1e3"]),
        OK(["oracle", *TINY_ORACLE, "--json", "--contexts", "2"]),
        OK(["oracle", *TINY_ORACLE, "--json", "--eps", "0.5"]),
        OK(
            [
                "oracle",
                *TINY_ORACLE,
                "--sweep",
                "--N-grid",
                "16,64",
                "--beta-grid",
                "1",
                "--out",
                "{tmp}",
            ],
            None,
            "oracle-sweep",
        ),
        E(
            ["oracle", *TINY_ORACLE, "--seeds", "2"],
            "renamed --vertex-starts",
            "renamed-flag",
        ),
        E(
            ["oracle", *TINY_ORACLE, "--vertex-starts", "-1"],
            "vertex-starts must be >= 0",
        ),
        E(["oracle", *TINY_ORACLE, "--restarts", "0"], "restarts must be >= 1"),
        E(["oracle", *TINY_ORACLE, "--restarts", "10000000"], "needs about"),
        E(["oracle", *TINY_ORACLE, "--steps", "0"], "steps must be >= 1"),
        E(["oracle", *TINY_ORACLE, "--rounds", "0"], "rounds must be >= 1"),
        E(["oracle", *TINY_ORACLE, "--delta", "0.5"], "delta must be < 0.5"),
        E(["oracle", *TINY_ORACLE, "--delta", "nan"], "delta must be a finite number"),
        E(["oracle", *TINY_ORACLE, "--contexts", "0"], "contexts must be >= 1"),
        E(
            ["oracle", *TINY_ORACLE, "--out", "{tmp}"],
            "only applies with --sweep",
            "sweep-only",
        ),
        E(["oracle", *TINY_ORACLE, "--N-grid", "64"], "only applies with --sweep"),
        E(["oracle", *TINY_ORACLE, "--refine", "1"], "only applies with --sweep"),
        E(
            ["oracle", *TINY_ORACLE, "--sweep", "--N-grid", "inf"],
            "--N-grid must be an integer",
            "grid",
        ),
        E(["oracle", *TINY_ORACLE, "--sweep", "--N-grid", "0,,2"], "empty item"),
        E(
            ["oracle", *TINY_ORACLE, "--sweep", "--N-grid", "1e20"],
            "--N-grid must be an integer",
        ),
        E(["oracle", *TINY_ORACLE, "--sweep", "--N-grid", "8"], "N must be >= L*S"),
        E(["oracle", *TINY_ORACLE, "--sweep", "--N-grid", ""], "at least one value"),
        E(
            ["oracle", *TINY_ORACLE, "--sweep", "--beta-grid", "nan"],
            "--beta-grid must be a finite number",
        ),
        E(
            ["oracle", *TINY_ORACLE, "--sweep", "--beta-grid", "-1"],
            "--beta-grid must be > 0",
        ),
        E(
            ["oracle", *TINY_ORACLE, "--sweep", "--eps-grid", "1"],
            "--eps-grid must be < 1",
        ),
        E(
            ["oracle", *TINY_ORACLE, "--sweep", "--eps-grid", "0.3", "--d", "8"],
            "exclude each other",
        ),
        E(["oracle", *TINY_ORACLE, "--sweep", "--refine", "-1"], "refine must be >= 0"),
        E(
            ["oracle", *TINY_ORACLE, "--sweep", "--refine", "1000"],
            "refine must be <= 60",
        ),
        E(
            [
                "oracle",
                *TINY_ORACLE,
                "--sweep",
                "--N-grid",
                "64",
                "--beta-grid",
                "1",
                "--out",
                "",
            ],
            "must not be empty",
            "output-path",
        ),
        E(
            [
                "oracle",
                *TINY_ORACLE,
                "--sweep",
                "--N-grid",
                "64",
                "--beta-grid",
                "1",
                "--out",
                "{file}",
            ],
            "not a directory",
        ),
        E(
            [
                "oracle",
                *TINY_ORACLE,
                "--sweep",
                "--N-grid",
                "64",
                "--beta-grid",
                "1",
                "--out",
                "/proc/inductheory",
            ],
            "cannot write",
        ),
        E(
            [
                "oracle",
                *TINY_ORACLE,
                "--sweep",
                "--N-grid",
                "64",
                "--beta-grid",
                "1",
                "--out",
                "{file}/sub",
            ],
            "cannot write",
        ),
        E(["oracle", *TINY_ORACLE, "--seed", BIG], "seed must be <="),
        E(["oracle", "--L", "4", "--S", "3", "--H", "1", "--N", "3000000000"], "int32"),
        # --- flow: refused before any computation
        E(
            ["flow", *TINY_FLOW, "--rho", "1e-20"],
            "below float64 resolution",
            "tiny-radius",
        ),
        E(["flow", *TINY_FLOW, "--rho", "0"], "rho must be > 0"),
        E(["flow", *TINY_FLOW, "--root-finder", "secant"], "invalid choice"),
        E(
            ["flow", *TINY_FLOW, "--cpu-devices", "0"],
            "cpu-devices must be >= 1",
            "cpu-devices",
        ),
        E(
            ["sweep", "flow", "--grid", "beta=1,2", "--cpu-devices", "257"],
            "cpu-devices must be <= 256",
        ),
        E(["flow", *TINY_FLOW, "--rho", "-1"], "rho must be > 0"),
        E(["flow", *TINY_FLOW, "--rho", "nan"], "rho must be a finite number"),
        E(["flow", *TINY_FLOW, "--rho", "inf"], "rho must be a finite number"),
        E(["flow", *TINY_FLOW, "--delta", "0.5"], "delta must be < 0.5"),
        E(["flow", *TINY_FLOW, "--delta", "0"], "delta must be > 0"),
        E(["flow", *TINY_FLOW, "--t-max", "0"], "t-max must be > 0"),
        E(["flow", *TINY_FLOW, "--t-max", "inf"], "t-max must be a finite number"),
        E(["flow", *TINY_FLOW, "--seeds", "0"], "seeds must be >= 1"),
        E(["flow", *TINY_FLOW, "--seeds", "1e20"], "seeds must be an integer"),
        E(["flow", *TINY_FLOW, "--seeds", "True"], "seeds must be an integer"),
        E(["flow", *TINY_FLOW, "--seeds", "2000000000"], "needs about"),
        E(
            ["flow", *TINY_FLOW, "--M", "5"],
            "applies to --dynamics full only",
            "reduced-ignores",
        ),
        E(
            ["flow", *TINY_FLOW, "--init", "projected"],
            "applies to --dynamics full only",
        ),
        E(["flow", *TINY_FLOW, "--sample", "iid"], "applies to --dynamics full only"),
        E(["flow", *TINY_FLOW, "--batch-size", "8"], "applies to --dynamics full only"),
        E(["flow", *TINY_FLOW, "--dynamics", "bogus"], "invalid choice"),
        E(["flow", *TINY_FLOW, "--solver", "bogus"], "invalid choice"),
        E(["flow", *TINY_FLOW, "--rtol", "0"], "rtol must be > 0"),
        E(["flow", *TINY_FLOW, "--atol", "nan"], "atol must be a finite number"),
        E(["flow", *TINY_FLOW, "--max-steps", "0"], "max-steps must be >= 1"),
        E(["flow", *TINY_FLOW, "--max-steps", "1e12"], "max-steps must be <="),
        E(["flow", *TINY_FLOW, "--n-save", "0"], "n-save must be >= 1"),
        E(["flow", *TINY_FLOW, "--n-save", "1000000000"], "needs about"),
        E(["flow", *TINY_FLOW, "--t-save-min", "2e4"], "t_save_min must satisfy"),
        E(["flow", *TINY_FLOW, "--chunk", "0"], "chunk must be >= 1"),
        E(["flow", *TINY_FLOW, "--out", ""], "must not be empty"),
        E(["flow", *TINY_FLOW, "--out", "{file}"], "not a directory"),
        E(["flow", *TINY_FLOW, "--out", "/proc/inductheory"], "cannot write"),
        E(["flow", *TINY_FLOW, "--per-seed"], "--per-seed applies with --json"),
        E(["flow", *TINY_FLOW, "--eps", "0.5"], "needs exact geometry"),
        E(["flow", *TINY_FLOW, "--seed", BIG], "seed must be <="),
        E(
            ["flow", "--dynamics", "full", "--N", "10000000", "--quiet"],
            "needs about",
            "full-memory",
        ),
        E(
            [
                "flow",
                "--dynamics",
                "full",
                "--L",
                "4",
                "--S",
                "3",
                "--H",
                "1",
                "--N",
                "100",
                "--quiet",
            ],
            "balanced samples need",
        ),
        E(
            [
                "flow",
                "--dynamics",
                "full",
                "--L",
                "4",
                "--S",
                "3",
                "--H",
                "1",
                "--N",
                "3000000000",
                "--quiet",
            ],
            "int32",
        ),
        E(
            [
                "flow",
                "--dynamics",
                "full",
                "--L",
                "4",
                "--S",
                "3",
                "--H",
                "1",
                "--N",
                "96",
                "--M",
                "10000000",
                "--quiet",
            ],
            "needs about",
        ),
        # --- flow: runs
        OK(["flow", *TINY_FLOW, "--seeds", "2", "--json"], flow_check, "flow-ok"),
        OK(["flow", *TINY_FLOW, "--seeds", "2", "--out", "{tmp}"]),
        OK(
            [
                "flow",
                "--N",
                str(2**53),
                "--seeds",
                "2",
                "--t-max",
                "1e4",
                "--n-save",
                "4",
                "--quiet",
                "--json",
                "--allow-failures",
            ],
            flow_check,
        ),
        E(
            ["flow", *TINY_FLOW, "--seeds", "2", "--max-steps", "2"],
            "seeds failed",
            "failed-seeds",
        ),
        OK(
            ["flow", *TINY_FLOW, "--seeds", "2", "--max-steps", "2", "--allow-failures"]
        ),
        OK(
            [
                "flow",
                "--L",
                "4",
                "--S",
                "3",
                "--H",
                "1",
                "--N",
                "96",
                "--dynamics",
                "full",
                "--M",
                "24",
                "--seeds",
                "1",
                "--t-max",
                "1e3",
                "--n-save",
                "4",
                "--quiet",
                "--json",
                "--allow-failures",
            ],
            flow_check,
        ),
        # --- output directories: one command's outputs each (a rerun resumes)
        E(
            ["oracle", *TINY_ORACLE, "--sweep", "--N-grid", "64", "--beta-grid", "1"]
            + ["--out", "{tmp}"],
            "holds the output of `inductheory sweep loss`",
            "out-mixed",
            setup=[TINY_LOSS_SWEEP],
        ),
        E(
            ["flow", *TINY_FLOW, "--seeds", "3", "--out", "{tmp}"],
            "holds the output of `inductheory flow` with other parameters",
            "out-overwrite",
            setup=[["flow", *TINY_FLOW, "--seeds", "2", "--out", "{tmp}"]],
        ),
        OK(
            ["flow", *TINY_FLOW, "--seeds", "2", "--out", "{tmp}", "--json"],
            lambda out: "summary" in _json(out),
            "out-rerun",
            setup=[["flow", *TINY_FLOW, "--seeds", "2", "--out", "{tmp}"]],
        ),
        E(
            ["reproduce", "--quick", "--only", "coverage", "--out", "{tmp}", "--quiet"],
            "holds the output of `inductheory reproduce` (full)",
            "out-quick-full",
            setup=[_full_figures],
        ),
        E(
            [*TINY_LOSS_SWEEP[:-2], "--grid", "beta=7", "--out", "{tmp}"],
            "different sweep (differs in: grid",
            "out-other-sweep",
            setup=[TINY_LOSS_SWEEP],
        ),
        # --- sweeps: the single-point command's refusals at every grid point
        E(
            [*SWEEP_FLOW, "--grid", "rho=0.1,1e-20"],
            "grid point rho=1e-20: --rho 1e-20 is below float64 resolution",
            "sweep-point-refused",
        ),
        E(
            [*SWEEP_FLOW, "--grid", "t_save_min=1e-2,2e4"],
            "grid point t_save_min=20000.0: t_save_min must satisfy",
        ),
        E(
            [*SWEEP_FLOW, "--dynamics", "full", "--M", "24", "--grid", "N=96,100"],
            "grid point N=100: balanced samples need",
        ),
        E(
            [*SWEEP_FLOW, "--grid", "rho=0.1", "--max-steps", "2"],
            "seeds failed (max_steps: 2)",
            "sweep-failed-seeds",
        ),
        OK(
            [*SWEEP_FLOW, "--grid", "rho=0.1", "--max-steps", "2", "--allow-failures"],
            lambda out: "nan" in out,  # no seed selected: the distinct fraction is NaN
            "sweep-allowed-failures",
        ),
        # --- inputs that change nothing
        E(
            [*SWEEP_FLOW, "--grid", "beta=1,1"],
            "grid parameter 'beta' repeats 1.0",
            "sweep-duplicate-grid",
        ),
        E(
            ["sweep", "loss", *TINY_TASK, "--select", "0", "--grid", "N=64,64"],
            "grid parameter 'N' repeats 64",
        ),
        E(
            [
                "sweep",
                "loss",
                *TINY_TASK,
                "--select",
                "0",
                "--grid",
                "N=64",
                "--seed",
                "3",
            ],
            "--seed changes nothing in a loss sweep",
            "sweep-loss-seed",
        ),
        E(
            [*SWEEP_FLOW, "--grid", "tau=0.5,2"],
            "grid parameter 'tau' changes nothing",
            "sweep-tau-grid",
        ),
        E(
            ["flow", *TINY_FLOW, "--tau", "2"],
            "--tau applies to --objective worst-phase only",
            "tau-without-objective",
        ),
        E(
            [*SWEEP_FLOW, "--grid", "beta=1", "--tau", "2"],
            "--tau applies to --objective worst-phase only",
        ),
        E(
            ["oracle", *TINY_ORACLE, "--tau", "0.5"],
            "--tau applies to --objective worst-phase only",
        ),
        E(
            [*SWEEP_FLOW, "--grid", "beta=1", "--init", "projected"],
            "applies to --dynamics full only",
            "sweep-reduced-ignores",
        ),
        # --- reproduce (owned elsewhere): only the cheap refusals
        OK(["reproduce", "--list"]),
        E(["reproduce", "--only", "nope", "--out", "{tmp}"], "nope"),
        E(["reproduce", "--jobs", "0", "--out", "{tmp}"], "--jobs"),
        E(["reproduce", "--jobs", "two", "--out", "{tmp}"], "--jobs"),
        # --- names, sizes and stores the writers would fail on after computing
        E(
            ["flow", *TINY_FLOW, "--out", "{tmp}/x\udcff"],
            "not a valid UTF-8 name",
            "output-name",
        ),
        E(
            [
                "sweep",
                "loss",
                *TINY_TASK,
                "--uniform",
                "--grid",
                "beta=1,2",
                "--out",
                "{tmp}/x\udcff",
            ],
            "not a valid UTF-8 name",
        ),
        E(["flow", *TINY_FLOW, "--out", "{tmp}/" + "a" * 300], "NAME_MAX"),
        E(
            [
                "sweep",
                "loss",
                *TINY_TASK,
                "--uniform",
                "--grid",
                "beta=1,2",
                "--out",
                "{tmp}/" + "/".join(["d" * 200] * 20) + "/" + "e" * 19,
            ],
            "PATH_MAX",
        ),
        OK(
            [
                "sweep",
                "loss",
                *TINY_TASK,
                "--uniform",
                "--grid",
                "beta=1,2",
                "--out",
                "{tmp}/é-ü",
                "--quiet",
            ]
        ),
        E(
            [
                "reproduce",
                "--quick",
                "--only",
                "toy_stability",
                "--quiet",
                "--out",
                "{tmp}",
            ],
            "the cache directory",
            "cache-dir",
            env={"INDUCTHEORY_CACHE_DIR": "{file}"},
        ),
        E(
            [
                "reproduce",
                "--quick",
                "--only",
                "toy_stability",
                "--quiet",
                "--out",
                "{tmp}",
                "--cache",
                "/proc/inductheory",
            ],
            "cannot be written",
        ),
        E(
            ["sweep", "loss", *TINY_TASK, "--uniform", "--grid", "N=1e20"],
            "grid values of 'N' must be <= 9007199254740992",
            "grid-huge-N",
        ),
        E(
            [
                "sweep",
                "loss",
                *TINY_TASK,
                "--uniform",
                "--grid",
                "N=64",
                "--block",
                str(2**31 - 1),
            ],
            "block must be <= 65536",
            "huge-block",
        ),
        E(
            [
                "sweep",
                "flow",
                *TINY_FLOW,
                "--seeds",
                "2",
                "--grid",
                "beta=1",
                "--block",
                "1e6",
            ],
            "block must be <= 32768",
        ),
    ]
    return c


@contextlib.contextmanager
def _environment(env):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_case(case: Case) -> tuple[str, str]:
    """Run one case in-process; return (outcome, detail): outcome is one of "ok", "clear",
    "traceback", "silent" (exit 0 where an error was due, or a wrong/NaN result) or "unclear"
    (non-zero exit without exactly one matching error line)."""
    from inductheory.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        file = os.path.join(tmp, "a-file")
        with open(file, "w") as f:
            f.write("x")
        outdir = os.path.join(tmp, "out")

        def fill(a):
            return a.replace("{tmp}", outdir).replace("{file}", file)

        argv = [fill(a) for a in case.argv]
        env = {k: fill(v) for k, v in case.env.items()}
        for step in case.setup:
            if callable(step):
                step(outdir)
                continue
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()) as step_err,
            ):
                code = main([a.replace("{tmp}", outdir) for a in step])
            if code != 0:
                return (
                    "unclear",
                    f"setup {step} exit {code}: {step_err.getvalue()[-300:]}",
                )
        out, err = io.StringIO(), io.StringIO()
        with (
            _environment(env),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            try:
                code = main(argv)
            except (
                SystemExit
            ) as exit_:  # a command line would see this exit status, no traceback
                code = (
                    exit_.code
                    if isinstance(exit_.code, int)
                    else (0 if exit_.code is None else 1)
                )
            except BaseException:  # noqa: BLE001 - anything escaping main is a traceback for the user
                return "traceback", traceback.format_exc(limit=3)
        out, err = out.getvalue(), err.getvalue()
    if "Traceback" in err:
        return "traceback", err[-500:]
    errors = [line for line in err.splitlines() if ": error: " in line]
    if code != 0:
        if case.expect == "ok":
            return "unclear", f"exit {code}: {err.strip()[-300:]}"
        if len(errors) == 1 and case.match in errors[0]:
            return "clear", errors[0]
        return (
            "unclear",
            f"exit {code}, error lines {errors}, wanted {case.match!r}; stderr "
            f"{err.strip()[-300:]}",
        )
    if case.expect == "error":
        return (
            "silent",
            f"exit 0, wanted an error {case.match!r}; stdout {out.strip()[:200]}",
        )
    try:
        good = (case.check or default_check)(out)
    except Exception as exc:  # noqa: BLE001
        good, out = False, f"{type(exc).__name__}: {exc}; {out[:200]}"
    return (
        ("ok", "")
        if good
        else ("silent", f"exit 0 but the result fails its check: {out.strip()[:300]}")
    )


def main(argv=None) -> int:
    verbose = "-v" in (argv or sys.argv[1:])
    counts, bad = {}, []
    start = time.perf_counter()
    all_cases = cases()
    for i, case in enumerate(all_cases):
        t0 = time.perf_counter()
        outcome, detail = run_case(case)
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome in ("traceback", "silent", "unclear"):
            bad.append((case.argv, outcome, detail))
        if verbose:
            print(
                f"[{i + 1}/{len(all_cases)}] {outcome:9s} "
                f"{time.perf_counter() - t0:5.1f}s {' '.join(case.argv)}"
                + (f"\n      {detail}" if detail and outcome != "ok" else ""),
                flush=True,
            )
    print(
        f"tried {len(all_cases)}: ok {counts.get('ok', 0)}, clear error {counts.get('clear', 0)}, "
        f"traceback {counts.get('traceback', 0)}, silent-wrong {counts.get('silent', 0)}, "
        f"unclear {counts.get('unclear', 0)}  [{time.perf_counter() - start:.0f}s]"
    )
    for argv_, outcome, detail in bad:
        print(f"  {outcome}: {' '.join(argv_)}\n      {detail}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
