"""Seeds sharded over several (forced host) devices give the numbers of the unsharded run."""

import textwrap

import pytest
from forced_devices import run_on_host_devices

SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    import inductheory as it
    assert jax.device_count() == 4, jax.devices()
    def compare(task, cfg, n):
        a = it.run_flow(task, cfg, n)
        b = it.run_flow(task, cfg, n, devices=jax.devices()[:1])
        assert a.summary.devices == 4 and b.summary.devices == 1
        pa, pb = a.per_seed.to_dict(), b.per_seed.to_dict()
        for k in ("selected", "key_offsets", "value_offsets", "status", "num_steps"):
            np.testing.assert_array_equal(pa[k], pb[k], err_msg=k)
        np.testing.assert_allclose(pa["t_final"], pb["t_final"], rtol=1e-8)
        np.testing.assert_allclose(
            pa["final"]["biases"], pb["final"]["biases"], rtol=1e-8, atol=1e-12
        )
        np.testing.assert_allclose(pa["loss"], pb["loss"], rtol=1e-10, equal_nan=True)
        return a
    # 6 seeds: padded to 8
    a = compare(it.Task(L=8, S=4, H=2, N=10**5, beta=4.0), it.FlowConfig(), 6)
    assert len(a.per_seed.status) == 6
    if FULL:
        full = it.FlowConfig(dynamics="full", M=12, t_max=1e5)
        compare(it.Task(L=4, S=3, H=1, N=48, beta=4.0), full, 4)
    print("OK")
    """
)


def _run(full: bool):
    run_on_host_devices(f"FULL = {full}\n" + SCRIPT)


def test_sharded_equals_unsharded():
    _run(full=False)


@pytest.mark.slow
def test_sharded_equals_unsharded_full_dynamics():
    _run(full=True)
