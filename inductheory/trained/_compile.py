"""How the trainers' programs are compiled: `jit_with_ynn_fusions`, `eqx.filter_jit` with the
XLA options that choose which operations the CPU backend hands to the YNNPACK library. Both
trainers compile their chunks through it.

May import: `inductheory.internal` (the option's name).
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp

from ..internal._xla_defaults import YNN_FUSION_FLAG

# XLA's CPU backend hands contractions, elementwise fusions and reductions to the YNNPACK library
# (`LIBRARY_FUSION_TYPE_DOT`, `_ELTWISE`, `_REDUCE`; by default some of them). On the tiny
# trailing axes of the flow-equivalent programs (W offsets, L entries, T + 1 logits, in float64)
# its calls cost more than XLA's own loops, and they do not get cheaper per seed when seeds are
# vmapped: those programs use none. The option only chooses how XLA emits the same operations.
# (Importing the package turns the default fusions off: internal/_xla_defaults.py.)
YNN_FUSION_OPTION = YNN_FUSION_FLAG


@functools.cache
def _compiler_options(fusions: tuple[str, ...] = ()) -> dict:
    """The XLA options of `jit_with_ynn_fusions(*fusions)`: YNNPACK for exactly `fusions`
    (names as "DOT", "ELTWISE", "REDUCE") on the CPU backend where this jax knows the option
    and the names, none otherwise."""
    if jax.default_backend() != "cpu":
        return {}
    options = {YNN_FUSION_OPTION: ",".join(f"LIBRARY_FUSION_TYPE_{f}" for f in fusions)}
    try:
        jax.jit(jnp.sin, compiler_options=options).lower(1.0).compile()
    except Exception:  # an older jax or XLA without the option or a name: its defaults
        return {}
    return options


def jit_with_ynn_fusions(*fusions: str):
    """A decorator: `eqx.filter_jit` of `fn` compiled with XLA's YNNPACK library fusions of
    exactly the kinds `fusions` on the CPU backend (`_compiler_options`; other backends, or a
    jax without the option: its defaults), chosen at the first call, when the backend is known.
    One compiled program per distinct static input, as with `eqx.filter_jit` itself; methods
    are passed unbound (`self` first).

    ```python
    step = jit_with_ynn_fusions("DOT")(lambda x: x @ x.T)
    ```
    """

    def decorate(fn):
        compiled = None

        @functools.wraps(fn)
        def call(*args):
            nonlocal compiled
            if compiled is None:
                options = _compiler_options(fusions)
                kwargs = {"compiler_options": options} if options else {}
                compiled = eqx.filter_jit(fn, **kwargs)
            return compiled(*args)

        return call

    return decorate


# the flow-equivalent trainer's programs: XLA's own loops throughout (above)
jit_without_ynn_fusions = jit_with_ynn_fusions()


__all__ = ["jit_with_ynn_fusions", "jit_without_ynn_fusions"]
