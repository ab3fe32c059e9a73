"""The dependency graph between steps: `depends-on` and deprecated `requires`, unknown names and cycles."""

from __future__ import annotations

import difflib

from domain.fuzzfile.blocks import Dependency
from domain.fuzzfile.decode import join
from domain.fuzzfile.schema import Container, Problem, Service, Workflow

STATUSES = ("FINISHED", "FAILED", "RUNNING")


def steps(workflow: Workflow) -> dict[str, tuple[str, Container]]:
    """Every step by name with its section (`jobs` or `services`), jobs first, in file order."""
    found: dict[str, tuple[str, Container]] = {}
    for section in ("jobs", "services"):
        for name, step in (getattr(workflow, section) or {}).items():
            found.setdefault(name, (section, step))
    return found


def dependencies(step: Container) -> list[Dependency]:
    """`depends-on` entries plus `requires` names (which mean FINISHED)."""
    listed = list(step.depends_on or [])
    return listed + [Dependency(name=name) for name in step.requires or []]


def check_dependencies(workflow: Workflow) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings): unknown names, wrong statuses, RUNNING on a job, `requires`, and cycles."""
    errors: list[Problem] = []
    warnings: list[Problem] = []
    known = steps(workflow)
    for name, (section, step) in known.items():
        path = join(section, name)
        for index, dep in enumerate(step.depends_on or []):
            errors += _check_one(dep, f"{join(path, 'depends-on')}[{index}]", known)
        for index, required in enumerate(step.requires or []):
            where = f"{join(path, 'requires')}[{index}]"
            errors += _check_one(Dependency(name=required), where, known)
        if step.requires:
            message = "`requires` is deprecated; write depends-on: [{name: ..., status: FINISHED}]"
            warnings.append(Problem(join(path, "requires"), message))
    if not errors:
        errors += _cycles(known)
    return errors, warnings


def _check_one(dep: Dependency, path: str, known: dict[str, tuple[str, Container]]) -> list[Problem]:
    if dep.name not in known:
        close = difflib.get_close_matches(dep.name, list(known), n=1)
        hint = f"; did you mean `{close[0]}`?" if close else f"; steps are: {', '.join(known)}"
        return [Problem(f"{path}.name", f"no job or service is named `{dep.name}`{hint}")]
    if dep.status.upper() not in STATUSES:
        return [Problem(f"{path}.status", f"status must be FINISHED, FAILED, or RUNNING (services only), not {dep.status}")]
    if dep.status.upper() == "RUNNING" and not isinstance(known[dep.name][1], Service):
        return [Problem(f"{path}.status", f"`{dep.name}` is a job; RUNNING applies to services only (use FINISHED)")]
    return []


def _cycles(known: dict[str, tuple[str, Container]]) -> list[Problem]:
    edges = {name: [d.name for d in dependencies(step)] for name, (_, step) in known.items()}
    state: dict[str, int] = {}
    problems: list[Problem] = []
    reported: set[frozenset[str]] = set()

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for target in edges[name]:
            if state.get(target) == 1:
                cycle = trail[trail.index(target) :] + [target]
                if frozenset(cycle) not in reported:
                    reported.add(frozenset(cycle))
                    section = known[target][0]
                    problems.append(Problem(join(section, target), f"dependency cycle: {' -> '.join(cycle)}"))
            elif target not in state:
                visit(target, trail + [target])
        state[name] = 2

    for name in edges:
        if name not in state:
            visit(name, [name])
    return problems


def topological_order(workflow: Workflow) -> list[str]:
    """Step names with every dependency before its dependents (the workflow must be acyclic)."""
    known = steps(workflow)
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for dep in dependencies(known[name][1]):
            visit(dep.name)
        order.append(name)

    for name in known:
        visit(name)
    return order
