"""The paper's experiment matrix on the retrieval task (docs/trained.md, "The paper matrix"):
its table 8's models and its mitigations as rows of one fixed task, each trained from several
seeds, beside the paper's row where it has one, labelled with the model it comes from.

- `PAPER_TABLE8`: the paper's numbers, each `PaperRow` naming its model.
- `MatrixRow`: a row's name, its `Architecture` (changes from `REFERENCE`) and its paper row.
- `MATRIX`: the rows; `MatrixSize` (`FULL_SIZE`, `QUICK_SIZE`): task, width and training.
- `run_row`: one row's `RowResult` (per-seed, per-context, per-phase counts; loss curves).

May import: `inductheory.internal`, `inductheory.model`, `inductheory.trained`.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import equinox as eqx
import jax
import numpy as np

from ..internal._io import _atomic_write, cached
from ..internal._records import field_values
from ..trained._architecture import (
    Architecture,
    Attention,
    Gate,
    Payload,
    RetrievalTask,
)
from ..trained._config import TrainConfig
from ..trained._local_path import (
    local_blocks,
    previous_token_mass,
    without_local_window,
)
from ..trained._mechanisms import (
    gate_offsets,
    knockout_heads,
    paper_gate_tensors,
    phase_curves,
    rotate_transformer_gates,
)
from ..trained._stream import StreamMeasures, stream_measures
from ..trained._train import seed_model
from ..trained._transformer_train import (
    MEANS_STREAM,
    PhaseMeasures,
    TransformerRun,
    held_out_contexts,
    sample_retrieval_contexts,
    train_transformer,
)


@dataclasses.dataclass(frozen=True)
class PaperRow:
    """One model of the paper's table 8 (or a number quoted beside it): validation loss, mean
    accuracy, worst phase and gap in percent points (None where the paper gives none), and
    `model`, which of its models the numbers come from."""

    model: str
    loss: float | None = None
    mean: float | None = None
    worst: float | None = None
    gap: float | None = None


# The paper's table 8 and the gaps it quotes beside it (docs/trained.md gives the models).
PAPER_TABLE8 = {
    "full-1kv": PaperRow("full attention, 1 KV head", 2.466, 18.8, 17.2, 3.1),
    "full-4kv": PaperRow("full attention, 4 KV heads", gap=6.1),
    "full-8kv": PaperRow("full attention, 8 KV heads", 2.437, 61.1, 58.4, 4.3),
    "reference-42": PaperRow(
        "W8/S8, 1 KV head, scalar gate, K/V separate, seed 42 (the reference)",
        2.478,
        50.6,
        5.7,
        75.3,
    ),
    "reference-43": PaperRow(
        "W8/S8, 1 KV head, scalar gate, K/V separate, seed 43", 2.482, 32.1, 2.5, 59.2
    ),
    "w8s8-8kv": PaperRow("W8/S8, 8 KV heads", 2.431, 59.4, 9.9, 71.1),
    "w8s4": PaperRow("W8/S4 (overlapping), 1 KV head", 2.467, 66.9, 46.2, 39.8),
    "w8s6": PaperRow("W8/S6 (overlapping), 1 KV head", gap=31.9),
    "uniform": PaperRow("uniform averaging instead of gates", 2.497, 12.5, 4.7, 19.2),
    "deepseek": PaperRow(
        "DeepSeek-style kernel (W8/S4, vector gates, K/V tied)", 2.476, 35.6, 18.7, 38.3
    ),
}
# Not from the paper's controlled family: its stride-2 number is another model on another task.
STRIDE2_NOTE = (
    "the paper's stride-2 number (gap 6.09) is DeepSeek-V4.1-Flash on the 128K needle task, "
    "not a model of the controlled family: no paper row"
)

# The reference architecture of the matrix (the paper's W8/S8 reference: 1 KV head, scalar
# gates, per-offset payload maps, position bias, K/V separate, every layer compressed).
REFERENCE = Architecture(
    d=32,
    q_heads=8,
    kv_heads=1,
    head_dim=16,
    layers=2,
    W=8,
    S=8,
    gate=Gate.SCALAR,
    payload=Payload.PER_OFFSET,
    position_bias=True,
    tied=False,
    norm=True,
)


@dataclasses.dataclass(frozen=True)
class MatrixRow:
    """One row: `name`, the changes from the reference architecture, `paper` (a key of
    `PAPER_TABLE8`, or None), `mitigation` (a row of the mitigation ordering) and
    `steps_factor` (it trains that many times the size's steps, to reach its plateau)."""

    name: str
    changes: dict
    paper: str | None = None
    mitigation: bool = False
    steps_factor: int = 1

    def architecture(self, reference: Architecture) -> Architecture:
        return dataclasses.replace(reference, **self.changes)

    def training(self, size: MatrixSize) -> TrainConfig:
        """The training of this row at `size`: the size's, for `steps_factor` times its
        steps."""
        if self.steps_factor == 1:
            return size.train
        return dataclasses.replace(
            size.train, steps=size.train.steps * self.steps_factor
        )


MATRIX = (
    MatrixRow("full attention 1 KV", {"attention": Attention.FULL}, "full-1kv"),
    MatrixRow(
        "full attention 8 KV",
        {"attention": Attention.FULL, "kv_heads": 8},
        "full-8kv",
    ),
    MatrixRow("W8/S8 1 KV (reference)", {}, "reference-42", mitigation=True),
    MatrixRow("W8/S8 2 KV", {"kv_heads": 2}),
    MatrixRow("W8/S8 4 KV", {"kv_heads": 4}),
    MatrixRow("W8/S8 8 KV", {"kv_heads": 8}, "w8s8-8kv"),
    MatrixRow("W8/S4 (overlap)", {"S": 4}, "w8s4", mitigation=True),
    MatrixRow("W8/S6 (overlap)", {"S": 6}, "w8s6", mitigation=True),
    MatrixRow("W4/S4", {"W": 4, "S": 4}),
    MatrixRow("W12/S12", {"W": 12, "S": 12}),
    MatrixRow(
        "uniform averaging",
        {"gate": Gate.UNIFORM, "position_bias": False},
        "uniform",
        mitigation=True,
    ),
    MatrixRow(
        "DeepSeek-style (W8/S4 vector tied)",
        {"S": 4, "gate": Gate.VECTOR, "tied": True},
        "deepseek",
        mitigation=True,
    ),
    MatrixRow("K/V tied", {"tied": True}),
    MatrixRow("no position bias", {"position_bias": False}),
    MatrixRow("shared payload", {"payload": Payload.SHARED}),
    # Twice the steps: at the size's 2,800 its loss still fell by 0.33 over the last fifth (at
    # 5,600, by at most 0.04, as the other compressed rows' at 2,800; mean accuracy 79% -> 98%).
    MatrixRow("W8/S2 (stride 2)", {"S": 2}, steps_factor=2),
)


def matrix_row(name: str) -> MatrixRow:
    """The row of `MATRIX` called `name` (a one-line error naming the rows otherwise)."""
    for row in MATRIX:
        if row.name == name:
            return row
    raise ValueError(
        f"row must be one of {', '.join(r.name for r in MATRIX)}, got {name!r}"
    )


def changed_row(row: MatrixRow, changes: dict, reference: Architecture) -> MatrixRow:
    """`row` with the architecture `changes` (fields of `Architecture`): the row of `MATRIX`
    whose architecture that is (with its paper row), else another model named by what the
    changes change, `"<row> with k=v, ..."`, and without the paper's row. The command line's
    architecture options and the studies build rows here, so the same model has one name and
    one cache entry.

    ```python
    changed_row(matrix_row("W8/S8 8 KV"), {"local_window": 2}, REFERENCE).name
    # 'W8/S8 8 KV with local_window=2'
    ```
    """
    known = {r.architecture(reference): r for r in MATRIX}
    before = row.architecture(reference)
    after = dataclasses.replace(before, **changes)
    if after in known:
        return known[after]
    said = ", ".join(
        f"{k}={v}"
        for k, v in changes.items()
        if getattr(after, k) != getattr(before, k)
    )
    return dataclasses.replace(
        row,
        name=f"{row.name} with {said}",
        changes={**row.changes, **changes},
        paper=None,
    )


@dataclasses.dataclass(frozen=True)
class MatrixSize:
    """The task, reference architecture, training and sample of one size of the matrix, and
    the names of the rows it trains (None: every row of `MATRIX`)."""

    task: RetrievalTask
    reference: Architecture
    train: TrainConfig
    seeds: int
    rows: tuple[str, ...] | None = None

    @property
    def matrix(self) -> tuple[MatrixRow, ...]:
        """The rows of this size, in `MATRIX`'s order."""
        return tuple(r for r in MATRIX if self.rows is None or r.name in self.rows)

    def to_dict(self) -> dict:
        return dict(
            task=self.task.record(),
            reference=field_values(self.reference),
            train=field_values(self.train),
            seeds=self.seeds,
        )


# T = 96 positions: 8 entries at the largest stride (12), phases mod 24 (the strides' least
# common multiple, as the paper groups); 256 held-out contexts give 4 * 256 = 1,024 queries to
# every phase group. Sized in sizing runs (docs/trained.md): full attention learns the task
# within about 1,000 AdamW steps at lr 3e-3 (not at 1e-2), and head dimension 16 (not 8) lets
# the compressed rows use what their gates select. The paper's optimizer: AdamW with moment
# decays (0.9, 0.95) and weight decay 0.1, gradients clipped to norm 1, a 2% linear warm-up,
# then cosine decay (to 0 here, to 1% of the peak in the paper). Under optax's default AdamW
# (0.9, 0.999; decay 1e-4) with a 10% warm-up, full attention with 8 KV heads stayed on the
# ln N plateau in 1 of 8 seeds at 2,800 steps (3 of 8 at 2,000).
TASK = RetrievalTask(T=96, N=128, period=24)
FULL_SIZE = MatrixSize(
    task=TASK,
    reference=REFERENCE,
    train=TrainConfig(
        optimizer="adam",
        lr=3e-3,
        betas=(0.9, 0.95),
        weight_decay=0.1,
        schedule="warmup_cosine",
        warmup=0.02,
        # at 2,000 the rows still fell (W8/S8 8 KV by 0.06 over the last fifth; at 2,800,
        # 0.03); the matrix at 2,800 takes 31-35 min on 2 idle cores (two processors)
        steps=2800,
        batch=8,
        chunk=280,
        eval_contexts=256,
    ),
    seeds=8,
)
# Quick: the rows of the headline and of the mitigation ordering, few steps and seeds: a check
# that every part runs. No row learns the task in 10 steps, nor did one at 20, 50 or 150 steps,
# where training took half of the quick matrix's time.
QUICK_SIZE = MatrixSize(
    task=TASK,
    reference=REFERENCE,
    train=dataclasses.replace(FULL_SIZE.train, steps=10, chunk=10, eval_contexts=64),
    seeds=2,
    rows=(
        "full attention 8 KV",
        "W8/S8 1 KV (reference)",
        "W8/S8 8 KV",
        "W8/S4 (overlap)",
        "W8/S6 (overlap)",
        "uniform averaging",
        "DeepSeek-style (W8/S4 vector tied)",
    ),
)


# The matrix's reference runs on which the paper's mechanism measures are taken.
MECHANISM_ROWS = ("W8/S8 1 KV (reference)", "W8/S8 4 KV", "W8/S8 8 KV")
# Gate rotations measured (appendix H), log-spaced points of the gate trajectories.
ROTATIONS = (-3, -2, -1, 1, 2, 3)
TRAJECTORY_POINTS = 12
# Bumped when `RowMechanisms` gains a measure, so cached rows without it are trained again.
MECHANISMS_VERSION = 2
# Bumped when the training program changes a row's numbers, so cached rows are trained again
# (2: the compressor's switches as masks, which moves the uniform and tied rows by float32
# rounding).
ROW_VERSION = 2


@dataclasses.dataclass(frozen=True)
class RowMechanisms:
    """The paper's mechanism measures of one row's final models (numpy; leading axis seeds;
    gates (layers, branches, kv, channels) over the gated layers, phases mod the period).

    - `trajectory_steps` (points,), `trajectory` (seeds, points, *gates, 2): static and
      average effective offsets during training (`TransformerRun.trajectory`).
    - `peak`, `mass`, `static`, `avg` (seeds, *gates): the final gates on the held-out
      contexts (`gate_offsets`).
    - `knockout_accuracy`, `knockout_loss` (seeds, layers, q_heads, period): with one query
      head mean-ablated (`knockout_heads`; means over as many fresh prompts as held-out
      contexts); `base_accuracy`, `base_loss` (seeds, period): unablated.
    - `rotations` (deltas,), `rotated_accuracy` (seeds, deltas, period): with every gate rotated
      by delta offsets (`rotate_transformer_gates`); `rotated_all_accuracy`: with the per-offset
      payload maps rotated beside them.
    - With an exact local window only (else None): `previous_mass`, `local_mass` (seeds,
      local layers, q_heads): the context stream's attention on the position before and on
      the whole window (`previous_token_mass`); `closed_window_accuracy` (seeds, period): the
      phase accuracy with the local window closed at evaluation (`without_local_window`).
    """

    trajectory_steps: np.ndarray
    trajectory: np.ndarray
    peak: np.ndarray
    mass: np.ndarray
    static: np.ndarray
    avg: np.ndarray
    knockout_accuracy: np.ndarray
    knockout_loss: np.ndarray
    base_accuracy: np.ndarray
    base_loss: np.ndarray
    rotations: np.ndarray
    rotated_accuracy: np.ndarray
    rotated_all_accuracy: np.ndarray
    previous_mass: np.ndarray | None = None
    local_mass: np.ndarray | None = None
    closed_window_accuracy: np.ndarray | None = None

    @classmethod
    def from_dict(cls, data: dict) -> RowMechanisms:
        return cls(
            **{
                f.name: None if data.get(f.name) is None else np.asarray(data[f.name])
                for f in dataclasses.fields(cls)
            }
        )


def row_mechanisms(run: TransformerRun, size: MatrixSize, seed: int) -> RowMechanisms:
    """The `RowMechanisms` of a finished run (its models, its held-out contexts)."""
    task, models = run.task, run.models
    held_out = held_out_contexts(task, size.train, seed)
    prompts = sample_retrieval_contexts(
        jax.random.fold_in(jax.random.key(seed), MEANS_STREAM),
        task,
        size.train.eval_contexts,
    )
    gates = eqx.filter_jit(eqx.filter_vmap(gate_offsets, in_axes=(0, None)))(
        models, held_out
    )
    knocked = eqx.filter_vmap(
        lambda m: knockout_heads(m, held_out, prompts, task.period)
    )(models)
    curves = eqx.filter_jit(
        eqx.filter_vmap(lambda m: phase_curves(m, held_out, task.period))
    )

    def rotated(payloads):
        return np.stack(
            [
                np.asarray(
                    curves(
                        rotate_transformer_gates(models, d, payloads=payloads)
                    ).accuracy
                )
                for d in ROTATIONS
            ],
            axis=1,
        )

    local = {}
    if run.arch.local_window and local_blocks(seed_model(models, 0)):
        mass = eqx.filter_jit(eqx.filter_vmap(previous_token_mass, in_axes=(0, None)))(
            models, held_out
        )
        local = dict(
            previous_mass=np.asarray(mass.previous),
            local_mass=np.asarray(mass.local),
            closed_window_accuracy=np.asarray(
                curves(without_local_window(models)).accuracy
            ),
        )
    return RowMechanisms(
        **local,
        trajectory_steps=run.trajectory_steps,
        trajectory=run.trajectory,
        peak=np.asarray(gates.peak),
        mass=np.asarray(gates.mass),
        static=np.asarray(gates.static),
        avg=np.asarray(gates.avg),
        knockout_accuracy=np.asarray(knocked.ablated.accuracy),
        knockout_loss=np.asarray(knocked.ablated.loss),
        base_accuracy=np.asarray(knocked.base.accuracy),
        base_loss=np.asarray(knocked.base.loss),
        rotations=np.asarray(ROTATIONS),
        rotated_accuracy=rotated(False),
        rotated_all_accuracy=rotated(True),
    )


@dataclasses.dataclass(frozen=True)
class RowResult:
    """What the matrix keeps of one row's training (numpy; leading axis seeds).

    - `measures`: the held-out `PhaseMeasures` (loss, correct counts per context and phase,
      loss per phase).
    - `initial_loss` (seeds,): the held-out loss at step 0.
    - `curve_steps` (points,), `curve` (seeds, points): the training loss, mean over windows of
      steps ending at each point.
    - `plateau_change` (seeds,): the training loss's change over the last fifth of the steps
      (mean of the last tenth minus mean of the tenth before the last fifth).
    - `mechanisms`: the `RowMechanisms` where asked for (`run_row(..., mechanisms=True)`).
    - `stream`: on a stream task (`RetrievalTask.keys` set), the held-out `StreamMeasures`
      (the language-model loss beside the retrieval queries' accuracy per phase); else None.
    """

    measures: PhaseMeasures
    initial_loss: np.ndarray
    curve_steps: np.ndarray
    curve: np.ndarray
    plateau_change: np.ndarray
    wall_s: float
    mechanisms: RowMechanisms | None = None
    stream: StreamMeasures | None = None

    def to_dict(self) -> dict:
        """Flat and JSON-able: the measures' fields beside the others (`mechanisms` nested,
        and only where measured)."""
        own = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in _NESTED
        }
        for name in ("mechanisms", "stream"):  # nested, and only where measured
            if getattr(self, name) is not None:
                own[name] = dataclasses.asdict(getattr(self, name))
        return dataclasses.asdict(self.measures) | own

    @classmethod
    def from_dict(cls, data: dict) -> RowResult:
        def field(name):
            value = data[name]
            return (
                value
                if name in ("queries_per_context", "wall_s")
                else np.asarray(value)
            )

        measures = PhaseMeasures(
            **{f.name: field(f.name) for f in dataclasses.fields(PhaseMeasures)}
        )
        mechanisms, stream = data.get("mechanisms"), data.get("stream")
        return cls(
            measures=measures,
            mechanisms=None
            if mechanisms is None
            else RowMechanisms.from_dict(mechanisms),
            stream=None
            if stream is None
            else StreamMeasures(**{k: np.asarray(v) for k, v in stream.items()}),
            **{
                f.name: field(f.name)
                for f in dataclasses.fields(cls)
                if f.name not in _NESTED
            },
        )


