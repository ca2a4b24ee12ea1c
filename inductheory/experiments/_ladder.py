"""The relaxation ladder (docs/trained.md): from the theorem's setting to a trained model, one
switch at a time and then cumulatively, each rung trained from many seeds and measured on
held-out contexts.

The theorem rung has every switch at the theorem's value (full-batch gradient descent on the full
flow's balanced sample: the Euler scheme of the full flow). Each switch of `SWITCHES` relaxes one
idealization; a rung `alone` turns on one switch, a rung `cumulative` turns on every switch up to
it in that order, and the `control` rung is the cumulative rung of learned embeddings with
bias-only (static) gates in place of linear ones, so that input-dependent selection can be told
from what the gates' class allows.
"""

from __future__ import annotations

import dataclasses
import time

import equinox as eqx
import jax
import numpy as np

from ..internal._records import Record, field_values
from ..model._contexts import sample_contexts
from ..model._gates import distinct_within_blocks
from ..model._task import (
    Task,
    _require_int,
    _require_real,
    assumptions_silenced,
    quiet_task,
)
from ..trained._config import ModelConfig, TrainConfig
from ..trained._measures import ModelMeasures, measure
from ..trained._train import HELD_OUT_STREAM, TrainRun, seed_model, train
from ._flows import independent_distinct_baseline
from ._measured import Count, Spread

# The switches in the ladder's order; each is applied by `_apply` to (task, model, training).
SWITCHES = (
    "minibatch",
    "adam",
    "approximate",
    "learned",
    "gate_bias",
    "local",
    "layers",
)
LABELS = {
    "theorem": "theorem",
    "minibatch": "minibatch SGD",
    "adam": "Adam",
    "approximate": "approximate geometry",
    "learned": "learned embeddings, maps, unembedding",
    "gate_bias": "gate bias (<c, x> + b)",
    "local": "exact local branch",
    "layers": "two layers",
    "control": "bias-only gates (control)",
}
# A head's branch counts as selected when its mean gate puts at least this mass on its argmax
# offset (the flows' delta-selection, loosened for a finite number of steps).
SELECTED_MASS = 0.9
# A head's branch concentrates input-dependently when its static effective offset exceeds the
# average one by at least this many offsets (each window sharp, on different offsets).
INPUT_DEPENDENT = 0.5
# A seed is phase-uniform when its per-phase accuracies differ by at most this much.
PHASE_UNIFORM = 0.1


class Rung(eqx.Module):
    """One rung of the ladder: a task, the model's switches and its training.

    - `name`: unique, e.g. `"theorem"`, `"alone:adam"`, `"cumulative:layers"`.
    - `task`: the task it trains on (the approximate-geometry switch sets `d`).
    - `model_config`, `train_config`: as `train` takes them.
    - `kind`: `"theorem"`, `"alone"`, `"cumulative"` or `"control"`.
    - `switches`: the switches of `SWITCHES` it has on, in the ladder's order.

    ```python
    rung = ladder_rungs(task)[0]
    rung.model_config.theorem_setting  # True
    ```
    """

    name: str = eqx.field(static=True)
    task: Task
    model_config: ModelConfig
    train_config: TrainConfig
    kind: str = eqx.field(static=True)
    switches: tuple[str, ...] = eqx.field(static=True)

    @property
    def label(self) -> str:
        """A short name for figures: the switch (alone), `+ switch` (cumulative)."""
        if self.kind in ("theorem", "control"):
            return LABELS[self.kind]
        last = LABELS[self.switches[-1]]
        return last if self.kind == "alone" else f"+ {last}"

    def parameters(self) -> dict:
        """Every parameter, JSON-able (cache keys and figure data)."""
        return dict(
            name=self.name,
            kind=self.kind,
            switches=list(self.switches),
            task=self.task.to_dict(),
            model_config=field_values(self.model_config),
            train_config=field_values(self.train_config),
        )


