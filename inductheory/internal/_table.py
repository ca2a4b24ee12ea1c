"""Plain aligned text tables for terminal output and summary files."""

from __future__ import annotations


def format_table(headers, rows) -> str:
    """A plain aligned text table: a header row, a rule, then one line per row."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
