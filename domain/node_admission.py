"""What a node admits, read off its state: new work and each placement (what is free, and why not), its agent's
reports by epoch and fence, monitoring holds under the ceiling (what the ceiling counts of it, what it refused), a
registration's declared capacity, and the view the scheduler places by; with the errors a refusal raises."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from domain.holds import Hold, NodeSummary, RefusedHold, Source
from domain.scheduler import snapshot
from domain.scheduler.snapshot import NodeStatus

if TYPE_CHECKING:
    from domain.node import Capacity, Node, Placement


class NodeError(Exception):
    """A command the node's current state does not allow; the message says why."""


class StaleAgent(NodeError):
    """A report from an agent registered under an older epoch than the node's current one."""


def check_capacity(name: str, capacity: Capacity) -> None:
    if not name:
        raise NodeError("a node needs a name")
    if capacity.cpu < 1 or capacity.memory < 1:
        raise NodeError(f"node {name} must declare at least 1 cpu and 1 byte of memory")
    bad = sorted(d for d, n in capacity.devices.items() if n < 0)
    if bad:
        raise NodeError(f"node {name} declares a negative count for devices {', '.join(bad)}")
    if capacity.agent_port is not None and not 0 < capacity.agent_port < 65536:
        raise NodeError(f"node {name} agent port {capacity.agent_port} is not between 1 and 65535")


class Admission:
    """The read side of domain.node's Node aggregate, which holds (and changes) this state."""

    name: str
    epoch: int
    removed: bool
    status: NodeStatus
    status_reason: str
    capacity: Capacity
    allocations: dict[str, Placement]
    holds: dict[str, Hold]
    if TYPE_CHECKING:
        @property
        def id(self) -> UUID: ...  # the aggregate's own

    @property
    def accepts_new_work(self) -> bool:
        return not self.removed and self.status is NodeStatus.READY and not self.holds

    def allocations_to_evict(self) -> list[str]:
        """Running work an evict hold (or an evicting deprovision) says must be taken off."""
        return list(self.allocations) if any(h.takes_running_work_off for h in self.holds.values()) else []

    @property
    def fence(self) -> str:
        """Why the node is fenced (its credential was revoked), or "" when it is not."""
        return getattr(self, "fenced", "")

    def summary(self) -> NodeSummary:
        """What the monitoring ceiling counts of this node."""
        return NodeSummary(id=str(self.id), monitoring_held=any(h.source is Source.MONITORING for h in self.holds.values()))

    @property
    def refused_holds(self) -> dict[str, RefusedHold]:
        """Monitoring holds the ceiling refused whose alerts have not resolved (domain.alerts retries them)."""
        return self.__dict__.setdefault("refused", {})  # a node loaded from before this state existed has none

    def check_epoch(self, epoch: int) -> None:
        """Refuse a report from an agent that registered before the node's latest (re)registration."""
        if epoch != self.epoch:
            raise StaleAgent(f"node {self.name} is at epoch {self.epoch}; a report for epoch {epoch} is stale")

    def check_heartbeat(self, epoch: int) -> None:
        """A heartbeat keeps a live registration's lease; an OFFLINE node's agent must register again."""
        self.check_epoch(epoch)
        if self.fence:
            raise StaleAgent(f"node {self.name} is fenced: {self.fence}")
        if self.status is NodeStatus.OFFLINE:
            raise StaleAgent(f"node {self.name} is OFFLINE ({self.status_reason}); its agent must register again")

    def placement_refusal(self, placement: Placement) -> str | None:
        """Why the node cannot take `placement` now (None: it can, or holds it already); changes nothing."""
        if self.removed:
            return f"node {self.name} was removed; its agent may register it again under its name"
        if placement.id in self.allocations:
            return None
        if not self.accepts_new_work:
            return f"node {self.name} takes no new work: {self.why_no_new_work()}"
        shortage = self._shortage(placement)
        return f"node {self.name} cannot hold allocation {placement.id}: {shortage}" if shortage else None

    def why_no_new_work(self) -> str:
        if self.removed:
            return "removed"
        if self.status is not NodeStatus.READY:
            return f"{self.status.value} ({self.status_reason})"
        return "; ".join(f"{h.effect.value} hold {h.id} by {h.source.value}: {h.reason}" for h in self.holds.values())

    def _shortage(self, p: Placement) -> str:
        used, cap = list(self.allocations.values()), self.capacity
        free = {"cpu": cap.cpu - sum(a.cpu for a in used), "bytes of memory": cap.memory - sum(a.memory for a in used)}
        free |= {d: n - sum(a.devices.get(d, 0) for a in used) for d, n in cap.devices.items()}
        wanted = {"cpu": p.cpu, "bytes of memory": p.memory, **p.devices}
        short = next((f"needs {n} {k}, {free.get(k, 0)} free" for k, n in wanted.items() if n > free.get(k, 0)), "")
        taken = sorted(set(p.host_ports) & {port for a in used for port in a.host_ports})
        return short or (f"host ports {', '.join(map(str, taken))} already in use" if taken else "")


def to_node_view(node: Node) -> snapshot.NodeView:
    """The scheduler's frozen view of a node; a removed node shows as OFFLINE so nothing lands on it."""
    c = node.capacity
    return snapshot.NodeView(
        id=str(node.id), name=node.name, definition_id=node.definition_id,
        status=NodeStatus.OFFLINE if node.removed else node.status, cpu=c.cpu, memory=c.memory,
        devices=dict(c.devices), annotations=dict(c.annotations), segment=c.segment,
        holds=tuple(h.to_view() for h in node.holds.values()),
    )
