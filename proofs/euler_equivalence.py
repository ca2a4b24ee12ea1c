"""Gradient descent as the explicit Euler scheme of the gradient flow (docs/trained.md), checked
on linear model problems.

For dc/dt = -A c with c(0) = c0 the flow is c(t) = e^{-A t} c0 and its explicit Euler iterate of
step eta is c_k = (I - eta A)^k c0; for symmetric A this is the gradient flow of L(c) = <c, A c>/2
and gradient descent on it. At t = k eta, with k = t/eta:

  1. the global error is first order in eta with leading term
     c(t) - c_k = (eta t / 2) A^2 e^{-A t} c0 + O(eta^2), and that term is not zero;
  2. the local truncation error is
     c(t + eta) - (c(t) - eta A c(t)) = (eta^2 / 2) A^2 c(t) + O(eta^3);
  3. the global error obeys e_{k+1} = (I - eta A) e_k + tau_k exactly, tau_k the local error at
     c(t_k): the recursion the Groenwall argument bounds;
  4. for a generic 2-D loss L, the second derivative of a flow trajectory is
     d^2c/dt^2 = Hess L(c) grad L(c) (the quantity M bounds in the error bound).

Checked for a scalar a > 0 (1-D), and in 2-D for a symmetric A (a gradient flow, eigenvectors
off the axes), an upper-triangular A with distinct eigenvalues (not normal) and a Jordan block (not
diagonalizable), with sympy's own matrix power and matrix exponential.
Run: `python proofs/euler_equivalence.py` (exit 1 if a check fails).
Derivation: proofs/README.md §10.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sympy as sp

from proofs._check import check, check_zero, run

eta, t = sp.symbols("eta t", positive=True)
k = sp.Symbol("k", positive=True)  # the step count, eliminated by k = t / eta


def euler_iterate(A: sp.Matrix, c0: sp.Matrix, steps) -> sp.Matrix:
    """(I - eta A)^steps c0: `steps` explicit Euler steps of size eta for dc/dt = -A c (gradient
    descent on <c, A c>/2 when A is symmetric; sympy, `steps` may be a symbol)."""
    return ((sp.eye(A.rows) - eta * A) ** steps) * c0


def flow(A: sp.Matrix, c0: sp.Matrix, time) -> sp.Matrix:
    """e^{-A time} c0: the solution of dc/dt = -A c (sympy)."""
    return (-A * time).exp() * c0


def leading_error(A: sp.Matrix, c0: sp.Matrix) -> sp.Matrix:
    """(eta t / 2) A^2 e^{-A t} c0: the claimed first-order term of c(t) - c_k at t = k eta."""
    return eta * t / 2 * A**2 * flow(A, c0, t)


def local_error(A: sp.Matrix, c: sp.Matrix) -> sp.Matrix:
    """(eta^2 / 2) A^2 c: the claimed leading local truncation error of one Euler step."""
    return eta**2 / 2 * A**2 * c


def _series_residual(expr, order: int):
    """The terms of `expr` of order < `order` in eta (its Taylor polynomial at eta = 0)."""
    return sp.series(expr, eta, 0, order).removeO()


def check_problem(name: str, A: sp.Matrix, c0: sp.Matrix) -> None:
    print(f"{name}: A = {A.tolist()}")
    exact = flow(A, c0, t)
    euler = euler_iterate(A, c0, k).subs(k, t / eta)
    lead = leading_error(A, c0)
    for i in range(A.rows):
        # global error minus the claimed leading term: no eta^0, no eta^1 term left
        residual = _series_residual(exact[i] - euler[i] - lead[i], 2)
        check_zero(
            residual,
            f"{name}, coordinate {i}: c(t) - c_k = (eta t/2) A^2 e^(-At) c0 + O(eta^2)",
        )
    # first order exactly: the leading term does not vanish (A invertible, c0 generic)
    check(
        any(sp.simplify(entry / (eta * t)) != 0 for entry in lead),
        f"{name}: the eta^1 term is not zero (the scheme is first order, not higher)",
    )
    s = sp.Symbol("s", positive=True)  # the time of the step's start
    cs = flow(A, c0, s)
    after_step = flow(A, c0, s + eta)
    euler_step = cs - eta * A * cs
    local = local_error(A, cs)
    for i in range(A.rows):
        residual = _series_residual(after_step[i] - euler_step[i] - local[i], 3)
        check_zero(
            residual,
            f"{name}, coordinate {i}: local error c(s+eta) - c(s) + eta A c(s)"
            " = (eta^2/2) A^2 c(s) + O(eta^3)",
        )
    # the Groenwall recursion, exactly (integer steps j and j + 1)
    j = sp.Symbol("j", integer=True, nonnegative=True)
    error = lambda steps: flow(A, c0, steps * eta) - euler_iterate(A, c0, steps)  # noqa: E731
    tau = flow(A, c0, (j + 1) * eta) - (sp.eye(A.rows) - eta * A) * flow(A, c0, j * eta)
    recursion = error(j + 1) - (sp.eye(A.rows) - eta * A) * error(j) - tau
    for i in range(A.rows):
        # j is an integer, so x^j = x x^(j-1) for every base x != 0 (force: whatever its sign)
        check_zero(
            sp.expand(recursion[i], power_exp=True, force=True),
            f"{name}, coordinate {i}: e_(j+1) = (I - eta A) e_j + tau_j exactly",
        )


def check_second_derivative() -> None:
    print("d^2c/dt^2 along dc/dt = -grad L(c), generic L in 2-D")
    time = sp.Symbol("tau", real=True)
    x, y = sp.symbols("x y", real=True)
    loss = sp.Function("L")(x, y)
    c = sp.Matrix([sp.Function("c1")(time), sp.Function("c2")(time)])
    grad = sp.Matrix([sp.diff(loss, x), sp.diff(loss, y)])
    hess = sp.hessian(loss, (x, y))
    at_c = {x: c[0], y: c[1]}
    velocity = -grad.subs(at_c)
    # differentiate the vector field along the trajectory, then use dc/dt = -grad L
    accel = sp.diff(velocity, time).subs(
        {sp.Derivative(c[i], time): velocity[i] for i in range(2)}
    )
    claim = hess.subs(at_c) * grad.subs(at_c)
    for i in range(2):
        check_zero(
            sp.simplify(accel[i].doit() - claim[i]),
            f"coordinate {i}: d^2c/dt^2 = Hess L grad L",
        )


def main() -> None:
    a, c0 = sp.symbols("a c0", positive=True)
    check_problem("1-D", sp.Matrix([[a]]), sp.Matrix([c0]))
    a1, a2, b = sp.symbols("a1 a2 b", positive=True)
    u, v = sp.symbols("u v", positive=True)
    # eigenvalues a1 and a1 + 2b, eigenvectors (1, -1) and (1, 1)
    check_problem(
        "2-D symmetric", sp.Matrix([[a1 + b, b], [b, a1 + b]]), sp.Matrix([u, v])
    )
    check_problem(
        "2-D upper triangular", sp.Matrix([[a1, b], [0, a2]]), sp.Matrix([u, v])
    )
    lam = sp.Symbol("lambda", positive=True)
    check_problem(
        "2-D Jordan block", sp.Matrix([[lam, 1], [0, lam]]), sp.Matrix([u, v])
    )
    check_second_derivative()


if __name__ == "__main__":
    run(main)
