"""`-o table|json|yaml`: one renderer for every command's answer."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import yaml

FORMATS = ("table", "json", "yaml")


def render(value: Any, fmt: str = "table", columns: Sequence[str] | None = None) -> str:
    """The answer as text: JSON and YAML show everything; a table shows `columns` (or every key)."""
    if fmt == "json":
        return json.dumps(value, indent=2, default=str)
    if fmt == "yaml":
        return yaml.safe_dump(value, sort_keys=False, default_flow_style=False).rstrip()
    if isinstance(value, list):
        return table(value, columns)
    if isinstance(value, dict):
        return "\n".join(f"{k}: {cell(v)}" for k, v in value.items())
    return str(value)


def table(rows: list[Any], columns: Sequence[str] | None = None) -> str:
    """Aligned columns with an upper-case header; empty lists say so."""
    if not rows:
        return "(none)"
    dicts = [r if isinstance(r, dict) else {"value": r} for r in rows]
    names = list(columns or dict.fromkeys(k for r in dicts for k in r))
    cells = [[cell(r.get(n)) for n in names] for r in dicts]
    widths = [max(len(n), *(len(row[i]) for row in cells)) for i, n in enumerate(names)]
    lines = ["  ".join(n.upper().ljust(w) for n, w in zip(names, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(cell(v) for v in value) or "-"
    if isinstance(value, dict):
        return ",".join(f"{k}={cell(v)}" for k, v in value.items()) or "-"
    return str(value)


def fail(message: str) -> Any:
    """Bad usage found after parsing: print it and exit 2, as argparse does."""
    print(f"roving: {message}", file=sys.stderr)
    raise SystemExit(2)
