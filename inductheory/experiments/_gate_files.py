"""Bring your own gates: read gate logits or probabilities over the window slots of a trained
model (npz or safetensors) and say, per head, where it concentrates and which query phase a
hard selection there would answer (docs/theory.md §9, §10).

A kernel that learns one positional bias per window slot stores exactly such a tensor: shape
(..., W), any leading axes (layer, head, ...), slots last. Its gate is the same in every window,
so the static and the average effective number of offsets of §9 coincide; a tensor that also
has a window (or context) axis gives both.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import os
from collections.abc import Mapping
from pathlib import Path

import jax.numpy as jnp
import numpy as np
from scipy.special import log_softmax

from ..internal._records import Record
from ..model._measures import effective_number, effective_offsets
from ..model._positions import phase_classes

# Which gate the tensor is: a key gate answers through its value one slot later, a value gate
# through its key one slot earlier, and a tied gate (keys and values from one score) none.
BRANCHES = ("key", "value", "tied")
# A head is sharp when its effective number of offsets is at most this: exp(H) >= 1 / max p, so
# a sharp head's argmax slot holds at least 2/3 of its mass.
SHARP_BELOW = 1.5
# Tolerance of the sum of a probability vector read from a file.
SUM_TOLERANCE = 1e-6
GATE_SUFFIXES = (".npz", ".npy", ".safetensors")


@dataclasses.dataclass(frozen=True)
class GateHead(Record):
    """One head of an analysed gate tensor.

    **Fields:**
    - `tensor`: the tensor's name (None for an unnamed array); `index`: the head's index over
      the tensor's leading axes (the window axis removed).
    - `argmax_slot`: the slot of largest probability (of the window-mean gate with a window
      axis; the first one on a tie); `peak`: its probability.
    - `effective_offsets`: the effective number of offsets $\\exp(H(\\alpha))$ of the gate,
      static over windows (`effective_offsets` of `inductheory.model`) when the tensor has a
      window axis; `average_offsets`: the window average of the per-window effective number
      (equal to `effective_offsets` without a window axis).
    - `sharp`: `effective_offsets` <= the analysis's `sharp_below`.
    - `phase`: the query phase (0..S-1) a hard selection at `argmax_slot` answers, or None:
      a key at slot r answers phase r mod S when its value at r + 1 lies in the window, a value
      at slot r answers the phase of its key at r - 1, a tied gate answers none.
    """

    tensor: str | None
    index: tuple[int, ...]
    argmax_slot: int
    peak: float
    effective_offsets: float
    average_offsets: float
    sharp: bool
    phase: int | None

    def __post_init__(self):
        # read back from JSON, the index is a list
        object.__setattr__(self, "index", tuple(self.index))

    def to_dict(self) -> dict:
        """The fields as a dict (`index` as a list)."""
        return super().to_dict() | {"index": list(self.index)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class GateCoverage(Record):
    """The phases the sharp heads of a `GateAnalysis` answer: `covered_phases` (by at least
    one sharp head), `uncovered_phases` (the others), `heads_per_phase` (sharp heads answering
    each phase 0..S-1) and `boundary_phase` (S - 1)."""

    covered_phases: list[int]
    uncovered_phases: list[int]
    heads_per_phase: list[int]
    boundary_phase: int


@dataclasses.dataclass(frozen=True)
class GateAnalysis:
    """What `analyze_gates` reads from gate tensors over W window slots at stride S.

    **Fields:**
    - `heads`: one `GateHead` per head, tensor by tensor, leading indices in C order.
    - `shapes`: each tensor's leading shape (the window axis removed), by name.
    - `window` (W), `stride` (S), `branch` (`"key"`, `"value"` or `"tied"`), `sharp_below`.
    - `heads_per_phase`: sharp heads answering each phase 0..S-1.
    - `covered_phases`, `uncovered_phases`: the phases answered by at least one sharp head, and
      the others; `boundary_phase`: S - 1, whose successor lies in the next stride (answerable
      only with W > S, docs/theory.md §10).

    **Example:** `analyze_gates(np.eye(4)[[0, 2]], probabilities=True).covered_phases` is
    `(0, 2)`: keys at slots 0 and 2 of W = S = 4 answer phases 0 and 2, not 1 and 3.
    """

    heads: tuple[GateHead, ...]
    shapes: dict
    window: int
    stride: int
    branch: str
    sharp_below: float
    heads_per_phase: tuple[int, ...]
    covered_phases: tuple[int, ...]
    uncovered_phases: tuple[int, ...]
    boundary_phase: int

    def per_head(self, field: str, tensor: str | None = None) -> np.ndarray:
        """One `GateHead` field of one tensor as an array of its leading shape.

        **Arguments:**
        - `field`: a `GateHead` field, e.g. `"argmax_slot"` or `"effective_offsets"`.
        - `tensor`: the tensor's name; may be left out when there is one tensor.

        **Returns:** a numpy array of the tensor's leading shape (`phase`: -1 for None).
        """
        if field not in {f.name for f in dataclasses.fields(GateHead)} - {"tensor"}:
            raise ValueError(f"field must be a GateHead field, got {field!r}")
        if tensor is None and len(self.shapes) == 1:
            tensor = next(iter(self.shapes))
        if tensor not in self.shapes:
            raise ValueError(
                f"tensor must be one of {sorted(map(str, self.shapes))}, got {tensor!r}"
            )
        values = [getattr(h, field) for h in self.heads if h.tensor == tensor]
        if field == "phase":
            values = [-1 if v is None else v for v in values]
        if field == "index":
            out = np.empty(len(values), dtype=object)
            out[:] = values
        else:
            out = np.asarray(values)
        return out.reshape(self.shapes[tensor])

    @property
    def coverage(self) -> GateCoverage:
        """The phase coverage of the sharp heads, as a record."""
        return GateCoverage(
            covered_phases=list(self.covered_phases),
            uncovered_phases=list(self.uncovered_phases),
            heads_per_phase=list(self.heads_per_phase),
            boundary_phase=self.boundary_phase,
        )

    def to_dict(self) -> dict:
        """The JSON report: the settings, `heads` (each head's `to_dict()`), `tensors` (name
        and leading shape of each) and `coverage` (phases covered and uncovered, sharp heads
        per phase, the boundary phase)."""
        return {
            "window": self.window,
            "stride": self.stride,
            "branch": self.branch,
            "sharp_below": self.sharp_below,
            "tensors": [{"name": k, "shape": list(v)} for k, v in self.shapes.items()],
            "heads": [h.to_dict() for h in self.heads],
            "coverage": self.coverage.to_dict(),
        }


def _what(name: str | None) -> str:
    return "gates" if name is None else f"tensor {name!r}"


def checked_gate_array(a, what: str = "gates") -> np.ndarray:
    """`a` as a float64 array of gate values with window slots last, or a one-line `ValueError`
    naming `what`: a real numeric array of rank >= 1, finite, with at least one head and 2 slots."""
    a = _real(a, what, "gate logits or probabilities")
    if a.ndim == 0:
        raise ValueError(
            f"{what} is a scalar: gates need window slots on the last axis, shape (..., W)"
        )
    if a.shape[-1] < 2:
        raise ValueError(
            f"{what} must have at least 2 window slots on its last axis, got shape {a.shape}"
        )
    if a.size == 0:
        raise ValueError(f"{what} has no heads: a leading axis of size 0 in {a.shape}")
    return _finite(a, what, "; a masked slot is a large negative logit")


def _real(a, what: str, holds: str) -> np.ndarray:
    """`a` as float64, or a one-line `ValueError` naming `what` unless it holds real numbers."""
    a = np.asarray(a)
    # ml_dtypes floats (bfloat16, ...) are kind "V": accept them by name
    if a.dtype.kind not in "fiu" and "float" not in a.dtype.name:
        raise ValueError(
            f"{what} must hold real numbers ({holds}), got dtype {a.dtype}"
        )
    return a.astype(np.float64)


def _finite(a: np.ndarray, what: str, hint: str = "") -> np.ndarray:
    """`a`, or a one-line `ValueError` naming `what` and its first non-finite entry."""
    bad = np.argwhere(~np.isfinite(a))
    if bad.size:
        idx = tuple(int(i) for i in bad[0])
        raise ValueError(
            f"{what} must be finite, got {a[idx]} at index {list(idx)} "
            f"({len(bad)} non-finite entries{hint})"
        )
    return a


def _probabilities(a: np.ndarray, probabilities: bool, what: str) -> np.ndarray:
    if not probabilities:
        # log-sum-exp: no overflow for large logits
        return np.exp(log_softmax(a, axis=-1))
    if np.any(a < 0):
        idx = tuple(int(i) for i in np.argwhere(a < 0)[0])
        raise ValueError(
            f"{what} read as probabilities must be >= 0, got {a[idx]} at index {list(idx)}"
        )
    sums = a.sum(axis=-1)
    off = np.abs(sums - 1)
    if np.any(off > SUM_TOLERANCE):
        idx = tuple(int(i) for i in np.unravel_index(np.argmax(off), sums.shape))
        raise ValueError(
            f"{what} read as probabilities must sum to 1 over the last axis within "
            f"{SUM_TOLERANCE:g}, got {sums[idx]:.10g} at index {list(idx)} (logits? "
            "leave out probabilities)"
        )
    return a


@functools.lru_cache(maxsize=64)
def slot_phases(W: int, S: int, branch: str = "key") -> tuple[int | None, ...]:
    """The query phase a hard selection at each window slot answers (None: none).

    A query at phase p is held by the entries that hold its position at the window offsets
    `phase_classes(...).hold_offset[p]` (p + kS < W); a key at such an offset r gives that entry
    the attention bonus and its value at r + 1 holds the target, so a key slot r answers the
    phase holding it when r + 1 < W. A value slot r answers what its key at r - 1 answers; a
    tied gate keys and reads one slot and answers no phase (docs/theory.md §10).

    **Arguments:**
    - `W`: window slots; `S`: the stride, 2 <= S <= W.
    - `branch`: `"key"`, `"value"` or `"tied"`.

    **Returns:** a tuple of W phases or None.

    ```python
    slot_phases(6, 4)  # (0, 1, 2, 3, 0, None): slot 3 answers the boundary phase, 5 nothing
    ```
    """
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {', '.join(BRANCHES)}, got {branch!r}")
    if not 2 <= S <= W:
        raise ValueError(
            f"stride must lie in 2..W = 2..{W} (windows cover their stride), got {S}"
        )
    classes = phase_classes(
        W // S + 2, S, W, "all"
    )  # enough entries for no window to wrap
    key = [None] * W
    for p, held in enumerate(classes.hold_offset):
        for r in held[(held >= 0) & (held + 1 < W)]:
            key[int(r)] = p
    if branch == "key":
        return tuple(key)
    if branch == "value":
        return (None, *key[:-1])
    return (None,) * W


def analyze_gates(
    gates,
    *,
    probabilities: bool = False,
    stride: int | None = None,
    branch: str = "key",
    window_axis: int | None = None,
    sharp_below: float = SHARP_BELOW,
) -> GateAnalysis:
    """Per head: argmax slot, effective offsets and the phase a hard selection there answers;
    and the phase coverage of the sharp heads.

    **Arguments:**
    - `gates`: gate logits or probabilities of shape (..., W), window slots last and any leading
      axes (layer, head, ...), or a mapping name -> such arrays (one analysis over all of them;
      every tensor must have the same W). `load_gate_tensors` reads them from a file.
    - `probabilities`: read the values as probabilities (>= 0, summing to 1 within 1e-6);
      default: logits, turned into probabilities by a softmax over the last axis.
    - `stride`: S, with 2 <= S <= W (default W); W > S are overlapping windows
      (docs/theory.md §10).
    - `branch`: the gate's role: `"key"` (default), `"value"` or `"tied"` (see `slot_phases`).
    - `window_axis`: a leading axis indexing windows or contexts, if any: it is reduced, giving
      the static and the average effective number of offsets of docs/theory.md §9.
    - `sharp_below`: a head is sharp when its (static) effective number of offsets is at most
      this, >= 1 (default 1.5: its argmax slot then holds at least 2/3 of the mass).

    **Returns:** a `GateAnalysis`.

    ```python
    logits = np.zeros((2, 3, 8)); logits[..., 1] = 20.0  # 2 layers x 3 heads, all on slot 1
    a = analyze_gates(logits, stride=4)
    a.per_head("argmax_slot")  # 1 everywhere; a.uncovered_phases == (0, 2, 3)
    ```
    """
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {', '.join(BRANCHES)}, got {branch!r}")
    if isinstance(sharp_below, bool) or not (
        isinstance(sharp_below, (int, float, np.number)) and sharp_below >= 1
    ):
        raise ValueError(f"sharp_below must be a number >= 1, got {sharp_below!r}")
    named = (
        dict(gates)
        if isinstance(gates, Mapping)
        else {None: gates}  # one unnamed array
    )
    if not named:
        raise ValueError("gates must hold at least one tensor, got an empty mapping")
    arrays = {k: checked_gate_array(v, _what(k)) for k, v in named.items()}
    widths = {k: a.shape[-1] for k, a in arrays.items()}
    W = next(iter(widths.values()))
    if len(set(widths.values())) > 1:
        raise ValueError(
            "every tensor must have the same number of window slots W (last axis), got "
            + ", ".join(f"{k}: {w}" for k, w in widths.items())
            + " (select tensors of one W)"
        )
    S = W if stride is None else stride
    if isinstance(S, bool) or not isinstance(S, (int, np.integer)) or not 2 <= S <= W:
        raise ValueError(
            f"stride must be an integer in 2..W = 2..{W} (windows cover their stride), got {S!r}"
        )
    S = int(S)
    phase_of = slot_phases(W, S, branch)
    heads, shapes = [], {}
    for name, a in arrays.items():
        p = _probabilities(a, probabilities, _what(name))
        if window_axis is None:
            mean = p
            static = avg = np.asarray(effective_number(jnp.asarray(p)))
        else:
            axis = _leading_axis(window_axis, p.ndim, _what(name))
            windows = np.moveaxis(p, axis, -2)
            mean = windows.mean(axis=-2)
            static, avg = (
                np.asarray(x) for x in effective_offsets(jnp.asarray(windows))
            )
        argmax = np.argmax(mean, axis=-1)
        peak = np.take_along_axis(mean, argmax[..., None], axis=-1)[..., 0]
        shapes[name] = tuple(int(n) for n in mean.shape[:-1])
        for index in np.ndindex(*shapes[name]):
            r = int(argmax[index])
            heads.append(
                GateHead(
                    tensor=name,
                    index=tuple(int(i) for i in index),
                    argmax_slot=r,
                    peak=float(peak[index]),
                    effective_offsets=float(static[index]),
                    average_offsets=float(avg[index]),
                    sharp=bool(static[index] <= sharp_below),
                    phase=phase_of[r],
                )
            )
    per_phase = [0] * S
    for h in heads:
        if h.sharp and h.phase is not None:
            per_phase[h.phase] += 1
    return GateAnalysis(
        heads=tuple(heads),
        shapes=shapes,
        window=W,
        stride=S,
        branch=branch,
        sharp_below=float(sharp_below),
        heads_per_phase=tuple(per_phase),
        covered_phases=tuple(p for p in range(S) if per_phase[p]),
        uncovered_phases=tuple(p for p in range(S) if not per_phase[p]),
        boundary_phase=S - 1,
    )


def _leading_axis(axis, ndim: int, what: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"window_axis must be an integer, got {axis!r}")
    lead = ndim - 1  # the last axis holds the slots
    if not -lead <= axis < lead:
        raise ValueError(
            f"window_axis must name a leading axis of {what} (-{lead}..{lead - 1}, the "
            f"slots are last), got {axis}"
            if lead
            else f"window_axis needs a leading axis, but {what} has only its slots"
        )
    return int(axis) % lead


def load_gate_tensors(path, tensor: str | None = None) -> dict[str, np.ndarray]:
    """Gate tensors of an .npz, .npy or .safetensors file, by name.

    **Arguments:**
    - `path`: the file; .npy holds one array, named by the file's stem.
    - `tensor`: a name, or a glob (`fnmatch`: `*`, `?`, `[...]`) selecting several; default
      every tensor of the file.

    **Returns:** `{name: float64 array}` in the file's order, each checked by
    `checked_gate_array` (rank >= 1, finite, at least 2 slots on the last axis).

    Every problem is a one-line `ValueError` naming the file and the tensor: an unknown suffix,
    a missing or unreadable file, a directory, a broken link or a file that is not regular (a
    link to a regular file is read), an object array (never unpickled), an .npy header declaring
    more data than the file holds (refused before allocating it), no tensor matching `tensor`
    (the available names are listed), a scalar, a non-numeric or non-finite tensor.

    ```python
    np.savez("gates.npz", layer0=np.zeros((4, 8)), layer1=np.zeros((4, 8)))
    load_gate_tensors("gates.npz", "layer*").keys()  # layer0, layer1
    ```
    """
    path = Path(path)
    raw = _read_tensors(path, tensor)
    return {n: checked_gate_array(a, f"{path}: tensor {n!r}") for n, a in raw.items()}


def _read_tensors(path: Path, tensor: str | None) -> dict[str, np.ndarray]:
    """The named arrays of a gate file, unchecked (every read problem one `ValueError` line)."""
    suffix = path.suffix.lower()
    if suffix not in GATE_SUFFIXES:
        raise ValueError(
            f"{path}: unknown gate file type {path.suffix or '(no suffix)'!r}; expected "
            f"{', '.join(GATE_SUFFIXES)}"
        )
    _require_regular_file(path)
    try:
        if suffix == ".safetensors":
            return _read_safetensors(path, tensor)
        if suffix == ".npz":
            # our own handle, closed however np.load ends (a damaged archive leaks its own)
            with open(path, "rb") as f, np.load(f, allow_pickle=False) as store:
                return {n: store[n] for n in _select(list(store.files), tensor, path)}
        with open(path, "rb") as f:
            names = _select([path.stem], tensor, path)
            _require_npy_data(f, path)
            return {n: np.load(f, allow_pickle=False) for n in names}
    except ValueError as err:
        if str(err).startswith(f"{path}:"):
            raise
        raise ValueError(f"{path}: cannot read it as {suffix}: {_line(err)}") from None
    except (
        Exception
    ) as err:  # a corrupt archive or header: one line, whatever raised it
        raise ValueError(
            f"{path}: cannot read it as {suffix}: {type(err).__name__}: {_line(err)}"
        ) from None


def _require_regular_file(path: Path) -> None:
    """A one-line `ValueError` unless `path` is (or links to) a regular file: missing, a link to
    nothing, a directory, or a device, pipe or socket (reading one could block or never end)."""
    if not os.path.lexists(path):
        raise ValueError(f"{path}: no such file")
    if path.is_symlink() and not path.exists():
        raise ValueError(
            f"{path}: a link to {os.readlink(path)!r}, which does not exist (a broken link)"
        )
    if path.is_dir():
        raise ValueError(
            f"{path}: is a directory, not a gate file; name the {'/'.join(GATE_SUFFIXES)} "
            "file in it"
        )
    if not path.is_file():
        raise ValueError(
            f"{path}: not a regular file (a device, pipe or socket); gates are read from a "
            "regular file"
        )


def _require_npy_data(f, path: Path) -> None:
    """Refuse an .npy file whose header declares more data than the file holds (a truncated or
    forged file), before numpy allocates the declared size; `f` is left at the start."""
    fmt = np.lib.format
    version = fmt.read_magic(f)
    shape, _, dtype = (
        fmt.read_array_header_1_0(f)
        if version == (1, 0)
        else fmt.read_array_header_2_0(f)
    )
    if not dtype.hasobject:  # object arrays are refused by np.load, unread
        declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
        held = os.fstat(f.fileno()).st_size - f.tell()
        if declared > held:
            raise ValueError(
                f"{path}: its header declares shape {shape} of {dtype} ({declared} bytes) "
                f"but the file holds {held} bytes of data (truncated or damaged)"
            )
    f.seek(0)


def _line(err) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _read_safetensors(path: Path, tensor: str | None) -> dict:
    try:
        from safetensors import safe_open
    except (
        ImportError
    ):  # a declared dependency, but say what is missing if it is not there
        raise ValueError(
            f"{path}: reading .safetensors needs the safetensors package (pip install "
            "safetensors)"
        ) from None
    with safe_open(str(path), framework="np") as f:  # loads only the selected tensors
        return {n: f.get_tensor(n) for n in _select(list(f.keys()), tensor, path)}


def _select(names: list[str], tensor: str | None, path: Path) -> list[str]:
    if not names:
        raise ValueError(f"{path}: the file holds no tensor")
    if tensor is None:
        return names
    if tensor in names:
        return [tensor]
    chosen = [n for n in names if fnmatch.fnmatchcase(n, tensor)]
    if not chosen:
        shown = ", ".join(names[:20]) + (
            f" (and {len(names) - 20} more)" if len(names) > 20 else ""
        )
        raise ValueError(f"{path}: no tensor matches {tensor!r}; available: {shown}")
    return chosen


__all__ = [
    "BRANCHES",
    "SHARP_BELOW",
    "GateAnalysis",
    "GateCoverage",
    "GateHead",
    "analyze_gates",
    "checked_gate_array",
    "load_gate_tensors",
    "slot_phases",
]
