"""Templates as virtual nodes: work no real node takes now asks a provisioner for a node, within its maxNodes.

A pass packs the work it would block, in priority order, first onto nodes already being made (pending requests,
each arriving at its expected time), then onto new virtual nodes while the provisioner has room; each new one is an
ask. A pending request nothing was packed onto is no longer needed. Nothing is remembered between passes: requests
are in the log, so the next pass packs the same work onto the same requests and asks for nothing twice.

The head of the queue takes a virtual node only when it arrives before real nodes free up (its reservation's
start); it then holds no real node, so backfill on real nodes goes on as if the head were already placed.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from domain.quantities import human_bytes
from domain.scheduler.decisions import ProvisionAsk, Unneeded
from domain.scheduler.reasons import Reason, Why
from domain.scheduler.snapshot import NodeTemplate, PendingNode, QueuedAllocation

# Reasons a node from a template could cure: what is missing is a node, not a dependency or a valid request.
PROVISIONABLE = frozenset({
    Reason.INSUFFICIENT_RESOURCES, Reason.NODE_ANNOTATIONS_MISMATCH, Reason.NODE_HELD, Reason.SERVICE_POOL_AT_CAPACITY,
    Reason.BLOCKED_BY_RESERVATION, Reason.BACKFILL_NO_FIT, Reason.BACKFILL_INELIGIBLE_NO_WALLTIME,
    Reason.BACKFILL_INELIGIBLE_WOULD_DELAY_HEAD,
})
UNNEEDED_STATES = frozenset({"REQUESTED", "FAILED"})  # nothing made yet: such a request may be dropped


class Virtual:
    """A node being made (a pending request) or one this pass would ask for, with what the pass packed on it."""

    __slots__ = ("template", "request", "arrives", "cpu", "memory", "devices", "ports", "busy", "locked", "fresh")

    def __init__(self, template: NodeTemplate, request: PendingNode | None, arrives: datetime, fresh: bool = False):
        self.template, self.request, self.arrives, self.fresh = template, request, arrives, fresh
        self.cpu, self.memory, self.devices = template.cpu, template.memory, dict(template.devices)
        self.ports: set[int] = set()
        self.busy, self.locked = 0, False

    def fits(self, a: QueuedAllocation) -> bool:
        if self.locked or a.cpu > self.cpu or a.memory > self.memory or (a.exclusive and self.busy):
            return False
        if a.host_ports and not self.ports.isdisjoint(a.host_ports):
            return False
        return all(self.devices.get(name, 0) >= count for name, count in a.devices.items())

    def take(self, a: QueuedAllocation) -> None:
        self.cpu, self.memory = (0, 0) if a.exclusive else (self.cpu - a.cpu, self.memory - a.memory)
        self.locked = self.locked or a.exclusive
        for name, count in a.devices.items():
            self.devices[name] = self.devices.get(name, 0) - count
        self.ports.update(a.host_ports)
        self.busy += 1


def matches(t: NodeTemplate, a: QueuedAllocation, ignored: frozenset[str]) -> bool:
    """Could a node of this template ever hold `a` (annotations, segment, devices, size)?"""
    if a.volume_node or len(set(a.segments)) > 1 or (a.segments and t.segment != a.segments[0]):
        return False
    if any(t.annotations.get(k) != v for k, v in a.annotations.items() if k not in ignored):
        return False
    if any(t.devices.get(name, 0) <= 0 or t.devices[name] < count for name, count in a.devices.items()):
        return False
    return a.cpu <= t.cpu and a.memory <= t.memory


def unreserve(reservation: Any) -> None:
    """Give back the real nodes a head's reservation held: it waits for a node being made instead."""
    for slot in reservation.slots:
        slot.head = None


