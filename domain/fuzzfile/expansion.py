"""How big a loaded YAML document really is once its aliases are expanded, checked within a budget.

YAML aliases share one loaded object, so a few hundred bytes (the "billion laughs" document) load quickly but
describe billions of values, and an alias inside its own anchor loads as a cycle. Every later step (shape
check, validation, encoding the event) walks the expanded tree, so the walk here stops at a budget first,
and finds a cycle before anything else recurses into it forever.
"""

from __future__ import annotations

from typing import Any

from domain.fuzzfile.schema import Problem

MAX_VALUES = 1_000_000  # values after expanding aliases; a 900 KiB definition has far fewer
MAX_DEPTH = 200         # nesting; a Fuzzfile is about 8 deep, and libyaml stops at 1,000


class _TooBig(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.problem = Problem(path, message)


def expansion_problems(document: Any) -> list[Problem]:
    """A problem when the document is recursive, nested too deep, or expands past MAX_VALUES; else none."""
    walk = _Walk()
    try:
        walk.visit(document, "", 0)
    except _TooBig as error:
        return [error.problem]
    return []


class _Walk:
    """Counts values as the expanded tree would hold them; `open` holds the containers on the current path."""

    def __init__(self) -> None:
        self.count = 0
        self.open: set[int] = set()

    def visit(self, value: Any, path: str, depth: int) -> None:
        self.count += 1
        if self.count > MAX_VALUES:
            raise _TooBig(path, f"the document expands to more than {MAX_VALUES:,} values (YAML aliases are "
                                f"expanded); write the repeated parts out or make them smaller")
        if not isinstance(value, (dict, list)):
            return
        if depth > MAX_DEPTH:
            raise _TooBig(path, f"the document nests deeper than {MAX_DEPTH} levels")
        if id(value) in self.open:
            raise _TooBig(path, "a YAML alias refers to an anchor that contains it, so the document never ends")
        self.open.add(id(value))
        if isinstance(value, dict):
            for key, item in value.items():
                self.visit(item, f"{path}.{key}" if path else str(key), depth + 1)
        else:
            for index, item in enumerate(value):
                self.visit(item, f"{path}[{index}]", depth + 1)
        self.open.discard(id(value))
