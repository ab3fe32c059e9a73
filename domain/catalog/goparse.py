"""Parsing a Go text/template into nodes: text, pipelines (`Pipeline`, with `$x :=`/`$x =` declarations) and
`if`/`else if`/`with`/`range` blocks, each pipeline split into commands of terms (literals, variables, fields,
parenthesised pipelines and function names).

The whole template is parsed before it runs, so a syntax error or an unknown function is reported with its line
even in a branch the values never take, as Go does. Parsing takes time in proportion to the text (a 1 MiB template
is one), looks at the render's deadline as it goes, refuses nesting deeper than MAX_DEPTH, and a template's parse is
kept by its digest, so the same text is parsed once.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from domain.catalog.budget import Budget, BudgetExceeded
from domain.catalog.gofuncs import FUNCS, RenderError

MAX_DEPTH = 100  # blocks inside blocks, and parentheses inside parentheses: deeper, Python's own stack would give out
MAX_PIECES = 50_000  # actions and terms of one template (the largest reference template has 136 actions)
KEPT = 64  # parsed templates kept by digest
KEPT_PIECES = 200_000  # actions and terms of the parses kept (some tens of MiB)
LOOK_EVERY = 256  # actions and terms between two looks at the deadline
ACTION_END = re.compile(r'["`]|\}\}')  # inside an action: a quoted string starts, or the action ends
QUOTE_END = re.compile(r'["\\]')
# A string is matched possessively: a backtracking match of a 1 MiB literal held ~150 MiB of the regex engine's stack.
TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]++|\\.)*+")|(?P<raw>`[^`]*`)|(?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)'
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


@dataclass
class Reading:
    """One parse's count of pieces, and its looks at the render's deadline."""

    budget: Budget
    pieces: int = 0

    def look(self, pieces: int = 1) -> None:
        before, self.pieces = self.pieces, self.pieces + pieces
        if self.pieces > MAX_PIECES:
            raise BudgetExceeded(f"the template has over {MAX_PIECES:,} actions and terms (the limit)")
        if before // LOOK_EVERY != self.pieces // LOOK_EVERY and self.budget.expired():
            raise BudgetExceeded("parsing the template ran past the render's deadline"
                                 + (f" of {self.budget.seconds:g} s" if self.budget.seconds else ""))


_kept: OrderedDict[bytes, tuple[list[Any], int]] = OrderedDict()
_kept_lock = threading.Lock()  # renders run on a thread pool


def parse(text: str, budget: Budget | None = None) -> list[Any]:
    """The template's nodes (shared between renders: never changed by one); RenderError with the line where the text
    is not a template, BudgetExceeded past MAX_PIECES or when the budget's deadline passes while parsing."""
    digest = hashlib.sha256(text.encode(errors="surrogatepass")).digest()
    with _kept_lock:
        if digest in _kept:
            _kept.move_to_end(digest)
            return _kept[digest][0]
    reading = Reading(budget or Budget())
    nodes = _parse_all(text, reading)
    with _kept_lock:
        _kept[digest] = (nodes, reading.pieces)
        while len(_kept) > KEPT or sum(pieces for _, pieces in _kept.values()) > KEPT_PIECES:
            _kept.popitem(last=False)
    return nodes


def _parse_all(text: str, reading: Reading) -> list[Any]:
    parts = _lex(text, reading)
    nodes, end = _parse(parts, 0, (), reading)
    if end < len(parts):
        line, body = parts[end][1], parts[end][2]
        raise RenderError(f"line {line}: unexpected {{{{{body}}}}}")
    return nodes


def _lex(text: str, reading: Reading) -> list[tuple[str, int, str]]:
    """(kind, line, body) parts: text between actions, trimmed where `{{-` or `-}}` asks, and action bodies. Lines
    are counted from the previous action on, so lexing is linear in the text."""
    parts: list[tuple[str, int, str]] = []
    pos, line, trim_next = 0, 1, False
    while (start := text.find("{{", pos)) >= 0:
        reading.look()
        line += text.count("\n", pos, start)
        end = _action_end(text, start + 2, line)
        body = text[start + 2 : end]
        trim_before = body[:1] == "-" and body[1:2].isspace()
        body = body[2:] if trim_before else body
        trim_after = len(body) > 1 and body[-1] == "-" and body[-2].isspace()
        before = text[pos:start].lstrip() if trim_next else text[pos:start]
        parts.append(("text", 0, before.rstrip() if trim_before else before))
        parts.append(("action", line, (body[:-2] if trim_after else body).strip()))
        line += text.count("\n", start, end)
        pos, trim_next = end + 2, trim_after
    tail = text[pos:]
    parts.append(("text", 0, tail.lstrip() if trim_next else tail))
    return parts


