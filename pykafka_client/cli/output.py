"""Output for people (aligned tables) or scripts (``--output json``), and the one-line messages on stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns left-aligned to their widest cell, two spaces apart; None prints as ``-``."""
    cells = [[("-" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def emit(output: str, data: Any, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print ``data`` as JSON, or ``rows`` as a table (nothing but the header when there are none)."""
    if output == "json":
        print(json.dumps(data, indent=2, sort_keys=False))
    else:
        print(table(columns, rows))


def records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """The table rows as JSON objects keyed by lower-case column names (``LOG-END-OFFSET`` -> ``log_end_offset``)."""
    keys = [c.lower().replace("-", "_") for c in columns]
    return [dict(zip(keys, row, strict=True)) for row in rows]


def emit_rows(output: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    emit(output, records(columns, rows), columns, rows)


def info(message: str) -> None:
    """A line for the person at the terminal (stderr, so that stdout stays data)."""
    print(message, file=sys.stderr, flush=True)


def kv(pairs: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in pairs.items())
