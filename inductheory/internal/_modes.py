"""Modes that select behaviour: `enum.StrEnum`s, given as their members or their values.

A `StrEnum` member is a `str` equal to its value, so JSON, cache keys and command-line choices
read the same whether a field holds the member or the plain string; code compares members
(`config.dynamics is Dynamics.FULL`).
"""

from __future__ import annotations

import enum

import equinox as eqx


def _enum(kind: type[enum.Enum], name: str, value):
    """`value` as a member of `kind`; a one-line `ValueError` naming `name` and the choices."""
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(m.value for m in kind)
        raise ValueError(f"{name} must be one of {choices}, got {value!r}") from None


def _mode(kind: type[enum.Enum], name: str, default):
    """A static keyword field holding a member of `kind` (its value as a string is
    converted)."""
    return eqx.field(
        default=default,
        static=True,
        kw_only=True,
        converter=lambda v: _enum(kind, name, v),
    )
