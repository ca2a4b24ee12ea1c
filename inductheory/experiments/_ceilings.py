"""Exact ceilings of the retrieval task (docs/theory.md, "Ceilings of the retrieval task"): the
per-phase accuracy and log loss of the Bayes-optimal reader without position information that
sees the successors of the query token's occurrences at the covered key positions.

The task (`RetrievalTask`): T positions on a cycle, tokens $x_p$ iid uniform over V symbols
(or T distinct tokens of N); a query at position t (every t; phase t mod `period`) with token
$a = x_t$ and target $x_{t+1}$. A set Cov of covered key positions: every position (full
attention) or, for a W = S compressor whose entries select key offset i and value offset i+1,
the positions p with p mod S among its selected offsets i in 0..S-2. The reader knows (T, V,
Cov) and a, not t (uniform over the T positions), and sees the multiset
$O = \\{x_{p+1} : p \\in \\mathrm{Cov}, x_p = a\\}$.

The derivation (exact): with $P_a = \\{p : x_p = a\\}$, given t every other position is in
$P_a$ independently with probability 1/V, and given $P_a$ the other tokens are iid uniform over
the V - 1 other symbols. O is m copies of a (covered occurrences followed by an occurrence) and
n = k - m tokens iid uniform over the V - 1 others, $k = |P_a \\cap \\mathrm{Cov}|$. The
hypotheses h = (t in Cov, t + 1 in P_a) give the non-a multiset the same likelihood, so the
posterior over h depends on O through (k, m) only, and the predictive is
$P(a \\mid O) = \\pi_A$, $P(y \\mid O) = w_c c_y / n + w_u / (V - 1)$ for y != a (count
$c_y$ among the n), with $\\pi_A, w_c, w_u$ the posterior probabilities of t + 1 in P_a, of
(t covered, t + 1 not in P_a) and of (t uncovered, t + 1 not in P_a). P(k, m, t + 1 in P_a | t)
comes from a transfer matrix around the cycle (`_occurrence_joint`), the accuracy from the law
of the largest count of n balls in V - 1 bins (`_max_load_tables`), the loss from the count of
the target's symbol (1 + Binomial(n - 1, 1/(V-1)) when t is covered, Binomial(n, 1/(V-1))
otherwise).

May import: `inductheory.internal`, `inductheory.model`, `inductheory.trained`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import gammaln
from scipy.stats import binom

from ..internal._memory import F64, check_memory, with_total
from ..model._task import _require_int
from ..trained._architecture import Architecture, Attention, RetrievalTask

# Covered key positions the tables hold: the transfer matrix costs T (K^2) per residue and the
# max-load tables K^3 (K covered positions + 1).
CEILING_POSITIONS_MAX = 256
# Relative tolerance under which the predictive's best symbols tie (ties split uniformly).
_TIE_RTOL = 1e-10


@dataclasses.dataclass(frozen=True)
class Ceilings:
    """The Bayes ceilings of one task and one coverage (numpy float64).

    - `accuracy` (period,): per phase, the probability that the argmax of the Bayes predictive
      (ties split uniformly) is the target.
    - `loss` (period,): per phase, the expected log loss $-\\log P(x_{t+1} \\mid O)$ in nats.
    - `covered` (T,): the covered key positions.
    """

    accuracy: np.ndarray
    loss: np.ndarray
    covered: np.ndarray

    @property
    def mean_accuracy(self) -> float:
        """Mean over phases (every phase has as many queries)."""
        return float(self.accuracy.mean())

    @property
    def worst_accuracy(self) -> float:
        return float(self.accuracy.min())

    @property
    def mean_loss(self) -> float:
        return float(self.loss.mean())

    def to_dict(self) -> dict:
        return {
            "accuracy": self.accuracy.tolist(),
            "loss": self.loss.tolist(),
            "mean_accuracy": self.mean_accuracy,
            "worst_accuracy": self.worst_accuracy,
            "mean_loss": self.mean_loss,
        }


def retrieval_coverage(T: int, S: int | None = None, offsets=None) -> np.ndarray:
    """The covered key positions (T,) bool: every position (`S` None: full attention), or the
    positions p with p mod S in `offsets` (a W = S compressor whose entries select key offset i
    and value offset i + 1; default every within-window offset 0..S-2).

    ```python
    retrieval_coverage(96)  # full attention
    retrieval_coverage(96, 8)  # W8/S8 answering every phase but the boundary
    ```
    """
    T = _require_int("T", T, 2)
    if S is None:
        if offsets is not None:
            raise ValueError(
                "offsets need a stride S (full attention covers every position)"
            )
        return np.ones(T, bool)
    S = _require_int("S", S, 2, T)
    if T % S:
        raise ValueError(f"S must divide T = {T}, got {S}")
    offsets = range(S - 1) if offsets is None else offsets
    chosen = np.zeros(S, bool)
    for i in offsets:
        chosen[_require_int("offsets", i, 0, S - 2)] = True
    return np.tile(chosen, T // S)


def architecture_coverage(arch: Architecture, T: int) -> np.ndarray:
    """The key positions the best selection of `arch` can read (T,): every position under
    full attention or overlapping windows (W > S: an entry also holds the pair across its
    stride's boundary), the within-window positions of a W = S compressor otherwise (its
    boundary offset S - 1 has its value in the next window).

    ```python
    architecture_coverage(Architecture(W=8, S=8), 96)  # offsets 0-6 of every 8
    ```
    """
    if arch.attention is Attention.FULL or arch.W > arch.S:
        return np.ones(T, bool)
    return retrieval_coverage(T, arch.S)


def _cover_period(covered: np.ndarray) -> int:
    """The least R dividing T with Cov + R = Cov: P(k, m, b | t) depends on t mod R only."""
    T = covered.size
    for R in range(1, T + 1):
        if T % R == 0 and np.array_equal(np.roll(covered, R), covered):
            return R
    return T


def _occurrence_joint(covered: np.ndarray, V: int, R: int) -> np.ndarray:
    """$J[r, b, k, m] = P(k, m, [t+1 \\in P_a] = b \\mid t = r)$ for r < R (R, 2, K, K).

    Walk the cycle from t + 1 to t + T = t with the state (s, k, m): s whether the current
    position q is in $P_a$ (t is, every other position independently with probability 1/V);
    the edge (q, q+1) adds 1 to k if q is in $P_a$ and covered, and s' (whether q + 1 is) to m.
    """
    T = covered.size
    K = int(covered.sum()) + 1
    q = 1.0 / V
    rows = np.arange(R)
    state = np.zeros((R, 2, 2, K, K))  # r, b, s, k, m
    for b, p in ((0, 1 - q), (1, q)):  # the edge (t, t+1), b = s_{t+1}
        k0 = covered[:R].astype(int)
        state[rows, b, b, k0, k0 * b] = p
    for j in range(1, T):
        c = covered[(rows + j) % T][:, None, None, None]
        p0, p1 = (0.0, 1.0) if j == T - 1 else (1 - q, q)  # position t itself is in P_a
        idle = state[:, :, 0] + np.where(c, 0.0, state[:, :, 1])
        hit = np.where(c, state[:, :, 1], 0.0)
        new = np.empty_like(state)
        new[:, :, 0] = p0 * idle
        new[:, :, 1] = p1 * idle
        new[:, :, 0, 1:, :] += p0 * hit[..., :-1, :]
        new[:, :, 1, 1:, 1:] += p1 * hit[..., :-1, :-1]
        state = new
    return state.sum(axis=2)


def _power(u: np.ndarray, p: int) -> np.ndarray:
    """The p-th power of the polynomial with coefficients `u`, truncated to its length."""
    result = np.zeros(u.size)
    result[0] = 1.0
    while p:
        if p & 1:
            result = np.convolve(result, u)[: u.size]
        p >>= 1
        if p:
            u = np.convolve(u, u)[: u.size]
    return result


def _max_load_tables(n_max: int, B: int) -> tuple[np.ndarray, np.ndarray]:
    """`(P1, P2)`, each (n_max + 1, n_max + 1): for n balls iid uniform over B bins,
    $P1[n, c] = P(M = c)$ and $P2[n, c] = E[1/(1 + J); M = c]$, M the largest load and J the
    number of bins holding it.

    $P(M = c, J = j) = \\binom{B}{j} \\frac{n!}{c!^j (n - jc)!} B^{-jc} h_{B-j}(n - jc)$,
    $h_p(r) = r!\\,[x^r]\\,(\\sum_{i<c} (x/B)^i / i!)^p$ the probability that r balls land in p
    given bins, each fewer than c times. The polynomials are scaled by $s^r$,
    $s = (n_{max}!)^{1/n_{max}}$, so that every coefficient stays in float64's range.
    """
    P1 = np.zeros((n_max + 1, n_max + 1))
    P2 = np.zeros_like(P1)
    P1[0, 0], P2[0, 0] = 1.0, 1.0 / (1 + B)
    if n_max == 0:
        return P1, P2
    log_s = gammaln(n_max + 1) / n_max
    i = np.arange(n_max + 1)
    n = np.arange(n_max + 1)
    log_B = math.log(B)
    for c in range(1, n_max + 1):
        u = np.where(i < c, np.exp(i * (log_s - log_B) - gammaln(i + 1)), 0.0)
        j_max = min(B, n_max // c)
        poly = _power(u, B - j_max)
        powers = {}
        for j in range(j_max, 0, -1):  # p = B - j rising
            powers[j] = poly
            poly = np.convolve(poly, u)[: n_max + 1]
        for j in range(1, j_max + 1):
            r = n - j * c
            ok = r >= 0
            with np.errstate(
                divide="ignore"
            ):  # log [x^r] (sum_{i<c} (x/B)^i / i!)^(B-j)
                rr = np.where(ok, r, 0)
                log_coef = np.log(powers[j][rr]) - rr * log_s
            log_p = (
                gammaln(B + 1)
                - gammaln(j + 1)
                - gammaln(B - j + 1)
                + gammaln(n + 1)
                - j * gammaln(c + 1)
                - j * c * log_B
                + log_coef
            )
            p = np.where(ok, np.exp(np.where(ok, log_p, -np.inf)), 0.0)
            P1[:, c] += p
            P2[:, c] += p / (1 + j)
    return P1, P2


def _ceiling_bytes(K: int, R: int):
    return with_total(
        transfer_matrix=F64 * 2 * R * 4 * K * K,
        max_load_tables=F64 * 4 * K * K,
        comparisons=F64 * 6 * K**3,
    )


def retrieval_ceilings(task: RetrievalTask, covered=None) -> Ceilings:
    """The exact Bayes ceilings of `task` for the reader of the covered key positions
    (module docstring; docs/theory.md gives the derivation).

    With tokens that repeat (`task.vocab` = V), per query position t: the transfer matrix gives
    $P(k, m, b \\mid t)$, b = [t+1 in P_a]; mixed over t uniform it gives the posterior
    $(\\pi_A, w_c, w_u)$ of every (k, m). The reader answers a where $\\pi_A$ beats the best
    other symbol's $w_c M / n + w_u / (V-1)$ (M the largest count among the n), and is right
    with probability: b = 1, that a wins (1/(1+J) on a tie with the J best); b = 0 and t
    covered, that the target's symbol is among the J best, M / n, and wins; b = 0 and t
    uncovered, 1/(V-1) that the independent target is one of them, and it wins. With distinct
    tokens (`task.vocab` None): a covered query is answered (accuracy 1, loss 0); an uncovered
    one sees nothing and guesses uniformly among the N - 1 other tokens (1/(N-1), ln(N-1)).

    **Arguments:**
    - `task`: the `RetrievalTask` (T, N, period, vocab).
    - `covered`: (T,) booleans, the covered key positions (`retrieval_coverage`; None: every
      position, full attention).

    **Returns:** `Ceilings` (per-phase accuracy and loss).

    ```python
    task = RetrievalTask(T=96, N=128, period=24, vocab=48)
    full = retrieval_ceilings(task)
    w8s8 = retrieval_ceilings(task, retrieval_coverage(96, 8))
    full.mean_accuracy, w8s8.mean_accuracy, w8s8.accuracy[7]
    ```
    """
    if not isinstance(task, RetrievalTask):
        raise TypeError(f"task must be a RetrievalTask, got {type(task).__name__}")
    T = task.T
    covered = np.ones(T, bool) if covered is None else np.asarray(covered)
    if covered.shape != (T,) or covered.dtype != bool:
        raise ValueError(
            f"covered must be {T} booleans (one per key position), got shape "
            f"{covered.shape} of {covered.dtype}"
        )
    if task.vocab is None:
        per_t = np.where(covered, 1.0, 1.0 / (task.N - 1))
        loss_t = np.where(covered, 0.0, math.log(task.N - 1))
        return _by_phase(task, per_t, loss_t, covered)
    K = int(covered.sum()) + 1
    if K - 1 > CEILING_POSITIONS_MAX:
        raise ValueError(
            f"covered positions must be <= {CEILING_POSITIONS_MAX}, got {K - 1}"
        )
    R = _cover_period(covered)
    check_memory(_ceiling_bytes(K, R), "the retrieval ceilings")
    B = task.vocab - 1
    J, pA, wc, wu = _posterior(covered, task.vocab, R)
    cov = covered[:R]
    k, m = np.indices(pA.shape)
    n = np.clip(k - m, 0, None)  # m <= k wherever J > 0
    right_a, right_cov, right_unc = _accuracies(pA, wc, wu, n, B)
    loss_a, loss_cov, loss_unc = _losses(pA, wc, wu, n, B)

    def expect(weights, values):
        return (weights * np.where(weights > 0, values, 0.0)).sum(axis=(-2, -1))

    acc_r = expect(J[:, 1], right_a) + np.where(
        cov, expect(J[:, 0], right_cov), expect(J[:, 0], right_unc)
    )
    loss_r = expect(J[:, 1], loss_a) + np.where(
        cov, expect(J[:, 0], loss_cov), expect(J[:, 0], loss_unc)
    )
    return _by_phase(task, acc_r[np.arange(T) % R], loss_r[np.arange(T) % R], covered)


def _posterior(covered: np.ndarray, V: int, R: int):
    """`(J, pi_A, w_c, w_u)`: the joint `_occurrence_joint` (R, 2, K, K) and, per (k, m), the
    posterior probabilities of t + 1 in P_a, of (t covered, t + 1 not in P_a) and of (t
    uncovered, t + 1 not in P_a) under t uniform (each residue mod R as often); 0 where
    (k, m) cannot occur."""
    J = _occurrence_joint(covered, V, R)
    cov = covered[:R, None, None]
    A1 = J[:, 1].mean(0)
    C0 = (cov * J[:, 0]).mean(0)
    U0 = (~cov * J[:, 0]).mean(0)
    Z = A1 + C0 + U0
    with np.errstate(invalid="ignore", divide="ignore"):
        return J, *(np.where(Z > 0, x / Z, 0.0) for x in (A1, C0, U0))


def _accuracies(pA, wc, wu, n, B):
    """Per (k, m): the probability of a right answer when the target is a, the covered
    query's successor, or an uncovered query's independent symbol."""
    P1, P2 = _max_load_tables(int(n.max()), B)
    c = np.arange(P1.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        score = wc[..., None] * c / np.maximum(n, 1)[..., None] + (wu / B)[..., None]
    tie = np.isclose(score, pA[..., None], rtol=_TIE_RTOL, atol=0.0)
    above = (score > pA[..., None]) & ~tie
    below = ~above & ~tie
    p1, p2 = P1[n], P2[n]  # (k, m, c)
    share = np.where(n > 0, 1.0 / np.maximum(n, 1), 0.0)[..., None]
    wins = (
        p1 * above + (p1 - p2) * tie
    )  # a best symbol's: P(it wins) weighted by J/(J+1)
    right_a = (p1 * below + p2 * tie).sum(-1)
    right_cov = (c * share * wins).sum(-1)
    right_unc = wins.sum(-1) / B
    # where no covered query is possible (w_c = 0) every other symbol ties at w_u / B
    flat = wc <= 0
    s0 = wu / B
    tie0 = np.isclose(s0, pA, rtol=_TIE_RTOL, atol=0.0)
    right_a = np.where(flat, np.where(tie0, 1 / (1 + B), (pA > s0) * 1.0), right_a)
    right_unc = np.where(flat, np.where(tie0, 1 / (1 + B), (s0 > pA) / B), right_unc)
    return right_a, np.where(flat, 0.0, right_cov), right_unc


def _losses(pA, wc, wu, n, B):
    """Per (k, m): the expected log loss when the target is a, the covered query's successor
    (its symbol counted 1 + Binomial(n-1, 1/B) times among the n), or an uncovered query's
    independent symbol (counted Binomial(n, 1/B) times)."""
    C = np.arange(int(n.max()) + 1)
    nn = n[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        logp = -np.log(wc[..., None] * C / np.maximum(nn, 1) + (wu / B)[..., None])
        cov_pmf = np.where(nn > 0, binom.pmf(C - 1, nn - 1, 1 / B), 0.0)
        unc_pmf = binom.pmf(C, nn, 1 / B)
        loss_cov = np.where(cov_pmf > 0, cov_pmf * logp, 0.0).sum(-1)
        loss_unc = np.where(unc_pmf > 0, unc_pmf * logp, 0.0).sum(-1)
        loss_a = -np.log(pA)
    return loss_a, loss_cov, loss_unc


def _by_phase(task, per_t, loss_t, covered) -> Ceilings:
    """Per-position values averaged over the queries of each phase (t mod `period`)."""
    shape = (task.T // task.period, task.period)
    return Ceilings(
        accuracy=per_t.reshape(shape).mean(0),
        loss=loss_t.reshape(shape).mean(0),
        covered=covered,
    )


__all__ = [
    "CEILING_POSITIONS_MAX",
    "architecture_coverage",
    "Ceilings",
    "retrieval_ceilings",
    "retrieval_coverage",
]
