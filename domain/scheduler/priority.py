"""The priority expression (CEL): compiling it once per config, evaluating it per allocation, and its texts.

CEL never coerces int and double, so every input has one fixed type: priorities, sizes and waited time are
ints, `waited_hours` is a double, `kind` is a string and `exclusive`/`preemptible` are bools.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection
from datetime import datetime
from functools import lru_cache

import cel
import msgspec

from domain.scheduler.snapshot import QueuedAllocation

DEFAULT_PRIORITY = "organization + group + user + workflow + waited_seconds / 3600"
# Organization, group, user and workflow priorities each lie within +-PRIORITY_LIMIT, so any sum or small
# product of them stays far inside CEL's int64 (a sum of int64 maxima overflowed and stalled every pass).
PRIORITY_LIMIT = 1_000_000

SAMPLE_INPUTS: dict[str, object] = {
    "workflow": 0, "organization": 0, "group": 0, "user": 0,
    "waited_seconds": 0, "waited_hours": 0.0,
    "cpu": 1, "memory": 0, "devices": 0, "nodes": 1,
    "kind": "job", "exclusive": False, "preemptible": False,
}
VARIABLES = frozenset(SAMPLE_INPUTS)
_POSITION = re.compile(r"<input>:(\d+):(\d+):\s*(.*)")


class PriorityError(ValueError):
    """The expression cannot serve as a priority; line and column are 1-based when known."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None):
        super().__init__(reason)
        self.reason, self.line, self.column = reason, line, column


class Unevaluable(ValueError):
    """One allocation the pass cannot rank (overflow, division by zero, out-of-range inputs); `field` says which."""

    def __init__(self, message: str, field: str = "priority"):
        super().__init__(message)
        self.field = field


UNRANKED = float("-inf")  # where a listing puts work the expression cannot rank: after everything else
# What the compiled program raises for one input (ZeroDivisionError and OverflowError are ArithmeticErrors).
_EVALUATION_ERRORS = (ArithmeticError, TypeError, ValueError, RuntimeError)


def _position_of(source: str, name: str) -> tuple[int | None, int | None]:
    match = re.search(rf"\b{re.escape(name)}\b", source)
    if not match:
        return None, None
    before = source[: match.start()]
    return before.count("\n") + 1, match.start() - (before.rfind("\n") + 1) + 1


def _compile(source: str) -> cel.Program:
    try:
        return cel.compile(source)
    except ValueError as error:
        found = _POSITION.search(str(error))
        if not found:
            raise PriorityError(str(error)) from None
        raise PriorityError(found.group(3).strip(), int(found.group(1)), int(found.group(2))) from None


@lru_cache(maxsize=32)
def compile_priority(source: str) -> cel.Program:
    """Compile and check an expression: known variables only, and it must yield a number."""
    if not source.strip():
        raise PriorityError("the expression is empty")
    program = _compile(source)
    for name in sorted(set(program.variables()) - VARIABLES):
        raise PriorityError(f"unknown variable '{name}' (known: {', '.join(sorted(VARIABLES))})",
                            *_position_of(source, name))
    try:
        value = program.execute(SAMPLE_INPUTS)
    except (TypeError, RuntimeError, ValueError) as error:
        raise PriorityError(str(error).split(". ")[0]) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PriorityError(f"the expression must yield a number, it yields {type(value).__name__}")
    return program


Getter = Callable[[QueuedAllocation, int], object]
_GETTERS: dict[str, Getter] = {
    "workflow": lambda a, w: a.workflow_priority, "organization": lambda a, w: a.organization_priority,
    "group": lambda a, w: a.group_priority, "user": lambda a, w: a.user_priority,
    "waited_seconds": lambda a, w: w, "waited_hours": lambda a, w: w / 3600.0,
    "cpu": lambda a, w: a.cpu, "memory": lambda a, w: a.memory,
    "devices": lambda a, w: sum(a.devices.values()), "nodes": lambda a, w: a.nodes,
    "kind": lambda a, w: a.kind.value, "exclusive": lambda a, w: a.exclusive,
    "preemptible": lambda a, w: a.preemptible,
}


WAITED_NAMES = frozenset({"waited_seconds", "waited_hours"})


def inputs(allocation: QueuedAllocation, now: datetime, names: Collection[str] = VARIABLES) -> dict[str, object]:
    """The typed CEL inputs for one allocation (only `names`, by default all of them)."""
    waited = max(0, int((now - allocation.submitted_at).total_seconds()))
    return {name: _GETTERS[name](allocation, waited) for name in names}


class Evaluator:
    """Evaluates one compiled expression over many allocations, passing only the variables it reads."""

    def __init__(self, source: str):
        self.program = compile_priority(source)
        self.names = tuple(self.program.variables())
        self._getters: tuple[tuple[str, Getter], ...] = tuple((name, _GETTERS[name]) for name in self.names)
        self._waits = bool(WAITED_NAMES.intersection(self.names))

    def __call__(self, allocation: QueuedAllocation, now: datetime) -> float:
        """The priority, or UNRANKED when it cannot be computed: a queue listing never fails on one entry."""
        try:
            return self.evaluate(allocation, now)
        except Unevaluable:
            return UNRANKED

    def evaluate(self, allocation: QueuedAllocation, now: datetime) -> float:
        """The priority as a finite number, else Unevaluable saying why (the scheduler sets that work aside)."""
        try:
            waited = max(0, int((now - allocation.submitted_at).total_seconds())) if self._waits else 0
            value = float(self.program.execute({name: get(allocation, waited) for name, get in self._getters}))
        except _EVALUATION_ERRORS as error:
            raise Unevaluable(f"the priority expression cannot be evaluated for it: {_first_sentence(error)}") from None
        if not math.isfinite(value):
            raise Unevaluable(f"the priority expression yields {value} for it, not a finite number")
        return value


def _first_sentence(error: Exception) -> str:
    return str(error).split(". ")[0].strip() or type(error).__name__


class PriorityInputs(msgspec.Struct, frozen=True, kw_only=True):
    workflow: int = 0
    organization: int = 0
    group: int = 0
    user: int = 0


def check_workflow_priority(value: int) -> str | None:
    """A workflow may only lower its own priority, down to -PRIORITY_LIMIT: the error text, or None."""
    if value > 0:
        return f"a workflow's own priority must be <= 0, got {value}"
    if value < -PRIORITY_LIMIT:
        return f"a workflow's own priority must be between {-PRIORITY_LIMIT:,} and 0, got {value:,}"
    return None


def priority_set_text(p: PriorityInputs) -> str:
    return (f"Priority set (workflow: {p.workflow}, organization: {p.organization}, "
            f"group: {p.group}, user: {p.user})")


def priority_updated_texts(before: PriorityInputs, after: PriorityInputs) -> list[str]:
    """One line per input that moved, e.g. 'Priority updated: organization 5 -> 10'."""
    return [f"Priority updated: {name} {getattr(before, name)} -> {getattr(after, name)}"
            for name in ("workflow", "organization", "group", "user")
            if getattr(before, name) != getattr(after, name)]

