"""Every proof script runs on its own and exits 0; a failing check exits non-zero (also under -O).

Also cross-checks the library's exact-geometry path against the sympy closed form of
docs/theory.md §4.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from inductheory import OracleGates, Task  # noqa: E402
from inductheory.model import (
    attention_to_target,
    cross_entropy,
    exact_logits,
    query_slots,
)  # noqa: E402
from proofs import _check, convexity, exact_geometry  # noqa: E402

SCRIPTS = sorted(
    p.name for p in (ROOT / "proofs").glob("*.py") if not p.name.startswith("_")
)
# Scripts whose symbolic work takes long run in the slow target (`pytest -m slow`); the default run
# still checks their closed forms numerically and against the scripts' sympy models: escape_rate in
# tests/test_rates.py (autodiff), regime_boundary in tests/test_regime_boundary.py (the
# literal sympy
# edge, autodiff), boundary in tests/test_windows.py (the sympy Gram-matrix model's logits),
# coordination_threshold in tests/test_coordination_threshold.py (autodiff).
SLOW_SCRIPTS = {
    "escape_rate.py",
    "regime_boundary.py",
    "boundary.py",
    "coordination_threshold.py",
}


def _run(args, **kwargs):
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        **kwargs,
    )


def test_every_result_has_a_script():
    assert set(SCRIPTS) >= {
        "convexity.py",
        "exact_geometry.py",
        "logistic.py",
        "symmetric_flow.py",
        "toy.py",
    }


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(s, marks=[pytest.mark.slow] if s in SLOW_SCRIPTS else [])
        for s in SCRIPTS
    ],
)
def test_proof_script_passes(script):
    # Run with -O: the checks must not rely on `assert`.
    result = _run(["-O", f"proofs/{script}"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "all checks passed" in result.stdout
    assert "  ok: " in result.stdout


@pytest.mark.parametrize("script", SCRIPTS)
def test_readme_points_at_script(script):
    readme = (ROOT / "proofs" / "README.md").read_text()
    assert f"proofs/{script}" in readme


def test_failing_check_exits_nonzero_under_O():
    code = (
        "from proofs._check import check, run\n"
        "def main():\n    check(False, 'a false claim')\n"
        "run(main)\n"
    )
    result = _run(["-O", "-c", code])
    assert result.returncode == 1
    assert "FAILED: a false claim" in result.stderr
    assert "all checks passed" not in result.stdout


@pytest.mark.parametrize(
    "claim",
    [
        lambda: _check.check(False, "a false claim"),
        lambda: _check.check(sp.Symbol("x") > 0, "an undecided relation"),
        lambda: _check.check_zero(sp.Symbol("x") - 1, "x = 1"),
        lambda: _check.check_positive(sp.Symbol("x", real=True), "x > 0"),
        lambda: _check.check_positive(
            sp.exp(sp.Symbol("t", positive=True)) - 1, "undecidable by assumptions"
        ),
    ],
)
def test_failing_check_makes_run_exit_1(claim):
    with pytest.raises(SystemExit) as exit_info:
        _check.run(claim)
    assert exit_info.value.code == 1


def test_passing_checks_make_run_exit_0():
    def main():
        _check.check_zero(
            sp.sin(sp.Symbol("x")) ** 2 + sp.cos(sp.Symbol("x")) ** 2 - 1, "Pythagoras"
        )
        _check.check_positive(sp.exp(sp.Symbol("x", real=True)), "exp > 0")

    with pytest.raises(SystemExit) as exit_info:
        _check.run(main)
    assert exit_info.value.code == 0


def test_exact_logits_match_sympy_closed_form():
    """The library's exact-geometry loss equals the §4 closed form (lambdified) at random gates."""
    L, S, H, N = 4, 3, 2, 17
    gamma, beta = 0.7, 3.0
    rng = np.random.default_rng(0)
    key = rng.dirichlet(np.ones(S), size=(H, L))
    value = rng.dirichlet(np.ones(S), size=(H, L))
    task = Task(L=L, S=S, H=H, N=N, gamma=gamma, beta=beta, kappa=2.0)
    losses = np.asarray(
        cross_entropy(
            *exact_logits(
                task, OracleGates(key=jnp.asarray(key), value=jnp.asarray(value))
            )
        )
    )
    pK, pV = exact_geometry.gate_symbols(L, S, H)
    names, values = [exact_geometry.gamma, exact_geometry.beta], [gamma, beta]
    for h in range(H):
        for l in range(L):
            for r in range(S - 1):
                names += [
                    sp.Symbol(f"pK_{h}_{l}_{r}", real=True),
                    sp.Symbol(f"pV_{h}_{l}_{r}", real=True),
                ]
                values += [key[h, l, r], value[h, l, r]]
    lstar, rstar = query_slots(L, S)
    for q, (ls, rs) in enumerate(zip(np.asarray(lstar), np.asarray(rstar))):
        expr = exact_geometry.reduced_query_loss(pK, pV, L, S, H, N, int(ls), int(rs))
        assert expr.free_symbols <= set(names)
        expected = sp.lambdify(names, expr, "mpmath")(*values)
        np.testing.assert_allclose(losses[q], float(expected), rtol=1e-12)


def test_attention_and_its_derivatives_match_sympy():
    import jax

    w, g, L = convexity.w, convexity.gamma, convexity.L
    A = sp.lambdify((w, g, L), convexity.attention_A(w, g, L))
    A2 = sp.lambdify((w, g, L), convexity.attention_A2(w, g, L))
    d2 = jax.grad(jax.grad(lambda x, gg, LL: attention_to_target(x, gg, LL)))
    for wv, gv, Lv in [(0.0, 1.0, 4), (0.3, 0.5, 8), (1.0, 2.5, 2), (0.7, 1.0, 16)]:
        np.testing.assert_allclose(
            float(attention_to_target(wv, gv, Lv)), A(wv, gv, Lv), rtol=1e-14
        )
        np.testing.assert_allclose(
            float(d2(wv, gv, Lv)), A2(wv, gv, Lv), rtol=1e-10, atol=1e-14
        )
