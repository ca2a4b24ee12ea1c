"""Run a Python script in a fresh process whose CPU is split into several XLA host devices."""

import os
import subprocess
import sys


def run_on_host_devices(script: str, devices: int = 4, timeout: int = 900) -> None:
    """Run `script` with `devices` forced host devices; fail unless it exits 0 and prints OK
    last."""
    # added to the inherited flags: the default run's fast-compile flags (tests/conftest.py) reach
    # the subprocess too; sharded and unsharded runs in it compile with the same flags
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}"
    env = dict(os.environ, XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip().endswith("OK")
