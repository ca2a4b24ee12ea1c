"""The library's two-head toy against the sympy closed forms of proofs/toy.py
(docs/theory.md §8)."""

from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import inductheory  # noqa: E402
from inductheory import TheoryAssumptionWarning, ToyConfig  # noqa: E402
from inductheory.cli import main  # noqa: E402
from inductheory.toy import (
    corner_losses,
    escape_rates,
    logistic_loss,
    split_advantage,
    toy_flow,
    toy_gradient,
    toy_loss,
    toy_margins,
)  # noqa: E402
from inductheory.toy._toy import escape_rate_grid, symmetric_stability_boundary  # noqa: E402
from proofs import toy as proof  # noqa: E402

# --- sympy closed forms, lambdified with mpmath (30 digits)
# ------------------------------------------
mpmath.mp.dps = 30
_P = (proof.beta, proof.gamma, proof.L, proof.K)
_loss = sp.lambdify(
    (proof.p1, proof.p2, *_P), proof.toy_loss(proof.p1, proof.p2, *_P), "mpmath"
)
_grad = sp.lambdify(
    (proof.p1, proof.p2, *_P), proof.toy_gradient(proof.p1, proof.p2, *_P), "mpmath"
)
_corners = sp.lambdify(_P, proof.corner_losses(*_P), "mpmath")
_split = sp.lambdify(_P, proof.split_advantage(*_P), "mpmath")
_rates = sp.lambdify(_P, proof.escape_rates(*_P), "mpmath")
_boundary = sp.lambdify(
    (proof.beta, proof.gamma, proof.L),
    proof.symmetric_boundary(proof.beta, proof.gamma, proof.L),
    "mpmath",
)


def _f(x) -> float:
    return float(x)


def _config(beta, gamma, L, K) -> ToyConfig:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TheoryAssumptionWarning)
        return ToyConfig(beta=beta, gamma=gamma, L=L, K=K)


params = st.tuples(
    st.floats(0.1, 12.0),  # beta
    st.floats(0.05, 3.0),  # gamma
    st.integers(2, 64),  # L
    st.floats(-5.0, 10.0).map(math.exp),  # K, log-uniform
)
weights = st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0))


@settings(max_examples=30)
@given(params, weights)
def test_loss_matches_sympy(prm, p):
    cfg = _config(*prm)
    np.testing.assert_allclose(
        float(toy_loss(cfg, jnp.array(p))), _f(_loss(*p, *prm)), rtol=1e-12, atol=1e-300
    )


@settings(max_examples=30)
@given(params, weights)
def test_gradient_matches_sympy_and_jax_grad(prm, p):
    cfg = _config(*prm)
    p = jnp.array(p)
    closed = np.asarray(toy_gradient(cfg, p))
    expected = np.array([_f(g) for g in _grad(*p.tolist(), *prm)])
    np.testing.assert_allclose(closed, expected, rtol=1e-10, atol=1e-13)
    autodiff = np.asarray(jax.grad(lambda q: toy_loss(cfg, q))(p))
    np.testing.assert_allclose(closed, autodiff, rtol=1e-10, atol=1e-13)


@settings(max_examples=30)
@given(params)
def test_corners_split_advantage_and_rates_match_sympy(prm):
    cfg = _config(*prm)
    same, opposite = corner_losses(cfg)
    same_s, opposite_s = (_f(x) for x in _corners(*prm))
    np.testing.assert_allclose(
        [float(same), float(opposite)], [same_s, opposite_s], rtol=1e-12
    )
    D = float(split_advantage(cfg))
    np.testing.assert_allclose(D, _f(_split(*prm)), rtol=1e-10)
    assert D > 0  # sign proved in proofs/toy.py for all beta, gamma, K > 0, L >= 2
    # the corner losses are the loss at the corners
    np.testing.assert_allclose(
        float(toy_loss(cfg, jnp.array([1.0, 1.0]))), same_s, rtol=1e-12
    )
    np.testing.assert_allclose(
        float(toy_loss(cfg, jnp.array([0.0, 1.0]))), opposite_s, rtol=1e-12
    )
    sym, anti = escape_rates(cfg)
    sym_s, anti_s = (_f(x) for x in _rates(*prm))
    scale = abs(anti_s) + abs(sym_s)
    np.testing.assert_allclose(
        [float(sym), float(anti)], [sym_s, anti_s], rtol=1e-10, atol=1e-12 * scale
    )
    assert float(anti) >= float(sym)  # splitting is the faster direction


