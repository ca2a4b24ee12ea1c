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


def test_core_sets_share_the_cores_out():
    from inductheory.internal._devices import core_sets

    assert core_sets([0, 1], 2) == [{0}, {1}]
    assert core_sets([3, 0, 1, 2, 4], 2) == [{0, 1, 2}, {3, 4}]  # sorted first
    assert core_sets([0, 1, 2, 3, 4, 5, 6], 3) == [{0, 1, 2}, {3, 4}, {5, 6}]
    assert core_sets([0, 1], 3) == [{0}, {1}, {0}]  # more workers than cores
    assert core_sets([5], 1) == [{5}]
    for n_cores in range(1, 10):
        cores = list(range(10, 10 + n_cores))
        for workers in range(1, n_cores + 1):
            sets = core_sets(cores, workers)
            # disjoint, covering every core, sizes within one of each other
            assert sorted(c for s in sets for c in s) == cores
            assert max(map(len, sets)) - min(map(len, sets)) <= 1
    with pytest.raises(ValueError, match="at least one core and one worker"):
        core_sets([0, 1], 0)


def _affinity_of_child(queue):
    queue.put(sorted(os.sched_getaffinity(0)))


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform"
)
def test_a_process_started_on_cores_runs_there():
    import multiprocessing

    from inductheory.internal._devices import on_cores, usable_cores

    before = usable_cores()
    one = frozenset(before[-1:])
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_affinity_of_child, args=(queue,))
    with on_cores(one):
        assert usable_cores() == sorted(one)
        process.start()
    assert usable_cores() == before  # the starting thread gets its cores back
    assert queue.get(timeout=60) == sorted(one)
    process.join(timeout=60)
    with on_cores(None):  # leaves it as it is
        assert usable_cores() == before


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform"
)
def test_cores_the_system_refuses_leave_the_thread_as_it_is():
    from inductheory.internal._devices import on_cores, usable_cores

    before = usable_cores()
    with on_cores(frozenset({10**6})):  # no such core: EINVAL
        assert usable_cores() == before
    assert usable_cores() == before
