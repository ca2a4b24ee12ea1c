"""Memory a run will need, estimated from its sizes before anything is allocated.

Every estimate is in bytes of float64 (8) / int32 (4) arrays and deliberately coarse: it counts
the arrays that scale with the run's sizes (vocabulary N, dimension d, heads H, offsets S, blocks
L, contexts M, seeds, restarts, save times) times a small factor for the temporaries of the
solver and of reverse-mode differentiation. Its purpose is to refuse, in a second, a run that
cannot fit (N = 1e7 with the full flow, 1e7 restarts, 1e9 seeds) instead of letting it spin for
minutes before failing; runs well inside the limit are never refused. `check_memory` compares an
estimate with `available_bytes()`.
"""

from __future__ import annotations

import dataclasses
import os

from ._counts import embedding_dimension, is_exact_geometry, vertex_count
from ._records import Record

F64, I32 = 8, 4
# Solver stages and buffers per state (Tsit5/Dopri: 7 stages, y0, y1, error estimate, the saved
# end state, the gradient and its adjoint temporaries): state-sized arrays alive at once per seed.
SOLVER_STATES = 16
# The oracle's Newton iteration per start: n x n matrices held at once (Hessian, projector, face
# system and the Cholesky factors of its 5 shifts, with slack) and trial points evaluated at once
# (10 Newton and 12 gradient step sizes, the snap, with slack; values only, no backward pass).
NEWTON_MATRICES = 12
NEWTON_CANDIDATES = 24
# Reverse-mode differentiation keeps the forward intermediates: about this many logit-sized
# arrays per context and query in the loss's backward pass.
BACKWARD_COPIES = 3
# The closed form of shared gates: head-by-offset float64 arrays alive at once besides the gates
# (measured: the `loss` command at W = 4 and 4e6 heads adds 106 bytes per head to its process's
# peak, against the 192 these and the gates count; tests/test_memory_estimates.py checks it).
CLOSED_FORM_COPIES = 2
# The saved statistics of a flow are alive this many times at once: the saved states they are
# computed from, the computation's temporaries, the compiled call's result and the host's
# concatenation (measured: `flow` peaked 2.2 times the statistics' size above its baseline at
# 1000 seeds and 1000 save times, 2.5 times at 100 seeds and 5000; tests/test_memory_estimates.py
# checks it).
TRAJECTORY_COPIES = 4
# Row chunk of the eps measurement (`measure_eps`).
EPS_CHUNK = 2048
# Vertex configurations the oracle evaluates per batch.
VERTEX_BATCH = 4096
# The environment variable that overrides the detected memory (bytes), for tests and for users
# who want a lower ceiling than the machine has.
ENV_MAX_BYTES = "INDUCTHEORY_MAX_BYTES"


