"""The compile counter (internal/_compiles.py) and the persistent compilation cache across
processes, set up as `reproduce`'s workers set it up (`internal._pool.start_worker`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp

from inductheory.figures import figure_names
from inductheory.internal._compiles import CompileCount, compiles_between

ROOT = Path(__file__).resolve().parent.parent

# A worker's setup, then a jitted function, an equinox module through `eqx.filter_jit` and an
# eager operation; prints the counts and the cache directory in use.
SCRIPT = """
import json, sys
from inductheory.internal._pool import FAST_COMPILE_FLAGS, start_worker
cache, fast = sys.argv[1], sys.argv[2] == "fast"
start_worker(cache or None, None, flags=FAST_COMPILE_FLAGS if fast else "")
if not cache:
    from inductheory.internal._paths import enable_compilation_cache
    enable_compilation_cache()
import equinox as eqx, jax, jax.numpy as jnp
from inductheory.internal._compiles import CompileCount
counter = CompileCount()
jax.jit(lambda x: jnp.sin(x) * 3.0 + 1.0)(jnp.ones(7))
linear = eqx.nn.Linear(7, 5, key=jax.random.PRNGKey(0))
eqx.filter_jit(lambda m, x: m(x))(linear, jnp.ones(7))
jnp.ones(9) * 2.0
print(json.dumps({**counter.count()._asdict(), "dir": jax.config.jax_compilation_cache_dir}))
"""


def _run(cache: str, fast: bool, tmp_path: Path, flags: str = "") -> dict:
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        INDUCTHEORY_COMPILATION_CACHE="1",
        INDUCTHEORY_CACHE_DIR=str(tmp_path / "user-cache"),
        XLA_FLAGS=flags,
        JAX_PLATFORMS="cpu",
    )
    out = _python(SCRIPT, [cache, "fast" if fast else "default"], env)
    return json.loads(out.strip().splitlines()[-1])


def _python(script: str, args: list[str], env: dict) -> str:
    """The standard output of a fresh Python process running `script`."""
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_a_second_process_reads_every_program_from_the_compilation_cache(tmp_path):
    cache = str(tmp_path / "jax")
    cold = _run(cache, False, tmp_path)
    assert cold["compiles"] >= 3 and cold["hits"] == 0
    assert cold["misses"] == cold["writes"] == cold["compiles"]  # every program kept
    warm = _run(cache, False, tmp_path)
    assert warm["compiles"] == cold["compiles"] and warm["hits"] == warm["compiles"]
    assert warm["writes"] == 0 and warm["uncached"] == 0
    # a worker compiling with FAST_COMPILE_FLAGS keys its programs apart: nothing compiled
    # under the other flags is served to it, and its own are served to the next such worker
    fast = _run(cache, True, tmp_path)
    assert fast["hits"] == 0 and fast["writes"] == fast["compiles"]
    assert _run(cache, True, tmp_path)["hits"] == fast["compiles"]


def test_the_command_line_cache_has_a_folder_per_jaxlib_and_processor(tmp_path):
    from jax._src.lib import version_str

    from inductheory.internal._paths import compilation_cache_name

    name = compilation_cache_name()
    assert (
        name.startswith(f"jaxlib-{version_str}-") and name == compilation_cache_name()
    )
    cold = _run("", False, tmp_path)
    assert Path(cold["dir"]) == tmp_path / "user-cache" / "jax" / name
    assert _run("", False, tmp_path)["hits"] == cold["compiles"]


def test_a_compile_count_counts_the_programs_of_a_stretch_of_work():
    x = jnp.ones(3)
    counter = CompileCount()
    # a program of its own (a constant no other test uses), then the same again: one compile
    f = jax.jit(lambda x: x * 1.2345678 + 7.654321)
    f(x)
    f(x)
    count = counter.count()
    assert count.compiles == 1
    assert count.hits + count.misses + count.uncached == count.compiles
    assert count.compiled == count.compiles - count.hits


def test_compiles_between_two_snapshots():
    before = {"compiles": 2, "requests": 2, "hits": 1, "writes": 1, "seconds": 1.0}
    after = {"compiles": 7, "requests": 6, "hits": 3, "writes": 3, "seconds": 3.5}
    count = compiles_between(before, after)
    assert count == (5, 2, 2, 1, 2, 2.5)
    assert count.compiled == 3


# A program whose numbers depend on XLA's optimization level; prints a digest of them under the
# flags the worker would use for each compile kind named on the command line, in one process.
FLAGS_SCRIPT = """
import hashlib, sys
from inductheory.internal import _pool as r
worker = r.start_worker(sys.argv[1], None, flags=r.worker_flags(r.FAST_COMPILE_FLAGS))
import jax, jax.numpy as jnp, numpy as np

