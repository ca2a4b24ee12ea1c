"""`use_cpu_devices` and `--cpu-devices`: one XLA device per core, same offsets as one device."""

import json
import os
import subprocess
import sys

import jax
import pytest

import inductheory as it
from inductheory.cli import main


@pytest.mark.parametrize("count", [0, -1, 257, True, 1.5, "2"])
def test_bad_count_is_named(count):
    with pytest.raises(ValueError, match=r"count must be an integer from 1 to 256"):
        it.internal.use_cpu_devices(count)


def test_after_jax_started_only_the_same_count_is_accepted(capsys):
    have = len(jax.devices("cpu"))  # starts jax in this process
    assert it.internal.use_cpu_devices(have) == have
    with pytest.raises(
        RuntimeError, match=rf"before the first JAX computation: .* {have} CPU device"
    ):
        it.internal.use_cpu_devices(have + 1)
    # the command line says the same in one line
    assert main(["flow", "--cpu-devices", str(have + 1), "--quiet"]) == 2
    assert "before the first JAX computation" in capsys.readouterr().err


def test_more_devices_than_cores_warns():
    code = (
        "import warnings, os, jax, inductheory as it\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    n = it.internal.use_cpu_devices(os.cpu_count() + 1)\n"
        "assert jax.device_count() == n == os.cpu_count() + 1, jax.devices()\n"
        "assert any('more devices than the' in str(x.message) for x in w), w\n"
        "print('OK')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "OK", proc.stderr[-3000:]


def _cli(*argv):
    proc = subprocess.run(
        [sys.executable, "-m", "inductheory", *argv],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_cli_sweep_on_two_devices_gives_the_one_device_numbers():
    # sharded flows against unsharded ones, lane by lane: tests/test_flow_sharding.py
    argv = [
        "sweep",
        "loss",
        "--select",
        "0,2",
        "--grid",
        "beta=1,2,4,8",
        "--grid",
        "N=64,4096",
        "--quiet",
        "--json",
    ]
    one, two = _cli(*argv), _cli(*argv, "--cpu-devices", "2")
    assert one["attrs"]["devices"] == 1 and two["attrs"]["devices"] == 2
    assert one["attrs"]["platform"] == two["attrs"]["platform"] == "cpu"
    assert len(one["points"]) == len(two["points"]) == 8
    for p1, p2 in zip(one["points"], two["points"]):
        assert (p1["beta"], p1["N"], p1["phase_accuracy"]) == (
            p2["beta"],
            p2["N"],
            p2["phase_accuracy"],
        )
        assert p1["loss"] == pytest.approx(p2["loss"], rel=1e-13)
