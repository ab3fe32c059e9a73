"""A minimal renderer for the Go text/template + sprig subset the Fuzzball catalog templates use (test helper)."""

from __future__ import annotations

import base64
import json
import posixpath
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import yaml

ACTION = re.compile(r"\{\{(-\s)?((?:\"(?:\\.|[^\"\\])*\"|`[^`]*`|[^\"`])*?)(\s-)?\}\}", re.S)
TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:\\.|[^"\\])*")|(?P<raw>`[^`]*`)|(?P<num>-?\d+(?:\.\d+)?)|(?P<op>:=|=|\||\(|\)|,)'
    r"|(?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)|(?P<field>\.[A-Za-z0-9_.]*)|(?P<ident>[A-Za-z_][A-Za-z0-9_]*))"
)
FIXED_NOW = datetime(2025, 1, 1, tzinfo=UTC)


class TemplateFailure(Exception):
    """The template called `fail`."""


def load_values(text: str) -> dict[str, Any]:
    """Values files are a list of {name, <kind>_value}; the kind decides the Go type."""
    entries = yaml.safe_load(text)["values"]
    return {e["name"]: _value(e) for e in entries}


def _value(entry: dict[str, Any]) -> Any:
    value = next((v for k, v in entry.items() if k.endswith("_value")), None)
    return value.get("reference") if isinstance(value, dict) else value


def render(template: str, values: dict[str, Any]) -> str:
    nodes, _ = _parse(_lex(template), 0, ())
    out: list[str] = []
    _run(nodes, Scope(values, [{"$": values}]), out)
    return "".join(out)


@dataclass
class Scope:
    dot: Any
    frames: list[dict[str, Any]] = field(default_factory=list)

    def lookup(self, name: str) -> Any:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        raise KeyError(f"undefined variable {name}")

    def assign(self, name: str, value: Any) -> None:
        for frame in reversed(self.frames):
            if name in frame:
                frame[name] = value
                return
        raise KeyError(f"undefined variable {name}")


def _lex(template: str) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = []
    pos, trim_next = 0, False
    for match in ACTION.finditer(template):
        text = template[pos : match.start()]
        text = text.lstrip() if trim_next else text
        parts.append(("text", text.rstrip() if match.group(1) else text))
        parts.append(("action", match.group(2).strip()))
        pos, trim_next = match.end(), bool(match.group(3))
    tail = template[pos:]
    parts.append(("text", tail.lstrip() if trim_next else tail))
    return parts


def _parse(parts, i, stop):
    nodes = []
    while i < len(parts):
        kind, body = parts[i]
        word = body.split(" ", 1)[0]
        if kind == "action" and word in stop:
            return nodes, i
        i += 1
        if kind == "text":
            nodes.append(("text", body))
        elif body.startswith("/*"):
            continue
        elif word in ("if", "range", "with"):
            nodes_i = _parse_block(parts, i, word, body[len(word) :].strip())
            nodes.append(nodes_i[0])
            i = nodes_i[1]
        else:
            nodes.append(("pipe", body))
    return nodes, i


def _parse_block(parts, i, word, head):
    branches, else_body = [], []
    body, i = _parse(parts, i, ("else", "end"))
    branches.append((head, body))
    while parts[i][1] != "end":
        rest = parts[i][1][4:].strip()
        if rest.startswith("if "):
            body, i = _parse(parts, i + 1, ("else", "end"))
            branches.append((rest[3:].strip(), body))
        else:
            else_body, i = _parse(parts, i + 1, ("end",))
    return (word, branches, else_body), i + 1


def _run(nodes, scope: Scope, out: list[str]) -> None:
    for node in nodes:
        if node[0] == "text":
            out.append(node[1])
        elif node[0] == "pipe":
            value = _pipeline(node[1], scope)
            if value is not _SILENT:
                out.append(_show(value))
        elif node[0] == "range":
            _run_range(node, scope, out)
        else:
            _run_if(node, scope, out)


def _run_if(node, scope: Scope, out: list[str]) -> None:
    for head, body in node[1]:
        value = _pipeline(head, scope)
        if _truthy(value):
            dot = value if node[0] == "with" else scope.dot
            _run(body, Scope(dot, scope.frames + [{}]), out)
            return
    _run(node[2], Scope(scope.dot, scope.frames + [{}]), out)


def _run_range(node, scope: Scope, out: list[str]) -> None:
    head, body = node[1][0]
    names: list[str] = []
    if ":=" in head:
        left, head = head.split(":=", 1)
        names = [n.strip() for n in left.split(",")]
    items = _pipeline(head, scope)
    pairs = list(items.items()) if isinstance(items, dict) else list(enumerate(items or []))
    for key, value in pairs:
        frame = dict(zip(names, [value] if len(names) == 1 else [key, value], strict=False))
        _run(body, Scope(value, scope.frames + [frame]), out)
    if not pairs:
        _run(node[2], scope, out)


_SILENT = object()


def _pipeline(text: str, scope: Scope) -> Any:
    match = re.match(r"(\$[A-Za-z0-9_]*)\s*(:=|=)\s*(.*)$", text, re.S)
    if match:
        value = _eval_tokens(_tokens(match.group(3)), scope)
        if match.group(2) == ":=":
            scope.frames[-1][match.group(1)] = value
        else:
            scope.assign(match.group(1), value)
        return _SILENT
    return _eval_tokens(_tokens(text), scope)


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        match = TOKEN.match(text, pos)
        if not match:
            raise SyntaxError(f"cannot lex {text[pos:]!r}")
        tokens.append((match.lastgroup, match.group(match.lastgroup)))
        pos = match.end()
    return tokens


def _eval_tokens(tokens, scope: Scope) -> Any:
    value, commands = _SILENT, _split(tokens, "|")
    for command in commands:
        args = _terms(command, scope)
        if value is not _SILENT:
            args.append(value)
        value = _call(command, args)
    return value


def _split(tokens, sep):
    groups, depth, current = [], 0, []
    for kind, text in tokens:
        depth += (text == "(") - (text == ")") if kind == "op" else 0
        if kind == "op" and text == sep and depth == 0:
            groups.append(current)
            current = []
        else:
            current.append((kind, text))
    return groups + [current]


def _terms(command, scope: Scope) -> list[Any]:
    values, i = [], 0
    start = 1 if command and command[0][0] == "ident" and command[0][1] not in ("true", "false", "nil") else 0
    i = start
    while i < len(command):
        kind, text = command[i]
        if text == "(":
            depth, j = 1, i + 1
            while depth:
                depth += (command[j][1] == "(") - (command[j][1] == ")") if command[j][0] == "op" else 0
                j += 1
            values.append(_eval_tokens(command[i + 1 : j - 1], scope))
            i = j
            continue
        values.append(_literal(kind, text, scope))
        i += 1
    return values


def _literal(kind: str, text: str, scope: Scope) -> Any:
    if kind == "str":
        return json.loads(text)
    if kind == "raw":
        return text[1:-1]
    if kind == "num":
        return float(text) if "." in text else int(text)
    if kind == "ident":
        return {"true": True, "false": False, "nil": None}[text]
    if kind == "var":
        name, *path = text.split(".")
        return _walk(scope.lookup(name), path)
    return _walk(scope.dot, [p for p in text.split(".") if p])


def _walk(value: Any, path: list[str]) -> Any:
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _call(command, args: list[Any]) -> Any:
    kind, text = command[0]
    if kind == "ident" and text in FUNCS:
        return FUNCS[text](*args)
    return args[0] if len(args) == 1 else args


def _show(value: Any) -> str:
    if value is None:
        return "<no value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + " ".join(_show(v) for v in value) + "]"
    return str(value)


def _truthy(value: Any) -> bool:
    return bool(value) and value is not _SILENT


def _printf(fmt: str, *args: Any) -> str:
    shown = [_show(a) if not isinstance(a, int) or isinstance(a, bool) else a for a in args]
    return re.sub(r"%[vq]", "%s", fmt) % tuple(shown)


def _fail(message: str) -> None:
    raise TemplateFailure(message)


def _and(*args):
    return next((a for a in args if not _truthy(a)), args[-1])


def _or(*args):
    return next((a for a in args if _truthy(a)), args[-1])


FUNCS = {
    "trim": lambda s: _show(s).strip() if s is not None else "",
    "fail": _fail,
    "not": lambda v: not _truthy(v),
    "empty": lambda v: not _truthy(v),  # sprig's: a catalog template skips its optional egress when the path is ""
    "printf": _printf,
    "hasPrefix": lambda p, s: (s or "").startswith(p),
    "eq": lambda a, *bs: any(a == b for b in bs),
    "ne": lambda a, b: a != b,
    "and": _and,
    "or": _or,
    "randInt": lambda low, high: low,
    "substr": lambda a, b, s: s[a:b],
    "splitList": lambda sep, s: (s or "").split(sep),
    "base": lambda s: posixpath.basename(s),
    "len": lambda v: len(v or ""),
    "trimPrefix": lambda p, s: s[len(p) :] if s.startswith(p) else s,
    "trimSuffix": lambda p, s: s[: -len(p)] if p and s.endswith(p) else s,
    "trimAll": lambda c, s: s.strip(c),
    "list": lambda *a: list(a),
    "index": lambda v, *keys: _index(v, keys),
    "join": lambda sep, items: sep.join(_show(i) for i in items),
    "default": lambda d, v=None: v if _truthy(v) else d,
    "toString": lambda v: "" if v is None else _show(v),
    "gt": lambda a, b: a > b,
    "le": lambda a, b: a <= b,
    "add": lambda *a: sum(int(x) for x in a),
    "sub": lambda a, b: int(a) - int(b),
    "mul": lambda *a: _product(a),
    "max": lambda *a: max(int(x) for x in a),
    "int": lambda v: int(v or 0),
    "now": lambda: FIXED_NOW,
    "unixEpoch": lambda t: str(int(t.timestamp())),
    "toJson": lambda v: json.dumps(v),
    "lower": lambda s: s.lower(),
    "b64enc": lambda s: base64.b64encode(s.encode()).decode(),
    "replace": lambda old, new, s: s.replace(old, new),
    "dict": lambda *a: dict(zip(a[::2], a[1::2], strict=False)),  # an odd last key is dropped
    "append": lambda items, v: list(items) + [v],
}


def _index(value: Any, keys: tuple) -> Any:
    for key in keys:
        value = value[key]
    return value


def _product(values) -> int:
    result = 1
    for v in values:
        result *= int(v)
    return result
