"""The switches of the trained compressed model and the settings of its training
(docs/theory.md §11).

Every idealization of the theorems is one field of `ModelConfig`; `ModelConfig()` (every
default) is the theorem's setting, whose full-batch gradient descent is the explicit Euler
scheme of the full flow. `TrainConfig` holds how the model is trained (optimizer, schedule,
steps, batches, initial radius, what is logged).
"""

from __future__ import annotations

import enum

import equinox as eqx

from ..internal._modes import _mode
from ..internal._records import OMIT_AT_DEFAULT
from ..model._task import _require_int, _require_real


class Embeddings(enum.StrEnum):
    """`ModelConfig.embeddings`: where the token embeddings come from.

    - `EXACT`: the fixed exact geometry of the task (structured path, never an N x (N+1)
      matrix).
    - `APPROXIMATE`: the task's fixed eps > 0 geometry.
    - `LEARNED`: learned, of dimension `d`, from a small random start.
    """

    EXACT = "exact"
    APPROXIMATE = "approximate"
    LEARNED = "learned"


class Maps(enum.StrEnum):
    """`ModelConfig.maps`: per-head query/key/value/output maps, fixed to the identity or
    learned (d x d)."""

    IDENTITY = "identity"
    LEARNED = "learned"


class Unembedding(enum.StrEnum):
    """`ModelConfig.unembedding`: tied to the embeddings, or a learned N x d matrix."""

    TIED = "tied"
    LEARNED = "learned"


class GateClass(enum.StrEnum):
    """`ModelConfig.gates`: the class of the compressor's gates.

    - `LINEAR`: scores <c, x> (the linear class of the theorems).
    - `BIAS`: a static score per offset only.
    - `UNIFORM`: p = 1/W, nothing to learn in the gates.
    """

    LINEAR = "linear"
    BIAS = "bias"
    UNIFORM = "uniform"


# The values each mode accepts (command-line choices).
EMBEDDINGS = tuple(m.value for m in Embeddings)
MAPS = tuple(m.value for m in Maps)
UNEMBEDDINGS = tuple(m.value for m in Unembedding)
GATE_CLASSES = tuple(m.value for m in GateClass)
LAYERS = (1, 2)
# Names `TrainConfig.optimizer` accepts besides any optax optimizer: plain gradient descent.
GRADIENT_DESCENT = "gd"
SCHEDULES = ("constant", "cosine", "warmup_cosine", "exponential")
# `TrainConfig.batch` besides a number of fresh contexts per step.
FULL_BATCHES = ("full", "population")


def _require_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(
            f"{name} must be one of {', '.join(map(str, choices))}, got {value!r}"
        )


