"""What a provisioner definition holds (the `PUT /v4/provisioners/{name}` body) and the checks it passes.

A definition names a provider (`local`: node agents started on the control plane's host; `command`: an admin's
create and delete programs, spoken to in JSON on stdin and stdout), the template its nodes are made from, how many
it may have at once (`maxNodes`, counting nodes still being made), and how long one may sit idle (`idleSeconds`)
before it is drained and deleted. Provider settings hold no secrets: a command reads its own credentials.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from domain.fuzzfile.schema import Problem
from domain.quantities import QuantityError, parse_memory

PROVIDERS = ("local", "command")
NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")
SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
MAX_NODES_CEILING = 10_000
DEFAULT_EXPECTED_BOOT = {"local": 10.0, "command": 120.0}
DEFAULT_BOOT_TIMEOUT = {"local": 120.0, "command": 900.0}
DEFAULT_COMMAND_TIMEOUT = 300.0
COMMAND_SETTINGS = {"create", "delete", "timeoutSeconds"}
LOCAL_SETTINGS = {"runtime"}
LOCAL_RUNTIMES = ("host", "oci")


class TemplateBody(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A node template as users write it: memory as a size ("4GiB") or bytes."""

    cpu: int
    memory: str | int
    devices: dict[str, int] = {}
    annotations: dict[str, str] = {}
    segment: str = ""


class ProvisionerBody(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, rename="camel"):
    provider: str
    template: TemplateBody
    max_nodes: int
    idle_seconds: float = 300.0
    expected_boot_seconds: float | None = None  # arrival estimate before any node was measured
    boot_timeout_seconds: float | None = None   # a node not registered by then failed to come up
    settings: dict[str, Any] = {}


class Template(msgspec.Struct, frozen=True, kw_only=True):
    """The node a provisioner makes: what its agent declares when it registers."""

    cpu: int
    memory: int
    devices: dict[str, int] = {}
    annotations: dict[str, str] = {}
    segment: str = ""


class Spec(msgspec.Struct, frozen=True, kw_only=True):
    """A checked definition, as the aggregate records it."""

    provider: str
    template: Template
    max_nodes: int
    idle_seconds: float
    expected_boot_seconds: float
    boot_timeout_seconds: float
    settings: dict[str, Any] = {}


def name_problem(name: str) -> str | None:
    if not NAME.match(name):
        return (f"{name!r} is not a provisioner name: 1 to 40 lower-case letters, digits and dashes, starting and "
                "ending with a letter or digit (its nodes are named NAME-1, NAME-2, ...)")
    return None


def to_spec(body: ProvisionerBody) -> tuple[Spec | None, list[Problem]]:
    """The checked definition, or every problem with the field it is in."""
    problems: list[Problem] = []
    if body.provider not in PROVIDERS:
        problems.append(Problem("provider", f"unknown provider {body.provider!r}; use one of {', '.join(PROVIDERS)}"))
    template = _template(body.template, problems)
    if not 1 <= body.max_nodes <= MAX_NODES_CEILING:
        problems.append(Problem("maxNodes", f"must be between 1 and {MAX_NODES_CEILING}, got {body.max_nodes}"))
    _seconds("idleSeconds", body.idle_seconds, problems, allow_zero=True)
    provider = body.provider if body.provider in PROVIDERS else "local"
    expected = _default(body.expected_boot_seconds, DEFAULT_EXPECTED_BOOT[provider])
    timeout = _default(body.boot_timeout_seconds, DEFAULT_BOOT_TIMEOUT[provider])
    _seconds("expectedBootSeconds", expected, problems)
    _seconds("bootTimeoutSeconds", timeout, problems)
    settings = _settings(body.provider, body.settings, problems)
    if problems or template is None:
        return None, problems
    return Spec(provider=body.provider, template=template, max_nodes=body.max_nodes, idle_seconds=body.idle_seconds,
                expected_boot_seconds=expected, boot_timeout_seconds=timeout, settings=settings), []


def _default(given: float | None, default: float) -> float:
    return default if given is None else given


def _seconds(field: str, value: float, problems: list[Problem], allow_zero: bool = False) -> None:
    low_ok = value >= 0 if allow_zero else value > 0
    if not (low_ok and value <= 365 * 86400):
        floor = "0 or more" if allow_zero else "more than 0"
        problems.append(Problem(field, f"must be {floor} seconds and at most a year, got {value}"))


def _template(body: TemplateBody, problems: list[Problem]) -> Template | None:
    if body.cpu < 1:
        problems.append(Problem("template.cpu", f"a node needs at least 1 cpu, got {body.cpu}"))
    try:
        memory = parse_memory(body.memory)
    except QuantityError as error:
        problems.append(Problem("template.memory", str(error)))
        return None
    if memory < 1:
        problems.append(Problem("template.memory", "a node needs some memory, got 0"))
    for device, count in body.devices.items():
        if not device or count < 0:
            problems.append(Problem(f"template.devices.{device}", f"needs a name and a count of 0 or more, got {count}"))
    for key in body.annotations:
        if not key or "=" in key:
            problems.append(Problem(f"template.annotations.{key}", "an annotation name is not empty and has no '='"))
    if body.segment and not SEGMENT.match(body.segment):
        problems.append(Problem("template.segment", f"{body.segment!r} is not a segment name (letters, digits, _ . -)"))
    return Template(cpu=body.cpu, memory=memory, devices=dict(body.devices), annotations=dict(body.annotations),
                    segment=body.segment)


def _settings(provider: str, settings: dict[str, Any], problems: list[Problem]) -> dict[str, Any]:
    known = COMMAND_SETTINGS if provider == "command" else LOCAL_SETTINGS
    for key in sorted(set(settings) - known):
        problems.append(Problem(f"settings.{key}", f"the {provider} provider takes no setting {key!r}; it takes "
                                                   f"{', '.join(sorted(known))}"))
    if provider == "command":
        for key in ("create", "delete"):
            program = settings.get(key)
            if not isinstance(program, str) or not program.startswith("/"):
                problems.append(Problem(f"settings.{key}", "the absolute path of the program the control plane runs "
                                                           f"to {key} a node (JSON on stdin, JSON on stdout)"))
        timeout = settings.get("timeoutSeconds", DEFAULT_COMMAND_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 3600:
            problems.append(Problem("settings.timeoutSeconds", f"must be more than 0 and at most 3600, got {timeout!r}"))
        return {"timeoutSeconds": DEFAULT_COMMAND_TIMEOUT, **settings}
    if provider == "local" and settings.get("runtime", "host") not in LOCAL_RUNTIMES:
        problems.append(Problem("settings.runtime", f"use one of {', '.join(LOCAL_RUNTIMES)}"))
    return dict(settings)
