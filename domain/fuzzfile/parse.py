"""`parse_fuzzfile`: YAML text to a validated Workflow definition, or every problem with its path."""

from __future__ import annotations

from typing import Any

import msgspec

from domain.fuzzfile.decode import check_shape, convert, load_yaml, wide_numbers
from domain.fuzzfile.expansion import expansion_problems
from domain.fuzzfile.limits import check_size, check_stage_totals
from domain.fuzzfile.schema import Problem, Workflow
from domain.fuzzfile.stages import list_stages
from domain.fuzzfile.upgrade import upgrade_v1
from domain.fuzzfile.validate import validate

VERSIONS = ("v4", "v1")


class ParseResult(msgspec.Struct):
    """The definition when there are no errors (else None), plus every error and warning found."""

    definition: Workflow | None
    errors: list[Problem]
    warnings: list[Problem]

    @property
    def ok(self) -> bool:
        return self.definition is not None


def parse_fuzzfile(text: str) -> ParseResult:
    """Parse and validate a Fuzzfile (v4, or v1 upgraded with a warning per changed construct)."""
    document, problems = load_yaml(text)
    problems = problems or expansion_problems(document) or wide_numbers(document)
    if problems:
        return ParseResult(None, problems, [])
    if not isinstance(document, dict):
        return ParseResult(None, [Problem("", "a Fuzzfile is a mapping with version, jobs and/or services")], [])
    document, errors, warnings = _versioned(document)
    if errors:
        return ParseResult(None, errors, warnings)
    _stringify_words(document)
    errors = check_shape(document, Workflow)
    if errors:
        return ParseResult(None, errors, warnings)
    definition = convert(document, Workflow)
    report = validate(definition)
    warnings += report.warnings
    if report.errors:
        return ParseResult(None, report.errors, warnings)
    errors = check_size(definition) or check_stage_totals(list_stages(definition))
    return ParseResult(None if errors else definition, errors, warnings)


def _versioned(document: dict[str, Any]) -> tuple[dict[str, Any], list[Problem], list[Problem]]:
    version = document.get("version")
    if version == "v1":
        upgraded, warnings = upgrade_v1(document)
        return upgraded, [], warnings
    if version == "v4":
        return document, [], []
    if version is None:
        return document, [Problem("version", "`version` is required; write version: v4")], []
    return document, [Problem("version", "version must be v4 (legacy v1 files are upgraded)")], []


def _stringify_words(document: dict[str, Any]) -> None:
    """YAML reads `command: [blastp, -n, 8]` with a number; Fuzzball's string lists take it as "8"."""
    for section in ("jobs", "services"):
        steps = document.get(section)
        for step in steps.values() if isinstance(steps, dict) else ():
            for key in ("command", "args"):
                words = step.get(key) if isinstance(step, dict) else None
                if isinstance(words, list):
                    step[key] = [str(w) if isinstance(w, (int, float)) and not isinstance(w, bool) else w for w in words]
