"""The head allocation's reservation: its earliest start from running work's execute deadlines.

Walking releases in deadline order, each release changes only the nodes it frees, so only those are
re-checked. The reserved nodes then carry headroom: what remains at the head's start beyond its needs,
the only capacity that backfilled work still running at that moment may use.
"""
from __future__ import annotations

from datetime import datetime

from domain.scheduler.capacity import Headroom, Slot
from domain.scheduler.cluster import Cluster
from domain.scheduler.eligibility import Candidates
from domain.scheduler.nvlink import together
from domain.scheduler.snapshot import QueuedAllocation


class Reservation:
    __slots__ = ("head", "start", "slots")

    def __init__(self, head: QueuedAllocation, start: datetime | None, slots: list[Slot]):
        self.head, self.start, self.slots = head, start, slots

    def node_ids(self) -> tuple[str, ...]:
        return tuple(slot.view.id for slot in self.slots)


def _earliest(cluster: Cluster, c: Candidates, head: QueuedAllocation, now: datetime,
              ) -> tuple[datetime | None, list[Slot]]:
    """The start time and the nodes (as projected copies) where the head first fits, or (None, [])."""
    fitting = [slot.copy() for slot in c.static if slot.fits(head)]
    if len(fitting) >= head.nodes and (chosen := together(fitting, head)) is not None:
        return now, chosen
    projected: dict[int, Slot] = {}
    seen = {slot.index for slot in fitting}
    timed = [(r.deadline, r) for r in cluster.releases if r.deadline is not None and r.allocation.id not in cluster.evicted]
    timed.sort(key=lambda pair: pair[0])
    for deadline, release in timed:
        for slot in release.slots:
            if slot.index not in c.member:
                continue
            twin = projected.get(slot.index) or projected.setdefault(slot.index, slot.copy())
            twin.give_back(release.allocation)
            if slot.index not in seen and twin.fits(head):
                seen.add(slot.index)
                fitting.append(twin)
        if len(fitting) >= head.nodes and (chosen := together(fitting, head)) is not None:
            return max(now, deadline), chosen
    return None, []


def _headroom(twin: Slot, head: QueuedAllocation) -> Headroom:
    devices = {name: count - head.devices.get(name, 0) for name, count in twin.devices.items()}
    ports = frozenset(head.host_ports)
    return Headroom(twin.cpu - head.cpu, twin.memory - head.memory, devices, ports, head.exclusive)


def reserve(cluster: Cluster, c: Candidates, head: QueuedAllocation, now: datetime) -> Reservation:
    """Hold the head's nodes: later work may use them only within headroom or if it ends first.

    With no estimable start (some blocking work has no execute timeout), every node the head could use
    is held whole, so nothing that might outlast an unknown start lands there.
    """
    start, twins = _earliest(cluster, c, head, now)
    if start is None:
        for slot in c.static:
            slot.head = Headroom(0, 0, {}, frozenset(), True)
        return Reservation(head, None, list(c.static))
    reserved = []
    for twin in twins:
        slot = cluster.slots[twin.index]
        slot.head = _headroom(twin, head)
        reserved.append(slot)
    return Reservation(head, start, reserved)
