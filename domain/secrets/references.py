"""`secret://` references in a Fuzzfile's `env` entries: their grammar, where they are, and putting values in.

    secret://user/NAME                the workflow owner's own secret
    secret://group/NAME               a secret of the workflow's group (the group its work is accounted to)
    secret://group/GROUP/NAME         a secret of the owner's group named GROUP
    secret://organization/NAME        a secret of the owner's organization
    secret://cluster/NAME             a cluster admin's secret (workflows of cluster admins only)

A whole env value is one reference (`TOKEN=secret://user/hf`); a reference inside a longer value is text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from domain.secrets.rules import Scope, SecretError, check_name, check_scope

PREFIX = "secret://"


class Reference(msgspec.Struct, frozen=True):
    scope: Scope
    name: str
    group: str = ""  # a group's name, for group/GROUP/NAME; "" is the workflow's own group

    def __str__(self) -> str:
        group = f"{self.group}/" if self.group else ""
        return f"{PREFIX}{self.scope.value}/{group}{self.name}"


IMAGE_SECRET_VARIABLE = "ROVING_IMAGE_SECRET"  # how an image's registry secret travels to the agent (never to the job)


class Use(msgspec.Struct, frozen=True):
    """One env entry holding a reference: where it is (`jobs.train.env[0]`), its variable and the reference."""

    path: str
    variable: str
    text: str


def is_reference(value: str) -> bool:
    return value.startswith(PREFIX)


def parse_reference(text: str) -> Reference:
    """The reference, or SecretError naming what is wrong with it."""
    parts = text.removeprefix(PREFIX).split("/")
    scope = check_scope(parts[0]).value if parts and parts[0] else ""
    if not scope:
        raise SecretError("reference", f"{text!r} names no scope; use secret://user/NAME, secret://group/NAME, "
                                       "secret://organization/NAME or secret://cluster/NAME")
    grouped = scope == Scope.GROUP.value and len(parts) == 3
    if len(parts) != 2 and not grouped:
        raise SecretError("reference", f"{text!r} should be secret://{scope}/NAME"
                                       + (" or secret://group/GROUP/NAME" if scope == "group" else ""))
    name = check_name(parts[-1], "reference")
    group = check_name(parts[1], "reference") if grouped else ""
    return Reference(Scope(scope), name, group)


def uses(definition: Any) -> Iterator[Use]:
    """Every env entry of the definition (defaults, jobs, services) whose value is a `secret://` reference, every
    secret an image names (its registry's credentials), and every secret a volume's transfer names."""
    defaults = getattr(definition, "defaults", None)
    if defaults is not None:
        yield from _env_uses("defaults.env", defaults.env)
        for kind in ("job", "service"):
            layer = getattr(defaults, kind, None)
            yield from _env_uses(f"defaults.{kind}.env", layer.env if layer is not None else None)
    for section in ("jobs", "services"):
        for name, step in (getattr(definition, section, None) or {}).items():
            yield from _env_uses(f"{section}.{name}.env", step.env)
            image = getattr(step, "image", None)
            if image is not None and image.secret:
                yield Use(f"{section}.{name}.image.secret", "image", image.secret)
    yield from _transfer_uses(getattr(definition, "volumes", None) or {})


def _transfer_uses(volumes: Mapping[str, Any]) -> Iterator[Use]:
    """The secrets volumes' ingress and egress name, on either side of each transfer."""
    for name, volume in volumes.items():
        for kind in ("ingress", "egress"):
            for index, transfer in enumerate(getattr(volume, kind, None) or []):
                for side in ("source", "destination"):
                    secret = getattr(transfer, side).secret
                    if secret:
                        yield Use(f"volumes.{name}.{kind}[{index}].{side}.secret", "secret", secret)


def _env_uses(path: str, env: list[str] | None) -> Iterator[Use]:
    for index, entry in enumerate(env or []):
        variable, sep, value = entry.partition("=")
        if sep and is_reference(value):
            yield Use(f"{path}[{index}]", variable, value)


def referenced(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of a job's resolved env whose values are references: variable -> reference text."""
    return {k: v for k, v in env.items() if isinstance(v, str) and is_reference(v)}
