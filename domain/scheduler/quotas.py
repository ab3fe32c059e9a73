"""Project quotas during one pass: use rolled up to every ancestor, and why an allocation waits for its quota.

Use starts from the running work in the snapshot and follows what the pass places (and preempts), so one pass
never places past a quota however many allocations of a project it considers. What an allocation is charged is its
effective use: its cores, memory and devices times its nodes, or whole nodes for exclusive work (known once its
nodes are chosen; before, its request is the lower bound). The ledgers charge the same figures at commit.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from domain.fuzzfile.transfers import TRANSFER_KINDS
from domain.project_paths import ancestors
from domain.scheduler.reasons import Reason, Why
from domain.scheduler.snapshot import NodeView, QueuedAllocation, Snapshot


def charge(a: QueuedAllocation, nodes: Iterable[NodeView] = ()) -> dict[str, int]:
    """What `a` counts toward its project's quotas: by key (`cpu`, `memory`, `devices.NAME`), zeros left out."""
    views = list(nodes) if a.exclusive else []
    if views:
        found = {"cpu": sum(v.cpu for v in views), "memory": sum(v.memory for v in views)}
        for view in views:
            for name, count in view.devices.items():
                found[f"devices.{name}"] = found.get(f"devices.{name}", 0) + count
    else:
        found = requested(a.cpu, a.memory, a.devices, a.nodes)
    return {key: value for key, value in found.items() if value}


def requested(cpu: int, memory: int, devices: Mapping[str, int], nodes: int) -> dict[str, int]:
    """A request's charge by quota key: per-node amounts times its nodes."""
    found = {"cpu": cpu * nodes, "memory": memory * nodes}
    found.update((f"devices.{name}", count * nodes) for name, count in devices.items())
    return found


def largest_job(specs: Iterable[Any]) -> dict[str, int]:
    """Per quota key, the most any one job (or task) of a workflow asks (its `Stage` specs): a service of the
    workflow starts only with this much of its project's quota still free beside it."""
    found: dict[str, int] = {}
    for spec in specs:
        if spec.kind == "service" or spec.kind in TRANSFER_KINDS:
            continue
        r = spec.resources
        for key, value in requested(r.cpu_cores, r.memory_bytes, r.devices, r.nodes).items():
            if value > found.get(key, 0):
                found[key] = value
    return found


def figure(key: str, value: int) -> str:
    """A quota figure as people read it: memory with a binary unit, the rest as counts."""
    if key != "memory":
        return f"{value:,}"
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if value >= size:
            return f"{value / size:g} {unit}"
    return f"{value} B"


class Quotas:
    """Limits and members by project path, and what each project (with its subtree) uses at this point of a pass."""

    __slots__ = ("limits", "allowed", "used", "_chains")

    def __init__(self, snapshot: Snapshot, node: Callable[[str], NodeView | None]):
        self.limits = {p.path: p.limits for p in snapshot.projects}
        self.allowed = {p.path: frozenset(p.members) for p in snapshot.projects}
        self.used: dict[str, dict[str, int]] = {}
        self._chains: dict[str, list[str]] = {}
        for r in snapshot.running:
            if r.project:
                self.add(r, charge(r, (v for n in r.node_ids if (v := node(n)) is not None)))

    def chain(self, path: str) -> list[str]:
        found = self._chains.get(path)
        if found is None:
            found = self._chains[path] = ancestors(path)
        return found

    def add(self, a: QueuedAllocation, amounts: Mapping[str, int], sign: int = 1) -> None:
        if not a.project:
            return
        for path in self.chain(a.project):
            used = self.used.setdefault(path, {})
            for key, value in amounts.items():
                used[key] = used.get(key, 0) + sign * value

    def remove(self, a: QueuedAllocation, amounts: Mapping[str, int]) -> None:
        self.add(a, amounts, -1)

    def held(self, a: QueuedAllocation) -> Why | None:
        """Work whose project changed under it since submission: the project is gone, or its owner left it."""
        if not a.project:
            return None
        if a.project not in self.limits:
            return Why(reason=Reason.PROJECT_HELD, detail={"project": a.project, "cause": "deleted"},
                       message=f"held: project {a.project} no longer exists; stop the workflow, or ask an admin to "
                               "make the project again")
        if a.user_id and a.user_id not in self.allowed[a.project]:
            return Why(reason=Reason.PROJECT_HELD, detail={"project": a.project, "cause": "not_a_member"},
                       message=f"held: its owner is no longer a member of project {a.project}; an admin can add them "
                               "back, or the workflow can be stopped")
        return None

    def why(self, a: QueuedAllocation, amounts: Mapping[str, int]) -> Why | None:
        """PROJECT_QUOTA naming the first project on the path to the root whose quota has no room for `amounts`
        (for a service, with room left for its workflow's largest job: `QueuedAllocation.companion`)."""
        if not a.project:
            return None
        for path in self.chain(a.project):
            limits = self.limits.get(path)
            if not limits:
                continue
            used = self.used.get(path, {})
            for key, limit in sorted(limits.items()):
                asked, room = amounts.get(key, 0), a.companion.get(key, 0)
                if asked and used.get(key, 0) + asked + room > limit:
                    return quota_why(a.project, path, key, used.get(key, 0), asked, limit, room)
        return None


def quota_why(own: str, path: str, key: str, used: int, asked: int, limit: int, room: int = 0) -> Why:
    """Which project's quota, how much of it is used, how much this asks (and keeps free for its jobs: `room`), and
    whether it could ever fit."""
    whose = f"project {path}" if path == own else f"project {path} (above {own})"
    kept = f" and keeps {figure(key, room)} free for its workflow's largest job" if room else ""
    if asked + room > limit:
        message = (f"can never run under {whose}'s quota: it asks {key} {figure(key, asked)}{kept}, the quota is "
                   f"{figure(key, limit)}; held until the quota is raised")
    else:
        message = (f"waiting for {whose}'s quota of {key}: {figure(key, used)} of {figure(key, limit)} in use, "
                   f"this asks {figure(key, asked)}{kept}")
    detail: dict[str, Any] = {"project": path, "resource": key, "used": used, "asked": asked, "limit": limit,
                              "never_fits": asked + room > limit}
    if room:
        detail["kept_for_jobs"] = room
    if path != own:
        detail["own_project"] = own
    return Why(reason=Reason.PROJECT_QUOTA, message=message, detail=detail)
