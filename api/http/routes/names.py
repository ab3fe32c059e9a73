"""Names beside ids, for people to read: users, groups and organizations the caller may see, else None.

A name comes only from the caller's own organization (every organization for cluster admins), so an id that
leads elsewhere stays an id: a listing never reveals another tenant's names. Answers keep their ids; the
names are added beside them (`user`, `group`, `organization`, `owner_names`, ...).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from starlette.requests import Request

from api.http.routes import common as c
from domain.app import access


class Names:
    """One request's lookups, each id asked of the tenancy view once."""

    def __init__(self, who: Any, tenancy: Any) -> None:
        self.who, self.tenancy = who, tenancy
        self.known: dict[tuple[str, str], str | None] = {}

    def user(self, user_id: Any) -> str | None:
        return self._name("user", user_id, lambda row: row.username)

    def group(self, group_id: Any) -> str | None:
        return self._name("group", group_id, lambda row: row.name)

    def organization(self, org_id: Any) -> str | None:
        return self._name("organization", org_id, lambda row: row.name, own=lambda row: row.id)

    def owner(self, owner: Any) -> dict[str, str | None]:
        """A workflow's or allocation's owner ids (a dict or a Struct) as names."""
        def pick(key: str) -> Any:
            return owner.get(f"{key}_id") if isinstance(owner, dict) else getattr(owner, f"{key}_id", None)
        return {"user": self.user(pick("user")), "group": self.group(pick("group")),
                "organization": self.organization(pick("organization"))}

    def _name(self, kind: str, ident: Any, name: Any, own: Any = None) -> str | None:
        key = (kind, str(ident or ""))
        if key not in self.known:
            row = self._row(kind, ident)
            org = (own or (lambda r: r.organization_id))(row) if row is not None else None
            seen = row is not None and access.visible(self.who, access.Resource.organization(org) if org else None)
            self.known[key] = name(row) if seen else None
        return self.known[key]

    def _row(self, kind: str, ident: Any) -> Any:
        if self.tenancy is None or not ident:
            return None
        try:
            return getattr(self.tenancy, kind)(UUID(str(ident)))
        except ValueError:  # not an id (an older row's free text): nothing to name
            return None


def names(request: Request, views: Any = None) -> Names:
    """The caller's lookups against these views (default: this cluster's)."""
    found = views if views is not None else c.services(request).views
    return Names(c.principal(request), getattr(found, "tenancy", None))