@dataclasses.dataclass(frozen=True)
class LadderSettings:
    """The sizes of the relaxations (keyword arguments of `ladder_rungs`).

    - `steps`, `lr`, `M`: steps, gradient-descent step and balanced sample of the theorem rung
      (every rung takes `steps` steps).
    - `batch`: fresh contexts per step of the minibatch switch.
    - `adam_lr`: the Adam switch's learning rate.
    - `approximate_d`: embedding dimension of the approximate geometry (`Task.d`).
    - `d`: dimension of learned embeddings.
    - `local_window`: positions before the query attended exactly.
    - `eval_contexts`: held-out contexts of the measures.
    """

    steps: int = 400
    lr: float = 0.5
    M: int = 48
    batch: int = 16
    adam_lr: float = 1e-2
    approximate_d: int = 16
    d: int = 16
    local_window: int = 1
    eval_contexts: int = 64

    def __post_init__(self):
        for name in ("steps", "M", "batch", "approximate_d", "d", "eval_contexts"):
            _require_int(name, getattr(self, name), 1)
        _require_int("local_window", self.local_window, 1)
        for name in ("lr", "adam_lr"):
            if not _require_real(name, getattr(self, name)) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")


def _apply(switch: str, task: Task, model: dict, training: dict, s: LadderSettings):
    """(task, model, training) with `switch` on; a later embedding switch replaces an earlier."""
    if switch == "minibatch":
        training["batch"] = s.batch
    elif switch == "adam":
        training.update(optimizer="adam", lr=s.adam_lr)
    elif switch == "approximate":
        task = quiet_task(**{**task.to_dict(), "d": s.approximate_d})
        model["embeddings"] = "approximate"
    elif switch == "learned":
        task = quiet_task(**{**task.to_dict(), "eps": None, "d": None})
        model.update(embeddings="learned", d=s.d, maps="learned", unembedding="learned")
    elif switch == "gate_bias":
        model["bias"] = True
    elif switch == "local":
        model["local_window"] = s.local_window
    elif switch == "layers":
        model["layers"] = 2
    else:
        raise ValueError(f"switch must be one of {', '.join(SWITCHES)}, got {switch!r}")
    return task, model, training


def _rung(name, kind, switches, task, settings) -> Rung:
    model, training = (
        {},
        dict(
            steps=settings.steps,
            lr=settings.lr,
            M=settings.M,
            log_points=8,
            chunk=settings.steps,
            eval_contexts=settings.eval_contexts,
        ),
    )
    for switch in switches:
        task, model, training = _apply(switch, task, model, training, settings)
    if kind == "control":
        model.update(gates="bias", bias=False)
    return Rung(
        name,
        task,
        ModelConfig(**model),
        TrainConfig(**training),
        kind,
        tuple(switches),
    )


def ladder_rungs(task: Task, **settings) -> list[Rung]:
    """The rungs of the ladder on `task`: the theorem rung, each switch of `SWITCHES` alone,
    each cumulatively (every switch up to it), and the control (the cumulative rung of
    `"learned"` with bias-only gates).

    **Arguments:**
    - `task`: an exact-geometry task with `queries="within"` (the theorem rung's).
    - `settings`: fields of `LadderSettings` (steps, lr, M, batch, adam_lr, approximate_d, d,
      local_window, eval_contexts).

    **Returns:** a list of `Rung`, theorem first, then the alone, cumulative and control rungs.

    ```python
    rungs = ladder_rungs(Task(L=4, S=3, H=2, N=48, beta=4.0), steps=200)
    [r.name for r in rungs][:3]  # ['theorem', 'alone:minibatch', 'alone:adam']
    ```
    """
    if not isinstance(task, Task) or not task.exact or task.queries != "within":
        raise ValueError(
            "task must be an exact-geometry Task with queries='within' (the theorem rung's)"
        )
    known = {f.name for f in dataclasses.fields(LadderSettings)}
    for name in settings:
        if name not in known:
            raise ValueError(
                f"ladder_rungs takes the settings {', '.join(sorted(known))}, got {name!r}"
            )
    s = LadderSettings(**settings)
    rungs = [_rung("theorem", "theorem", (), task, s)]
    rungs += [_rung(f"alone:{w}", "alone", (w,), task, s) for w in SWITCHES]
    rungs += [
        _rung(f"cumulative:{w}", "cumulative", SWITCHES[: i + 1], task, s)
        for i, w in enumerate(SWITCHES)
    ]
    upto = SWITCHES[: SWITCHES.index("learned") + 1]
    rungs.append(_rung("control", "control", upto, task, s))
    return rungs


