"""A Go text/template renderer for the subset catalog templates use: actions with trim markers, comments, `if`/
`else if`/`with`/`range` blocks, variables (`$x :=`, `$x =`, `$`), fields, pipelines, parenthesised calls and
the functions of domain.catalog.gofuncs.

`render(text, values, clock, budget)` parses the template (domain.catalog.goparse), then executes it over `values`
within `budget` (domain.catalog.budget): every action, call and loop turn is a step, and what it makes is measured.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from domain.catalog.budget import Budget, BudgetExceeded
from domain.catalog.gofuncs import FUNCS, JOINING, Clock, RenderError, TemplateFailure, clock_funcs, show, truthy
from domain.catalog.goparse import Block, Pipeline, Term, parse

__all__ = ["Budget", "BudgetExceeded", "Clock", "RenderError", "TemplateFailure", "render"]

LAZY = frozenset({"and", "or"})  # Go stops at the first argument that decides


@dataclass
class Scope:
    dot: Any
    frames: list[dict[str, Any]]
    budget: Budget

    def lookup(self, name: str) -> Any:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        raise RenderError(f"undefined variable: {name}")

    def assign(self, name: str, value: Any) -> None:
        for frame in reversed(self.frames):
            if name in frame:
                frame[name] = value
                return
        raise RenderError(f"undefined variable: {name}")

    def inner(self, dot: Any, frame: dict[str, Any] | None = None) -> Scope:
        return Scope(dot, [*self.frames, frame or {}], self.budget)


def render(text: str, values: Mapping[str, Any], clock: Clock, budget: Budget | None = None) -> str:
    """The template executed over `values`; RenderError (TemplateFailure for `fail`, BudgetExceeded past the
    budget) says what went wrong."""
    budget = budget or Budget()
    nodes = parse(text, budget)
    funcs = {**FUNCS, **clock_funcs(clock)}
    out: list[str] = []
    data = dict(values)
    try:
        _run(nodes, Scope(data, [{"$": data}], budget), funcs, out)
    except RecursionError:  # `{{$l = list $l}}` in a loop nests a list as deep as it likes; printing it recurses
        raise BudgetExceeded("the render made a value nested too deeply to print or compare (the limit is Python's "
                             "stack, about 1,000 levels)") from None
    return "".join(out)


def _run(nodes: list[Any], scope: Scope, funcs: dict[str, Callable[..., Any]], out: list[str]) -> None:
    for node in nodes:
        scope.budget.spend()
        if isinstance(node, str):
            scope.budget.write(node)
            out.append(node)
        elif isinstance(node, Pipeline):
            value = _execute(node, scope, funcs)
            if not node.op:
                text = show(value)
                scope.budget.write(text)
                out.append(text)
        elif node.kind == "range":
            _run_range(node, scope, funcs, out)
        else:
            _run_if(node, scope, funcs, out)


def _run_if(block: Block, scope: Scope, funcs: dict[str, Callable[..., Any]], out: list[str]) -> None:
    for head, body in block.branches:
        inner = scope.inner(scope.dot)
        value = _execute(head, inner, funcs)
        if truthy(value):
            _run(body, inner.inner(value if block.kind == "with" else scope.dot), funcs, out)
            return
    _run(block.otherwise, scope.inner(scope.dot), funcs, out)


def _run_range(block: Block, scope: Scope, funcs: dict[str, Callable[..., Any]], out: list[str]) -> None:
    head, body = block.branches[0]
    pairs = _pairs(_evaluate(head.commands, scope, funcs), scope.budget)
    for key, value in pairs:
        bound = [value] if len(head.names) == 1 else [key, value]
        _run(body, scope.inner(value, dict(zip(head.names, bound, strict=False))), funcs, out)
    if not pairs:
        _run(block.otherwise, scope.inner(scope.dot), funcs, out)


def _pairs(items: Any, budget: Budget) -> list[tuple[Any, Any]]:
    """What `range` walks, as (key, value), counted against the budget before any of it is made."""
    if isinstance(items, int) and not isinstance(items, bool):
        budget.turns(items)
        return [(n, n) for n in range(items)]
    if isinstance(items, dict | list | tuple):
        budget.turns(len(items))
    if isinstance(items, dict):
        return [(key, items[key]) for key in sorted(items, key=str)]  # Go ranges over a map in key order
    if isinstance(items, list | tuple):
        return list(enumerate(items))
    if items is None:
        return []
    raise RenderError(f"range can't iterate over {show(items)}")


def _execute(pipeline: Pipeline, scope: Scope, funcs: dict[str, Callable[..., Any]]) -> Any:
    value = _evaluate(pipeline.commands, scope, funcs)
    if pipeline.op == ":=":
        scope.frames[-1][pipeline.names[-1]] = value
    elif pipeline.op == "=":
        scope.assign(pipeline.names[-1], value)
    return value


def _evaluate(commands: list[list[Term]], scope: Scope, funcs: dict[str, Callable[..., Any]]) -> Any:
    piped: list[Any] = []
    for command in commands:
        head, args = command[0], command[1:]
        if head.kind != "func":
            if args or piped:
                raise RenderError(f"can't give argument to non-function {_name(head)}")
            piped = [_value(head, scope, funcs)]
            continue
        piped = [_call(head.value, args, piped, scope, funcs)]
    return piped[0]


def _call(name: str, args: list[Term], piped: list[Any], scope: Scope, funcs: dict[str, Callable[..., Any]]) -> Any:
    if name in LAZY:
        return _and_or(name == "and", args, piped, scope, funcs)
    values = [_value(a, scope, funcs) for a in args] + piped
    scope.budget.call(name, values, name in JOINING)
    try:
        return scope.budget.admit(funcs[name](*values), name)
    except (RenderError, TemplateFailure):
        raise
    except (TypeError, ValueError, AttributeError, KeyError, OverflowError) as error:
        raise RenderError(f"error calling {name}: {error}") from None


def _and_or(conjunction: bool, args: list[Term], piped: list[Any], scope: Scope, funcs: Any) -> Any:
    value: Any = None
    scope.budget.spend(1 + len(args) + len(piped))
    for value in _lazily(args, piped, scope, funcs):
        if truthy(value) != conjunction:
            return value
    return value


def _lazily(args: list[Term], piped: list[Any], scope: Scope, funcs: Any) -> Iterator[Any]:
    """The arguments' values, each worked out only when asked for (`and`/`or` stop at the first that decides)."""
    for term in args:
        yield _value(term, scope, funcs)
    yield from piped


def _value(term: Term, scope: Scope, funcs: dict[str, Callable[..., Any]]) -> Any:
    if term.kind == "lit":
        return term.value
    if term.kind == "var":
        return _walk(scope.lookup(term.value), term.path)
    if term.kind == "field":
        return _walk(scope.dot, term.path)
    if term.kind == "sub":
        return _evaluate(term.value.commands, scope, funcs)
    return _call(term.value, [], [], scope, funcs)


def _walk(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _name(term: Term) -> str:
    return {"var": str(term.value), "field": "." + ".".join(term.path)}.get(term.kind, show(term.value))