def _vector_field(cfg):
    """d theta / dt = -grad_theta loss(sigmoid(theta)), by autodiff (independent of the
    closed forms)."""
    return jax.grad(lambda th: -toy_loss(cfg, jax.nn.sigmoid(th)))


@pytest.mark.parametrize(
    "prm",
    [(4.0, 1.0, 8, 100.0), (8.0, 0.5, 4, 1e3), (2.0, 2.0, 2, 0.5), (1.0, 1.0, 16, 3.0)],
)
def test_escape_rates_match_finite_difference_linearization(prm):
    cfg = _config(*prm)
    f = _vector_field(cfg)
    sym, anti = escape_rates(cfg)
    h = 1e-5
    for v, rate in ((jnp.array([1.0, 1.0]), sym), (jnp.array([1.0, -1.0]), anti)):
        Jv = (f(h * v) - f(-h * v)) / (2 * h)  # Jacobian times v at theta = 0
        np.testing.assert_allclose(
            np.asarray(Jv), float(rate) * np.asarray(v), rtol=1e-6, atol=1e-9
        )


def test_flow_leaves_center_at_the_escape_rate():
    cfg = ToyConfig(beta=8.0, gamma=1.0, L=8, K=100.0)
    _, anti = escape_rates(cfg)
    delta, t = 1e-7, 40.0
    p0 = jax.nn.sigmoid(jnp.array([delta, -delta]))
    traj = toy_flow(cfg, p0, jnp.array([0.0, t]))
    theta_t = jnp.log(traj[-1]) - jnp.log1p(-traj[-1])
    measured = math.log(float(theta_t[0]) / delta) / t
    np.testing.assert_allclose(measured, float(anti), rtol=1e-4)
    np.testing.assert_allclose(
        float(theta_t[1]), -float(theta_t[0]), rtol=1e-6
    )  # stays antisymmetric


@pytest.mark.parametrize(
    "p0, corner",
    [
        ((0.51, 0.495), (1.0, 0.0)),
        ((0.48, 0.49), (0.0, 1.0)),
        ((0.5 + 1e-3, 0.5 + 1e-3), (1.0, 1.0)),
        ((0.49, 0.49), (0.0, 0.0)),
    ],
)
def test_flow_sharpens_to_corners(p0, corner):
    cfg = ToyConfig(beta=8.0, gamma=1.0, L=8, K=100.0)
    ts = jnp.linspace(0.0, 20000.0, 41)
    traj = np.asarray(toy_flow(cfg, jnp.array(p0), ts))
    np.testing.assert_allclose(traj[0], p0, rtol=1e-12)
    np.testing.assert_allclose(traj[-1], corner, atol=0.01)
    losses = np.asarray(toy_loss(cfg, jnp.asarray(traj)))
    assert np.all(np.diff(losses) <= 1e-12)  # gradient flow never increases the loss
    if (
        p0[0] == p0[1]
    ):  # the diagonal is invariant: heads that start equal stay on the same offset
        np.testing.assert_allclose(traj[:, 0], traj[:, 1], rtol=1e-9)


def test_large_K_expansions():
    beta, gamma, L = 3.0, 1.0, 6
    A1 = math.e / (math.e + L - 1)
    A0 = 1 / L
    a = math.exp(0.5) / (math.exp(0.5) + L - 1)
    for K in (1e6, 1e8):
        cfg = ToyConfig(beta=beta, gamma=gamma, L=L, K=K)
        np.testing.assert_allclose(
            float(split_advantage(cfg)) * K,
            (math.exp(beta * A1) - math.exp(beta * A0)) ** 2 / 2,
            rtol=1e-4,
        )
        sym, anti = escape_rates(cfg)
        A2 = gamma**2 * a * (1 - a) * (1 - 2 * a)
        np.testing.assert_allclose(float(anti), beta * A2 / 16, rtol=1e-4)
        A1p = gamma * a * (1 - a)
        np.testing.assert_allclose(
            float(anti - sym) * K,
            beta**2 * A1p**2 * math.exp(2 * beta * a) / 8,
            rtol=1e-4,
        )


