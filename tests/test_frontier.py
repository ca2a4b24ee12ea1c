"""The price of phase-uniformity: the frontier of mean vs worst-phase loss over shared
gates.

Losses are checked against an independent numpy evaluation of the closed form of docs/theory.md §4.
"""

import itertools
import math
import warnings

import numpy as np
import pytest

from inductheory import Task, TheoryAssumptionWarning, uniform_gates
from inductheory.experiments import (
    frontier_mean_at,
    kkt_check,
    mean_and_worst,
    minimax_end,
    simplex_frontier,
    uniformity_frontier,
)
from inductheory.experiments._frontier import FrontierEnd, SimplexFrontier
from inductheory.model import SharedGates


def reference_phase_losses(L, S, N, beta, gamma, key, value):
    """§4 by hand: per phase r*, log(N - LS + sum_r e^{s*_r} + (L-1) sum_r e^{s°_r}) - s*_{r*+1}."""
    key, value = np.asarray(key, float), np.asarray(value, float)
    out = []
    for r_star in range(S - 1):
        e = np.exp(gamma * key[:, r_star])
        alpha = e / (e + L - 1)
        other = (1 - alpha) / (L - 1)
        s_own = beta * alpha @ value
        s_other = beta * other @ value
        out.append(
            math.log(N - L * S + np.exp(s_own).sum() + (L - 1) * np.exp(s_other).sum())
            - s_own[r_star + 1]
        )
    return np.array(out)


