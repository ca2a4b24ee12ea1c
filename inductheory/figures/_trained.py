"""The paper's protocol on trained models (docs/trained.md): the canonical tasks, rungs and runs
shared by the trained-model figures, so that each configuration is trained once (through
`_runs.trained_run`) and every figure reads the same run.

- Settings (`PAPER_SETTINGS`): the paper's mitigation table, W8/S8, W8/S4, W8/S6, uniform
  averaging at W8/S8 and stride S = 2 (W8/S2), each on T = L*S = `POSITIONS` positions, so that
  the settings differ only in how the same context is compressed.
- Rungs (`paper_rung`): the theorem's (every switch of the relaxation ladder off), the realistic
  one (every switch on: the ladder's `cumulative:layers`), the ladder's cumulative rungs between
  them (`CUMULATIVE`) and a full-attention baseline.
- Runs (`paper_run`): one cached `TrainRun` per (setting, rung).

The baseline compresses nothing the model needs: its second layer attends exactly to every other
position of the cycle (a local branch of T - 1 positions) beside L uniform-average entries, and
its first layer is the uncompressed causal layer, so that a previous-token head can write x_{t-1}
into position t and the query x_t find its successor at position t + 1. Its per-phase accuracy
at a compressed setting's stride S groups its queries by position mod S
(`phase_accuracy_by_position`); one baseline run serves every setting.
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import numpy as np

from ..experiments._ladder import (
    SELECTED_MASS,
    SWITCHES,
    LadderSettings,
    Rung,
    _rung,
)
from ..experiments._mitigations import PAPER
from ..flow._config import FlowConfig
from ..internal._records import Record, field_values, optional_field
from ..model._contexts import sample_contexts
from ..model._logits import top1_correct
from ..model._task import Task, _require_int, assumptions_silenced
from ..trained._config import ModelConfig
from ..trained._model import init_model
from ..trained._train import HELD_OUT_STREAM, TrainRun, _partition
from . import _runs

# Positions of every context, the same at every setting (T = L*S: L = T / S entries).
POSITIONS = 24
# The task around the windows: vocabulary, heads and scales.
TASK = dict(N=48, H=2, gamma=1.0, beta=4.0, kappa=1.0)
# The ladder's cumulative rungs between the theorem and the realistic rung (`cumulative:layers`).
CUMULATIVE = tuple(f"cumulative:{w}" for w in SWITCHES[:-1])
# The rungs of `paper_rung`.
RUNGS = ("theorem", "realistic", "baseline") + CUMULATIVE
# The ladder's settings (`LadderSettings`) of the rungs, full and quick: the theorem rung trains
# by gradient descent (`lr`) on the full flow's balanced sample of `M` contexts, the realistic
# and baseline rungs with Adam (`adam_lr`) on `batch` fresh contexts a step, embeddings of
# dimension `d`.
FULL = dict(lr=8.0, M=48, batch=16, adam_lr=1e-2, d=32, eval_contexts=64)
QUICK = dict(FULL, eval_contexts=16)
# Steps of the theorem rung and of the trained (realistic, baseline) rungs, full and quick; a
# cumulative rung before Adam trains by gradient descent at `lr` and takes the theorem's steps.
STEPS = {"theorem": 1000, "trained": 400}
QUICK_STEPS = {"theorem": 200, "trained": 100}
# Seeds per run, full and quick.
SEEDS, QUICK_SEEDS = 32, 4


@dataclasses.dataclass(frozen=True)
class PaperSetting:
    """One setting of the paper's mitigation table.

    - `name`: the paper's name (`"W8/S8"`, `"W8/S4"`, `"W8/S6"`, `"uniform"`, `"S=2"`).
    - `S`, `W`: stride and window.
    - `gates`: `"learned"` or `"uniform"` (averaging, p = 1/W).
    """

    name: str
    S: int
    W: int
    gates: str


# The paper's five settings, in its table's order (`experiments._mitigations.PAPER`).
PAPER_SETTINGS = tuple(
    PaperSetting(name, p["S"], p["W"], p["gates"]) for name, p in PAPER.items()
)


def paper_setting(setting) -> PaperSetting:
    """The `PaperSetting` of a name of `PAPER_SETTINGS` (a `PaperSetting` passes through)."""
    if isinstance(setting, PaperSetting):
        return setting
    for s in PAPER_SETTINGS:
        if s.name == setting:
            return s
    names = ", ".join(s.name for s in PAPER_SETTINGS)
    raise ValueError(f"setting must be one of {names}, got {setting!r}")


def paper_task(S: int, W: int, *, quick: bool = False) -> Task:
    """The exact-geometry task of the protocol at stride `S` and window `W`.

    T = `POSITIONS` positions (L = T / S entries), every query phase (`queries="all"`, the
    boundary phase S - 1 included), and `TASK`'s N, H, gamma, beta, kappa. Quick mode trains
    fewer seeds and steps on the same task.

    **Arguments:**
    - `S`: stride, a divisor of `POSITIONS` >= 2.
    - `W`: window, S <= W <= T.
    - `quick`: keyword; the same task (kept so that callers pass their mode everywhere).

    **Returns:** a `Task` (built without the theorems' assumption warnings).

    ```python
    paper_task(8, 8).L  # 3
    ```
    """
    S = _require_int("S", S, 2, POSITIONS)
    if POSITIONS % S:
        raise ValueError(f"S must divide T = {POSITIONS}, got S={S}")
    return _runs.task_of(L=POSITIONS // S, S=S, W=W, queries="all", **TASK)


def _switches(name: str) -> tuple[str, ...]:
    """The ladder's switches a rung of `RUNGS` has on."""
    if name == "theorem":
        return ()
    if name in CUMULATIVE:
        return SWITCHES[: SWITCHES.index(name.split(":")[1]) + 1]
    return SWITCHES


def _settings(name: str, quick: bool) -> LadderSettings:
    # gradient descent (no Adam) keeps the theorem rung's horizon steps * lr
    steps = (QUICK_STEPS if quick else STEPS)[
        "trained" if "adam" in _switches(name) else "theorem"
    ]
    return LadderSettings(steps=steps, **(QUICK if quick else FULL))


def paper_rung(
    name: str, task: Task, *, quick: bool = False, gates: str = "learned"
) -> Rung:
    """A rung of the protocol on `task`.

    - `"theorem"`: every switch at the theorem's value (the ladder's theorem rung): gradient
      descent on the full flow's balanced sample, the Euler scheme of the full flow.
    - `"realistic"`: every switch of the ladder on (its most relaxed rung, `cumulative:layers`):
      minibatches, Adam, learned embeddings, maps and unembedding, a per-offset gate bias, an
      exact local branch and two layers.
    - `"baseline"`: the realistic rung with full attention in place of the compressor: the
      local branch spans the T - 1 other positions, and the entries average uniformly.
    - `"cumulative:<switch>"` (`CUMULATIVE`): the ladder's cumulative rung, every switch up to
      `<switch>` on; before Adam it trains by gradient descent for the theorem rung's steps.

    **Arguments:**
    - `name`: one of `RUNGS`.
    - `task`: a `paper_task`.
    - `quick`: keyword; fewer steps (`QUICK_STEPS` instead of `STEPS`) and held-out contexts.
    - `gates`: keyword, `"learned"` or `"uniform"` (the paper's uniform averaging: p = 1/W,
      no gate parameters; the baseline's entries are always uniform).

    **Returns:** a `Rung` named `name`.

    ```python
    paper_rung("realistic", paper_task(8, 8)).model_config.layers  # 2
    ```
    """
    if name not in RUNGS:
        raise ValueError(f"name must be one of {', '.join(RUNGS)}, got {name!r}")
    if gates not in ("learned", "uniform"):
        raise ValueError(f"gates must be 'learned' or 'uniform', got {gates!r}")
    s = _settings(name, quick)
    with assumptions_silenced():
        if name == "theorem":
            rung = _rung("theorem", "theorem", (), task, s)
        else:
            rung = _rung(name, "cumulative", _switches(name), task, s)
    model = _config(rung)
    if name == "baseline":
        model.update(gates="uniform", bias=False, local_window=task.T - 1)
        return Rung(
            name,
            rung.task,
            ModelConfig(**model),
            rung.train_config,
            "baseline",
            rung.switches,
        )
    if gates == "uniform":
        model.update(gates="uniform", bias=False)
    return Rung(
        name,
        rung.task,
        ModelConfig(**model),
        rung.train_config,
        rung.kind,
        rung.switches,
    )


def _config(rung: Rung) -> dict:
    cfg = rung.model_config
    return field_values(cfg)


def paper_run(setting, rung: str, *, quick: bool, cache_dir, seed: int = 0) -> TrainRun:
    """The trained run of `rung` at `setting`, cached and shared between figures
    (`_runs.trained_run`).

    The baseline does not depend on the setting: every setting gets the one baseline run of
    W8/S8's task (measure it at a setting's stride with `phase_accuracy_by_position`).

    **Arguments:**
    - `setting`: a `PaperSetting` or its name.
    - `rung`: one of `RUNGS`.
    - `quick`, `cache_dir`: keyword; quick mode (`QUICK_SEEDS` seeds, `QUICK_STEPS`), the
      figures' cache (None: train without caching).
    - `seed`: keyword, base seed.

    **Returns:** a `TrainRun` (`SEEDS` or `QUICK_SEEDS` seeds).

    ```python
    run = paper_run("W8/S8", "theorem", quick=True, cache_dir=None)
    run.measures.phase_accuracy.shape  # (4, 8)
    ```
    """
    s = paper_setting(setting)
    if rung == "baseline":
        s = PAPER_SETTINGS[0]
    task = paper_task(s.S, s.W, quick=quick)
    r = paper_rung(rung, task, quick=quick, gates=s.gates)
    return _runs.trained_run(
        r.task,
        r.model_config,
        r.train_config,
        QUICK_SEEDS if quick else SEEDS,
        cache_dir,
        seed=seed,
        label=f"the {rung} rung at {s.name}",
    )


def learns(rung: Rung) -> bool:
    """Whether a rung has anything to train, by the trainer's own test (`_partition`): the
    theorem rung with uniform gates has not (fixed exact embeddings, identity maps, p = 1/W),
    nor are the cumulative rungs before learned representations (fixed, approximate
    embeddings)."""
    with assumptions_silenced():
        model = init_model(rung.task, rung.model_config, jax.random.key(0))
    return bool(jax.tree.leaves(_partition(model)[0]))


@dataclasses.dataclass(frozen=True, kw_only=True)
class TheoremFlow(Record):
    """The full flow at a theorem rung's setting (`theorem_flow`): its horizon `t_max` = steps *
    lr, the selection threshold `delta`, and per seed the flow's `key_offsets`, `value_offsets`
    (seeds, H; -1 where that branch did not reach the selection mass) and `status`."""

    t_max: float
    delta: float
    key_offsets: list
    value_offsets: list
    status: list[str]

    def beside(self, trained_keys, trained_values) -> FlowCheck:
        """This flow beside the trained offsets (seeds, H) of the same seeds: how many flow
        seeds selected and how many agree with gradient descent on keys and values."""
        return FlowCheck(
            **field_values(self),
            selected=sum(s == "selected" for s in self.status),
            agrees=sum(
                fk == tk and fv == tv
                for fk, tk, fv, tv in zip(
                    self.key_offsets, trained_keys, self.value_offsets, trained_values
                )
            ),
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class FlowCheck(TheoremFlow):
    """A `TheoremFlow` beside its trained run: `selected` (flow seeds that selected),
    `agrees` (seeds whose flow and trained offsets coincide, keys and values), and where
    given `keys_agree` (the same for the keys alone) and `seeds`."""

    selected: int
    agrees: int
    keys_agree: int | None = optional_field()
    seeds: int | None = optional_field()


def theorem_flow(rung: Rung, seeds: int, cache_dir, *, seed: int = 0) -> TheoremFlow:
    """The full flow at a theorem rung's task, balanced sample, initial gates and horizon
    t = steps * lr, selecting at delta = 1 - `SELECTED_MASS` (gradient descent there is the
    flow's Euler scheme, so both should select the same offsets).

    **Arguments:**
    - `rung`: a rung at the theorem's setting (the ladder's or `paper_rung("theorem", ...)`).
    - `seeds`, `seed`: as the rung's run.
    - `cache_dir`: the figures' cache.

    **Returns:** a `TheoremFlow`.
    """
    if not rung.model_config.theorem_setting:
        raise ValueError(f"rung must be at the theorem's setting, got {rung.name!r}")
    t = rung.train_config
    config = FlowConfig(
        dynamics="full",
        M=t.M,
        rho=t.rho,
        delta=1 - SELECTED_MASS,
        t_max=t.steps * t.lr,
    )
    with assumptions_silenced():
        flow = _runs.flow_runs(rung.task, config, seeds, cache_dir, seed=seed)
    return TheoremFlow(
        t_max=t.steps * t.lr,
        delta=1 - SELECTED_MASS,
        key_offsets=np.asarray(flow.key_offsets).tolist(),
        value_offsets=np.asarray(flow.value_offsets).tolist(),
        status=list(flow.status),
    )


def flow_check(rung: Rung, run: TrainRun, cache_dir) -> FlowCheck:
    """`theorem_flow` of the theorem rung beside its trained run.

    **Arguments:**
    - `rung`: a theorem rung (`paper_rung("theorem", ...)`).
    - `run`: its trained run (`paper_run`).
    - `cache_dir`: the figures' cache.

    **Returns:** a `FlowCheck` with `keys_agree` and `seeds`.
    """
    flow = theorem_flow(rung, run.seeds, cache_dir, seed=run.seed)
    trained_keys = np.asarray(run.measures.key_offsets).tolist()
    trained_values = np.asarray(run.measures.value_offsets).tolist()
    return dataclasses.replace(
        flow.beside(trained_keys, trained_values),
        keys_agree=sum(fk == tk for fk, tk in zip(flow.key_offsets, trained_keys)),
        seeds=run.seeds,
    )


def phase_accuracy_by_position(correct, positions, S: int) -> np.ndarray:
    """Per-phase top-1 accuracy with queries grouped by position mod `S`.

    **Arguments:**
    - `correct`: booleans (..., contexts, queries): whether each query's target was top-1.
    - `positions`: the position of each query (queries,).
    - `S`: the stride whose phases group the queries.

    **Returns:** accuracy per phase, shape (..., S); a phase without queries is NaN.

    ```python
    phase_accuracy_by_position(np.array([[1, 0, 1, 1]]), np.arange(4), 2)  # [1.0, 0.5]
    ```
    """
    S = _require_int("S", S, 1)
    correct = np.asarray(correct, float)
    phase = np.asarray(positions) % S
    out = np.full(correct.shape[:-2] + (S,), np.nan)
    for r in range(S):
        if np.any(phase == r):
            out[..., r] = correct[..., phase == r].mean(axis=(-2, -1))
    return out


@eqx.filter_jit
def model_correct(model, contexts) -> jax.Array:
    """Top-1 correctness of one model's every query on `contexts` (M, L, S).

    **Returns:** booleans (M, queries), queries at `query_positions` of the model's task.
    """
    return jax.vmap(lambda tokens: top1_correct(*model.logits(tokens)))(contexts)


def held_out_contexts(run: TrainRun):
    """The held-out contexts a run's measures were taken on."""
    return sample_contexts(
        jax.random.fold_in(jax.random.key(run.seed), HELD_OUT_STREAM),
        run.task,
        run.train_config.eval_contexts,
    )


__all__ = [
    "CUMULATIVE",
    "FlowCheck",
    "PAPER_SETTINGS",
    "POSITIONS",
    "RUNGS",
    "PaperSetting",
    "TheoremFlow",
    "flow_check",
    "learns",
    "held_out_contexts",
    "model_correct",
    "paper_rung",
    "paper_run",
    "paper_setting",
    "paper_task",
    "phase_accuracy_by_position",
    "theorem_flow",
]