def test_logistic_loss_and_margins_by_hand():
    np.testing.assert_allclose(float(logistic_loss(0.0, 1.0)), math.log(2), rtol=1e-15)
    np.testing.assert_allclose(
        float(logistic_loss(-800.0, 2.0)), 800 + math.log(2), rtol=1e-15
    )  # no overflow
    cfg = ToyConfig(beta=2.0, gamma=1.0, L=5, K=1.0)
    A = lambda w: math.exp(w) / (math.exp(w) + 4)
    m = np.asarray(toy_margins(cfg, jnp.array([[0.2, 0.9], [1.0, 0.0]])))
    np.testing.assert_allclose(
        m[0], [2 * (A(0.2) + A(0.9)), 2 * (A(0.8) + A(0.1))], rtol=1e-14
    )
    np.testing.assert_allclose(m[1], [2 * (A(1) + A(0))] * 2, rtol=1e-14)


def test_toy_functions_jit_and_batch():
    cfg = ToyConfig()
    p = jnp.array([[0.1, 0.2], [0.7, 0.4], [0.5, 0.5]])
    np.testing.assert_allclose(
        jax.jit(lambda q: toy_loss(cfg, q))(p), toy_loss(cfg, p), rtol=1e-14
    )
    np.testing.assert_allclose(
        jax.jit(lambda q: toy_gradient(cfg, q))(p)[1],
        toy_gradient(cfg, p[1]),
        rtol=1e-14,
    )
    np.testing.assert_allclose(toy_gradient(cfg, p)[2], 0.0, atol=1e-15)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"beta": 0.0}, "beta"),
        ({"gamma": -1.0}, "gamma"),
        ({"K": 0.0}, "K"),
        ({"L": 1}, "L"),
        ({"L": 4.5}, "L"),
        ({"beta": float("nan")}, "beta"),
        ({"K": float("inf")}, "K"),
    ],
)
def test_config_rejects_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ToyConfig(**kwargs)


