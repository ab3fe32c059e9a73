"""Roving's keys on a job or service: `profile:` (an application profile's name) and `roving-hooks:` (its own pre and
post scripts); `roving-profile` is what submission records of the profile, never written in a Fuzzfile."""

from __future__ import annotations

import re

from domain.durations import DurationError, parse_duration
from domain.fuzzfile.decode import join
from domain.fuzzfile.schema import Container, Problem

PROFILE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
DEFAULT_HOOK_TIMEOUT = 60.0
MAX_HOOK_TIMEOUT = 3600.0
PRE_HOOK_REASON = "pre hook of "  # how an agent's exit reason naming a failing pre hook begins
LIVENESS_REASON = "liveness probe failed"  # ... and one naming a service its liveness probe killed


def check_roving_keys(step: Container, path: str) -> tuple[list[Problem], list[Problem]]:
    errors: list[Problem] = []
    if step.roving_profile is not None:
        errors.append(Problem(join(path, "roving-profile"),
                              "Roving records the bound profile here at submission; name one with `profile:` instead"))
    if step.profile is not None and not PROFILE_NAME.match(step.profile):
        errors.append(Problem(join(path, "profile"), "a profile name is 1-63 lower-case letters, digits and -"))
    hooks = step.roving_hooks
    if hooks is not None and hooks.timeout is not None:
        problem = hook_timeout_problem(hooks.timeout)
        if problem:
            errors.append(Problem(join(join(path, "roving-hooks"), "timeout"), problem))
    return errors, []


def hook_timeout_problem(value: str | int | float) -> str | None:
    try:
        seconds = parse_duration(value)
    except DurationError as error:
        return str(error)
    if not 0 < seconds <= MAX_HOOK_TIMEOUT:
        return f"a hook timeout is more than 0 and at most {MAX_HOOK_TIMEOUT:g}s"
    return None


def hook_seconds(value: str | int | float | None) -> float:
    return parse_duration(value) if value is not None else DEFAULT_HOOK_TIMEOUT