class Provisioning:
    def __init__(self, templates: tuple[NodeTemplate, ...], ignored: frozenset[str], now: datetime):
        self.now, self.ignored = now, ignored
        self.templates = sorted(templates, key=lambda t: t.provisioner)
        self.virtual: dict[str, list[Virtual]] = {}
        self.room: dict[str, int] = {}
        for t in self.templates:
            ordered = sorted(t.pending, key=lambda r: (self._arrival(t, r), r.request_id))
            self.virtual[t.provisioner] = [Virtual(t, r, self._arrival(t, r)) for r in ordered]
            self.room[t.provisioner] = max(0, t.max_nodes - t.nodes - len(t.pending))
        self.asked: dict[str, list[str]] = {}
        self.used: set[str] = set()
        self.waiting = 0
        # Virtual capacity only shrinks during a pass: a shape that found no room on a template finds none later.
        self._failed: set[tuple[object, ...]] = set()  # shapes: (template, cpu, memory, devices, ...)

    def _arrival(self, t: NodeTemplate, r: PendingNode | None) -> datetime:
        if r is None:
            return self.now + timedelta(seconds=t.expected_seconds)
        start = r.retry_at if r.state == "FAILED" and r.retry_at is not None else r.requested_at
        return max(self.now, start + timedelta(seconds=t.expected_seconds), r.expected_at)

    def consider(self, a: QueuedAllocation, why: Why, not_after: datetime | None = None) -> Why:
        """`why` blocks `a`: a node being made (or asked for now) may take it instead; else `why`, naming the
        provisioners that would fit it but are at maxNodes."""
        if why.reason not in PROVISIONABLE:
            return why
        waiting = self.offer(a, not_after)
        if waiting is not None:
            return waiting
        full = [t for t in self.templates if matches(t, a, self.ignored)]
        if not full:
            return why
        named = ", ".join(f"{t.provisioner} (maxNodes {t.max_nodes}, no room left)" for t in full)
        return Why(reason=why.reason, message=f"{why.message}; provisioners that fit are full: {named}",
                   detail={**why.detail, "provisioners_full": [t.provisioner for t in full]})

    def offer(self, a: QueuedAllocation, not_after: datetime | None) -> Why | None:
        """Pack `a` onto the earliest-arriving virtual nodes of a matching template (before `not_after`, when
        given); None when none fits or none arrives in time."""
        best: tuple[datetime, str, NodeTemplate, list[Virtual]] | None = None
        for t in self.templates:
            shape = (t.provisioner, a.cpu, a.memory, tuple(a.devices.items()), a.exclusive, a.nodes, a.host_ports)
            if shape in self._failed or not matches(t, a, self.ignored):
                continue
            chosen = self._pick(t, a)
            if chosen is None:
                self._failed.add(shape)
                continue
            arrives = max(v.arrives for v in chosen)
            if best is None or arrives < best[0]:
                best = (arrives, t.provisioner, t, chosen)
        if best is None or (not_after is not None and best[0] >= not_after):
            return None
        arrives, _, t, chosen = best
        self._commit(t, a, chosen)
        self.waiting += 1
        return self._why(t, chosen, arrives)

    def _pick(self, t: NodeTemplate, a: QueuedAllocation) -> list[Virtual] | None:
        chosen = [v for v in self.virtual[t.provisioner] if v.fits(a)][: a.nodes]
        fresh = a.nodes - len(chosen)
        if fresh > self.room[t.provisioner]:
            return None
        chosen += [Virtual(t, None, self._arrival(t, None), fresh=True) for _ in range(fresh)]
        return chosen

    def _commit(self, t: NodeTemplate, a: QueuedAllocation, chosen: list[Virtual]) -> None:
        for v in chosen:
            if v.fresh:  # asked for now: the next allocations may be packed onto it too
                v.fresh = False
                self.virtual[t.provisioner].append(v)
                self.room[t.provisioner] -= 1
                self.asked.setdefault(t.provisioner, []).append(a.id)
            elif v.request is not None:
                self.used.add(v.request.request_id)
            v.take(a)
            if v.locked or v.cpu <= 0 or v.memory <= 0:  # full: later scans need not pass over it
                self.virtual[t.provisioner].remove(v)

    def _why(self, t: NodeTemplate, chosen: list[Virtual], arrives: datetime) -> Why:
        first = next((v.request for v in chosen if v.request is not None), None)
        template = {"cpu": t.cpu, "memory": t.memory, "devices": dict(t.devices), "annotations": dict(t.annotations),
                    "segment": t.segment}
        detail: dict[str, Any] = {"provisioner": t.provisioner, "template": template, "nodes": len(chosen),
                                  "expected_at": arrives.isoformat(), "estimated_start": arrives.isoformat(),
                                  "requests": [v.request.request_id for v in chosen if v.request is not None]}
        if first is None:
            detail.update(request=None, state="NEW", requested_at=None, age_seconds=0.0)
            message = (f"asking provisioner {t.provisioner} for a node (cpu {t.cpu}, memory {human_bytes(t.memory)}); expected "
                       f"in about {t.expected_seconds:.0f}s")
            return Why(reason=Reason.WAITING_FOR_PROVISION, message=message, detail=detail)
        age = max(0.0, (self.now - first.requested_at).total_seconds())
        detail.update(request=first.request_id, state=first.state, requested_at=first.requested_at.isoformat(),
                      age_seconds=round(age, 1), attempts=first.attempts)
        message = f"waiting for node {first.request_id} from provisioner {t.provisioner} ({first.state}, asked " \
                  f"{age:.0f}s ago, expected by {arrives.isoformat(timespec='seconds')})"
        if first.last_error:
            detail.update(last_error=first.last_error, retry_at=first.retry_at.isoformat() if first.retry_at else None)
            message += f"; attempt {first.attempts} failed: {first.last_error[:200]}"
        return Why(reason=Reason.WAITING_FOR_PROVISION, message=message, detail=detail)

    def asks(self) -> list[ProvisionAsk]:
        return [ProvisionAsk(provisioner=name, reasons=tuple(reasons)) for name, reasons in sorted(self.asked.items())]

    def unneeded(self) -> list[Unneeded]:
        return [Unneeded(provisioner=t.provisioner, request_id=r.request_id) for t in self.templates
                for r in t.pending if r.state in UNNEEDED_STATES and r.request_id not in self.used]
