"""Test-suite power: plant small bugs (mutants) in the model, loss, selection and flow-summary
code, and count how many the tests catch.

Each mutant changes one operator or constant in one function of a target module (a comparison
`>` <-> `>=`, `<` <-> `<=`, `==` <-> `!=`, `+` <-> `-`, `*` <-> `/`, `max` <-> `min`,
`argmax` <-> `argmin`, `&` <-> `|`, a dropped `~`, `1 - x` -> `1 - 10 * x`, an integer constant
off by one). The checkout is copied to a temporary folder, the one change is made there,
and the target's tests run in the copy (Python puts the working directory first on its path);
a mutant is *killed* when they fail or time out, *survived* when they pass. Results are
written atomically after every mutant to `--out` (JSON, with the parameters), and a rerun
resumes from it.

    python benchmarks/mutation.py                 # every target, every mutant
    python benchmarks/mutation.py --limit 5       # the first 5 mutants of each target
    python benchmarks/mutation.py --target gates  # one target
    python benchmarks/mutation.py --sample 40     # 40 mutants drawn at random (seed 0)

A survived mutant is either a gap in the tests or an equivalent mutant (a change no input can
see, e.g. `>=` for `>` where equality cannot occur); the report lists each survivor's line.
"""

from __future__ import annotations

import argparse
import ast
import copy
import fnmatch
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (name, module, functions (None: all), tests that check it)
TARGETS = {
    "logits": (
        "inductheory/model/_logits.py",
        [
            "top1_correct",
            "cross_entropy",
            "exact_logits",
            "block_attention",
            "log_outside_count",
        ],
        ["tests/test_selection_rules.py", "tests/test_model.py"],
    ),
    "loss": (
        "inductheory/model/_loss.py",
        [
            "shared_logits",
            "windowed_shared_logits",
            "phase_gap",
            "context_loss",
            "per_phase_mean",
        ],
        ["tests/test_model.py", "tests/test_loss.py"],
    ),
    "gates": (
        "inductheory/model/_gates.py",
        [
            "selected_offsets",
            "concentrated_offsets",
            "first_offset",
            "value_follows_key",
        ],
        ["tests/test_selection_rules.py", "tests/test_gate_contract.py"],
    ),
    "selection": (
        "inductheory/flow/_dynamics.py",
        ["concentration_margin", "head_selection", "selection_margin"],
        ["tests/test_selection_rules.py"],
    ),
    "flow_end": (
        "inductheory/flow/_integrate.py",
        ["integrate"],
        ["tests/test_selection_rules.py", "tests/test_flow_reduced.py"],
    ),
    "flow_summary": (
        "inductheory/experiments/_flows.py",
        [
            "distinct_fraction",
            "selected_distinct_fraction",
            "offset_histogram",
            "independent_distinct_baseline",
        ],
        [
            "tests/test_results.py",
            "tests/test_coordination.py",
            "tests/test_flow_reduced.py",
        ],
    ),
}

_SWAPS = {
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
}
_NAME_SWAPS = {"max": "min", "min": "max", "argmax": "argmin", "argmin": "argmax"}


def _sites(tree: ast.Module, functions) -> list[tuple[str, int, str]]:
    """Every mutable site inside the chosen functions: (function, node index, description)."""
    sites, seen = [], set()
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if (functions is not None and fn.name not in functions) or fn.name in seen:
            continue
        seen.add(fn.name)  # the first function of a name only, as `_Mutate` changes it
        body = [n for stmt in fn.body for n in ast.walk(stmt)]
        for i, node in enumerate(body):
            # docstrings and other bare constants are not code
            for what in _site_changes(node):
                sites.append((fn.name, i, what))
    return sites