def _action_end(text: str, pos: int, line: int) -> int:
    """Where the action whose body starts at `pos` ends (its `}}`); a `}}` inside a quoted string does not end it."""
    while found := ACTION_END.search(text, pos):
        if found.group() == "}}":
            return found.start()
        pos = _quote_end(text, found.end(), found.group())
        if pos < 0:
            break
    raise RenderError(f"line {line}: unclosed action")


def _quote_end(text: str, pos: int, quote: str) -> int:
    """Just past the string that opened before `pos`, or -1 if it never closes."""
    if quote == "`":
        close = text.find("`", pos)
        return close + 1 if close >= 0 else -1
    while found := QUOTE_END.search(text, pos):
        if found.group() == '"':
            return found.end()
        pos = found.end() + 1  # a backslash escapes the next character
    return -1


def _parse(parts: list[tuple[str, int, str]], i: int, stop: tuple[str, ...], reading: Reading,
           depth: int = 0) -> tuple[list[Any], int]:
    if depth > MAX_DEPTH:
        raise RenderError(f"line {parts[i - 1][1]}: blocks are nested over {MAX_DEPTH} deep (the limit)")
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
            block, i = _parse_block(parts, i, word, body[len(word) :], line, reading, depth)
            nodes.append(block)
        elif word in ("else", "end"):
            raise RenderError(f"line {line}: unexpected {{{{{word}}}}}")
        else:
            nodes.append(_pipeline(body, line, reading))
    if stop:
        raise RenderError("unexpected end of template: a block is missing its {{end}}")
    return nodes, i


def _parse_block(parts: list[tuple[str, int, str]], i: int, word: str, head: str, line: int,
                 reading: Reading, depth: int) -> tuple[Block, int]:
    block = Block(word, [])
    body, i = _parse(parts, i, ("else", "end"), reading, depth + 1)
    block.branches.append((_pipeline(head, line, reading), body))
    while parts[i][2].split(None, 1)[0] == "else":
        rest = parts[i][2][4:].strip()
        if rest.startswith(("if ", "with ")) and word != "range":
            at = parts[i][1]
            body, i = _parse(parts, i + 1, ("else", "end"), reading, depth + 1)
            block.branches.append((_pipeline(rest.split(None, 1)[1], at, reading), body))
        else:
            block.otherwise, i = _parse(parts, i + 1, ("end",), reading, depth + 1)
    return block, i + 1


def _pipeline(text: str, line: int, reading: Reading) -> Pipeline:
    try:
        declared = DECLARE.match(text)
        if declared:
            names = tuple(n.strip() for n in declared.group(1).split(","))
            return Pipeline(_commands(_tokens(declared.group(3), reading)), names, declared.group(2))
        return Pipeline(_commands(_tokens(text, reading)))
    except BudgetExceeded:
        raise
    except RenderError as error:
        raise RenderError(f"line {line}: {error}") from None


def _tokens(text: str, reading: Reading) -> list[tuple[str, str]]:
    tokens, pos, end = [], 0, len(text.rstrip())
    while pos < end:
        match = TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise RenderError(f"cannot read {text[pos:].strip()!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
        reading.look()
    if not tokens:
        raise RenderError("missing value for command")
    return tokens


def _commands(tokens: list[tuple[str, str]]) -> list[list[Term]]:
    return _group(tokens, 0, 0)[0]


def _group(tokens: list[tuple[str, str]], i: int, depth: int) -> tuple[list[list[Term]], int]:
    """The commands from tokens[i] to the `)` closing a parenthesised group (the end, outside any), and where that
    `)` is."""
    if depth > MAX_DEPTH:
        raise RenderError(f"parentheses are nested over {MAX_DEPTH} deep (the limit)")
    commands: list[list[Term]] = [[]]
    while i < len(tokens):
        kind, text = tokens[i]
        if (kind, text) == ("op", ")") and depth:
            break
        if (kind, text) == ("op", "|"):
            commands.append([])
        elif (kind, text) == ("op", "("):
            inner, i = _group(tokens, i + 1, depth + 1)
            if i == len(tokens):
                raise RenderError("unclosed left paren")
            commands[-1].append(Term("sub", Pipeline(inner)))
        elif kind == "op":
            raise RenderError(f"unexpected {text!r}")
        else:
            commands[-1].append(_term(kind, text))
        i += 1
    if any(not command for command in commands):
        raise RenderError("missing command in pipeline")
    return commands, i


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