@dataclasses.dataclass(frozen=True)
class RungResult:
    """One rung trained and measured.

    - `rung`: the `Rung`.
    - `seeds`: seeds trained.
    - `measures`: `ModelMeasures` on the held-out contexts, numpy arrays with a leading seed
      axis (the rung's own task: within queries).
    - `boundary`: the same trained models measured on the same held-out contexts with
      `queries="all"`, whose last phase is the boundary phase S-1 (evaluation only: the models
      are those trained on within queries).
    - `cpu_s`, `wall_s`: process CPU time and wall time of training and measuring.
    """

    rung: Rung
    seeds: int
    measures: ModelMeasures
    boundary: ModelMeasures
    cpu_s: float
    wall_s: float

    def summary(self) -> RungSummary:
        """The rung's measures over seeds and heads (`rung_summary`)."""
        return rung_summary(self)

    def to_dict(self) -> dict:
        """JSON-able: the rung's parameters, the per-seed measures and the timings."""
        return dict(
            rung=self.rung.parameters(),
            seeds=self.seeds,
            measures=_measures_dict(self.measures),
            boundary=_measures_dict(self.boundary),
            cpu_s=self.cpu_s,
            wall_s=self.wall_s,
        )

    @classmethod
    def from_dict(cls, data: dict, rung: Rung) -> RungResult:
        """The result of `to_dict` (for `rung`, whose parameters it must have)."""
        if data["rung"] != rung.parameters():
            raise ValueError(f"data were measured for another rung than {rung.name!r}")
        return cls(
            rung=rung,
            seeds=int(data["seeds"]),
            measures=_measures_from(data["measures"]),
            boundary=_measures_from(data["boundary"]),
            cpu_s=float(data["cpu_s"]),
            wall_s=float(data["wall_s"]),
        )


def _measures_dict(m: ModelMeasures) -> dict:
    return {
        f.name: np.asarray(getattr(m, f.name)).tolist() for f in dataclasses.fields(m)
    }


def _measures_from(data: dict) -> ModelMeasures:
    return ModelMeasures(**{k: np.asarray(v) for k, v in data.items()})


@dataclasses.dataclass(frozen=True)
class LadderResult:
    """Every rung of a ladder run (`run_ladder`), in the order given.

    - `rungs`: a `RungResult` per rung.
    - `seeds`, `seed`: seeds per rung and the base seed.
    """

    rungs: list[RungResult]
    seeds: int
    seed: int

    def __getitem__(self, name: str) -> RungResult:
        for r in self.rungs:
            if r.rung.name == name:
                return r
        raise KeyError(name)

    def summaries(self) -> list[RungSummary]:
        """`rung_summary` of every rung."""
        return [r.summary() for r in self.rungs]


def _boundary_measures(run: TrainRun) -> ModelMeasures:
    """The trained models of `run` measured with `queries="all"` on its held-out contexts."""
    task = run.task
    with assumptions_silenced():
        every = Task(**{**task.to_dict(), "queries": "all"})
    contexts = sample_contexts(
        jax.random.fold_in(jax.random.key(run.seed), HELD_OUT_STREAM),
        task,
        run.train_config.eval_contexts,
    )
    per_seed = []
    models = jax.device_get(run.models)  # sliced on the host: no program per leaf
    for i in range(run.seeds):
        model = seed_model(models, i)
        per_seed.append(measure(eqx.tree_at(lambda m: m.task, model, every), contexts))
    return jax.tree.map(lambda *a: np.stack([np.asarray(x) for x in a]), *per_seed)


def train_rung(rung: Rung, seeds: int, *, seed: int = 0) -> RungResult:
    """Train `rung` from `seeds` seeds and measure it on held-out contexts (within and all
    queries).

    **Arguments:**
    - `rung`: a `Rung` of `ladder_rungs`.
    - `seeds`: number of seeds.
    - `seed`: base seed (as `train`'s).

    **Returns:** a `RungResult`.
    """
    cpu, wall = time.process_time(), time.perf_counter()
    with assumptions_silenced():
        run = train(rung.task, rung.model_config, rung.train_config, seeds, seed=seed)
        boundary = _boundary_measures(run)
    return RungResult(
        rung=rung,
        seeds=seeds,
        measures=run.measures,
        boundary=boundary,
        cpu_s=time.process_time() - cpu,
        wall_s=time.perf_counter() - wall,
    )


