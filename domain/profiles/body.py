"""What a profile holds (the `PUT /v4/profiles/{name}` body) and the checks it passes before it is recorded.

`resource` has the Fuzzfile's `resource` shape (cpu, memory, devices, exclusive, annotations); a device count of
0 there means the profile allows none of that device. `annotations` are node annotations the stage requires (they
join `resource.annotations`). Profiles are read by every user, so they hold no secrets: an env name that looks like
one is refused (set it from a secret:// reference in the Fuzzfile instead).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import msgspec

from domain.fuzzfile.blocks import Resource
from domain.fuzzfile.decode import check_shape, convert
from domain.fuzzfile.hooks import PROFILE_NAME, hook_seconds, hook_timeout_problem
from domain.fuzzfile.schema import Problem
from domain.fuzzfile.validate import ENV_NAME, Report, check_resource

MAX_HOOK_BYTES = 64 * 1024
# The audit log's notion of a secret-looking env name (projections.redaction), kept here for the domain's own use.
SECRET_HINTS = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "CREDENTIAL", "APIKEY", "PRIVATE")
SECRET_PARTS = frozenset({"KEY", "PWD", "PASS", "AUTH", "PAT"})


class ProfileBody(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A profile's values: env, resource, annotations and hooks (the body users send, kept as they sent it)."""

    env: dict[str, str] = {}
    resource: dict[str, Any] = {}
    annotations: dict[str, str] = {}
    pre: str = ""
    post: str = ""
    hook_timeout: str = ""

    def resource_spec(self) -> Resource:
        """`resource` as the Fuzzfile's struct (call only on a body `problems` found nothing in)."""
        return convert(self.resource, Resource) if self.resource else Resource()

    def hook_seconds(self) -> float:
        return hook_seconds(self.hook_timeout or None)

    def digest(self) -> str:
        """What the profile says, as a short fingerprint: a stage started only under the values it was bound to."""
        return hashlib.blake2b(msgspec.json.encode(self, order="sorted"), digest_size=8).hexdigest()


def name_problem(name: str) -> str | None:
    if PROFILE_NAME.match(name):
        return None
    return "a profile name is 1-63 lower-case letters, digits and -, starting and ending with a letter or digit"


def problems(body: ProfileBody) -> list[Problem]:
    """Every problem in a profile body, each at its field."""
    found: list[Problem] = []
    for name in body.env:
        if not ENV_NAME.match(name):
            found.append(Problem(f"env.{name}", "env names start with a letter or _ and hold only letters, digits and _"))
        elif secret_looking(name) or "secret://" in body.env[name]:
            found.append(Problem(f"env.{name}", "profiles hold no secrets and every user reads them; "
                                                "set this from a secret:// reference in the Fuzzfile instead"))
    found += _resource_problems(body.resource)
    for hook in ("pre", "post"):
        if len(getattr(body, hook).encode()) > MAX_HOOK_BYTES:
            found.append(Problem(hook, f"a hook script is at most {MAX_HOOK_BYTES} bytes"))
    if body.hook_timeout and (problem := hook_timeout_problem(body.hook_timeout)):
        found.append(Problem("hook_timeout", problem))
    return found


def secret_looking(name: str) -> bool:
    upper = name.upper()
    return any(hint in upper for hint in SECRET_HINTS) or not SECRET_PARTS.isdisjoint(re.split(r"[_.-]", upper))


def _resource_problems(resource: dict[str, Any]) -> list[Problem]:
    shape = check_shape(resource, Resource, "resource")
    if shape or not resource:
        return shape
    spec: Resource = convert(resource, Resource)
    report = Report()
    asked = {name: count for name, count in (spec.devices or {}).items() if count != 0}  # 0: none allowed
    check_resource(msgspec.structs.replace(spec, devices=asked or None), "resource", report)
    return report.errors
