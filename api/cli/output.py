"""`-o table|wide|json|yaml` and `--no-headers`: one renderer for every command's answer.

`wide` is the table with more columns (each command's `wide_columns`, else every field the rows carry), as
`kubectl get -o wide` does; `--no-headers` drops the header line (and the "(none)" of an empty list), as
`squeue --noheader` does, so scripts can read rows with cut, awk or `while read`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import yaml

FORMATS = ("table", "wide", "json", "yaml")
FORMAT_HELP = ("table (the default), wide (the table with more columns), or json or yaml (the whole answer, "
               "ids included, for scripts)")


def render(value: Any, fmt: str = "table", columns: Sequence[str] | None = None, headers: bool = True,
           wide: Sequence[str] | None = None) -> str:
    """The answer as text: JSON and YAML show everything; a table shows `columns` (or every key), `wide` adds
    the command's wide columns (or every other key)."""
    if fmt == "json":
        return json.dumps(value, indent=2, default=str)
    if fmt == "yaml":
        return yaml.safe_dump(value, sort_keys=False, default_flow_style=False).rstrip()
    if isinstance(value, list):
        if fmt == "wide" and columns:
            columns = wide_columns(value, columns, wide)
        return table(value, columns, headers)
    if isinstance(value, dict):
        return "\n".join(f"{k}: {cell(v)}" for k, v in value.items())
    return str(value)


def wide_columns(rows: list[Any], columns: Sequence[str], wide: Sequence[str] | None) -> list[str]:
    """The table's columns, then the command's wide ones (or every other key the rows carry)."""
    keys = wide if wide is not None else [k for r in rows if isinstance(r, dict) for k in r]
    return list(dict.fromkeys([*columns, *keys]))


def table(rows: list[Any], columns: Sequence[str] | None = None, headers: bool = True) -> str:
    """Aligned columns with an upper-case header; empty lists say so (nothing at all without headers)."""
    if not rows:
        return "(none)" if headers else ""
    dicts = [r if isinstance(r, dict) else {"value": r} for r in rows]
    names = list(columns or dict.fromkeys(k for r in dicts for k in r))
    cells = [[cell(r.get(n)) for n in names] for r in dicts]
    widths = [max(len(n) if headers else 0, *(len(row[i]) for row in cells)) for i, n in enumerate(names)]
    lines = ["  ".join(n.upper().ljust(w) for n, w in zip(names, widths, strict=True))] if headers else []
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def named(rows: list[dict[str, Any]], fmt: str, names: dict[str, str]) -> list[dict[str, Any]]:
    """For a table: each id field shown by the names the API put beside it (`{"owners": "owner_names"}`);
    JSON and YAML keep the ids (the names are there too). An API that sends no names leaves the ids."""
    if fmt != "table":
        return rows
    return [{**r, **{ids: r[key] for ids, key in names.items() if r.get(key) is not None}} for r in rows]


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