def run_ladder(rungs, seeds: int, *, seed: int = 0, runner=None) -> LadderResult:
    """Train and measure every rung from `seeds` seeds.

    **Arguments:**
    - `rungs`: `Rung`s (e.g. `ladder_rungs(task)`), names unique.
    - `seeds`: seeds per rung, >= 1.
    - `seed`: base seed of every rung (seed i of every rung starts from the same key).
    - `runner`: `runner(rung, seeds, seed) -> RungResult` (default `train_rung`; figures pass
      a cached one).

    **Returns:** a `LadderResult`.

    ```python
    result = run_ladder(ladder_rungs(task, steps=200), 32)
    result["alone:adam"].summary().value_follows_key
    ```
    """
    seeds = _require_int("seeds", seeds, 1)
    rungs = list(rungs)
    names = [r.name for r in rungs]
    if len(set(names)) != len(names):
        raise ValueError(f"rungs must have unique names, got {names}")
    runner = train_rung if runner is None else runner
    return LadderResult(
        [runner(r, seeds, seed=seed) for r in rungs], seeds=seeds, seed=seed
    )


@dataclasses.dataclass(frozen=True)
class KeyValue(Record):
    """One measure of the key and of the value gates (a `Spread` each)."""

    key: Spread
    value: Spread

    @classmethod
    def of(cls, x) -> KeyValue:
        """The spreads of `x` (..., 2): branch 0 the keys, branch 1 the values."""
        x = np.asarray(x)
        return cls(key=Spread.of(x[..., 0]), value=Spread.of(x[..., 1]))


@dataclasses.dataclass(frozen=True)
class RungSeeds(Record):
    """A rung's per-seed values (lists with a leading seed axis), kept for intervals over
    seeds: `key_offsets`, `value_offsets` (seeds, H); `phase_accuracy` (seeds, phases);
    `phase_gap`, `mean_accuracy`, `loss`; with all queries `boundary_accuracy` (phase S-1),
    `all_mean_accuracy`, `all_phase_gap`; `static_offsets`, `avg_offsets` (seeds, H, 2)."""

    key_offsets: list
    value_offsets: list
    phase_accuracy: list
    phase_gap: list
    mean_accuracy: list
    loss: list
    boundary_accuracy: list
    all_mean_accuracy: list
    all_phase_gap: list
    static_offsets: list
    avg_offsets: list


@dataclasses.dataclass(frozen=True, kw_only=True)
class RungSummary(Record):
    """The ladder's measures of one rung over its seeds (`rung_summary`).

    **Fields:**
    - `name`, `label`, `kind`, `switches`: the rung's; `seeds`, `heads` (H), `W`; `cpu_s`,
      `wall_s`: its training and measuring time.
    - Gate measures, pooling heads and seeds: `gate_mass` (the mean gate's mass on its argmax
      offset), `static_offsets`, `avg_offsets` (`KeyValue` spreads); `selected` (branches with
      mass >= `SELECTED_MASS`), `value_follows_key` (heads), `input_dependent` (branches with
      static - avg >= `INPUT_DEPENDENT`) as `Count`s.
    - Per seed: `distinct` (heads' key offsets pairwise distinct) against
      `distinct_baseline` (`independent_distinct_baseline`), `phase_uniform` (gap <=
      `PHASE_UNIFORM`) and `all_phase_uniform` (the same with all queries), as `Count`s.
    - Means over seeds: `phase_accuracy_mean` (phases,), `phase_gap_mean`, `mean_accuracy`,
      `loss`, `boundary_accuracy`.
    - `per_seed`: the per-seed values (`RungSeeds`).
    """

    name: str
    label: str
    kind: str
    switches: list[str]
    seeds: int
    heads: int
    W: int
    cpu_s: float
    wall_s: float
    gate_mass: KeyValue
    selected: Count
    value_follows_key: Count
    static_offsets: KeyValue
    avg_offsets: KeyValue
    input_dependent: Count
    distinct: Count
    distinct_baseline: float
    per_seed: RungSeeds
    phase_uniform: Count
    all_phase_uniform: Count
    phase_accuracy_mean: list[float]
    phase_gap_mean: float
    mean_accuracy: float
    loss: float
    boundary_accuracy: float


