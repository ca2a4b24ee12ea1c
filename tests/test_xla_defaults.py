"""The process-wide XLA defaults set on import (inductheory/internal/_xla_defaults.py)."""

import os
import subprocess
import sys

from inductheory.internal._xla_defaults import YNN_FUSION_FLAG, xla_defaults


def test_no_default_ynnpack_fusion_is_added_once_and_only_where_known():
    assert xla_defaults("", (0, 10)) == f"--{YNN_FUSION_FLAG}="
    assert xla_defaults("--a=1", (1, 2)) == f"--a=1 --{YNN_FUSION_FLAG}="
    # a user's own choice wins, and an older jaxlib (which aborts on unknown flags) gets none
    mine = f"--{YNN_FUSION_FLAG}=LIBRARY_FUSION_TYPE_DOT"
    assert xla_defaults(mine, (0, 10)) == mine
    assert xla_defaults("--a=1", (0, 9)) == "--a=1"
    assert xla_defaults(xla_defaults("", (0, 10)), (0, 10)) == f"--{YNN_FUSION_FLAG}="


def test_a_fresh_process_gets_them_and_evaluates_the_compressed_transformer():
    # One process for both checks (a process start costs seconds). Importing the package sets
    # the defaults before jax builds its backend: XLA_FLAGS as the process ends is exactly
    # xla_defaults of an empty environment.
    # jaxlib 0.10.2's default YNNPACK transpose fusion ended this process (held-out measures of
    # the reference compressor, as train_transformer takes them) with a segmentation fault on an
    # AMD EPYC without AVX-512. XLA's default code generation (the suite's fast flags dropped)
    # and no compiled program cached, as in a fresh `inductheory train paper`. One layer, the
    # compressed one, is enough: with the defaults undone (XLA_FLAGS emptied after the import)
    # this process ends with signal 11 at layers=1 as at the reference's 2.
    code = (
        "import os, inductheory, jax, equinox as eqx\n"
        "from inductheory.trained import Architecture, RetrievalTask\n"
        "from inductheory.trained._transformer_train import (\n"
        "    _initial_models, phase_measures, sample_retrieval_contexts)\n"
        "task = RetrievalTask(T=96, N=128, period=24)\n"
        "arch = Architecture(W=8, S=8, d=32, head_dim=16, layers=1)\n"
        "models = _initial_models(task, arch, jax.random.split(jax.random.key(0), 2))\n"
        "contexts = sample_retrieval_contexts(jax.random.key(1), task, 64)\n"
        "print(float(eqx.filter_jit(phase_measures)(models, task, contexts)[0][0]))\n"
        "print(os.environ.get('XLA_FLAGS', ''))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["INDUCTHEORY_COMPILATION_CACHE"] = "0"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    *_, loss, flags = done.stdout.splitlines()
    assert 4.0 < float(loss) < 6.0  # about log 128 = 4.85 at initialization
    from inductheory.internal._xla_defaults import _jaxlib_version

    assert flags == xla_defaults("", _jaxlib_version())
