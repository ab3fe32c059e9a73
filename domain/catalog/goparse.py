"""Parsing a Go text/template into nodes: text, pipelines (`Pipeline`, with `$x :=`/`$x =` declarations) and
`if`/`else if`/`with`/`range` blocks, each pipeline split into commands of terms (literals, variables, fields,
parenthesised pipelines and function names).

The whole template is parsed before it runs, so a syntax error or an unknown function is reported with its line
even in a branch the values never take, as Go does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from domain.catalog.gofuncs import FUNCS, RenderError

ACTION = re.compile(r"\{\{(-\s)?((?:\"(?:\\.|[^\"\\])*\"|`[^`]*`|[^\"`])*?)(\s-)?\}\}", re.S)
TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:\\.|[^"\\])*")|(?P<raw>`[^`]*`)|(?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)'
    r"|(?P<op>:=|=|\||\(|\)|,)|(?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)|(?P<field>\.[A-Za-z0-9_.]*)"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*))"
)
DECLARE = re.compile(r"^\s*((?:\$[A-Za-z0-9_]*\s*,\s*)?\$[A-Za-z0-9_]*)\s*(:=|=)(?!=)\s*(.*)$", re.S)
LITERALS = {"true": True, "false": False, "nil": None}
CLOCKED = ("now", "randInt", "and", "or")  # bound per render (the clock) or evaluated lazily (and, or)


@dataclass
class Term:
    kind: str  # lit | var | field | sub | func
    value: Any = None
    path: tuple[str, ...] = ()


@dataclass
class Pipeline:
    commands: list[list[Term]]
    names: tuple[str, ...] = ()
    op: str = ""  # ":=" declares, "=" assigns, "" prints


@dataclass
class Block:
    kind: str  # if | with | range
    branches: list[tuple[Pipeline, list[Any]]]
    otherwise: list[Any] = field(default_factory=list)


def parse(text: str) -> list[Any]:
    parts = _lex(text)
    nodes, end = _parse(parts, 0, ())
    if end < len(parts):
        line, body = parts[end][1], parts[end][2]
        raise RenderError(f"line {line}: unexpected {{{{{body}}}}}")
    return nodes


def _lex(text: str) -> list[tuple[str, int, str]]:
    """(kind, line, body) parts: text between actions, trimmed where `{{-` or `-}}` asks, and action bodies."""
    parts: list[tuple[str, int, str]] = []
    pos, trim_next = 0, False
    for match in ACTION.finditer(text):
        before = text[pos : match.start()]
        before = before.lstrip() if trim_next else before
        parts.append(("text", 0, before.rstrip() if match.group(1) else before))
        parts.append(("action", text.count("\n", 0, match.start()) + 1, match.group(2).strip()))
        pos, trim_next = match.end(), bool(match.group(3))
    tail = text[pos:]
    if "{{" in tail:
        raise RenderError(f"line {text.count(chr(10), 0, pos + tail.index('{{')) + 1}: unclosed action")
    parts.append(("text", 0, tail.lstrip() if trim_next else tail))
    return parts


def _parse(parts: list[tuple[str, int, str]], i: int, stop: tuple[str, ...]) -> tuple[list[Any], int]:
    nodes: list[Any] = []
    while i < len(parts):
        kind, line, body = parts[i]
        word = body.split(None, 1)[0] if kind == "action" and body.strip() else ""
        if kind == "action" and word in stop:
            return nodes, i
        i += 1
        if kind == "text":
            nodes.append(body)
        elif body.startswith("/*"):
            if not body.endswith("*/"):
                raise RenderError(f"line {line}: unclosed comment")
        elif word in ("if", "with", "range"):
            block, i = _parse_block(parts, i, word, body[len(word) :], line)
            nodes.append(block)
        elif word in ("else", "end"):
            raise RenderError(f"line {line}: unexpected {{{{{word}}}}}")
        else:
            nodes.append(_pipeline(body, line))
    if stop:
        raise RenderError("unexpected end of template: a block is missing its {{end}}")
    return nodes, i


def _parse_block(parts: list[tuple[str, int, str]], i: int, word: str, head: str, line: int) -> tuple[Block, int]:
    block = Block(word, [])
    body, i = _parse(parts, i, ("else", "end"))
    block.branches.append((_pipeline(head, line), body))
    while parts[i][2].split(None, 1)[0] == "else":
        rest = parts[i][2][4:].strip()
        if rest.startswith(("if ", "with ")) and word != "range":
            at = parts[i][1]
            body, i = _parse(parts, i + 1, ("else", "end"))
            block.branches.append((_pipeline(rest.split(None, 1)[1], at), body))
        else:
            block.otherwise, i = _parse(parts, i + 1, ("end",))
    return block, i + 1


def _pipeline(text: str, line: int) -> Pipeline:
    try:
        declared = DECLARE.match(text)
        if declared:
            names = tuple(n.strip() for n in declared.group(1).split(","))
            return Pipeline(_commands(_tokens(declared.group(3))), names, declared.group(2))
        return Pipeline(_commands(_tokens(text)))
    except RenderError as error:
        raise RenderError(f"line {line}: {error}") from None


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, pos, end = [], 0, len(text.rstrip())
    while pos < end:
        match = TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise RenderError(f"cannot read {text[pos:].strip()!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    if not tokens:
        raise RenderError("missing value for command")
    return tokens


def _commands(tokens: list[tuple[str, str]]) -> list[list[Term]]:
    commands: list[list[Term]] = [[]]
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        if (kind, text) == ("op", "|"):
            commands.append([])
        elif (kind, text) == ("op", "("):
            close = _closing(tokens, i)
            commands[-1].append(Term("sub", Pipeline(_commands(tokens[i + 1 : close]))))
            i = close
        elif kind == "op":
            raise RenderError(f"unexpected {text!r}")
        else:
            commands[-1].append(_term(kind, text))
        i += 1
    if any(not command for command in commands):
        raise RenderError("missing command in pipeline")
    return commands


def _closing(tokens: list[tuple[str, str]], i: int) -> int:
    depth = 0
    for j in range(i, len(tokens)):
        depth += {("op", "("): 1, ("op", ")"): -1}.get(tokens[j], 0)
        if depth == 0:
            return j
    raise RenderError("unclosed left paren")


def _term(kind: str, text: str) -> Term:
    if kind == "str":
        return Term("lit", json.loads(text))
    if kind == "raw":
        return Term("lit", text[1:-1])
    if kind == "num":
        return Term("lit", float(text) if any(c in text for c in ".eE") else int(text))
    if kind == "var":
        name, *path = text.split(".")
        return Term("var", name, tuple(path))
    if kind == "field":
        return Term("field", None, tuple(p for p in text.split(".") if p))
    if text in LITERALS:
        return Term("lit", LITERALS[text])
    if text not in FUNCS and text not in CLOCKED:
        raise RenderError(f'function "{text}" not defined')
    return Term("func", text)


