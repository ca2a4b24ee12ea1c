"""Typed records: frozen dataclasses with named fields that convert to and from the JSON-able
dicts that the caches, the figure data and `--json` outputs store.

A record's `to_dict()` gives its fields by name, in field order, nested records as dicts; its
`from_dict(d)` reads them back, rebuilding every field annotated as a record (alone, in a list,
as a dict's values, or optional). Everything else is kept as it is, so
`type(r).from_dict(r.to_dict()).to_dict() == r.to_dict()`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Self

# Field metadata: a field whose value is None is left out of `to_dict` (data that only some
# settings have, e.g. a quick mode's extra numbers, keep the keys they always had).
OMIT_IF_NONE = {"omit_if_none": True}


def optional_field() -> Any:
    """A field that only some results have: None by default, and then left out of `to_dict`
    (a fresh `dataclasses.field` per call: one shared field object would be one field)."""
    return dataclasses.field(default=None, metadata=OMIT_IF_NONE)


class Record:
    """Base of the typed results: use on a frozen dataclass.

    ```python
    @dataclasses.dataclass(frozen=True)
    class Point(Record):
        x: float
        y: float

    Point.from_dict({"x": 1.0, "y": 2.0}).to_dict()  # {"x": 1.0, "y": 2.0}
    ```
    """

    def to_dict(self) -> dict:
        """The fields as a JSON-able dict, in field order; nested records become dicts."""
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_if_none"):
                continue
            out[f.name] = _plain(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The record whose `to_dict()` is `data` (as stored: JSON lists for tuples).

        **Raises:** `ValueError` naming the record and the key when a required field is missing
        or `data` holds a key that is not a field.
        """
        if not isinstance(data, Mapping):
            raise ValueError(
                f"{cls.__name__}.from_dict needs a mapping, got {type(data).__name__}"
            )
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ValueError(f"{cls.__name__} has no field(s) {unknown}")
        hints = _hints(cls)
        values = {}
        for name, f in fields.items():
            if name in data:
                values[name] = _build(hints[name], data[name])
            elif (
                f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING
            ):
                raise ValueError(f"{cls.__name__}.from_dict: missing field {name!r}")
        return cls(**values)


# A field whose metadata holds this key is left out of `field_values` while it has its default:
# a field added later keeps the cache keys (and stored parameters) of every earlier setting.
OMIT_AT_DEFAULT = "omit_at_default"


def field_values(obj) -> dict[str, Any]:
    """A dataclass's (or an `eqx.Module`'s) fields by name, their values as they are (no nested
    conversion): what cache keys and field-by-field copies read. A field marked
    `OMIT_AT_DEFAULT` in its metadata is left out where it holds its default (a copy through
    the constructor gets it back).

    ```python
    field_values(Point(x=1.0, y=2.0))  # {"x": 1.0, "y": 2.0}
    ```
    """
    return {
        f.name: getattr(obj, f.name)
        for f in dataclasses.fields(obj)
        if not (f.metadata.get(OMIT_AT_DEFAULT) and getattr(obj, f.name) == f.default)
    }


def _hints(cls) -> dict[str, Any]:
    cached = cls.__dict__.get("_record_hints")
    if cached is None:
        cached = typing.get_type_hints(cls)
        type.__setattr__(cls, "_record_hints", cached)
    return cached


def _plain(value: Any) -> Any:
    """`value` with every record inside it as its dict."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list | tuple) and any(
        isinstance(v, Record | list | tuple | dict) for v in value
    ):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _is_record(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, Record)


def _build(hint: Any, value: Any) -> Any:
    """`value` read as `hint`: records (also inside lists, dicts and unions) rebuilt."""
    if value is None:
        return None
    if _is_record(hint):
        return hint.from_dict(value)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            if _is_record(arg) or typing.get_origin(arg) in (list, dict):
                return _build(arg, value)
        return value
    if origin is list and args and isinstance(value, list):
        return [_build(args[0], v) for v in value]
    if origin is dict and len(args) == 2 and isinstance(value, Mapping):
        return {k: _build(args[1], v) for k, v in value.items()}
    return value