class ModelConfig(eqx.Module):
    """Which parts of the compressed model are fixed at the theorem's setting and which learn.

    **Arguments** (keyword; every default is the theorem's setting):
    - `embeddings`: `"exact"` (the fixed exact geometry of the task, structured path, never an
      N x (N+1) matrix), `"approximate"` (the task's fixed eps > 0 geometry) or `"learned"`
      (dimension `d`, from a small random start).
    - `d`: embedding dimension of learned embeddings (required then; unused otherwise).
    - `maps`: per-head query/key/value/output maps, `"identity"` or `"learned"` (d x d; needs
      embeddings of a finite dimension, not the exact geometry's N + 1).
    - `unembedding`: `"tied"` (the embeddings) or `"learned"` (N x d; not with exact embeddings).
    - `gates`: `"linear"` (scores <c, x>), `"bias"` (a static score per offset only) or
      `"uniform"` (p = 1/W, nothing to learn in the gates).
    - `bias`: add an explicit learned per-offset bias b to linear scores (<c, x> + b).
    - `tied`: one gate per head for both branches (keys and values stored once).
    - `local_window`: the last w positions before the query attended exactly, one entry per
      token, beside the compressed entries (0: none).
    - `layers`: 1, or 2 with an uncompressed causal attention layer (and a residual stream)
      first, so that a previous-token head can form.

    ```python
    ModelConfig()  # the theorem's setting
    ModelConfig(embeddings="learned", d=64, maps="learned", unembedding="learned")
    ```
    """

    embeddings: Embeddings = _mode(Embeddings, "embeddings", Embeddings.EXACT)
    d: int | None = eqx.field(default=None, static=True, kw_only=True)
    maps: Maps = _mode(Maps, "maps", Maps.IDENTITY)
    unembedding: Unembedding = _mode(Unembedding, "unembedding", Unembedding.TIED)
    gates: GateClass = _mode(GateClass, "gates", GateClass.LINEAR)
    bias: bool = eqx.field(default=False, static=True, kw_only=True)
    tied: bool = eqx.field(default=False, static=True, kw_only=True)
    local_window: int = eqx.field(default=0, static=True, kw_only=True)
    layers: int = eqx.field(default=1, static=True, kw_only=True)

    def __check_init__(self):
        _require_choice("layers", self.layers, LAYERS)
        _require_int("local_window", self.local_window, 0)
        if self.embeddings is Embeddings.LEARNED:
            if self.d is None:
                raise ValueError("d is required with embeddings='learned'")
            _require_int("d", self.d, 1)
        elif self.d is not None:
            raise ValueError(
                f"d sets the dimension of learned embeddings; embeddings='{self.embeddings}'"
                " takes the task's geometry"
            )
        if self.embeddings is Embeddings.EXACT:
            for name, learned in (
                ("maps", Maps.LEARNED),
                ("unembedding", Unembedding.LEARNED),
            ):
                if getattr(self, name) is learned:
                    raise ValueError(
                        f"{name}='learned' needs embeddings of a finite dimension "
                        "(approximate or learned), not the exact geometry's N + 1"
                    )
        if self.bias and self.gates is not GateClass.LINEAR:
            raise ValueError(
                f"bias adds a per-offset bias to linear scores; gates='{self.gates}' "
                "already has none to add to"
            )

    @property
    def theorem_setting(self) -> bool:
        """Every switch at the theorem's value (then gradient descent is the full flow's
        Euler scheme)."""
        return self == ModelConfig(tied=self.tied)