# The fields of `RowResult` stored as nested records.
_NESTED = ("measures", "mechanisms", "stream")


# Points of the stored loss curves.
CURVE_POINTS = 60


def loss_curve(loss: np.ndarray, points: int = CURVE_POINTS):
    """`(steps, curve)`: the per-step losses (seeds, steps) averaged over consecutive windows
    of steps, each point the window's last step."""
    seeds, n = loss.shape
    edges = np.unique(np.linspace(0, n, min(points, n) + 1).astype(int))
    curve = np.stack(
        [loss[:, a:b].mean(axis=1) for a, b in zip(edges[:-1], edges[1:])], axis=1
    )
    return edges[1:] - 1, curve


def plateau_change(loss: np.ndarray) -> np.ndarray:
    """Per seed, mean loss of the last tenth of the steps minus that of the tenth of steps
    ending at four fifths: how much the loss still moved over the last fifth."""
    n = loss.shape[1]
    tenth = max(1, n // 10)
    end_early = max(tenth, (4 * n) // 5)
    return loss[:, n - tenth :].mean(axis=1) - loss[
        :, end_early - tenth : end_early
    ].mean(axis=1)


def run_row(
    row: MatrixRow,
    size: MatrixSize,
    *,
    seed: int = 0,
    progress=False,
    mechanisms: bool = False,
    export_gates=None,
) -> RowResult:
    """Train one row of the matrix at `size` and keep its `RowResult` (with its
    `RowMechanisms` when `mechanisms`); `export_gates`, a .safetensors path, receives every
    seed's gate parameterization (`write_gate_file`). Both need a row with gates."""
    arch = row.architecture(size.reference)
    if (mechanisms or export_gates is not None) and not arch.learned_gates:
        raise ValueError(
            f"mechanisms and gate files need a row with learned gates, not {row.name!r}"
        )
    run = train_transformer(
        size.task,
        arch,
        row.training(size),
        size.seeds,
        seed=seed,
        progress=progress,
        trajectory_points=TRAJECTORY_POINTS if mechanisms else 0,
    )
    if export_gates is not None:
        write_gate_file(run, size, seed, export_gates)
    steps, curve = loss_curve(run.loss)
    stream = None
    if size.task.keys is not None:  # the same held-out contexts as `run.measures`
        held_out = held_out_contexts(size.task, size.train, seed)
        stream = stream_measures(run.models, size.task, held_out)
    return RowResult(
        measures=run.measures,
        initial_loss=run.initial_loss,
        curve_steps=steps,
        curve=curve,
        plateau_change=plateau_change(run.loss),
        wall_s=run.wall_s,
        mechanisms=row_mechanisms(run, size, seed) if mechanisms else None,
        stream=stream,
    )


# Held-out contexts whose windows a gate file carries (12 windows each at S = 8).
GATE_FILE_CONTEXTS = 32


def write_gate_file(run: TransformerRun, size: MatrixSize, seed: int, path) -> None:
    """Write every seed's `paper_gate_tensors` on the first `GATE_FILE_CONTEXTS` held-out
    contexts to the .safetensors file `path` (atomically), names prefixed `seed{i}.`: what
    `inductheory gates --paper` reads."""
    from safetensors.numpy import save_file

    contexts = held_out_contexts(run.task, size.train, seed)[:GATE_FILE_CONTEXTS]
    tensors = {}
    for i in range(run.seeds):
        for name, a in paper_gate_tensors(seed_model(run.models, i), contexts).items():
            tensors[f"seed{i}.{name}"] = np.ascontiguousarray(a, np.float32)
    _atomic_write(Path(path), lambda tmp: save_file(tensors, tmp))


def row_parameters(
    row: MatrixRow, size: MatrixSize, *, seed: int = 0, mechanisms: bool = False
) -> dict:
    """The cache key of a row's `RowResult`, the same for the figures and the command line:
    the row's name, its changes where they differ from `MATRIX`'s row of that name, the size
    (not which rows it trains), its `steps_factor` where not 1, the base seed where not 0,
    whether mechanisms are kept, and `ROW_VERSION`."""
    params = {
        "kind": "paper_matrix_row",
        "version": ROW_VERSION,
        "row": row.name,
        "size": {k: v for k, v in size.to_dict().items() if k != "rows"},
    }
    named = [r for r in MATRIX if r.name == row.name]
    if not named or named[0].changes != row.changes:
        params["changes"] = {k: str(v) for k, v in row.changes.items()}
    if row.steps_factor != 1:
        params["steps_factor"] = row.steps_factor
    if seed:
        params["seed"] = seed
    if mechanisms:
        params["mechanisms"] = MECHANISMS_VERSION
    return params


def matrix_row_result(
    row: MatrixRow,
    size: MatrixSize,
    cache_dir,
    *,
    seed: int = 0,
    mechanisms: bool = False,
    progress: bool = False,
    announce=None,
) -> RowResult:
    """`run_row`, read from `cache_dir` where a run of the same `row_parameters` finished
    (None: always trained); `announce(message)` is called before training."""

    def one():
        if announce is not None:
            announce(f"training matrix row {row.name!r}, {size.seeds} seeds")
        return run_row(
            row, size, seed=seed, progress=progress, mechanisms=mechanisms
        ).to_dict()

    params = row_parameters(row, size, seed=seed, mechanisms=mechanisms)
    return RowResult.from_dict(cached(cache_dir, params, one))


def permutation_p_value(values, reference) -> float:
    """Exact one-sided p-value of Kendall's tau-a between `values` and `reference`: the share of
    the n! orderings of `values` whose tau with `reference` is at least the observed one (how
    often a random ordering agrees with the reference this well by chance).

    ```python
    permutation_p_value([1, 2, 3], [1, 2, 3])  # 1/6
    ```
    """
    a, b = np.asarray(values, float), np.asarray(reference, float)
    n = a.size
    if n > 9:
        raise ValueError(
            f"values must have at most 9 items for exact enumeration, got {n}"
        )
    i, j = np.triu_indices(n, 1)
    sb = np.sign(b[i] - b[j])

    def tau(x):
        return np.sum(np.sign(x[i] - x[j]) * sb)

    observed = tau(a)
    perms = np.array(list(itertools.permutations(range(n))))
    taus = np.sum(np.sign(a[perms][:, i] - a[perms][:, j]) * sb, axis=1)
    return float(np.mean(taus >= observed - 1e-12))


def boundary_phases(S: int, period: int) -> np.ndarray:
    """The phases (positions mod `period`) at stride S's boundary offset S - 1."""
    return np.arange(period)[np.arange(period) % S == S - 1]


__all__ = [
    "FULL_SIZE",
    "MATRIX",
    "MECHANISM_ROWS",
    "PAPER_TABLE8",
    "QUICK_SIZE",
    "REFERENCE",
    "MatrixRow",
    "MatrixSize",
    "PaperRow",
    "RowMechanisms",
    "RowResult",
    "boundary_phases",
    "loss_curve",
    "matrix_row",
    "matrix_row_result",
    "permutation_p_value",
    "plateau_change",
    "row_mechanisms",
    "row_parameters",
    "run_row",
    "write_gate_file",
]
