"""What a `volume://` reference names: its scope (user or group), storage class and volume name, checked by the
parser (a malformed reference is an error naming the field); domain.volumes decides what the cluster gives it."""

from __future__ import annotations

import re

import msgspec

from domain.fuzzfile.schema import Workflow

PREFIX = "volume://"
EPHEMERAL_CLASS = "ephemeral"
SCOPES = ("user", "group")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class Reference(msgspec.Struct, frozen=True):
    scope: str
    storage_class: str
    name: str = ""

    @property
    def ephemeral(self) -> bool:
        return self.storage_class == EPHEMERAL_CLASS


def parse_reference(text: str) -> Reference | str:
    """The reference's parts, or why it is not one (a message for the `reference` field)."""
    if not text.startswith(PREFIX):
        return "a volume reference looks like volume://user/ephemeral or volume://group/persistent/NAME"
    parts = text.removeprefix(PREFIX).split("/")
    if parts[0] not in SCOPES or len(parts) < 2 or len(parts) > 3 or not all(parts[1:]):
        return f"{text}: expected volume://user/CLASS[/NAME] or volume://group/CLASS/NAME"
    bad = [p for p in parts[1:] if not NAME.match(p)]
    if bad:
        return f"{text}: `{bad[0]}` may hold only letters, digits, `_`, `.` and `-`"
    if parts[0] == "group" and len(parts) == 2 and parts[1] != EPHEMERAL_CLASS:
        return f"{text}: a group volume needs a name, e.g. volume://group/{parts[1]}/shared"
    return Reference(parts[0], parts[1], parts[2] if len(parts) == 3 else "")


def references(workflow: Workflow) -> dict[str, Reference]:
    """Volume name -> its parsed reference, for every volume whose reference parses (validation names the rest)."""
    found = {}
    for name, volume in (workflow.volumes or {}).items():
        parsed = parse_reference(volume.reference) if volume.reference else None
        if isinstance(parsed, Reference):
            found[name] = parsed
    return found
