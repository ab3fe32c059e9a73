"""Shared counted resources (licenses) during one pass: what is free, what the head keeps, when its share frees up.

The cluster has `scheduler.sharedResources` of each; running work holds what it asked for until it ends, wherever
it runs. Work fits when enough is free now. A reservation treats them as nodes treat cores: the head's start is
also the moment enough of its shared resources has been given back (from running work's execute deadlines), and
work still running then (long backfill) may take only what the head leaves at its start. Work that ends first
(short backfill) may use any of what is free.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

from domain.scheduler.reasons import Reason, Why
from domain.scheduler.snapshot import QueuedAllocation


class Timed(Protocol):
    """A release as the cluster keeps it (domain.scheduler.cluster.Release)."""

    deadline: datetime | None
    allocation: QueuedAllocation


class SharedPool:
    __slots__ = ("total", "free", "room")

    def __init__(self, totals: Mapping[str, int], running: Iterable[QueuedAllocation]):
        self.total = dict(totals)
        self.free = dict(totals)
        self.room: dict[str, int] = {}  # per resource the head asks for: what long work may still take
        for r in running:
            for name, count in r.shared.items():
                self.free[name] = self.free.get(name, 0) - count

    def fits(self, a: QueuedAllocation, long: bool = False) -> bool:
        for name, count in a.shared.items():
            if self.free.get(name, 0) < count:
                return False
            if long and name in self.room and self.room[name] < count:
                return False
        return True

    def take(self, a: QueuedAllocation, long: bool = False) -> None:
        for name, count in a.shared.items():
            self.free[name] = self.free.get(name, 0) - count
            if long and name in self.room:
                self.room[name] -= count

    def give_back(self, a: QueuedAllocation) -> None:
        for name, count in a.shared.items():
            self.free[name] = self.free.get(name, 0) + count

    def never_why(self, a: QueuedAllocation) -> Why | None:
        """Work asking for a resource the cluster no longer has, or for more than it has (its config changed)."""
        for name, count in sorted(a.shared.items()):
            total = self.total.get(name)
            if total is None:
                offered = ", ".join(sorted(self.total)) or "none"
                return Why(reason=Reason.SHARED_RESOURCE, detail={"resource": name, "asked": count, "total": 0,
                                                                 "never_fits": True},
                           message=f"held: the cluster has no shared resource {name} (it has: {offered})")
            if count > total:
                return Why(reason=Reason.SHARED_RESOURCE, detail={"resource": name, "asked": count, "total": total,
                                                                 "never_fits": True},
                           message=f"held: it asks {count} of shared resource {name}, the cluster has {total}")
        return None

    def short(self, a: QueuedAllocation, long: bool = False) -> str | None:
        """The first resource `a` cannot have now (long: beyond what the head keeps)."""
        for name, count in sorted(a.shared.items()):
            if self.free.get(name, 0) < count or (long and name in self.room and self.room[name] < count):
                return name
        return None

    def why(self, a: QueuedAllocation, long: bool = False, extra: Mapping[str, Any] | None = None) -> Why:
        name = self.short(a, long) or next(iter(sorted(a.shared)), "")
        count, total = a.shared.get(name, 0), self.total.get(name, 0)
        free = max(self.free.get(name, 0), 0)
        detail = {"resource": name, "asked": count, "free": free, "total": total, "in_use": total - free}
        kept = long and name in self.room and self.room[name] < count <= free
        message = (f"shared resource {name}: {free} of {total} free, but the head's reservation keeps "
                   f"{free - max(self.room[name], 0)} of them; this asks {count}" if kept else
                   f"waiting for shared resource {name}: {total - free} of {total} in use, this asks {count}")
        return Why(reason=Reason.SHARED_RESOURCE, message=message, detail={**detail, **(extra or {})})

    def earliest(self, a: QueuedAllocation, now: datetime, releases: Iterable[Timed],
                 evicted: set[str]) -> datetime | None:
        """When enough of each resource `a` asks for is free, from running work's deadlines; None if unknown."""
        if self.fits(a):
            return now
        free = {name: self.free.get(name, 0) for name in a.shared}
        timed = sorted((r for r in releases if r.allocation.shared and r.allocation.id not in evicted),
                       key=lambda r: (r.deadline is None, r.deadline or now))
        for release in timed:
            if release.deadline is None:
                return None
            for name, count in release.allocation.shared.items():
                if name in free:
                    free[name] += count
            if all(free[name] >= count for name, count in a.shared.items()):
                return max(now, release.deadline)
        return None

    def hold(self, head: QueuedAllocation, start: datetime | None, now: datetime, releases: Iterable[Timed],
             evicted: set[str]) -> None:
        """Keep the head's share: long work may take only what would be left at its start beyond its needs
        (with no known start, only what is free now beyond its needs)."""
        at_start = {name: self.free.get(name, 0) for name in head.shared}
        if start is not None:
            for release in releases:
                deadline = release.deadline
                if deadline is not None and deadline <= start and release.allocation.id not in evicted:
                    for name, count in release.allocation.shared.items():
                        if name in at_start:
                            at_start[name] += count
        self.room = {name: at_start[name] - count for name, count in head.shared.items()}
