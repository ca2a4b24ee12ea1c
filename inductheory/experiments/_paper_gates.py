"""Gate files of the paper's parameterization (written by `inductheory matrix --export-gates`,
read by `inductheory gates --paper`): the gate logits $Z_o h_{j,o} + b_o$ of every gated layer,
and the stride the file's windows prove, checked so that a file that lies (a renamed tensor
leaving another behind, integer parameters, a stride that is not the one it was trained at) is
refused in one line naming the file and the tensor instead of being analysed as it is."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from ._gate_files import BRANCHES, _finite, _read_tensors

# Names of the paper parameterization's tensors (`paper_gate_tensors` writes them).
MAP_SUFFIX, BIAS_SUFFIX, WINDOWS_SUFFIX = ".gate_map", ".gate_bias", ".windows"


@dataclasses.dataclass(frozen=True)
class PaperGates:
    """What `read_paper_gates` reads from a file.

    - `logits`: `{PREFIX.branch: (windows, kv, channels, W) float64}`, for `analyze_gates`
      with `window_axis=0`.
    - `stride`: the stride S the file's windows advance by (`windows_stride`), the same for
      every layer.
    """

    logits: dict[str, np.ndarray]
    stride: int


def windows_stride(h: np.ndarray) -> int:
    """The stride S of consecutive windows $h_{j,o}$ (windows, W, d) of a context: the least
    s in 1..W-1 with $h_{j+1,o} = h_{j,o+s}$ (o < W - s) for most consecutive pairs j, j + 1
    (the pairs across two contexts do not overlap), else W (windows that do not overlap).

    ```python
    h = np.arange(12.0)[np.arange(0, 8, 2)[:, None] + np.arange(4)][..., None]  # W 4, S 2
    windows_stride(h)  # 2
    ```
    """
    n, W = h.shape[0], h.shape[1]
    if n < 2:
        return W
    for s in range(1, W):
        same = np.all(h[1:, : W - s] == h[:-1, s:], axis=(1, 2))
        if 2 * int(same.sum()) > n - 1:
            return s
    return W


def read_paper_gates(
    path, branch: str = "key", stride: int | None = None
) -> PaperGates:
    """Gate logits computed from the paper's parameterization read from a file: for every
    tensor `P.{branch}.gate_map` $Z$ (kv, W, channels, d), with `P.{branch}.gate_bias` $b$
    (kv, W, channels) if present and the inputs `P.windows` $h$ (windows, W, d),
    $s_{j,k,c,o} = Z_{k,o,c} \\cdot h_{j,o} + b_{k,o,c}$ (float64).

    **Arguments:**
    - `path`: an .npz or .safetensors file (e.g. written by `inductheory matrix
      --export-gates`, from `paper_gate_tensors`).
    - `branch`: `"key"`, `"value"` or `"tied"`.
    - `stride`: the stride to analyse at; refused unless it is the one the windows advance by
      (`windows_stride`; default: that one).

    **Returns:** a `PaperGates`.

    Every problem is a one-line `ValueError` naming the file and the tensor: no gate map of the
    branch (the available ones are listed), a tensor that is none of the parameterization's
    (a renamed gate map leaves its layer's other tensors behind), a layer with some of its
    gate maps missing, a missing `windows` tensor, parameters that are not floating point,
    shapes that do not fit, layers of different strides, a `stride` the windows contradict.

    ```python
    gates = read_paper_gates("gates.safetensors", "key")
    gates.stride, list(gates.logits)
    ```
    """
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {', '.join(BRANCHES)}, got {branch!r}")
    path = Path(path)
    raw = _read_tensors(path, None)
    layers = _layers(raw, path)
    maps = [n for n in raw if n.endswith(f".{branch}{MAP_SUFFIX}")]
    if not maps:
        found = sorted({n.rsplit(".", 2)[-2] for n in raw if n.endswith(MAP_SUFFIX)})
        raise ValueError(
            f"{path}: no {branch} gate map (tensors named PREFIX.{branch}{MAP_SUFFIX}); "
            f"branches in the file: {', '.join(found) or 'none'}"
        )
    lacking = [p for p, branches in layers.items() if branch not in branches]
    if lacking:
        raise ValueError(
            f"{path}: layer {lacking[0]!r} has no {branch} gate map "
            f"({lacking[0]}.{branch}{MAP_SUFFIX}) while "
            f"{len(layers) - len(lacking)} other layers have one: renamed or missing?"
        )
    out, strides = {}, {}
    for name in maps:
        prefix = name[: -len(f".{branch}{MAP_SUFFIX}")]
        Z = _parameter(raw[name], path, name, 4)
        K, W, g, d = Z.shape
        windows = f"{prefix}{WINDOWS_SUFFIX}"
        h = _parameter(raw[windows], path, windows, 3)
        if h.shape[1:] != (W, d):
            raise ValueError(
                f"{path}: tensor {windows!r} must have shape (windows, {W}, {d}) to fit "
                f"{name} {Z.shape}, got {h.shape}"
            )
        strides[windows] = windows_stride(h)
        logits = np.einsum("kocd,jod->jkco", Z, h)
        bias = f"{prefix}.{branch}{BIAS_SUFFIX}"
        if bias in raw:
            b = _parameter(raw[bias], path, bias, 3)
            if b.shape != (K, W, g):
                raise ValueError(
                    f"{path}: tensor {bias!r} must have shape {(K, W, g)}, got {b.shape}"
                )
            logits = logits + np.moveaxis(b, 1, 2)[None]
        out[f"{prefix}.{branch}"] = logits
    found = sorted(set(strides.values()))
    if len(found) > 1:
        raise ValueError(
            f"{path}: its windows advance by different strides: "
            + ", ".join(f"{n} {s}" for n, s in strides.items())
        )
    if stride is not None and stride != found[0]:
        raise ValueError(
            f"stride {stride} does not match {path}: its windows "
            f"({next(iter(strides))}) advance by {found[0]} positions (the stride it was "
            f"trained at); leave the stride out or give {found[0]}"
        )
    return PaperGates(logits=out, stride=found[0])


def load_paper_gates(path, branch: str = "key") -> dict[str, np.ndarray]:
    """The logits of `read_paper_gates(path, branch)`: `{P.branch: logits (windows, kv,
    channels, W)}`, for `analyze_gates` with `window_axis=0`.

    ```python
    logits = load_paper_gates("gates.safetensors", "value")
    ```
    """
    return read_paper_gates(path, branch).logits


def _layers(raw: dict, path: Path) -> dict[str, set[str]]:
    """`{prefix: branches}` of the file's gated layers, or a one-line `ValueError` naming a
    tensor that is none of PREFIX.windows, PREFIX.BRANCH.gate_map, PREFIX.BRANCH.gate_bias, a
    gate map without its layer's windows, windows without a gate map."""
    layers: dict[str, set[str]] = {}
    biases = []
    for name in raw:
        if name.endswith(WINDOWS_SUFFIX):
            layers.setdefault(name[: -len(WINDOWS_SUFFIX)], set())
            continue
        head, _, kind = name.rpartition(".")
        prefix, _, branch = head.rpartition(".")
        if prefix and branch in BRANCHES and f".{kind}" in (MAP_SUFFIX, BIAS_SUFFIX):
            if f".{kind}" == MAP_SUFFIX:
                layers.setdefault(prefix, set()).add(branch)
            else:
                biases.append((name, prefix, branch))
            continue
        raise ValueError(
            f"{path}: tensor {name!r} is none of the paper parameterization's "
            f"(PREFIX{WINDOWS_SUFFIX}, PREFIX.BRANCH{MAP_SUFFIX}, PREFIX.BRANCH{BIAS_SUFFIX}, "
            f"BRANCH one of {', '.join(BRANCHES)}): renamed or foreign?"
        )
    for name, prefix, branch in biases:
        if branch not in layers.get(prefix, ()):
            raise ValueError(
                f"{path}: tensor {name!r} has no gate map {prefix}.{branch}{MAP_SUFFIX}"
            )
    for prefix, branches in layers.items():
        if not branches:
            raise ValueError(
                f"{path}: tensor {prefix + WINDOWS_SUFFIX!r} has no gate map "
                f"({prefix}.BRANCH{MAP_SUFFIX}): a gate map renamed or missing?"
            )
        if f"{prefix}{WINDOWS_SUFFIX}" not in raw:
            raise ValueError(
                f"{path}: {prefix}.{min(branches)}{MAP_SUFFIX} needs the inputs "
                f"{prefix + WINDOWS_SUFFIX!r}, not in the file"
            )
    return layers


def _parameter(a, path: Path, name: str, ndim: int) -> np.ndarray:
    """A tensor of the paper parameterization as float64: floating point (trained parameters
    and activations; integers would be a file that lies), `ndim` axes, finite."""
    what = f"{path}: tensor {name!r}"
    a = np.asarray(a)
    # ml_dtypes floats (bfloat16, ...) are kind "V": accept them by name
    if a.dtype.kind != "f" and "float" not in a.dtype.name:
        raise ValueError(
            f"{what} must hold floating-point numbers (trained gate parameters or their "
            f"inputs), got dtype {a.dtype}"
        )
    a = a.astype(np.float64)
    if a.ndim != ndim:
        raise ValueError(f"{what} must have {ndim} axes, got shape {a.shape}")
    return _finite(a, what)


__all__ = [
    "PaperGates",
    "load_paper_gates",
    "read_paper_gates",
    "windows_stride",
]
