"""Seeds sharded over several (forced host) devices give the numbers of the unsharded run."""

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    import inductheory as it
    assert jax.device_count() == 4, jax.devices()
    def compare(task, cfg, n):
        a = it.run_flow(task, cfg, n)
        b = it.run_flow(task, cfg, n, devices=jax.devices()[:1])
        assert a["summary"]["devices"] == 4 and b["summary"]["devices"] == 1
        pa, pb = a["per_seed"], b["per_seed"]
        for k in ("selected", "key_offsets", "value_offsets", "status", "num_steps"):
            np.testing.assert_array_equal(pa[k], pb[k], err_msg=k)
        np.testing.assert_allclose(pa["t_final"], pb["t_final"], rtol=1e-8)
        np.testing.assert_allclose(pa["final"]["biases"], pb["final"]["biases"], rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(pa["loss"], pb["loss"], rtol=1e-10, equal_nan=True)
        return a
    a = compare(it.Task(L=8, S=4, H=2, N=10**5, beta=4.0), it.FlowConfig(), 6)  # 6 seeds: padded to 8
    assert len(a["per_seed"]["status"]) == 6
    if FULL:
        compare(it.Task(L=4, S=3, H=1, N=48, beta=4.0), it.FlowConfig(dynamics="full", M=12, t_max=1e5), 4)
    print("OK")
    """
)


def _run(full: bool):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    script = f"FULL = {full}\n" + SCRIPT
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip().endswith("OK")


def test_sharded_equals_unsharded():
    _run(full=False)


@pytest.mark.slow
def test_sharded_equals_unsharded_full_dynamics():
    _run(full=True)