def softmax(b):
    z = np.exp(b - b.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def task_of(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TheoryAssumptionWarning)
        return Task(**kw)


SMALL = dict(
    L=8, S=3, H=1, N=512, beta=4.0, gamma=1.0
)  # H = 1 < S - 1 = 2: one phase left uncovered


@pytest.fixture(scope="module")
def small_end():
    task = task_of(**SMALL)
    return task, minimax_end(task, starts=8)


@pytest.fixture(scope="module")
def small(small_end):
    task, end = small_end
    return task, uniformity_frontier(
        task, n_bounds=5, starts=6, mus=(1e3, 1e4, 1e4, 1e4), max_steps=400, end=end
    )


def hard_points(L, S, N, beta, gamma, H):
    """(mean, worst) of every hard selection (each head: key e_r, value e_{r+1}), by hand."""
    eye = np.eye(S)
    pts = []
    for offsets in itertools.product(range(S - 1), repeat=H):
        losses = reference_phase_losses(
            L, S, N, beta, gamma, eye[list(offsets)], eye[[o + 1 for o in offsets]]
        )
        pts.append((losses.mean(), losses.max()))
    return pts


def test_mean_and_worst_match_the_closed_form_by_hand():
    task = task_of(**SMALL)
    L, S, N, beta, gamma = 8, 3, 512, 4.0, 1.0
    u = reference_phase_losses(
        L, S, N, beta, gamma, np.full((1, S), 1 / S), np.full((1, S), 1 / S)
    )
    assert mean_and_worst(task, uniform_gates(1, S)) == pytest.approx(
        (u.mean(), u.max()), rel=1e-12
    )


def test_frontier_points_are_feasible_and_their_losses_are_right(small):
    task, fr = small
    ok = np.isfinite(fr.mean)
    assert ok.sum() >= len(ok) - 1  # at most the tightest bound may be missed
    assert np.all(fr.worst[ok] <= fr.bounds[ok] + 1e-6)
    for p, m, w in zip(fr.gates[ok], fr.mean[ok], fr.worst[ok]):
        losses = reference_phase_losses(8, 3, 512, 4.0, 1.0, p[:, 0], p[:, 1])
        assert (losses.mean(), losses.max()) == pytest.approx((m, w), rel=1e-10)


def test_frontier_is_monotone_in_the_bound(small):
    _, fr = small
    mean = fr.mean[np.isfinite(fr.mean)]
    assert np.all(np.diff(mean) <= 1e-7), mean  # relaxing c never raises the best mean
    assert (
        mean[-1] - mean[0] < -1e-3
    )  # and the constraint binds: uniformity costs something here


def test_uniform_gates_and_hard_selections_lie_on_or_above_the_frontier(small):
    _, fr = small
    L, S, N, beta, gamma = 8, 3, 512, 4.0, 1.0
    u = reference_phase_losses(
        L, S, N, beta, gamma, np.full((1, S), 1 / S), np.full((1, S), 1 / S)
    )
    assert u.max() - u.min() < 1e-12  # uniform gates are phase-uniform
    assert u.mean() >= frontier_mean_at(fr, u.max()) - 1e-9
    assert (
        fr.min_worst <= u.max() + 1e-9
    )  # the smallest worst phase found is at least as good
    for m, w in hard_points(L, S, N, beta, gamma, 1):
        assert m >= frontier_mean_at(fr, w + 1e-12) - 1e-6  # w by hand, to rounding
    # unconstrained end: no worse than the best hard selection
    assert (
        fr.unconstrained_mean
        <= min(m for m, _ in hard_points(L, S, N, beta, gamma, 1)) + 1e-6
    )


def test_frontier_mean_at_reads_the_largest_bound_below():
    fr = SimplexFrontier(
        bounds=np.array([1.0, 2.0, 3.0]),
        mean=np.array([0.9, np.nan, 0.5]),
        worst=np.array([0.9, np.nan, 0.5]),
    )
    assert frontier_mean_at(fr, [0.5, 1.0, 2.5, 3.5]).tolist() == [
        np.inf,
        0.9,
        0.9,
        0.5,
    ]


@pytest.mark.slow
@pytest.mark.parametrize("H", [2, 3])
def test_full_size_frontier_against_uniform_and_hard_selections(H):
    L, S, N, beta, gamma = 8, 4, 4096, 4.0, 1.0
    task = task_of(L=L, S=S, H=H, N=N, beta=beta, gamma=gamma)
    fr = uniformity_frontier(task, n_bounds=8, starts=16)
    mean = fr.mean[np.isfinite(fr.mean)]
    assert np.all(np.diff(mean) <= 1e-7)
    u = reference_phase_losses(
        L, S, N, beta, gamma, np.full((H, S), 1 / S), np.full((H, S), 1 / S)
    )
    assert u.mean() >= frontier_mean_at(fr, u.max()) - 1e-9
    pts = hard_points(L, S, N, beta, gamma, H)
    for m, w in pts:
        assert m >= frontier_mean_at(fr, w + 1e-12) - 1e-6  # w by hand, to rounding
    assert fr.unconstrained_mean <= min(m for m, _ in pts) + 1e-6


def reference_worst(x, L, S, N, beta, gamma, H):
    """Worst phase of flat simplex gates x (H, 2, S), by the hand-written §4 losses."""
    p = np.asarray(x, float).reshape(H, 2, S)
    return reference_phase_losses(L, S, N, beta, gamma, p[:, 0], p[:, 1]).max()


def independent_minimax(L, S, N, beta, gamma, H, starts, seed=1):
    """min over simplex gates of the worst phase by scipy's trust-constr on the epigraph, with
    finite-difference derivatives of the hand-written losses (shares no code with the library)."""
    from scipy.optimize import Bounds, LinearConstraint, NonlinearConstraint, minimize

    n = H * 2 * S
    rows = np.kron(np.eye(2 * H), np.ones((1, S)))
    losses = lambda y: reference_phase_losses(
        L, S, N, beta, gamma, *np.moveaxis(y[:-1].reshape(H, 2, S), 1, 0)
    )
    rng = np.random.default_rng(seed)
    best = np.inf
    for _ in range(starts):
        x0 = rng.dirichlet(np.ones(S), size=(H, 2)).ravel()
        y0 = np.append(x0, losses(np.append(x0, 0)).max())
        r = minimize(
            lambda y: y[-1],
            y0,
            jac=lambda y: np.eye(n + 1)[-1],
            method="trust-constr",
            constraints=[
                NonlinearConstraint(lambda y: y[-1] - losses(y), 0, np.inf),
                LinearConstraint(np.hstack([rows, np.zeros((2 * H, 1))]), 1, 1),
            ],
            bounds=Bounds(
                np.append(np.zeros(n), -np.inf), np.append(np.ones(n), np.inf)
            ),
            options=dict(maxiter=3000, gtol=1e-12, xtol=1e-14),
        )
        x = np.clip(r.x[:-1], 0, None).reshape(-1, S)
        x = (x / x.sum(-1, keepdims=True)).ravel()
        best = min(best, reference_worst(x, L, S, N, beta, gamma, H))
    return best


SMALL2 = dict(L=8, S=4, H=2, N=512, beta=4.0, gamma=1.0)  # H = 2 < S - 1 = 3


@pytest.fixture(scope="module")
def small2_end():
    return minimax_end(task_of(**SMALL2), starts=8)


def test_minimax_end_matches_an_independent_solver(small2_end):
    end = small2_end
    L, S, N, beta, gamma, H = 8, 4, 512, 4.0, 1.0, 2
    x = np.stack([end.key, end.value], axis=1)
    # its reported losses are those of its gates, by hand
    by_hand = reference_phase_losses(L, S, N, beta, gamma, end.key, end.value)
    assert end.losses == pytest.approx(by_hand, rel=1e-12)
    assert end.worst == pytest.approx(by_hand.max(), rel=1e-12)
    other = independent_minimax(L, S, N, beta, gamma, H, starts=6)
    # no worse than the independent solver, and not below it by more than its tolerance
    assert end.worst <= other + 1e-9
    assert end.worst >= other - 1e-6
    assert set(end.agreed) == {"SLSQP", "augmented Lagrangian"}
    assert abs(end.al_worst - end.slsqp_worst) < end.tol
    assert end.kkt.residual < 1e-9
    # no hard selection or uniform gates do better
    assert end.worst <= min(w for _, w in hard_points(L, S, N, beta, gamma, H))
    u = reference_phase_losses(
        L, S, N, beta, gamma, np.full((H, S), 1 / S), np.full((H, S), 1 / S)
    )
    assert end.worst <= u.max()
    assert np.allclose(x.sum(-1), 1) and x.min() >= 0


def test_kkt_multipliers_make_the_lagrangian_stationary_by_finite_differences(
    small2_end,
):
    end = small2_end
    L, S, N, beta, gamma, H = 8, 4, 512, 4.0, 1.0, 2
    x = np.stack([end.key, end.value], axis=1).ravel()
    kkt = end.kkt
    h = 1e-6
    grad = np.empty((S - 1, x.size))
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        f = lambda y: reference_phase_losses(
            L, S, N, beta, gamma, *np.moveaxis(y.reshape(H, 2, S), 1, 0)
        )
        grad[:, i] = (f(x + e) - f(x - e)) / (2 * h)
    lam, nu = kkt.phase_multipliers, kkt.simplex_multipliers.ravel()
    assert lam.min() >= 0 and lam.sum() == pytest.approx(1, abs=1e-9)
    mu = grad.T @ lam + np.repeat(nu, S)  # the bound multipliers, recomputed
    assert np.allclose(mu, kkt.bound_multipliers.ravel(), atol=1e-7)
    free = x > 1e-12
    assert np.abs(mu[free]).max() < 1e-7  # stationary on the support
    assert mu[~free].min() > -1e-7  # and pushing into the bounds elsewhere
    assert np.all(kkt.active[lam > 1e-9])


@pytest.mark.parametrize("move", ["within the support", "into a zero entry"])
def test_kkt_check_rejects_a_perturbed_point(small2_end, move):
    end = small2_end
    task = task_of(**SMALL2)
    key, value = np.array(end.key), np.array(end.value)
    h = int(np.argmax(key.max(-1)))
    src = int(np.argmax(key[h]))
    if move == "within the support":
        dst = int(np.argsort(key[h])[-2])  # the second-largest entry
        assert key[h, dst] > 1e-6
    else:
        dst = int(np.argmin(key[h]))
        assert key[h, dst] == 0
    key[h, src] -= 1e-3
    key[h, dst] += 1e-3
    perturbed = SharedGates(key=key, value=value)
    assert kkt_check(task, perturbed).residual > 1e-4
    assert kkt_check(task, end.gates).residual < 1e-9


def test_the_end_reads_back_from_its_dict(small2_end):
    """As stored (figure data): lists, the KKT check nested; read back, the same dict."""
    stored = small2_end.to_dict()
    back = FrontierEnd.from_dict(stored)
    assert back.to_dict() == stored
    assert back.kkt.residual == small2_end.kkt.residual
    np.testing.assert_array_equal(back.gates.key, small2_end.key)


def test_kkt_check_rejects_uniform_gates():
    task = task_of(**SMALL2)
    assert kkt_check(task, uniform_gates(2, 4)).residual > 1e-3


def test_frontier_at_every_bound_matches_slsqp_on_the_simplices(small_end, small):
    task, end = small_end
    _, fr = small
    check = simplex_frontier(task, fr.bounds, warm=[end.gates])
    ok = np.isfinite(fr.mean)
    assert np.all(np.isfinite(check.mean))
    # two solvers, two parametrizations: within the AL's feasibility tolerance
    assert np.allclose(fr.mean[ok], check.mean[ok], atol=1e-6)
    assert fr.mean[0] == pytest.approx(end.mean, abs=1e-6)  # the first bound is the end


def test_minimax_end_rejects_bad_starts():
    with pytest.raises(ValueError, match="starts"):
        minimax_end(task_of(**SMALL), starts=0)


@pytest.mark.slow
def test_full_size_left_end_by_two_solvers():
    L, S, N, beta, gamma, H = 8, 4, 4096, 4.0, 1.0, 2
    end = minimax_end(task_of(L=L, S=S, H=H, N=N, beta=beta, gamma=gamma))
    assert set(end.agreed) == {"SLSQP", "augmented Lagrangian"}
    assert end.kkt.residual < 1e-9
    # below the soft-maximum annealing's end (7.7923) by more than 5e-4
    assert end.worst < 7.7923 - 5e-4
    other = independent_minimax(L, S, N, beta, gamma, H, starts=8)
    assert abs(end.worst - other) < 1e-6