def _site_changes(node) -> list[str]:
    if isinstance(node, ast.Compare):
        return [f"cmp{k}" for k, op in enumerate(node.ops) if type(op) in _SWAPS]
    if isinstance(node, ast.BinOp):
        out = ["binop"] if type(node.op) in _SWAPS else []
        if (
            isinstance(node.op, ast.Sub)
            and isinstance(node.left, ast.Constant)
            and node.left.value == 1
        ):
            out.append("one_minus_10x")
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert | ast.Not):
        return ["drop_not"]
    if isinstance(node, ast.Attribute) and node.attr in _NAME_SWAPS:
        return ["attr"]
    if isinstance(node, ast.Name) and node.id in _NAME_SWAPS:
        return ["name"]
    if (
        isinstance(node, ast.Constant)
        and type(node.value) is int
        and not isinstance(node.value, bool)
    ):
        return ["int_plus_1"]
    return []


class _Mutate(ast.NodeTransformer):
    def __init__(self, function: str, index: int, what: str):
        self.function, self.index, self.what = function, index, what
        self.done = False

    def visit_FunctionDef(self, fn):
        if fn.name != self.function or self.done:
            return self.generic_visit(fn)
        body = [n for stmt in fn.body for n in ast.walk(stmt)]
        node = body[self.index]
        w = self.what
        if w.startswith("cmp"):
            k = int(w[3:])
            node.ops[k] = _SWAPS[type(node.ops[k])]()
        elif w == "binop":
            node.op = _SWAPS[type(node.op)]()
        elif w == "one_minus_10x":
            node.right = ast.BinOp(ast.Constant(10), ast.Mult(), node.right)
        elif w == "drop_not":
            node.op = (
                ast.UAdd()
            )  # a marker: `_drop_marked` puts the operand in its place
        elif w == "attr":
            node.attr = _NAME_SWAPS[node.attr]
        elif w == "name":
            node.id = _NAME_SWAPS[node.id]
        elif w == "int_plus_1":
            node.value = node.value + 1
        self.done = True
        return fn


def _drop_marked(tree: ast.Module) -> ast.Module:
    """A dropped `~` or `not` is the operand itself (the mutation marks it with unary `+`)."""

    class Strip(ast.NodeTransformer):
        def visit_UnaryOp(self, node):
            self.generic_visit(node)
            return node.operand if isinstance(node.op, ast.UAdd) else node

    return Strip().visit(tree)


def mutant_source(source: str, function: str, index: int, what: str) -> tuple[str, int]:
    """The module's source with one change, and the changed line (of the original source)."""
    tree = ast.parse(source)
    mutated = copy.deepcopy(tree)
    m = _Mutate(function, index, what)
    mutated = m.visit(mutated)
    if what == "drop_not":
        mutated = _drop_marked(mutated)
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name == function:
            line = [n for s in fn.body for n in ast.walk(s)][index].lineno
            break
    return ast.unparse(ast.fix_missing_locations(mutated)), line