def f(x, w):
    for _ in range(3):
        x = jnp.tanh(x @ w) * jnp.exp(-x**2) + jnp.log1p(jnp.abs(x)) * 0.3
        x = x - jax.nn.logsumexp(x, axis=-1, keepdims=True)
    return x

rng = np.random.default_rng(0)  # the same inputs whatever the flags
x, w = rng.normal(size=(64, 64)), rng.normal(size=(64, 64)) / 8
for kind in sys.argv[2:]:
    r.use_flags({"fast": r.FAST_COMPILE_FLAGS, "light": r.LIGHT_COMPILE_FLAGS}[kind], worker)
    y = np.asarray(jax.jit(f)(x, w))
    g = np.asarray(jax.jit(jax.grad(lambda x, w: f(x, w).sum()))(x, w))
    print(kind, hashlib.sha1(y.tobytes() + g.tobytes()).hexdigest())
"""


def test_a_light_worker_compiles_the_fast_figures_as_a_fast_worker_would(tmp_path):
    """`reproduce`'s workers run under LIGHT_COMPILE_FLAGS and turn on jax's
    `jax_disable_most_optimizations` for the figures of FAST_COMPILE_FLAGS: the numbers are
    those of a process started under FAST_COMPILE_FLAGS, and turning it off again (jax's
    in-memory caches emptied) gives those of LIGHT_COMPILE_FLAGS, with the persistent
    compilation cache on (it keys the two apart)."""
    from inductheory.figures._schedule import COMPILE_FLAGS
    from inductheory.internal._pool import (
        FAST_COMPILE_FLAGS,
        LIGHT_COMPILE_FLAGS,
        worker_flags,
    )

    def digests(xla_flags, cache, *kinds):
        env = dict(
            os.environ,
            PYTHONPATH=str(ROOT),
            XLA_FLAGS=xla_flags,
            JAX_PLATFORMS="cpu",
            JAX_ENABLE_X64="1",
            INDUCTHEORY_COMPILATION_CACHE="1",
        )
        env.pop("JAX_COMPILATION_CACHE_DIR", None)  # its own cache, not the suite's
        return _python(FLAGS_SCRIPT, [str(cache), *kinds], env).split()[1::2]

    # a process started under FAST_COMPILE_FLAGS (the worker then sets no flags of its own)
    (fast,) = digests(FAST_COMPILE_FLAGS, tmp_path / "fast", "light")
    # one cache for both settings: the programs under the option are compiled, not read from
    # the cache as LIGHT's, and LIGHT's are read back after the in-memory caches are emptied
    light, as_fast, light_again = digests(
        "", tmp_path / "light", "light", "fast", "light"
    )
    assert light != fast  # the optimization level changes these numbers
    assert as_fast == fast and light_again == light
    # a quick run starts workers of two kinds at most: LIGHT_COMPILE_FLAGS and XLA's defaults
    kinds = {worker_flags(COMPILE_FLAGS["quick"].get(n, "")) for n in figure_names()}
    assert kinds == {LIGHT_COMPILE_FLAGS, ""}


def test_a_run_starts_a_worker_of_each_kind_of_flags():
    """The quick run's one figure under XLA's defaults gets its worker at the start, beside the
    longest figure's; a run of one kind starts `jobs` workers of it."""
    from inductheory.figures._schedule import first_workers
    from inductheory.internal._pool import LIGHT_COMPILE_FLAGS

    quick = ["relaxation_ladder", "paper_matrix", "boundary", "toy_stability"]
    assert first_workers(quick, True, 2) == [LIGHT_COMPILE_FLAGS, ""]
    assert first_workers(quick, True, 3) == [
        LIGHT_COMPILE_FLAGS,
        "",
        LIGHT_COMPILE_FLAGS,
    ]
    assert first_workers(quick, True, 1) == [LIGHT_COMPILE_FLAGS]
    assert first_workers(["toy_stability", "boundary"], True, 4) == [
        "",
        LIGHT_COMPILE_FLAGS,
    ]
    assert first_workers(quick, False, 2) == ["", ""]  # full figures: XLA's defaults
    assert first_workers([], True, 2) == []
