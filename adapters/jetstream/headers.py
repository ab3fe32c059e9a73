"""Message headers parsed on demand: replay reads four header names of a dozen, so it parses four.

nats-py parses every header of every message in Python; at replay rates that is most of the time.
`install(nc)` gives one client a parser that returns `LazyHeaders`, a dict whose `get`, `[]` and
`in` find one name in the raw block, and which parses everything the first time anything else is
asked of it, so every other use of the headers sees an ordinary dict.
"""

from __future__ import annotations

import functools
from typing import Any

from nats.aio.client import Client

_MISSING = object()


def parse_all(raw: bytes) -> dict[str, str]:
    """nats-py's rules: `Name: value` lines; names are ASCII tokens without whitespace; last one wins."""
    out: dict[str, str] = {}
    for line in raw.split(b"\r\n"):
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        try:
            key = name.strip().decode("ascii")
        except UnicodeDecodeError:
            continue
        if len(key.split()) == 1:
            out[key] = value.strip().decode("utf-8", "replace")
    return out


@functools.lru_cache(maxsize=256)  # a handful of header names are asked for, of every message
def _needles(key: str) -> tuple[bytes, bytes]:
    """`Name:` as it starts the block, and as it starts any later line."""
    name = key.encode("ascii", "replace") + b":"
    return name, b"\n" + name


class LazyHeaders(dict):
    __slots__ = ("_raw", "_full")

    def __init__(self, raw: bytes) -> None:
        super().__init__()
        self._raw = raw
        self._full = False

    def _parsed(self) -> LazyHeaders:
        if not self._full:
            self._full = True
            dict.update(self, parse_all(self._raw))
        return self

    def _find(self, key: str) -> Any:
        if self._full:
            return dict.get(self, key, _MISSING)
        raw = self._raw
        name, line = _needles(key)
        start = 0 if raw.startswith(name) else raw.find(line) + 1
        if start == 0 and not raw.startswith(name):
            return _MISSING
        if raw.find(line, start) != -1:  # a repeated name: the last one wins, as in nats-py
            return dict.get(self._parsed(), key, _MISSING)
        end = raw.find(b"\r\n", start)
        value = raw[start + len(name): end if end != -1 else len(raw)]
        return value.strip().decode("utf-8", "replace")

    def __getitem__(self, key: str) -> str:
        value = self._find(key)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        value = self._find(key)
        return default if value is _MISSING else value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._find(key) is not _MISSING

    def __bool__(self) -> bool:
        return dict.__len__(self) > 0 if self._full else b":" in self._raw

    def __len__(self) -> int:
        return dict.__len__(self._parsed())

    def __iter__(self):
        return dict.__iter__(self._parsed())

    def __repr__(self) -> str:
        return dict.__repr__(self._parsed())

    def __eq__(self, other: object) -> bool:
        return dict.__eq__(self._parsed(), other)

    __hash__ = None


def _materializing(name: str):
    method = getattr(dict, name)

    def call(self: LazyHeaders, *args: Any, **kwargs: Any) -> Any:
        return method(self._parsed(), *args, **kwargs)

    call.__name__ = name
    return call


for _name in ("keys", "items", "values", "copy", "pop", "popitem", "setdefault", "update",
              "__setitem__", "__delitem__", "__or__", "__ior__"):
    setattr(LazyHeaders, _name, _materializing(_name))


def install(nc: Client) -> Client:
    """Parse `nc`'s message headers lazily (nats-py looks the parser up on the instance); other clients keep
    nats-py's own. Returns `nc`."""
    nc._parse_header_lines = LazyHeaders  # type: ignore[method-assign]  # nats-py looks it up per instance
    return nc
