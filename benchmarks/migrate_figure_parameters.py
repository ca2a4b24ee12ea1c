"""ONE-TIME MIGRATION (issue 64 item 2): the committed figure data's display-string parameters
into the typed records of `inductheory.figures._parameters`.

Before, eleven figures stored their parameters as display strings and their claims parsed
numbers back out of them with regular expressions. Their data now store the typed record
(`FigureData.parameters`) and render the strings from it. The full data cannot be recomputed
here (hours), so this script parses each committed JSON's strings once, builds the record,
checks that the record renders exactly the strings it was read from, and rewrites only the
`parameters` entry (every other byte of the file is kept).

    PYTHONPATH=. python benchmarks/migrate_figure_parameters.py figures figures/quick

A file already migrated (its parameters already the record) is left as it is. The library
itself reads no parameter back from text; this script is the only place that does, and it is
not needed again once the committed data are migrated.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from inductheory.figures import _parameters as P
from inductheory.internal._io import to_json


def _int(text: str, pattern: str) -> int:
    return int(_str(text, pattern))


def _float(text: str, pattern: str) -> float:
    return float(_str(text, pattern))


def _str(text: str, pattern: str) -> str:
    found = re.search(pattern, text)
    if found is None:
        raise ValueError(f"no {pattern!r} in {text!r}")
    return found.group(1)


def _kv(text: str, name: str) -> str:
    return _str(text, rf"(?<![\w.]){re.escape(name)}=([^\s,;)]+)")


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(", ")]


def coverage(p: dict) -> P.FigureParameters:
    return P.CoverageParameters(
        delta=float(_kv(p["flow"], "delta")),
        seeds=_int(p["flow"], r"(\d+) seeds per point"),
    )


def effective_offsets(p: dict, data: dict) -> P.FigureParameters:
    task, flow, approx = p["task"], p["flow"], p["approximate"]
    return P.EffectiveOffsetsParameters(
        **{k: int(_kv(task, k)) for k in ("L", "S", "H", "N")},
        beta=float(_kv(task, "beta")),
        rho=float(_kv(flow, "rho")),
        M=int(_kv(flow, "M")),
        seeds=_int(flow, r"(\d+) seeds"),
        approximate_N=int(_kv(approx, "N")),
        approximate_d=int(_kv(approx, "d")),
        # the realized eps as measured (the text rounds it to 2 decimals)
        approximate_eps=data["approximate"]["eps"],
        approximate_M=int(_kv(approx, "M")),
        approximate_seeds=_int(approx, r"(\d+) seeds"),
    )


def phase_uniformity(p: dict) -> P.FigureParameters:
    task, flows = p["task"], p["flows"]
    return P.PhaseUniformityParameters(
        **{k: int(_kv(task, k)) for k in ("L", "S", "N")},
        **{k: float(_kv(task, k)) for k in ("beta", "gamma", "kappa")},
        Hs=[int(h) for h in _str(task, r"H in \{([^}]*)\}").split(", ")],
        end_starts=_int(p["left end"], r"(\d+) starts each"),
        bounds=_int(p["frontier"], r"(\d+) bounds"),
        starts=_int(p["frontier"], r"x (\d+) starts"),
        rho=float(_kv(flows, "rho")),
        delta=float(_kv(flows, "delta")),
        seeds=_int(flows, r"plain (\d+) seeds"),
        coordinated_seeds=_int(flows, r"coordinated (\d+) seeds"),
    )


def regime_boundary(p: dict) -> P.FigureParameters:
    oracle, flow = p["oracle"], p["flow"]
    return P.RegimeBoundaryParameters(
        S=int(_kv(oracle, "S")),
        kappa=float(_kv(oracle, "kappa")),
        restarts=_int(oracle, r"(\d+) restarts"),
        vertex_seeds=_int(oracle, r"(\d+) vertex seeds"),
        bisection_steps=_int(oracle, r"(\d+) bisection steps"),
        series=_str(flow, r"^reduced, ([^,]+),"),
        seeds=_int(flow, r"(\d+) seeds"),
        rho=float(_kv(flow, "rho")),
        delta=float(_kv(flow, "delta")),
        t_max=float(_kv(flow, "t_max")),
        max_steps=int(float(_kv(flow, "max_steps"))),
    )


def convergence_rates(p: dict) -> P.FigureParameters:
    task, tail, delta = p["task"], p["tail"], p["delta"]
    level, resamples, seed = re.search(
        r"^(\d+)%: .*\((\d+) resamples, seed (\d+)\)", p["intervals"]
    ).groups()
    return P.ConvergenceRatesParameters(
        **{k: int(_kv(task, k)) for k in ("L", "S", "H", "N")},
        **{k: float(_kv(task, k)) for k in ("beta", "gamma", "kappa")},
        rhos=_floats(_str(tail, r"rho in \[([^\]]+)\]")),
        tail_seeds=_int(tail, r"(\d+) seeds each"),
        tail_delta=float(_kv(tail, "delta")),
        save_range=_floats(_str(tail, r"saves in \[([^\]]+)\]")),
        fit_window=_floats(_str(tail, r"1-p in \(([^)]+)\)")),
        deltas=_floats(_str(delta, r"delta in \[([^\]]+)\]")),
        delta_rho=float(_kv(delta, "rho")),
        delta_seeds=_int(delta, r"(\d+) seeds each"),
        root_finder=p["root_finder"],
        level=int(level) / 100,
        resamples=int(resamples),
        bootstrap_seed=int(seed),
    )


def toy_stability(p: dict) -> P.FigureParameters:
    diagram = p["diagram"]
    landscapes = [
        [float(_kv(part, "beta")), float(_kv(part, "K"))]
        for part in p["landscapes"].split("; ")
    ]
    (L,) = {int(_kv(part, "L")) for part in p["landscapes"].split("; ")}
    return P.ToyStabilityParameters(
        gamma=float(_kv(diagram, "gamma")),
        Ls=[int(x) for x in _str(diagram, r"L in \[([^\]]+)\]").split(", ")],
        beta_range=_floats(_str(diagram, r"beta in \[([^\]]+)\]")),
        n_beta=_int(diagram, r"\((\d+) points\)"),
        K_range=_floats(_str(diagram, r"K in \[([^\]]+)\]")),
        n_K=_int(diagram, r"\((\d+) points, log\)"),
        landscapes=landscapes,
        L=L,
    )


def boundary(p: dict) -> P.FigureParameters:
    task, flow, oracle = p["task"], p["flow"], p["oracle"]
    return P.BoundaryParameters(
        S=int(_kv(task, "S")),
        H=int(_kv(task, "H")),
        rho=float(_kv(flow, "rho")),
        delta=float(_kv(flow, "delta")),
        seeds=_int(flow, r"(\d+) seeds per W"),
        oracle_L=int(_kv(oracle, "L")),
        oracle_H=int(_kv(oracle, "H")),
        restarts=int(_kv(oracle, "restarts")),
        steps=int(_kv(oracle, "steps")),
    )


def mitigations(p: dict) -> P.FigureParameters:
    task, flow = p["task"], p["flow"]
    return P.MitigationsParameters(
        T=_int(task, r"T=L\*S=(\d+) positions"),
        H=int(_kv(task, "H")),
        N=int(_kv(task, "N")),
        **{k: float(_kv(task, k)) for k in ("beta", "gamma", "kappa")},
        rho=float(_kv(flow, "rho")),
        delta=float(_kv(flow, "delta")),
        t_max=float(_kv(flow, "t_max")),
        seeds=_int(flow, r"(\d+) seeds per row"),
        coordination_seeds=_int(p["coordination"], r"(\d+) seeds per variant"),
        budget_seeds=_int(p["coordination"], r"\((\d+) for the worst-phase"),
        threshold_factors=[
            float(f)
            for f in _str(p["threshold"], r"flows at (.*) lambda\*,").split(" and ")
        ],
    )


def relaxation_ladder(p: dict) -> P.FigureParameters:
    task, training, switches = p["task"], p["training"], p["switches"]
    measures = p["measures"]
    return P.RelaxationLadderParameters(
        **{k: int(_kv(task, k)) for k in ("L", "S", "H", "N")},
        **{k: float(_kv(task, k)) for k in ("beta", "gamma", "kappa")},
        queries=_kv(task, "queries"),
        seeds=_int(training, r"^(\d+) seeds per rung"),
        steps=_int(training, r"(\d+) steps"),
        lr=float(_kv(training, "lr")),
        M=int(_kv(training, "M")),
        batch=_int(switches, r"minibatch: (\d+)"),
        adam_lr=_float(switches, r"Adam: lr=([^;]+)"),
        approximate_d=_int(switches, r"geometry: d=(\d+)"),
        d=_int(switches, r"unembedding: d=(\d+)"),
        local_window=_int(switches, r"branch: w=(\d+)"),
        eval_contexts=_int(measures, r"^(\d+) held-out"),
        rho=float(_kv(training, "rho")),
        selected_mass=_float(measures, r"mass >= ([0-9.]+)"),
        input_dependent=_float(measures, r"avg >= ([0-9.]+)"),
        phase_uniform=_float(measures, r"gap <= ([0-9.]+)"),
    )


def theorem1_oracle(p: dict) -> P.FigureParameters:
    refine = re.search(r"refined by (\d+) bisection steps", p["boundary"])
    return P.Theorem1Parameters(
        restarts=_int(p["minimizer"], r"(\d+) restarts"),
        vertex_seeds=_int(p["minimizer"], r"(\d+) vertex seeds"),
        refine=int(refine.group(1)) if refine else 0,
    )


def approximate_geometry(p: dict) -> P.FigureParameters:
    return P.ApproximateGeometryParameters(
        dims=[int(d) for d in _str(p["task"], r"through d \(([^)]+)\)").split(", ")],
        contexts=_int(p["oracle"], r"^(\d+) contexts"),
        restarts=_int(p["oracle"], r"(\d+) restarts"),
        seeds=_int(p["flow"], r"(\d+) seeds"),
    )


MIGRATIONS = {
    f.__name__: f
    for f in (
        coverage,
        effective_offsets,
        phase_uniformity,
        regime_boundary,
        convergence_rates,
        toy_stability,
        boundary,
        mitigations,
        relaxation_ladder,
        theorem1_oracle,
        approximate_geometry,
    )
}


def migrate(folder: Path) -> list[str]:
    """Migrate the figures of `folder` (`figures` or `figures/quick`); the names rewritten."""
    done = []
    for name, parse in MIGRATIONS.items():
        path = folder / "data" / f"{name}.json"
        data = json.loads(path.read_text())
        old = data["parameters"]
        if not all(isinstance(v, str) for v in old.values()):
            continue  # already the record
        record = parse(old, data) if name == "effective_offsets" else parse(old)
        if record.text() != old:
            raise ValueError(f"{path}: {record.text()} renders differently from {old}")
        data["parameters"] = record.to_dict()
        path.write_text(to_json(data, indent=2, sort_keys=True) + "\n")
        done.append(name)
    return done


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+")
    for folder in parser.parse_args().folders:
        print(folder, migrate(folder))
