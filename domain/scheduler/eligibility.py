"""Which nodes could ever hold a request (status, holds, annotations, segments, volumes' node, device types,
maxNodes).

The answer depends only on a request's static signature, so it is computed once per signature per pass and
shared by every allocation that has it, together with why each definition's nodes were passed over.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from domain.quantities import human_bytes
from domain.scheduler.capacity import Slot, idle_fit
from domain.scheduler.nvlink import kept_together, per_domain, shortage_text
from domain.scheduler.reasons import Reason, Why
from domain.scheduler.snapshot import NodeStatus, QueuedAllocation

StaticKey = tuple[tuple[tuple[str, str], ...], tuple[str, ...], tuple[str, ...], str]


def static_key(a: QueuedAllocation, ignored: frozenset[str]) -> StaticKey:
    wanted = tuple(sorted((k, v) for k, v in a.annotations.items() if k not in ignored)) if a.annotations else ()
    devices = tuple(sorted(a.devices)) if len(a.devices) > 1 else tuple(a.devices)
    segments = tuple(sorted(set(a.segments))) if len(a.segments) > 1 else a.segments
    return wanted, devices, segments, a.volume_node


class Candidates:
    """Nodes that pass the static checks for one signature; `live` drops slots that filled up."""

    __slots__ = ("key", "static", "live", "held", "passed_over", "annotation_matches", "member")

    def __init__(self, key: StaticKey):
        self.key = key
        self.static: list[Slot] = []
        self.live: list[Slot] = []
        self.held: list[Slot] = []
        self.passed_over: dict[str, Counter[str]] = {}
        self.annotation_matches = 0
        self.member: set[int] = set()

    def reject(self, slot: Slot, why: str) -> None:
        self.passed_over.setdefault(slot.view.definition_id or "(no definition)", Counter())[why] += 1


def _first_miss(slot: Slot, key: StaticKey, over_cap: set[int]) -> str | None:
    view = slot.view
    wanted, device_names, segments, volume_node = key
    if volume_node and view.name != volume_node:
        return f"its volumes live on node {volume_node}"
    for name, value in wanted:
        if view.annotations.get(name) != value:
            have = view.annotations.get(name)
            return f"annotation {name}={value} wanted, node has {name}={have}" if have else \
                f"annotation {name}={value} wanted, node lacks {name}"
    if len(segments) > 1:
        return f"mounted volumes span segments {', '.join(segments)}"
    if segments and view.segment != segments[0]:
        return f"volumes need segment {segments[0]}, node is in {view.segment or '(none)'}"
    for name in device_names:
        if view.devices.get(name, 0) <= 0:
            return f"lacks device {name}"
    if view.status is not NodeStatus.READY:
        return f"node {view.status.value}"
    if slot.index in over_cap:
        return "beyond the definition's maxNodes"
    return None


def build_candidates(key: StaticKey, slots: list[Slot], over_cap: set[int]) -> Candidates:
    found = Candidates(key)
    for slot in slots:
        miss = _first_miss(slot, key, over_cap)
        if miss is None or not miss.startswith("annotation"):
            found.annotation_matches += 1
        if miss is not None:
            found.reject(slot, miss)
        elif slot.view.holds:
            found.held.append(slot)
            effects = sorted({h.effect.value for h in slot.view.holds})
            found.reject(slot, f"held ({', '.join(effects)})")
        else:
            found.static.append(slot)
    found.live = list(found.static)
    found.member = {slot.index for slot in found.static}
    return found


def _summary(c: Candidates) -> dict[str, dict[str, int]]:
    return {definition: dict(counts) for definition, counts in sorted(c.passed_over.items())}


def _largest(slots: list[Slot]) -> dict[str, Any] | None:
    if not slots:
        return None
    view = max(slots, key=lambda s: (s.view.cpu, s.view.memory)).view
    return {"node": view.name or view.id, "cpu": view.cpu, "memory": view.memory, "devices": dict(view.devices)}


def _devices(devices: dict[str, int]) -> str:
    return "".join(f", {name} x{count}" for name, count in sorted(devices.items()))


def _domain_why(c: Candidates, a: QueuedAllocation) -> Why | None:
    """A job kept in one NVLink domain: None when one domain could hold it idle; otherwise, when the nodes that could
    are spread over domains, why; else the usual reasons (static_why's rest) say it."""
    counts = per_domain(slot for slot in c.static if idle_fit(slot.view, a))
    if any(count >= a.nodes for count in counts.values()):
        return None
    if sum(counts.values()) < a.nodes:
        return _static_rest(c, a)
    return Why(reason=Reason.INSUFFICIENT_RESOURCES, message=shortage_text(counts, a.nodes, "even when idle"),
               detail={"nvlink_domains": counts, "nodes_wanted": a.nodes, "even_when_idle": True,
                       "passed_over": _summary(c)})


def static_why(c: Candidates, a: QueuedAllocation) -> Why | None:
    """Why `a` cannot run even on idle nodes, or None when only current load stands in its way."""
    if kept_together(a):
        return _domain_why(c, a)
    enough = 0
    for slot in c.static:
        enough += idle_fit(slot.view, a)
        if enough >= a.nodes:
            return None
    return _static_rest(c, a)


def _static_rest(c: Candidates, a: QueuedAllocation) -> Why:
    """Why too few nodes could hold `a` even when idle: annotations, holds, or their size."""
    wanted = dict(c.key[0])
    if wanted and c.annotation_matches == 0:
        return Why(reason=Reason.NODE_ANNOTATIONS_MISMATCH,
                   message=f"no node offers annotations {wanted}",
                   detail={"annotations": wanted, "passed_over": _summary(c)})
    usable_if_released = [s for s in c.static + c.held if idle_fit(s.view, a)]
    if len(usable_if_released) >= a.nodes and c.held:
        holds = [{"node": s.view.name or s.view.id, "hold": h.id, "effect": h.effect.value,
                  "source": h.source.value, "by": h.by, "reason": h.reason}
                 for s in c.held for h in s.view.holds][:20]
        named = "; ".join(f"{h['node']}: {h['source']} {h['effect']} by {h['by']} ({h['reason']})" for h in holds[:3])
        more = f" and {len(holds) - 3} more" if len(holds) > 3 else ""
        return Why(reason=Reason.NODE_HELD, message=f"{len(c.held)} matching nodes are held: {named}{more}",
                   detail={"holds": holds, "held_nodes": len(c.held)})
    pinned = f"its volumes live on node {a.volume_node}, which cannot take it; " if a.volume_node else ""
    largest = _largest(c.static)
    biggest = "" if largest is None else (f"; the largest, node {largest['node']}, has cpu {largest['cpu']}, "
                                          f"memory {human_bytes(largest['memory'])}{_devices(largest['devices'])}")
    return Why(reason=Reason.INSUFFICIENT_RESOURCES,
               message=f"{pinned}no usable node can hold {a.nodes} x (cpu {a.cpu}, memory {human_bytes(a.memory)}"
                       f"{_devices(a.devices)}) even when idle{biggest}",
               detail={"nodes_examined": len(c.static) + len(c.held), "passed_over": _summary(c),
                       "largest_usable_node": _largest(c.static), "even_when_idle": True})


def capacity_why(c: Candidates, a: QueuedAllocation, service: bool) -> Why:
    """`a` fits these nodes when idle but not now: what fell short on the roomiest node."""
    roomiest = max(c.static, key=lambda s: (s.cpu, s.memory), default=None)
    detail: dict[str, Any] = {"nodes_examined": len(c.static), "passed_over": _summary(c)}
    if roomiest is not None:
        detail["roomiest_node"] = roomiest.view.name or roomiest.view.id
        detail["short_on_roomiest"] = roomiest.shortfall(a)
    reason = Reason.SERVICE_POOL_AT_CAPACITY if service else Reason.INSUFFICIENT_RESOURCES
    if kept_together(a):
        counts = per_domain(slot for slot in c.static if slot.fits(a))
        if sum(counts.values()) >= a.nodes:  # enough free nodes, none in one domain: say that, not "busy"
            detail["nvlink_domains"] = counts
            return Why(reason=reason, message=shortage_text(counts, a.nodes, "now"), detail=detail)
    return Why(reason=reason, message=f"all {len(c.static)} usable nodes are busy", detail=detail)