def rung_summary(result: RungResult) -> RungSummary:
    """The ladder's measures of one rung, over its seeds (and heads), as counts and spreads;
    per-seed values kept for intervals over seeds.

    Gate measures pool heads and seeds (one value per head and branch): `gate_mass` (key,
    value: the mean gate's mass on its argmax offset), `selected` (branches with mass >=
    `SELECTED_MASS`), `value_follows_key` (heads), `static_offsets` and `avg_offsets` (key,
    value), `input_dependent` (branches with static - avg >= `INPUT_DEPENDENT`). Per seed:
    `distinct` (heads' key offsets pairwise distinct) against `independent_distinct_baseline`,
    `phase_accuracy` (seeds, phases), `phase_gap`, `phase_uniform` (gap <= `PHASE_UNIFORM`),
    `mean_accuracy`, `loss`, and with all queries `boundary_accuracy` (phase S-1),
    `all_mean_accuracy`, `all_phase_gap` and `all_phase_uniform`.

    **Arguments:**
    - `result`: a `RungResult`.

    **Returns:** a `RungSummary` (`to_dict()` for its JSON-able form).
    """
    m, b, rung = result.measures, result.boundary, result.rung
    task = rung.task
    mass = np.asarray(m.argmax_mass)  # (seeds, H, 2)
    static, avg = np.asarray(m.static_offsets), np.asarray(m.avg_offsets)
    keys = np.asarray(m.key_offsets)
    distinct = np.asarray(distinct_within_blocks(keys[..., None]))
    gap = np.asarray(m.phase_gap)
    return RungSummary(
        name=rung.name,
        label=rung.label,
        kind=rung.kind,
        switches=list(rung.switches),
        seeds=result.seeds,
        heads=task.H,
        W=task.W,
        cpu_s=result.cpu_s,
        wall_s=result.wall_s,
        gate_mass=KeyValue.of(mass),
        selected=Count.of(mass >= SELECTED_MASS),
        value_follows_key=Count.of(m.value_follows_key),
        static_offsets=KeyValue.of(static),
        avg_offsets=KeyValue.of(avg),
        input_dependent=Count.of(static - avg >= INPUT_DEPENDENT),
        distinct=Count.of(distinct),
        distinct_baseline=independent_distinct_baseline(
            task.H, task.W, rung.model_config.tied
        ),
        per_seed=RungSeeds(
            key_offsets=keys.tolist(),
            value_offsets=np.asarray(m.value_offsets).tolist(),
            phase_accuracy=np.asarray(m.phase_accuracy).tolist(),
            phase_gap=gap.tolist(),
            mean_accuracy=np.asarray(m.mean_accuracy).tolist(),
            loss=np.asarray(m.loss).tolist(),
            boundary_accuracy=np.asarray(b.phase_accuracy)[:, -1].tolist(),
            all_mean_accuracy=np.asarray(b.mean_accuracy).tolist(),
            all_phase_gap=np.asarray(b.phase_gap).tolist(),
            static_offsets=static.tolist(),
            avg_offsets=avg.tolist(),
        ),
        phase_uniform=Count.of(gap <= PHASE_UNIFORM),
        all_phase_uniform=Count.of(np.asarray(b.phase_gap) <= PHASE_UNIFORM),
        phase_accuracy_mean=np.asarray(m.phase_accuracy).mean(axis=0).tolist(),
        phase_gap_mean=float(gap.mean()),
        mean_accuracy=float(np.mean(m.mean_accuracy)),
        loss=float(np.mean(m.loss)),
        boundary_accuracy=float(np.mean(np.asarray(b.phase_accuracy)[:, -1])),
    )


__all__ = [
    "LABELS",
    "SWITCHES",
    "KeyValue",
    "LadderResult",
    "LadderSettings",
    "Rung",
    "RungResult",
    "RungSeeds",
    "RungSummary",
    "ladder_rungs",
    "run_ladder",
    "rung_summary",
    "train_rung",
]
