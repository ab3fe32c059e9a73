"""The CatalogSource aggregate: where one tenant's catalog templates come from (a folder on the control plane's
host, or a git repository), owned by a group, an organization or the cluster.

One aggregate per (scope, owner, name), so a name is unique within its owner and a removed source's name can be
added again (its history goes on). Who may add, see and remove a source is the application's decision
(domain.app.catalog); the aggregate keeps the rules about what a source is.
"""

from __future__ import annotations

import enum
import re
from datetime import datetime
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import event

from domain.catalog.inputs import CatalogError
from domain.fuzzfile.schema import Problem
from domain.timed import TimedAggregate

SOURCES_ROOT = uuid5(NAMESPACE_URL, "roving:catalog-sources")
NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
GIT_SCHEMES = ("https://", "http://", "ssh://", "git://", "file://")
SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/].*$")  # git@host:org/repo.git
REF = re.compile(r"^[A-Za-z0-9._/-]{1,200}$")
USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/@]*)@")


class SourceScope(str, enum.Enum):
    GROUP = "group"
    ORGANIZATION = "organization"
    CLUSTER = "cluster"  # every tenant's: added and removed by cluster admins


class SourceKind(str, enum.Enum):
    FOLDER = "folder"
    GIT = "git"


def source_id(scope: SourceScope, owner_id: str, name: str) -> UUID:
    return uuid5(SOURCES_ROOT, f"{scope.value}:{owner_id}:{name}")


def check_source(name: str, kind: str, location: str, ref: str) -> SourceKind:
    """The kind, or CatalogError naming each field that is wrong."""
    problems = []
    if not NAME.match(name):
        problems.append(Problem("name", "a source name is 1-63 lower-case letters, digits and -, starting and ending "
                                        "with a letter or digit"))
    try:
        wanted = SourceKind(kind)
    except ValueError:
        problems.append(Problem("kind", f"expected folder or git, got {kind!r}"))
        raise CatalogError(problems) from None
    if wanted is SourceKind.FOLDER and not location.startswith("/"):
        problems.append(Problem("location", f"a folder source is an absolute path on the control plane's host, "
                                            f"got {location!r}"))
    if wanted is SourceKind.GIT and not (location.startswith(GIT_SCHEMES) or SCP_LIKE.match(location)):
        problems.append(Problem("location", f"a git source is a repository URL ({', '.join(GIT_SCHEMES)} or "
                                            f"user@host:path), got {location!r}"))
    if wanted is SourceKind.GIT and _credentials(location):
        problems.append(Problem("location", "a repository URL must not carry a password or token (it would be "
                                            "stored in the event log); give the control plane's host access instead, "
                                            "with an ssh deploy key or a git credential helper"))
    if ref and (wanted is SourceKind.FOLDER or not REF.match(ref) or ".." in ref or ref.startswith("-")):
        problems.append(Problem("ref", "a ref is a git branch or tag name (git sources only)"))
    if problems:
        raise CatalogError(problems)
    return wanted


REMOTE_SCHEMES = ("https", "http", "ssh", "git")
# The userinfo ends at the first / ? or #, as curl and git read a URL: `https://evil#@good/` goes to evil.
URL_HOST = re.compile(r"^([a-z]+)://(?:[^/?#@]*@)?(\[[0-9A-Fa-f:.]+\]|[^/:?#]*)(?::(\d+))?(?:[/?#]|$)")


def remote_of(location: str) -> tuple[str, str, str] | None:
    """(scheme, host, port) a git location reaches (`user@host:path` is ssh), lower-cased; None if not a remote, or
    if it holds a backslash or a space, which URL parsers read differently (`https://a\\@b/`)."""
    if any(c == "\\" or c.isspace() for c in location):
        return None
    found = URL_HOST.match(location)
    if found:
        return found.group(1).lower(), found.group(2).lower(), found.group(3) or ""
    if SCP_LIKE.match(location):
        return "ssh", location.split("@", 1)[1].split(":", 1)[0].lower(), ""
    return None


def allowed_remote(location: str, allowed: tuple[str, ...]) -> bool:
    """Whether `location` is at one of the `catalog.allowedSources` entries: `scheme://host[:port]`, where
    `*.example.org` stands for any host under example.org (not example.org itself) and no port means any."""
    remote = remote_of(location)
    if remote is None or remote[0] not in REMOTE_SCHEMES or not remote[1]:
        return False
    scheme, host, port = remote
    for entry in allowed:
        want_scheme, _, rest = entry.lower().partition("://")
        want_host, _, want_port = rest.partition(":")
        if want_scheme != scheme or (want_port and want_port != port):
            continue
        if host == want_host or (want_host.startswith("*.") and host.endswith(want_host[1:])):
            return True
    return False


def _credentials(location: str) -> bool:
    """A URL's userinfo is a credential unless it is a bare ssh user name (ssh://git@host/...)."""
    found = USERINFO.match(location)
    return found is not None and (":" in found.group(1) or not location.startswith("ssh://"))


def is_local(kind: SourceKind, location: str) -> bool:
    """A source read from the control plane's own disk (a folder, or a file:// repository)."""
    return kind is SourceKind.FOLDER or location.startswith("file://")


class CatalogSource(TimedAggregate):
    @event("Added")
    def __init__(self, id: UUID, name: str, kind: SourceKind, location: str, ref: str, scope: SourceScope,
                 owner_id: str, owner_name: str, organization_id: str, by: str, at: datetime) -> None:
        self._set(name, kind, location, ref, scope, owner_id, owner_name, organization_id, by, at)

    @classmethod
    def add(cls, name: str, kind: SourceKind, location: str, ref: str, scope: SourceScope, owner_id: str,
            owner_name: str, organization_id: str, by: str, at: datetime) -> CatalogSource:
        check_source(name, kind.value, location, ref)
        return cls(id=source_id(scope, owner_id, name), name=name, kind=kind, location=location, ref=ref,
                   scope=scope, owner_id=owner_id, owner_name=owner_name, organization_id=organization_id, by=by,
                   at=at)

    def add_again(self, kind: SourceKind, location: str, ref: str, by: str, at: datetime) -> None:
        """A removed source's name, added anew (where it points may differ)."""
        if not self.removed:
            raise CatalogError([Problem("name", f"a {self.scope.value} catalog source named {self.name!r} already "
                                                "exists; remove it first")])
        check_source(self.name, kind.value, location, ref)
        self._added_again(kind=kind, location=location, ref=ref, organization_id=self.organization_id, by=by, at=at)

    def remove(self, by: str, at: datetime) -> None:
        if not self.removed:
            self._removed(organization_id=self.organization_id, by=by, at=at)

    @property
    def local(self) -> bool:
        return is_local(self.kind, self.location)

    def _set(self, name: str, kind: SourceKind, location: str, ref: str, scope: SourceScope, owner_id: str,
             owner_name: str, organization_id: str, by: str, at: datetime) -> None:
        self.name, self.kind, self.location, self.ref = name, kind, location, ref
        self.scope, self.owner_id, self.owner_name, self.organization_id = scope, owner_id, owner_name, organization_id
        self.added_by, self.added_at, self.removed = by, at, False

    @event("AddedAgain")
    def _added_again(self, kind: SourceKind, location: str, ref: str, organization_id: str, by: str,
                     at: datetime) -> None:
        self._set(self.name, kind, location, ref, self.scope, self.owner_id, self.owner_name, organization_id, by, at)

    @event("Removed")
    def _removed(self, organization_id: str, by: str, at: datetime) -> None:
        self.removed = True