def test_config_warns_outside_theorems():
    with pytest.warns(TheoryAssumptionWarning, match="L >= 4"):
        ToyConfig(L=3)
    with pytest.warns(TheoryAssumptionWarning, match="gamma <= 1"):
        ToyConfig(gamma=1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ToyConfig(beta=4.0, gamma=1.0, L=4, K=10.0)


def test_flow_rejects_bad_inputs():
    cfg = ToyConfig()
    with pytest.raises(ValueError, match="p0"):
        toy_flow(cfg, jnp.array([0.0, 0.5]), jnp.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="p0"):
        toy_flow(cfg, jnp.array([0.5, 0.5, 0.5]), jnp.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="ts"):
        toy_flow(cfg, jnp.array([0.4, 0.5]), jnp.array([1.0, 0.5]))


def test_public_names_exported():
    for name in (
        "ToyConfig",
        "toy_loss",
        "toy_gradient",
        "corner_losses",
        "split_advantage",
        "escape_rates",
        "toy_flow",
    ):
        assert hasattr(inductheory.toy, name)


def test_cli_json_matches_sympy(capsys):
    prm = (5.0, 0.8, 6, 40.0)
    assert (
        main(
            ["toy", "--beta", "5", "--gamma", "0.8", "--L", "6", "--K", "40", "--json"]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    same, opposite = (_f(x) for x in _corners(*prm))
    sym, anti = (_f(x) for x in _rates(*prm))
    np.testing.assert_allclose(out["loss_same_corner"], same, rtol=1e-12)
    np.testing.assert_allclose(out["loss_opposite_corners"], opposite, rtol=1e-12)
    np.testing.assert_allclose(out["split_advantage"], _f(_split(*prm)), rtol=1e-10)
    np.testing.assert_allclose(out["escape_rate_symmetric"], sym, rtol=1e-10)
    np.testing.assert_allclose(out["escape_rate_antisymmetric"], anti, rtol=1e-10)
    np.testing.assert_allclose(
        out["loss_center"], _f(_loss(0.5, 0.5, *prm)), rtol=1e-12
    )
    assert out["config"] == {"beta": 5.0, "gamma": 0.8, "L": 6, "K": 40.0}


def test_cli_table_and_errors(capsys):
    assert main(["toy"]) == 0
    assert "split advantage" in capsys.readouterr().out
    assert main(["toy", "--K", "-1"]) != 0
    assert "K must be > 0" in capsys.readouterr().err
    assert main(["toy", "--L", "1"]) != 0
    assert "L must be >= 2" in capsys.readouterr().err


# --- the stability diagram of the toy figure: the drawn boundary against direct signs
# ----------------


@pytest.mark.parametrize(
    "gamma, L", [(1.0, 4), (1.0, 8), (1.0, 64), (0.5, 3), (2.0, 6)]
)
def test_symmetric_boundary_matches_direct_signs_of_the_escape_rates(gamma, L):
    """K > K*(beta) exactly where `escape_rates` (one ToyConfig per grid point) is > 0 along
    (1, 1)."""
    betas = np.linspace(0.25, 32.0, 14)
    Ks = np.geomspace(1e-2, 1e12, 15)
    k_star = np.asarray(
        symmetric_stability_boundary(jnp.asarray(betas), gamma=gamma, L=L)
    )
    checked = 0
    for beta, ks in zip(betas, k_star):
        for K in Ks:
            sym, anti = escape_rates(_config(float(beta), gamma, L, float(K)))
            if ks > 0 and abs(math.log(K / ks)) < 1e-6:
                continue  # on the boundary itself the sign is rounding
            assert (float(sym) > 0) == (K > ks), (beta, K, float(sym), ks)
            assert float(anti) > 0  # e^{gamma/2} < L - 1 for all these (gamma, L)
            checked += 1
    assert checked > 150
    # the boundary passes through both regions on this grid: the test can tell a shifted curve
    finite = k_star[np.isfinite(k_star) & (k_star > 0)]
    assert finite.size and finite.min() < Ks[-1]


def test_symmetric_boundary_matches_sympy_and_zeroes_the_rate():
    for beta, gamma, L in [
        (4.0, 1.0, 8),
        (16.0, 1.0, 8),
        (12.0, 0.7, 5),
        (30.0, 1.0, 64),
    ]:
        ks = float(symmetric_stability_boundary(beta, gamma=gamma, L=L))
        np.testing.assert_allclose(
            ks, max(0.0, _f(_boundary(beta, gamma, L))), rtol=1e-12
        )
        if ks > 0:  # the symmetric rate changes sign at K*
            below = float(escape_rates(_config(beta, gamma, L, ks * (1 - 1e-6)))[0])
            above = float(escape_rates(_config(beta, gamma, L, ks * (1 + 1e-6)))[0])
            assert below < 0 < above
            np.testing.assert_allclose(
                float(escape_rates(_config(beta, gamma, L, ks))[0]), 0.0, atol=1e-12
            )
    # the examples: stable at (beta 16, K 100) and (beta 4, K 1), unstable at (beta
    # 4, K 100), L 8
    assert (
        float(escape_rates(ToyConfig(beta=16.0, K=100.0))[0])
        < 0
        < float(escape_rates(ToyConfig(beta=4.0, K=100.0))[0])
    )
    assert float(escape_rates(ToyConfig(beta=4.0, K=1.0))[0]) < 0
    assert (
        float(symmetric_stability_boundary(1.0, gamma=1.0, L=8)) == 0.0
    )  # beta < beta_0: every K unstable


def test_symmetric_direction_stable_everywhere_when_A_is_concave_at_the_center():
    # e^{gamma/2} >= L - 1: both rates < 0 for every beta, K
    assert math.isinf(float(symmetric_stability_boundary(4.0, gamma=1.0, L=2)))
    sym, anti = escape_rate_grid(
        jnp.linspace(0.1, 30, 7)[:, None],
        jnp.geomspace(1e-3, 1e9, 9)[None, :],
        gamma=1.0,
        L=2,
    )
    assert np.all(np.asarray(sym) < 0) and np.all(np.asarray(anti) < 0)


@settings(max_examples=20)
@given(params)
def test_escape_rate_grid_equals_escape_rates(prm):
    beta, gamma, L, K = prm
    grid = escape_rate_grid(jnp.array([beta]), jnp.array([K]), gamma=gamma, L=L)
    one = escape_rates(_config(*prm))
    np.testing.assert_allclose(
        [float(g[0]) for g in grid], [float(x) for x in one], rtol=1e-13, atol=1e-300
    )
