"""Bad input on the paper family's commands (issue 65): a stride that does not divide the phase
period, grids too large to start, schedulers that do not answer or answer with garbage
(local listeners on 127.0.0.1 only, each bounded and stopping by itself), -0.0, and gates whose
key mass is not one."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time

import numpy as np
import pytest

from inductheory.cli import main
from inductheory.model._gates import SharedGates
from inductheory.model._task import Task


def _nothing_written(out) -> bool:
    """Nothing but the record of the directory's claim (`.inductheory-out`) under `out`."""
    return not out.exists() or not [p for p in out.rglob("*") if p.name[0] != "."]


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert len(lines) == 1, err
    return lines[0]


# --- a stride whose period does not divide the phase grouping --------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["matrix", "--rows", "all", "--S", "16", "--W", "16"],
        ["train", "paper", "--S", "16", "--W", "16"],
        ["sweep", "matrix", "--grid", "S=16", "--grid", "W=16"],
    ],
)
def test_a_stride_that_does_not_divide_the_phase_period_is_refused(
    argv, tmp_path, capsys
):
    """Phases are positions mod 24: with S = 16 phase 15 would hold position 15 (a boundary,
    15 mod 16 = 15) and position 39 (39 mod 16 = 7, inside a block). Refused, not regrouped."""
    out = tmp_path / "out"
    start = time.perf_counter()
    assert main([*argv, "--quick", "--quiet", "--out", str(out)]) == 2
    line = _error_line(capsys)
    assert "S must divide the phase period 24" in line and "S=16" in line, line
    assert time.perf_counter() - start < 30
    assert _nothing_written(out)
    # the brute-force reason: some phase mod 24 mixes boundary and interior positions
    boundary = {p % 24 for p in range(96) if p % 16 == 15}
    interior = {p % 24 for p in range(96) if p % 16 != 15}
    assert boundary & interior


def test_a_stride_that_divides_the_period_is_accepted():
    from inductheory.trained._architecture import Architecture, RetrievalTask

    task = RetrievalTask(T=96, N=128, period=24)
    for S in (1, 2, 3, 4, 6, 8, 12, 24):  # the divisors of 24
        Architecture(W=max(S, 8), S=S).check_task(task)


# --- a sweep matrix grid of 10^6 points ------------------------------------------------------


def test_a_matrix_grid_of_a_million_points_is_refused_at_once(capsys):
    lr = ",".join(str(1e-3 * (1 + i / 1000)) for i in range(1000))
    steps = ",".join(str(100 + i) for i in range(1000))
    start = time.perf_counter()
    code = main(
        ["sweep", "matrix", "--quick", "--quiet", "--grid", f"lr={lr}"]
        + ["--grid", f"steps={steps}", "--grid", "row=W8/S8 1 KV (reference)"]
    )
    line = _error_line(capsys)
    assert code == 2, line
    assert "grid has 1000000 points" in line and "at most 10000" in line, line
    assert time.perf_counter() - start < 10


# --- --scheduler: not an address, a closed port, a garbage listener --------------------------