def human(n: float) -> str:
    """`n` bytes as a short human-readable string (KiB, MiB, GiB, ...)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} PiB"


def available_bytes() -> tuple[int | None, str]:
    """Memory a run may use, and where the number comes from.

    `INDUCTHEORY_MAX_BYTES` (an integer number of bytes) if set; else `MemAvailable` of
    /proc/meminfo; else `os.sysconf` available pages times the page size; else `(None, ...)`
    (unknown: no check). On an accelerator the smaller of that and the device's `bytes_limit`.
    """
    env = os.environ.get(ENV_MAX_BYTES)
    if env:
        try:
            value = int(env)
        except ValueError:
            raise ValueError(
                f"{ENV_MAX_BYTES} must be an integer number of bytes, got {env!r}"
            ) from None
        if value < 1:
            raise ValueError(f"{ENV_MAX_BYTES} must be >= 1, got {value}")
        return value, ENV_MAX_BYTES
    host, source = None, "unknown"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    host, source = (
                        int(line.split()[1]) * 1024,
                        "MemAvailable in /proc/meminfo",
                    )
                    break
    except (OSError, ValueError, IndexError):
        pass
    if host is None:
        try:
            host = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            source = "os.sysconf available pages"
        except (ValueError, OSError, AttributeError):
            host = None
    device = _device_limit()
    if device is not None and (host is None or device < host):
        return device, "accelerator memory (bytes_limit)"
    return host, source


def _device_limit() -> int | None:
    try:
        import jax

        dev = jax.devices()[0]
        if dev.platform == "cpu":
            return None
        stats = dev.memory_stats() or {}
        limit = stats.get("bytes_limit")
        return int(limit) if limit else None
    except Exception:  # no stats on this backend: host memory only
        return None


# --- estimates ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MemoryEstimate(Record):
    """Bytes a run will need: `parts`, bytes by the name of what holds them (which parts there
    are depends on the run), and their `total`.

    ```python
    estimate = flow_bytes(dynamics="reduced", N=64, L=4, S=4, H=2, M=0, seeds=8, chunk=8,
                          n_save=16)
    estimate.total, estimate.parts["solver_state"]
    ```
    """

    parts: dict[str, int]

    @property
    def total(self) -> int:
        """The sum of the parts."""
        return sum(self.parts.values())

    def largest(self, n: int) -> list[tuple[str, int]]:
        """The `n` largest parts as (name, bytes), largest first."""
        ranked = sorted(((v, k) for k, v in self.parts.items()), reverse=True)
        return [(k, v) for v, k in ranked[:n]]

    def scaled(self, factor: int) -> MemoryEstimate:
        """Every part `factor` times (that many copies of what it estimates)."""
        return MemoryEstimate({k: factor * v for k, v in self.parts.items()})


def approximate_geometry_bytes(N: int, d: int) -> int:
    """An approximate geometry: the N x d embeddings, the random directions they are built from,
    and the eps check (`measure_eps`: a chunk of the Gram matrix, EPS_CHUNK x N, and its copy)."""
    return F64 * (3 * N * d + 2 * min(N, EPS_CHUNK) * N)


def geometry_bytes(N: int, eps: float | None, d: int | None) -> int:
    """The geometry of a task: O(1) for the structured exact one (it holds N and kappa; its
    logits are gathers over the context's L*S tokens), else `approximate_geometry_bytes`."""
    if is_exact_geometry(eps, d):
        return 2 * F64
    return approximate_geometry_bytes(N, embedding_dimension(N, eps, d))


def mean_embedding_bytes(N: int) -> int:
    """The mean embedding of the exact geometry and its projection (N + 1 floats each): only the
    full flow's linear gates use them."""
    return F64 * 2 * (N + 1)


def vertex_configurations(
    W: int,
    H: int,
    L: int,
    *,
    exact: bool,
    windowed: bool = False,
    tied: bool = False,
    cap: int,
) -> int:
    """The number of vertex configurations the oracle enumerates (`vertex_configs`), capped at
    `cap`: the block multisets under exact geometry without windows, else every configuration
    (`vertex_count`, with W - 1 offsets per head, W for tied gates)."""
    return vertex_count(H, L, W, tied=tied, multisets=exact and not windowed, cap=cap)


def contexts_bytes(M: int, L: int, S: int) -> int:
    """A sample of M contexts of L*S int32 token ids."""
    return I32 * M * L * S


def loss_bytes(
    M: int, L: int, S: int, H: int, columns: int, hidden: int | None = None
) -> int:
    """One loss evaluation with its gradient on M contexts: per context and query a row of
    `columns` logits (L*S+1 under exact geometry, N on a dense one) and the heads' attention and
    outputs in a `hidden`-dimensional space (default L*S+1: the gathered exact path)."""
    Q = L * (S - 1)
    hidden = L * S + 1 if hidden is None else hidden
    per_context = Q * columns + Q * H * (L + hidden) + 2 * H * 2 * L * S
    return F64 * BACKWARD_COPIES * M * per_context


def shared_gates_bytes(H: int, W: int) -> int:
    """Shared gates (key and value, H x W each, `SharedGates`): as built on the host and as the
    device's copy a compiled loss reads."""
    return F64 * 2 * 2 * H * W


def closed_form_bytes(H: int, W: int) -> int:
    """The temporaries of the closed form of shared gates (`phase_losses`, `phase_accuracy`):
    CLOSED_FORM_COPIES head-by-offset arrays (the attention weights of the target and of the
    other blocks, their logarithms, the einsums' operands), with slack."""
    return F64 * CLOSED_FORM_COPIES * H * W


def flow_bytes(
    *,
    dynamics: str,
    N: int,
    L: int,
    S: int,
    H: int,
    M: int,
    seeds: int,
    chunk: int,
    n_save: int,
    eps: float | None = None,
    d: int | None = None,
    batch_size: int | None = None,
) -> MemoryEstimate:
    """Bytes of a `run_flow`, by part.

    - `geometry`, `contexts` (full dynamics only);
    - `solver_state`: `chunk` seeds integrated at once, each holding SOLVER_STATES arrays of the
      state's size, H*2*S*dim (dim = N + 1 exact, d approximate) full, H*2*S reduced;
    - `loss`: the per-seed loss and gradient on `batch_size` (default all M) contexts;
    - `trajectories`: every seed's saved statistics, (n_save + 1) * seeds * (H*2*S*3 + 4H + 1)
      floats, plus the final statistics, TRAJECTORY_COPIES times (the saved states, the
      temporaries, the device's result, the host's copy).
    """
    per_save = H * 2 * S * 3 + 2 * H * 2 + 1
    out = {
        "trajectories": TRAJECTORY_COPIES
        * F64
        * seeds
        * ((n_save + 1) * per_save + 4 * per_save + 8 * H)
    }
    if dynamics == "reduced":
        out["solver_state"] = F64 * chunk * SOLVER_STATES * H * 2 * S
        out["loss"] = F64 * chunk * BACKWARD_COPIES * (S - 1) * (2 * S + 1) * H
    else:
        dim = embedding_dimension(N, eps, d)
        exact = is_exact_geometry(eps, d)
        out["geometry"] = geometry_bytes(N, eps, d) + (
            mean_embedding_bytes(N) if exact else 0
        )
        out["contexts"] = contexts_bytes(M, L, S)
        out["solver_state"] = F64 * chunk * SOLVER_STATES * H * 2 * S * dim
        batch = M if batch_size is None else min(M, batch_size)
        out["loss"] = chunk * loss_bytes(
            batch, L, S, H, L * S + 1 if exact else N, None if exact else dim
        )
    return MemoryEstimate(out)


def oracle_bytes(
    *,
    N: int,
    L: int,
    S: int,
    H: int,
    restarts: int,
    vertex_starts: int,
    contexts: int,
    eps: float | None = None,
    d: int | None = None,
    windowed: bool = False,
    tied: bool = False,
) -> MemoryEstimate:
    """Bytes of an `oracle_point`, by part. `S` is the offsets per gate (the
    window W); `windowed` (W > S or the boundary phase queried) and `tied` decide, with the
    geometry, which vertex configurations the oracle enumerates (`vertex_configurations`).

    - `geometry` and `contexts`;
    - `starts`: restarts + vertex starts minimized at once (vmap), n = 2*H*L*S parameters each:
      the Newton method's n x n Hessian, face system and Cholesky factors of its shifts (the
      BFGS state's n x n inverse-Hessian estimate is smaller), the Hessian's n tangents through a
      loss/gradient evaluation of one context (a row of L*S+1 logits per query exact, N on a dense
      geometry) and the candidate steps' evaluations;
    - `vertices`: the vertex enumeration, evaluated in batches of VERTEX_BATCH configurations.
    """
    exact = is_exact_geometry(eps, d)
    columns = L * S + 1 if exact else N
    hidden = (
        L * S + 1 if exact else L * S
    )  # dense: the context's own basis (`context_geometry`)
    n = 2 * H * L * S
    starts = restarts + vertex_starts
    # vertices evaluated per batch: min(4096, configurations)
    configs = vertex_configurations(
        S, H, L, exact=exact, windowed=windowed, tied=tied, cap=VERTEX_BATCH
    )
    per_start = loss_bytes(1, L, S, H, columns, hidden)
    per_vertex = per_start // BACKWARD_COPIES  # loss values only
    return MemoryEstimate(
        {
            "geometry": geometry_bytes(N, eps, d)
            + (0 if exact else F64 * N * L * S),  # + per-context basis
            "contexts": contexts_bytes(contexts, L, S),
            "starts": F64 * starts * (NEWTON_MATRICES * n * n + 8 * n)
            + starts * (n + NEWTON_CANDIDATES // BACKWARD_COPIES) * per_start,
            "vertices": configs * per_vertex,
        }
    )


def with_total(**parts) -> MemoryEstimate:
    """The estimate of `parts` (bytes by name)."""
    return MemoryEstimate(parts)


def check_memory(estimate: MemoryEstimate | int, what: str) -> None:
    """Raise `MemoryError` with one line (the estimate, its largest parts and the memory available)
    when `estimate` (a `MemoryEstimate`, or bytes) exceeds `available_bytes()`. Unknown
    availability: no check."""
    total = estimate.total if isinstance(estimate, MemoryEstimate) else int(estimate)
    limit, source = available_bytes()
    if limit is None or total <= limit:
        return
    parts = ""
    if isinstance(estimate, MemoryEstimate):
        big = estimate.largest(2)
        parts = " (" + ", ".join(f"{k} {human(v)}" for k, v in big) + ")"
    raise MemoryError(
        f"{what} needs about {human(total)}{parts} but {human(limit)} is available ({source}); "
        "reduce the sizes"
    )


__all__ = [
    "ENV_MAX_BYTES",
    "MemoryEstimate",
    "approximate_geometry_bytes",
    "available_bytes",
    "check_memory",
    "closed_form_bytes",
    "contexts_bytes",
    "flow_bytes",
    "geometry_bytes",
    "human",
    "loss_bytes",
    "mean_embedding_bytes",
    "oracle_bytes",
    "shared_gates_bytes",
    "vertex_configurations",
    "with_total",
]
