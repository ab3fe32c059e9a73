"""The projects view: the project tree with quotas, members and grants, what each project uses (its ledger, so its
subtree rolled up), the shared resources with what is held of each, and the cluster's default project.

Use comes from the ledgers the placements charge, so it is exactly what the commit path enforced; the scheduler
computes its own from the running work in its snapshot. Both come from the same log.
"""

from __future__ import annotations

import threading
from typing import Any

import msgspec

from domain.ids import ledger_id, project_id, user_id
from domain.ledger import PROJECT, SHARED, Ledger
from domain.project import Project
from domain.project_paths import quota_view
from projections import events
from projections.base import Mirror, Projection, on


class ProjectRow(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    parent: str
    quota: dict[str, Any]
    used: dict[str, Any]
    running: int  # allocations holding part of its quota (its subtree's included)
    members: list[str]
    grants: dict[str, list[str]]
    children: list[str]


class SharedRow(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    total: int
    used: int
    free: int
    holders: int


class ProjectsView(Projection):
    """Projects by path, ledgers by id, and the config's shared resources and default project."""

    transient = ("_limits",)

    def __init__(self, lock: threading.RLock | None = None) -> None:
        super().__init__(lock)
        self.projects: Mirror[Project] = Mirror()
        self.ledgers: Mirror[Ledger] = Mirror()
        self.shared_totals: dict[str, int] = {}
        self.default_project = ""
        self._limits: list[tuple[str, dict[str, int], tuple[str, ...]]] | None = None

    def limits(self) -> list[tuple[str, dict[str, int], tuple[str, ...]]]:
        """(path, quota, member user ids) of every live project, for each scheduler pass; made again only after a
        Project event."""
        with self.lock:
            if self._limits is None:
                self._limits = [(p.path, dict(p.quota), tuple(str(user_id(m)) for m in p.members))
                                for p in self.live()]
            return self._limits

    def paths(self) -> list[str]:
        """Every live project's path, sorted (parents before their children)."""
        with self.lock:
            return sorted(p.path for p in self.projects.values() if not p.deleted)

    def defined(self) -> bool:
        """Are there projects at all? Until there are, work needs none (open mode)."""
        with self.lock:
            return any(not p.deleted for p in self.projects.values())

    def live(self) -> list[Any]:
        """The live Project aggregates as mirrored (read-only), sorted by path."""
        with self.lock:
            return sorted((p for p in self.projects.values() if not p.deleted), key=lambda p: p.path)

    def member_of(self, username: str) -> list[str]:
        with self.lock:
            return sorted(p.path for p in self.projects.values() if not p.deleted and p.is_member(username))

    def row(self, path: str) -> ProjectRow | None:
        with self.lock:
            project = self.projects.get(project_id(path))
            if project is None or project.deleted:
                return None
            return self._row(project)

    def rows(self) -> list[ProjectRow]:
        with self.lock:
            return [self._row(p) for p in sorted(self.projects.values(), key=lambda p: p.path) if not p.deleted]

    def shared(self) -> list[SharedRow]:
        """Each shared resource the config names (and any still held after it was taken out), with its use."""
        with self.lock:
            names = set(self.shared_totals)
            held: dict[str, tuple[int, int]] = {}
            for ledger in self.ledgers.values():
                if ledger.kind == SHARED:
                    held[ledger.name] = (sum(a.get(ledger.name, 0) for a in ledger.held.values()), len(ledger.held))
                    names |= {ledger.name} if ledger.held else set()
            rows = []
            for name in sorted(names):
                total, (used, holders) = self.shared_totals.get(name, 0), held.get(name, (0, 0))
                rows.append(SharedRow(name=name, total=total, used=used, free=max(total - used, 0), holders=holders))
            return rows

    def _row(self, p: Project) -> ProjectRow:
        ledger = self.ledgers.get(ledger_id(PROJECT, p.path))
        used = dict(ledger.used) if ledger is not None else {}
        prefix = p.path + "/"
        children = sorted(c.path for c in self.projects.values()
                          if not c.deleted and c.path.startswith(prefix) and "/" not in c.path[len(prefix):])
        return ProjectRow(path=p.path, parent=p.parent, quota=quota_view(p.quota), used=quota_view(used),
                          running=len(ledger.held) if ledger is not None else 0, members=list(p.members),
                          grants={u: list(g) for u, g in p.grants.items()}, children=children)

    @on(Project.Event)
    def _project(self, event: Project.Event) -> None:
        self.projects.apply(event)
        self._limits = None

    @on(Ledger.Event)
    def _ledger(self, event: Ledger.Event) -> None:
        self.ledgers.apply(event)

    @on(events.ConfigChanged)
    def _config(self, event: events.ConfigChanged) -> None:
        if "scheduler.sharedResources" in event.changes:
            self.shared_totals = dict(event.changes["scheduler.sharedResources"] or {})
        if "projects.default" in event.changes:
            self.default_project = event.changes["projects.default"] or ""