@contextlib.contextmanager
def _listener(reply: bytes, hold_s: float = 15.0):
    """A socket server on 127.0.0.1 that sends `reply` to every connection and then keeps it
    open, silent, for `hold_s` seconds; it stops by itself after 30 s at most."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()
    deadline = time.monotonic() + 30

    def serve_one(conn):
        with conn:
            with contextlib.suppress(OSError):
                conn.sendall(reply)
                stop.wait(hold_s)

    def serve():
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=serve_one, args=(conn,), daemon=True).start()
        server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)


def _closed_port() -> int:
    with socket.socket() as s:  # a port just freed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


GARBAGE = {
    "text": b"HTTP/1.1 400 Bad Request\r\n\r\nnot dask\r\n" * 4,
    # Dask's frame header announcing one frame of 2^61 bytes, then silence
    "huge frame": struct.pack("<QQ", 1, 2**61),
    "bytes": bytes(range(256)) * 4,
    "nothing": b"",  # accepts, then says nothing: no handshake within the timeout
}


@pytest.mark.parametrize("argv", [["sweep", "matrix", "--quick"]])
@pytest.mark.parametrize(
    "address, expected",
    [
        (
            "not a url",
            "argument --scheduler: scheduler must be a Dask scheduler address",
        ),
        ("", "argument --scheduler: scheduler must be a Dask scheduler address"),
        ("tcp://127.0.0.1:99999", "port must be in 1..65535"),
        ("http://127.0.0.1:8786", "must use one of the schemes"),
        ("closed", "cannot connect"),
    ],
)
def test_a_scheduler_that_is_not_one_is_refused_in_one_line(
    argv, address, expected, tmp_path, capsys
):
    if address == "closed":
        address = f"tcp://127.0.0.1:{_closed_port()}"
    start = time.perf_counter()
    out = tmp_path / "out"
    assert main([*argv, "--quiet", "--scheduler", address, "--out", str(out)]) == 2
    line = _error_line(capsys)
    assert "--scheduler" in line and expected in line, line
    assert time.perf_counter() - start < 10
    assert _nothing_written(out)


@pytest.mark.parametrize("garbage", sorted(GARBAGE))
def test_a_listener_that_answers_garbage_is_refused_within_10_s(
    garbage, tmp_path, capsys
):
    with _listener(GARBAGE[garbage]) as address:
        start = time.perf_counter()
        code = main(
            ["sweep", "matrix", "--quick", "--quiet", "--scheduler", address]
            + ["--out", str(tmp_path / "out")]
        )
        took = time.perf_counter() - start
    line = _error_line(capsys)
    assert code == 2, line
    assert f"--scheduler {address!r}" in line, line
    assert "Dask scheduler" in line, line
    assert took < 10, took
    # the refused handshake leaves dask's default scheduler alone (it had been left at
    # "dask.distributed" with no client, which broke the next file's local sweeps)
    import dask

    assert dask.config.get("scheduler", None) != "dask.distributed"


# --- -0.0 is 0.0 ---------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:outside the theorems' assumptions")
def test_kappa_minus_zero_is_zero_in_json_and_in_cache_keys(capsys):
    from inductheory.internal._io import parameter_key

    plus, minus = (Task(L=4, S=3, H=2, N=48, kappa=k) for k in (0.0, -0.0))
    assert json.dumps(minus.to_dict()) == json.dumps(plus.to_dict())
    assert np.signbit(minus.kappa) == np.signbit(0.0)
    assert parameter_key(minus.to_dict()) == parameter_key(plus.to_dict())
    outputs = []
    for k in ("0.0", "-0.0"):
        argv = ["loss", "--L", "4", "--S", "3", "--H", "2", "--N", "48"]
        assert main([*argv, "--uniform", "--kappa", k, "--json"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert "-0.0" not in outputs[1]


# --- gates whose key mass is not one -------------------------------------------------------


@pytest.mark.parametrize("mass", [5.0, 0.5, 0.0])
def test_key_gates_whose_mass_is_not_one_are_refused(mass):
    key = np.full((2, 3), mass / 3)
    value = np.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match="key gates must sum to one"):
        SharedGates(key=key, value=value)


def test_key_gates_of_a_float32_softmax_are_accepted():
    logits = np.random.default_rng(0).normal(size=(4, 64)).astype(np.float32)
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    SharedGates(key=p, value=np.zeros_like(p))  # a knocked-out value: zero on purpose


# --- gate files that lie ---------------------------------------------------------------------


def _paper_file(path, *, S=8, W=8, T=24, contexts=3, d=5, layers=2, change=None):
    """A gate file as `write_gate_file` lays it out: per layer the windows h of every context
    at the slots `entry_positions(T / S, S, W)` of a random stream, and random key and value
    gate maps and biases (float32)."""
    from safetensors.numpy import save_file

    from inductheory.model._positions import entry_positions

    rng = np.random.default_rng(0)
    slots = entry_positions(T // S, S, W)
    tensors = {}
    for i in range(layers):
        stream = rng.normal(size=(contexts, T, d))
        tensors[f"seed0.layer{i}.windows"] = stream[:, slots].reshape(-1, W, d)
        for branch in ("key", "value"):
            tensors[f"seed0.layer{i}.{branch}.gate_map"] = rng.normal(size=(1, W, 1, d))
            tensors[f"seed0.layer{i}.{branch}.gate_bias"] = rng.normal(size=(1, W, 1))
    tensors = {k: v.astype(np.float32) for k, v in tensors.items()}
    if change is not None:
        change(tensors)
    save_file(tensors, str(path))
    return path


@pytest.mark.parametrize("S, W", [(8, 8), (4, 8), (2, 8), (3, 6)])
def test_a_paper_gate_file_proves_its_stride(S, W, tmp_path, capsys):
    from inductheory.experiments import read_paper_gates

    path = _paper_file(tmp_path / "g.safetensors", S=S, W=W)
    assert read_paper_gates(path).stride == S
    assert main(["gates", str(path), "--paper", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stride"] == S
    assert main(["gates", str(path), "--paper", "--stride", str(S), "--json"]) == 0


@pytest.mark.parametrize("S, W, stride", [(8, 8, 4), (8, 8, 3), (4, 8, 8), (4, 8, 3)])
def test_a_stride_the_paper_file_contradicts_is_refused(S, W, stride, tmp_path, capsys):
    path = _paper_file(tmp_path / "g.safetensors", S=S, W=W)
    assert main(["gates", str(path), "--paper", "--stride", str(stride)]) == 2
    line = _error_line(capsys)
    assert f"stride {stride} does not match" in line and f"advance by {S}" in line


def _rename(old, new):
    def change(tensors):
        tensors[new] = tensors.pop(old)

    return change


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            _rename("seed0.layer1.key.gate_map", "seed0.layer1.key.gate_mapX"),
            "tensor 'seed0.layer1.key.gate_mapX' is none of the paper parameterization's",
        ),
        (
            _rename("seed0.layer1.key.gate_map", "seed0.layer1.key_gate_map"),
            "tensor 'seed0.layer1.key_gate_map' is none",
        ),
        (
            lambda t: t.pop("seed0.layer1.key.gate_map"),
            "tensor 'seed0.layer1.key.gate_bias' has no gate map",
        ),
        (
            lambda t: [t.pop(f"seed0.layer1.key.gate_{k}") for k in ("map", "bias")],
            "layer 'seed0.layer1' has no key gate map",
        ),
        (
            lambda t: [
                t.pop(f"seed0.layer1.{b}.gate_{k}")
                for b in ("key", "value")
                for k in ("map", "bias")
            ],
            "tensor 'seed0.layer1.windows' has no gate map",
        ),
        (
            lambda t: t.update(
                {
                    "seed0.layer0.key.gate_map": t["seed0.layer0.key.gate_map"].astype(
                        np.int32
                    )
                }
            ),
            "must hold floating-point numbers",
        ),
    ],
)
def test_a_paper_gate_file_that_lies_is_refused(change, expected, tmp_path, capsys):
    path = _paper_file(tmp_path / "g.safetensors", change=change)
    assert main(["gates", str(path), "--paper"]) == 2
    line = _error_line(capsys)
    assert str(path) in line and expected in line, line
