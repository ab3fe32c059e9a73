"""Free capacity during one pass: a mutable slot per node, fitting a request on it, taking and giving back.

A slot may carry `head`: the headroom a held reservation leaves on that node for work that would still be
running when the head starts. Short work (ending before the head's start) ignores it; long work must fit it.
"""
from __future__ import annotations

from domain.scheduler.nvlink import together
from domain.scheduler.snapshot import NodeView, QueuedAllocation


class Headroom:
    __slots__ = ("cpu", "memory", "devices", "ports", "whole")

    def __init__(self, cpu: int, memory: int, devices: dict[str, int], ports: frozenset[int], whole: bool):
        self.cpu, self.memory, self.devices, self.ports, self.whole = cpu, memory, devices, ports, whole


class Slot:
    __slots__ = ("view", "index", "pool", "cpu", "memory", "devices", "ports", "busy", "locked", "head", "running")

    def __init__(self, view: NodeView, index: int, pool: str):
        self.view, self.index, self.pool = view, index, pool
        self.cpu, self.memory, self.devices = view.cpu, view.memory, dict(view.devices)
        self.ports: set[int] = set()
        self.busy = 0
        self.locked = False
        self.head: Headroom | None = None
        self.running: list[QueuedAllocation] = []

    def copy(self) -> Slot:
        twin = Slot.__new__(Slot)
        twin.view, twin.index, twin.pool = self.view, self.index, self.pool
        twin.cpu, twin.memory, twin.devices = self.cpu, self.memory, dict(self.devices)
        twin.ports, twin.busy, twin.locked = set(self.ports), self.busy, self.locked
        twin.head, twin.running = None, self.running
        return twin

    def fits(self, a: QueuedAllocation, long: bool = False) -> bool:
        if self.locked or a.cpu > self.cpu or a.memory > self.memory:
            return False
        if a.exclusive and self.busy:
            return False
        for name, count in a.devices.items():
            if self.devices.get(name, 0) < count:
                return False
        if a.host_ports and not self.ports.isdisjoint(a.host_ports):
            return False
        head = self.head
        if long and head is not None:
            return self._fits_headroom(a, head)
        return True

    @staticmethod
    def _fits_headroom(a: QueuedAllocation, head: Headroom) -> bool:
        if head.whole or a.exclusive or a.cpu > head.cpu or a.memory > head.memory:
            return False
        if a.host_ports and not head.ports.isdisjoint(a.host_ports):
            return False
        return all(head.devices.get(name, 0) >= count for name, count in a.devices.items())

    def take(self, a: QueuedAllocation, long: bool = False) -> None:
        if a.exclusive:
            self.cpu, self.memory, self.locked = 0, 0, True
            self.devices = {name: 0 for name in self.devices}
        else:
            self.cpu -= a.cpu
            self.memory -= a.memory
            for name, count in a.devices.items():
                self.devices[name] = self.devices.get(name, 0) - count
        self.ports.update(a.host_ports)
        self.busy += 1
        if long and self.head is not None:
            self.head.cpu -= a.cpu
            self.head.memory -= a.memory
            for name, count in a.devices.items():
                self.head.devices[name] = self.head.devices.get(name, 0) - count

    def give_back(self, a: QueuedAllocation) -> None:
        if a.exclusive:
            self.cpu, self.memory, self.locked = self.view.cpu, self.view.memory, False
            self.devices = dict(self.view.devices)
        else:
            self.cpu += a.cpu
            self.memory += a.memory
            for name, count in a.devices.items():
                self.devices[name] = self.devices.get(name, 0) + count
        self.ports.difference_update(a.host_ports)
        self.busy -= 1

    def used_cpu(self) -> int:
        return self.view.cpu - self.cpu

    def shortfall(self, a: QueuedAllocation) -> dict[str, int]:
        """What this node lacks right now to hold `a`, resource by resource."""
        short: dict[str, int] = {}
        if a.exclusive and self.busy:
            short["exclusive"] = self.busy
        if a.cpu > self.cpu:
            short["cpu"] = a.cpu - self.cpu
        if a.memory > self.memory:
            short["memory"] = a.memory - self.memory
        for name, count in a.devices.items():
            if self.devices.get(name, 0) < count:
                short[f"devices.{name}"] = count - self.devices.get(name, 0)
        clash = sorted(self.ports.intersection(a.host_ports))
        if clash:
            short["host_ports_in_use"] = clash[0]
        return short


def scan(slots: list[Slot], a: QueuedAllocation, long: bool = False) -> list[Slot] | None:
    """First fit: `a.nodes` distinct slots that each hold one copy of the request (in one NVLink domain where it
    must be), or None."""
    return together((slot for slot in slots if slot.fits(a, long)), a)


def idle_fit(view: NodeView, a: QueuedAllocation) -> bool:
    """Could this node hold the request if it were empty?"""
    if a.cpu > view.cpu or a.memory > view.memory:
        return False
    return all(view.devices.get(name, 0) >= count for name, count in a.devices.items())
