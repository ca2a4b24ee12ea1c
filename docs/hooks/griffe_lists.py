"""Griffe extension for the API reference: let a list follow its label line.

The library's docstrings write `**Arguments:**` and the bullet list on consecutive lines.
Python-Markdown
only starts a list after a blank line, so without this the bullets would run together into one
paragraph. This inserts the blank line when the docstrings are loaded; the source is not changed.
"""

from __future__ import annotations

import re

import griffe

_ITEM = re.compile(r"^(?:[-*+]|\d+\.)\s")


def separate_lists(text: str) -> str:
    """Insert a blank line before a top-level list item that directly follows a paragraph line."""
    out: list[str] = []
    fence = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and _ITEM.match(line) and out:
            previous = out[-1]
            if (
                previous.strip()
                and not previous.startswith((" ", "\t"))
                and not _ITEM.match(previous)
            ):
                out.append("")
        out.append(line)
    return "\n".join(out)


class SeparateLists(griffe.Extension):
    """Apply `separate_lists` to every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = separate_lists(obj.docstring.value)