class TrainConfig(eqx.Module):
    """How the compressed model is trained.

    **Arguments** (keyword):
    - `optimizer`: `"gd"` (plain gradient descent, the Euler scheme of the flow) or the name
      of any optax optimizer (`"sgd"`, `"adam"`, `"adamw"`, ...).
    - `lr`: learning rate (the peak of the schedule), > 0.
    - `schedule`: one of `SCHEDULES`.
    - `steps`: optimizer steps, >= 1.
    - `batch`: `"full"` (every step on one fixed balanced sample of `M` contexts, as the full
      flow), `"population"` (the closed-form population loss, where the model has one) or a
      number of fresh contexts drawn at every step.
    - `M`: contexts of the fixed balanced sample (rounded up to a multiple of N/L, as the full
      flow's `M`).
    - `rho`: radius of the ball-uniform initial gate vectors (as the flow's `rho`), > 0.
    - `warmup`: with the `"warmup_cosine"` schedule, the fraction of the steps over which the
      learning rate rises linearly from 0, in [0, 1).
    - `betas`: the optimizer's moment decays `(b1, b2)` in [0, 1), for optax optimizers that
      take them (`"adam"`, `"adamw"`, ...); None: the optimizer's own (optax's defaults).
    - `weight_decay`: decoupled weight decay, >= 0 (0: the optimizer's own, which for
      `"adamw"` is optax's default 1e-4, not none). With `"adam"` it is AdamW's decay
      $\\theta \\leftarrow \\theta - \\eta_k (u + \\lambda \\theta)$.
    - `log_points`: number of log-spaced steps at which statistics are saved (plus step 0).
    - `chunk`: steps per compiled `lax.scan` chunk (progress and checkpoints between chunks;
      the first step is a chunk of its own, so its line comes as soon as the program runs).
    - `eval_contexts`: held-out contexts for the measures, >= 1.
    - `overlap_penalty`: weight $\\lambda \\ge 0$ of the coordination term
      $\\lambda\\, \\mathrm{overlap}(\\alpha^K)$ added to the loss of the paper's transformers
      (`train_transformer`): the idealized flow's overlap penalty (`model.overlap`) over the
      key gates of every compressed layer and KV head, one axis of gates, averaged over the
      windows (`key_gate_overlap`). 0 (default): no term, the program and numbers of a run
      without it; the idealized model's trainer (`train`) refuses other values.

    ```python
    TrainConfig(optimizer="adam", lr=1e-2, steps=2000, batch=64)
    ```
    """

    optimizer: str = eqx.field(default=GRADIENT_DESCENT, static=True, kw_only=True)
    lr: float = eqx.field(default=0.1, static=True, kw_only=True)
    schedule: str = eqx.field(default="constant", static=True, kw_only=True)
    steps: int = eqx.field(default=1000, static=True, kw_only=True)
    batch: int | str = eqx.field(default="full", static=True, kw_only=True)
    M: int = eqx.field(default=1024, static=True, kw_only=True)
    rho: float = eqx.field(default=0.1, static=True, kw_only=True)
    warmup: float = eqx.field(default=0.1, static=True, kw_only=True)
    betas: tuple[float, float] | None = eqx.field(
        default=None, static=True, kw_only=True
    )
    weight_decay: float = eqx.field(default=0.0, static=True, kw_only=True)
    log_points: int = eqx.field(default=64, static=True, kw_only=True)
    chunk: int = eqx.field(default=256, static=True, kw_only=True)
    eval_contexts: int = eqx.field(default=512, static=True, kw_only=True)
    # left out of cache keys at 0: every earlier run keeps its key
    overlap_penalty: float = eqx.field(
        default=0.0, static=True, kw_only=True, metadata={OMIT_AT_DEFAULT: True}
    )

    def __check_init__(self):
        if not isinstance(self.optimizer, str) or not self.optimizer:
            raise ValueError(
                f"optimizer must be 'gd' or an optax optimizer name, got {self.optimizer!r}"
            )
        if _require_real("lr", self.lr) <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        _require_choice("schedule", self.schedule, SCHEDULES)
        _require_int("steps", self.steps, 1)
        if isinstance(self.batch, str):
            _require_choice("batch", self.batch, FULL_BATCHES)
        else:
            _require_int("batch", self.batch, 1)
        _require_int("M", self.M, 1)
        if _require_real("rho", self.rho) <= 0:
            raise ValueError(f"rho must be > 0, got {self.rho}")
        if not 0 <= _require_real("warmup", self.warmup) < 1:
            raise ValueError(f"warmup must be in [0, 1), got {self.warmup}")
        if self.betas is not None:
            if not isinstance(self.betas, tuple) or len(self.betas) != 2:
                raise ValueError(
                    f"betas must be a pair (b1, b2) or None, got {self.betas!r}"
                )
            for b in self.betas:
                if not 0 <= _require_real("betas", b) < 1:
                    raise ValueError(f"betas must lie in [0, 1), got {self.betas}")
        if _require_real("weight_decay", self.weight_decay) < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        _require_int("log_points", self.log_points, 1)
        _require_int("chunk", self.chunk, 1)
        _require_int("eval_contexts", self.eval_contexts, 1)
        if _require_real("overlap_penalty", self.overlap_penalty) < 0:
            raise ValueError(
                f"overlap_penalty must be >= 0, got {self.overlap_penalty}"
            )

    @property
    def warmup_steps(self) -> int:
        """The steps of linear warm-up, floor(`warmup` `steps`) with the `"warmup_cosine"`
        schedule (0 otherwise; with 0 that schedule is the cosine one)."""
        if self.schedule != "warmup_cosine":
            return 0
        return int(self.warmup * self.steps)


__all__ = [
    "Embeddings",
    "GateClass",
    "Maps",
    "ModelConfig",
    "TrainConfig",
    "Unembedding",
]