def _write_atomic(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def run_mutant(pkg_copy: Path, module: str, source: str, tests, timeout: float) -> str:
    target = pkg_copy / module
    original = target.read_text()
    try:
        target.write_text(source)
        env = {**os.environ, "PYTHONPATH": str(pkg_copy), "JAX_ENABLE_X64": "1"}
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:xdist"]
        cmd += ["-p", "no:cacheprovider", *tests]
        try:
            proc = subprocess.run(
                cmd, cwd=pkg_copy, env=env, capture_output=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return "killed (timeout)"
        if proc.returncode == 0:
            return "survived"
        if proc.returncode == 5:
            return "error (no tests ran)"
        return "killed"
    finally:
        target.write_text(original)


_IGNORED = shutil.ignore_patterns(
    ".git", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info", "site"
)


def _check_copy_is_imported(pkg_copy: Path) -> None:
    # an editable install must not shadow the mutated copy
    env = {**os.environ, "PYTHONPATH": str(pkg_copy)}
    code = "import inductheory; print(inductheory.__file__)"
    where = subprocess.run(
        [sys.executable, "-c", code],
        cwd=pkg_copy,
        env=env,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if not where.startswith(str(pkg_copy)):
        raise SystemExit(f"the tests would import {where!r}, not the mutated copy")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", choices=sorted(TARGETS))
    parser.add_argument("--limit", type=int, default=None, help="mutants per target")
    parser.add_argument(
        "--sample",
        type=int,
        default=None,
        help="a uniform random sample of this many mutants over all chosen targets",
    )
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        help="also run the mutants whose id (target:function:node:change) matches this "
        "glob, sampled or not",
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds per mutant"
    )
    parser.add_argument(
        "--tests",
        action="append",
        default=None,
        help="run these test files instead of each target's own (repeatable)",
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "mutation.json"))
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit must be >= 1, got {args.limit}")
    if args.sample is not None and args.sample < 1:
        parser.error(f"--sample must be >= 1, got {args.sample}")
    out = Path(args.out)
    results = json.loads(out.read_text())["mutants"] if out.exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        pkg_copy = Path(tmp)
        # the whole checkout: tests read files next to them, and Python puts the working
        # directory first on the path, ahead of any installed copy
        pkg_copy = pkg_copy / "checkout"
        shutil.copytree(ROOT, pkg_copy, ignore=_IGNORED)
        _check_copy_is_imported(pkg_copy)
        plan = []
        for name in args.target or list(TARGETS):
            source = (pkg_copy / TARGETS[name][0]).read_text()
            sites = _sites(ast.parse(source), TARGETS[name][1])[: args.limit]
            plan += [(name, site) for site in sites]
        total = len(plan)
        if args.sample is not None and args.sample < total:
            keep = set(random.Random(args.seed).sample(range(total), args.sample))
            keep |= {
                i
                for i, (name, (fn, index, what)) in enumerate(plan)
                if any(
                    fnmatch.fnmatch(f"{name}:{fn}:{index}:{what}", g) for g in args.also
                )
            }
            plan = [plan[i] for i in sorted(keep)]
        print(f"{len(plan)} of {total} mutants", flush=True)
        for k, (name, (fn, index, what)) in enumerate(plan):
            module, _, tests = TARGETS[name]
            tests = args.tests or tests
            # the copy, not the live checkout: the plan and each mutant see one snapshot
            source = (pkg_copy / module).read_text()
            mutated, line = mutant_source(source, fn, index, what)
            mid = f"{name}:{fn}:{index}:{what}"
            if mid in results:
                continue
            start = time.perf_counter()
            verdict = run_mutant(pkg_copy, module, mutated, tests, args.timeout)
            original = source.splitlines()[line - 1].strip()
            results[mid] = {
                "target": name,
                "module": module,
                "function": fn,
                "line": line,
                "code": original,
                "change": what,
                "verdict": verdict,
                "seconds": round(time.perf_counter() - start, 1),
            }
            print(
                f"[{k + 1}/{len(plan)} {name}] {verdict:18s} {module}:{line} {what}: "
                f"{original[:70]}",
                flush=True,
            )
            parameters = {"targets": TARGETS, "limit": args.limit}
            parameters.update(sample=args.sample, seed=args.seed, total=total)
            _write_atomic(out, {"parameters": parameters, "mutants": results})
    summary = {}
    for r in results.values():
        s = summary.setdefault(r["target"], {"killed": 0, "survived": 0, "error": 0})
        s[r["verdict"].split()[0]] += 1
    print("\ntarget        killed  survived  error  kill rate")
    for name, s in summary.items():
        n = s["killed"] + s["survived"]
        print(
            f"{name:12s}  {s['killed']:6d}  {s['survived']:8d}  {s['error']:5d}  "
            f"{s['killed'] / n if n else float('nan'):.2f}"
        )
    killed = sum(s["killed"] for s in summary.values())
    n = killed + sum(s["survived"] for s in summary.values())
    if n:
        from inductheory.figures._stats import share_text

        print(
            f"{'all':12s}  {killed:6d}  {n - killed:8d}  {'':5s}  {share_text(killed, n)}"
        )
    for r in results.values():
        if r["verdict"] == "survived":
            print(
                f"survived: {r['module']}:{r['line']} {r['change']}: {r['code'][:80]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
