"""One pass's view of the cluster: slots per node, pools, running work, and indexed first-fit search.

Speed comes from three facts: eligibility depends only on a static signature (cached), capacity only
shrinks during a pass except when something is evicted (so a shape that failed stays failed until then),
and slots too full for the smallest queued request are dropped from the candidate lists.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta

from domain.scheduler.capacity import Slot
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.eligibility import Candidates, StaticKey, build_candidates, static_key
from domain.scheduler.nvlink import together
from domain.scheduler.snapshot import NodeStatus, QueuedAllocation, RunningAllocation, Snapshot


class Release:
    """Work that holds capacity until `deadline` (None: no execute timeout, so no known end)."""

    __slots__ = ("deadline", "allocation", "slots")

    def __init__(self, deadline: datetime | None, allocation: QueuedAllocation, slots: list[Slot]):
        self.deadline, self.allocation, self.slots = deadline, allocation, slots


def _over_cap(snapshot: Snapshot) -> set[int]:
    """Nodes beyond their definition's maxNodes (by name order): a real cap, so they take no work."""
    caps = {d.id: d.max_nodes for d in snapshot.definitions}
    members: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for index, view in enumerate(snapshot.nodes):
        if view.definition_id in caps and view.status is NodeStatus.READY:
            members[view.definition_id].append((view.name, view.id, index))
    return {index for d, rows in members.items() for _, _, index in sorted(rows)[caps[d]:]}


class Cluster:
    def __init__(self, snapshot: Snapshot, config: SchedulerConfig):
        self.slots = [Slot(view, i, view.definition_id) for i, view in enumerate(snapshot.nodes)]
        self.by_id = {slot.view.id: slot for slot in self.slots}
        self.over_cap = _over_cap(snapshot)
        self.ignored = frozenset(config.ignored_annotations)
        self.pool_total: dict[str, int] = defaultdict(int)
        self.pool_used: dict[str, int] = defaultdict(int)
        for slot in self.slots:
            if slot.view.status is NodeStatus.READY:
                self.pool_total[slot.pool] += slot.view.cpu
        self.releases: list[Release] = []
        self.evicted: set[str] = set()
        for running in snapshot.running:
            self._occupy(running, [self.by_id[n] for n in running.node_ids if n in self.by_id], running.deadline)
        self._candidates: dict[StaticKey, Candidates] = {}
        self._failed: set[tuple[object, ...]] = set()  # (shape, long)
        self.min_cpu = min((a.cpu for a in snapshot.queued), default=0)
        self.min_memory = min((a.memory for a in snapshot.queued), default=0)

    def _occupy(self, a: QueuedAllocation, slots: list[Slot], deadline: datetime | None, long: bool = False) -> None:
        for slot in slots:
            before = slot.used_cpu()
            slot.take(a, long)
            slot.running.append(a)
            if slot.view.status is NodeStatus.READY:
                self.pool_used[slot.pool] += slot.used_cpu() - before
        self.releases.append(Release(deadline, a, slots))

    def candidates(self, a: QueuedAllocation) -> Candidates:
        key = static_key(a, self.ignored)
        found = self._candidates.get(key)
        if found is None:
            found = self._candidates[key] = build_candidates(key, self.slots, self.over_cap)
        return found

    def find(self, c: Candidates, a: QueuedAllocation, long: bool = False) -> list[Slot] | None:
        shape = (c.key, a.cpu, a.memory, tuple(a.devices.items()), a.exclusive, a.nodes, a.host_ports)
        if (shape, False) in self._failed or (shape, long) in self._failed:
            return None
        chosen = self._scan(c, a, long)
        if chosen is None:
            self._failed.add((shape, long))
        return chosen

    def _scan(self, c: Candidates, a: QueuedAllocation, long: bool) -> list[Slot] | None:
        """First fit over the live slots (in one NVLink domain where the request must be), dropping those too full
        for any queued request."""
        dead, min_cpu, min_memory = 0, self.min_cpu, self.min_memory

        def fitting() -> Iterator[Slot]:
            nonlocal dead
            for slot in c.live:
                if slot.fits(a, long):
                    yield slot
                elif slot.locked or slot.cpu < min_cpu or slot.memory < min_memory:
                    dead += 1
        chosen = together(fitting(), a)
        if dead > 16 + len(c.live) // 8:
            c.live = [slot for slot in c.live if not self._dead(slot)]
        return chosen

    def _dead(self, slot: Slot) -> bool:
        return slot.locked or slot.cpu < self.min_cpu or slot.memory < self.min_memory

    def place(self, a: QueuedAllocation, slots: list[Slot], now: datetime, long: bool = False) -> None:
        deadline = now + timedelta(seconds=a.execute_timeout) if a.execute_timeout is not None else None
        self._occupy(a, slots, deadline, long)

    def evict(self, victim: RunningAllocation) -> list[Slot]:
        """Give a running allocation's capacity back; cached failures no longer hold."""
        slots = [self.by_id[n] for n in victim.node_ids if n in self.by_id]
        for slot in slots:
            before = slot.used_cpu()
            slot.give_back(victim)
            slot.running.remove(victim)
            if slot.view.status is NodeStatus.READY:
                self.pool_used[slot.pool] += slot.used_cpu() - before
        self.evicted.add(victim.id)
        self.capacity_grew()
        return slots

    def capacity_grew(self) -> None:
        self._failed.clear()
        for c in self._candidates.values():
            c.live = list(c.static)

    def utilization(self, pool: str) -> float:
        total = self.pool_total.get(pool, 0)
        return 100.0 * self.pool_used.get(pool, 0) / total if total else 0.0
