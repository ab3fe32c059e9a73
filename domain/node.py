"""The Node aggregate: registration and fencing epoch, status, and its holds.

What it admits (new work, its agent's reports by epoch and fence) is read off the same state its events change, so it
is the same class; the scheduler's frozen view of a node is domain/node_admission.py's. What runs on it is not its
state: the scheduler leader, the only writer of placements, holds node capacity in its own view, built from the
Allocation events (placed on these nodes, ended), so a placement and a release write no Node event (issue 43: they
commuted, yet raced on the node's subject). Commands that take work off the node are told which allocations are on
it (`on_node`, from the allocation read model) and record them as `lost`; one placed just after, which the read model
did not show yet, is swept by the scheduler's pass (domain.app.strays). Logs from before keep their
`AllocationPlaced` and `AllocationReleased` events; they replay as the no-ops they now are.

One class, one concept, and so one module although it is long (about 500 lines): every event class stays nested in
`Node` here, declared with its fields in the order its command takes them, so read models type what they read and
the topics stored in the log (`domain.node:Node.HoldPlaced`) are the ones this class has always had; a separate
module of event classes would change every topic, or need an alias for each in the log's transcoder.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import msgspec
from eventsourcing.domain import event

from domain.holds import (
    DEFAULT_MAX_MONITORING_HELD_PERCENT,
    Effect,
    Hold,
    NodeSummary,
    RefusedHold,
    ReleaseRefused,
    UnknownHold,
    admin_cordons,
    holds_text,
    monitoring_hold_allowed,
    placed_already,
    release_refusal,
)
from domain.scheduler.snapshot import NodeStatus  # the statuses the scheduler reads are the node's own
from domain.tenancy.common import Source
from domain.timed import TimedAggregate

LEASE_LAPSED = "lease lapsed"


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


class Credential(msgspec.Struct, frozen=True, kw_only=True):
    """A token issued to the node's agent at registration, by its id (`jti`); the token itself is never kept."""

    id: str
    issued_at: datetime
    expires: datetime
    revoked_at: datetime | None = None
    revoked_by: str = ""
    reason: str = ""


class Placement(msgspec.Struct, frozen=True, kw_only=True):
    """An allocation placed on the node and what it uses there (as older logs' `AllocationPlaced` events say)."""

    id: str
    cpu: int
    memory: int
    devices: dict[str, int] = {}
    host_ports: tuple[int, ...] = ()


class Capacity(msgspec.Struct, frozen=True, kw_only=True):
    """What an agent declares at (re)registration."""

    cpu: int
    memory: int
    devices: dict[str, int] = {}
    annotations: dict[str, str] = {}
    segment: str = ""
    agent_address: str = ""
    agent_port: int | None = None


class Node(TimedAggregate):
    """A registered machine and its state, and what it admits, read off that state."""

    class NodeRegistered(TimedAggregate.Created):
        name: str
        definition_id: str
        capacity: Capacity
        by: str
        at: datetime

    @event(NodeRegistered)
    def __init__(self, id: UUID, name: str, definition_id: str, capacity: Capacity, by: str, at: datetime) -> None:
        self.name, self.definition_id, self.capacity = name, definition_id, capacity
        self.status, self.epoch, self.status_reason = NodeStatus.NOT_READY, 1, "registered; waiting for the agent"
        self.holds: dict[str, Hold] = {}
        self.removed, self.last_refusal = False, ""

    @classmethod
    def register(cls, id: UUID, name: str, definition_id: str, capacity: Capacity, *, by: str, at: datetime) -> Node:
        """A new node, NOT_READY at epoch 1 until its agent reports ready."""
        check_capacity(name, capacity)
        return cls(id=id, name=name, definition_id=definition_id, capacity=capacity, by=by, at=at)

    # What it admits, read off its state: new work and each placement (what is free, and why not), its agent's
    # reports by epoch and fence, monitoring holds under the ceiling (what the ceiling counts of it, what it refused).

    @property
    def accepts_new_work(self) -> bool:
        return not self.removed and self.status is NodeStatus.READY and not self.holds

    @property
    def evicts_running_work(self) -> bool:
        """An evict hold (or an evicting deprovision) says running work must be taken off."""
        return any(h.takes_running_work_off for h in self.holds.values())

    def allocations_to_evict(self, on_node: list[str]) -> list[str]:
        """Of the work running on the node, what its holds say must be taken off."""
        return list(on_node) if self.evicts_running_work else []

    def stray_refusal(self, epoch: int | None) -> str | None:
        """Why work placed on this node (at its agent's `epoch`, None: not recorded) may not run here now: the
        node went away, its agent registered again, or an evict hold takes work off. None: it may."""
        if self.removed:
            return f"node {self.name} was removed"
        if self.status is NodeStatus.OFFLINE:
            return f"node {self.name} is OFFLINE ({self.status_reason})"
        if epoch is not None and epoch != self.epoch:
            return f"node {self.name} rejoined (epoch {self.epoch}) after the placement (epoch {epoch})"
        if self.evicts_running_work:
            return f"node {self.name} is under an evict hold"
        return None

    @property
    def awaits_deprovision(self) -> bool:
        """A deprovision hold waits for the node's work to end."""
        return not self.removed and any(h.effect is Effect.DEPROVISION for h in self.holds.values())

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
        # a node loaded from before this state existed has none
        found: dict[str, RefusedHold] = self.__dict__.setdefault("refused", {})
        return found

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

    def placement_refusal(self) -> str | None:
        """Why the node takes no new placement now (None: it does); changes nothing. Whether the work fits is the
        scheduler leader's view of the node's capacity, not the node's state."""
        if self.removed:
            return f"node {self.name} was removed; its agent may register it again under its name"
        if not self.accepts_new_work:
            return f"node {self.name} takes no new work: {self.why_no_new_work()}"
        return None

    def why_no_new_work(self) -> str:
        if self.removed:
            return "removed"
        if self.status is not NodeStatus.READY:
            return f"{self.status.value} ({self.status_reason})"
        return holds_text(self.holds)

    def credential_list(self) -> list[Credential]:
        return sorted(getattr(self, "credentials", {}).values(), key=lambda c: c.issued_at)

    def issue_credential(self, credential_id: str, expires: datetime, *, by: str, at: datetime) -> None:
        self._credential_issued(credential_id=credential_id, expires=expires, by=by, at=at)

    def revoke_credential(self, credential_id: str, reason: str, on_node: list[str], *, by: str,
                          at: datetime) -> list[str]:
        """Fence the node: the credential is refused from now on, the node goes OFFLINE (its work is lost and
        placed elsewhere) and its agent may register again only by a cluster admin's hand (`readmit`)."""
        found = getattr(self, "credentials", {}).get(credential_id)
        if found is None:
            raise NodeError(f"node {self.name} has no credential {credential_id}")
        if not reason.strip():
            raise NodeError("say why the credential is revoked")
        if found.revoked_at is None:
            self._credential_revoked(credential_id=credential_id, reason=reason.strip(), by=by, at=at)
        return self.go_offline(on_node, by=by, at=at, reason=f"fenced: {self.fence}")

    def readmit(self, *, by: str, at: datetime) -> None:
        if self.fence:
            self._fence_lifted(by=by, at=at)

    def rejoin(self, capacity: Capacity, on_node: list[str], *, by: str, at: datetime) -> list[str]:
        """A new epoch fences the old agent; returns lost allocations (`on_node`: the work placed on it). Admin and
        monitoring holds stay.

        A removed (or deprovisioned) node comes back under its name this way, holding nothing of its past.
        """
        check_capacity(self.name, capacity)
        lost = list(on_node)
        dropped = [h.id for h in self.holds.values() if self.removed or h.source is Source.PROVISIONER]
        self._rejoined(capacity=capacity, epoch=self.epoch + 1, lost=lost, dropped_holds=dropped, by=by, at=at)
        return lost

    def mark_ready(self, epoch: int, *, by: str, at: datetime) -> None:
        self._from_agent(epoch)
        if self.status is NodeStatus.OFFLINE:
            raise NodeError(f"node {self.name} is OFFLINE; its agent must register again before it can be ready")
        if self.status is not NodeStatus.READY:
            self._ready(epoch=epoch, by=by, at=at)

    def mark_not_ready(self, epoch: int, reason: str, *, by: str, at: datetime) -> None:
        self._from_agent(epoch)
        if self.status is NodeStatus.READY:
            self._not_ready(reason=reason, by=by, at=at)

    def go_offline(self, on_node: list[str], *, by: str, at: datetime, reason: str = LEASE_LAPSED) -> list[str]:
        """The agent's lease lapsed: the node goes OFFLINE; returns the allocations lost with it (`on_node`)."""
        self._alive()
        if self.status is NodeStatus.OFFLINE:
            return []
        lost = list(on_node)
        self._went_offline(reason=reason, lost=lost, by=by, at=at)
        return lost

    def deprovision_emptied(self, on_node: list[str], *, by: str, at: datetime) -> bool:
        """Its work ended (`on_node` is empty) under a deprovision hold: the node is deprovisioned."""
        if on_node or not self.awaits_deprovision:
            return False
        self._deprovisioned(forced=False, lost=[], by=by, at=at)
        return True

    def place_hold(
        self, hold_id: str, effect: Effect, source: Source, reason: str, *, by: str, at: datetime, evict: bool = False,
        peers: list[NodeSummary] | None = None, max_monitoring_percent: float = DEFAULT_MAX_MONITORING_HELD_PERCENT,
    ) -> Hold | None:
        """Place a hold (again: no-op); monitoring over the ceiling of `peers` (the definition's nodes) is refused."""
        self._alive()
        if (existing := placed_already(self.holds, hold_id, effect, source)) is not None:
            return existing
        if source is Source.MONITORING:
            definition = list(peers or []) + [self.summary()]
            allowed, why = monitoring_hold_allowed(definition, str(self.id), max_monitoring_percent, name=self.name)
            if not allowed:
                self._monitoring_refused(hold_id=hold_id, effect=effect, hold_reason=reason, refusal=why, by=by, at=at)
                return None
        self._hold_placed(hold_id=hold_id, effect=effect, source=source, reason=reason, evict=evict, by=by, at=at)
        return self.holds[hold_id]

    def release_hold(self, hold_id: str, *, by: str, at: datetime, releaser_source: Source, force: bool = False) -> None:
        """Release one hold, only as its own source's rules allow (monitoring evidence needs an admin's force)."""
        self._alive()
        hold = self.holds.get(hold_id)
        if hold is None:
            raise UnknownHold(f"node {self.name} has no hold {hold_id}")
        refusal = release_refusal(hold, releaser_source, force)
        if refusal:
            raise ReleaseRefused(refusal)
        self._hold_released(hold_id=hold_id, releaser_source=releaser_source, forced=force, by=by, at=at)

    def release_admin_cordons(self, *, by: str, at: datetime) -> list[str]:
        """`node uncordon`: admin cordons only; monitoring and provisioner evidence stays."""
        released = admin_cordons(self.holds)
        for hold_id in released:
            self.release_hold(hold_id, by=by, at=at, releaser_source=Source.ADMIN)
        return released

    def evict(self, hold_id: str, source: Source, reason: str, on_node: list[str], *, by: str,
              at: datetime) -> list[str]:
        """Place an evict hold; returns the allocations to take off (the caller evicts each one)."""
        self.place_hold(hold_id, Effect.EVICT, source, reason, by=by, at=at)
        return self.allocations_to_evict(on_node)

    def deprovision(
        self, hold_id: str, source: Source, reason: str, on_node: list[str], *, by: str, at: datetime,
        evict: bool = False, force: bool = False,
    ) -> list[str]:
        """No new work, then removal once empty (at once with force); returns the allocations to take off."""
        if self.place_hold(hold_id, Effect.DEPROVISION, source, reason, by=by, at=at, evict=evict) is None:
            return []  # refused by the monitoring ceiling; the refusal is on record
        if force or not on_node:
            lost = list(on_node)
            self._deprovisioned(forced=force, lost=lost, by=by, at=at)
            return lost
        return self.allocations_to_evict(on_node)

    def remove(self, on_node: list[str], *, by: str, at: datetime, force: bool = False) -> list[str]:
        """Forget an OFFLINE node (any node with force); returns allocations lost by a forced removal."""
        self._alive()
        if self.status is not NodeStatus.OFFLINE and not force:
            raise NodeError(f"node {self.name} is {self.status.value}; only an OFFLINE node is removed without force")
        lost = list(on_node)
        for hold in list(self.holds.values()):  # a forgotten node holds nothing: its holds end with it, on record
            self._hold_released(hold_id=hold.id, releaser_source=Source.ADMIN, forced=True, by=by, at=at)
        self._removed(forced=force, lost=lost, by=by, at=at)
        return lost

    def _from_agent(self, epoch: int) -> None:
        self._alive()
        self.check_epoch(epoch)

    def _alive(self) -> None:
        if self.removed:
            raise NodeError(f"node {self.name} was removed; its agent may register it again under its name")

    class NodeRejoined(TimedAggregate.Event):
        capacity: Capacity
        epoch: int
        lost: list[str]
        dropped_holds: list[str]
        by: str
        at: datetime

    @event(NodeRejoined)
    def _rejoined(self, capacity: Capacity, epoch: int, lost: list[str], dropped_holds: list[str], by: str, at: datetime) -> None:
        # Before re-registration after removal existed, no NodeRejoined followed a NodeRemoved: old logs replay alike.
        self.capacity, self.epoch, self.removed = capacity, epoch, False
        self.status, self.status_reason = NodeStatus.NOT_READY, "rejoined; waiting for the agent"
        for hold_id in dropped_holds:
            del self.holds[hold_id]

    class NodeCredentialIssued(TimedAggregate.Event):
        credential_id: str
        expires: datetime
        by: str
        at: datetime

    @event(NodeCredentialIssued)
    def _credential_issued(self, credential_id: str, expires: datetime, by: str, at: datetime) -> None:
        if not hasattr(self, "credentials"):  # nodes registered before credentials existed
            self.credentials: dict[str, Credential] = {}
        self.credentials[credential_id] = Credential(id=credential_id, issued_at=at, expires=expires)

    class NodeCredentialRevoked(TimedAggregate.Event):
        credential_id: str
        reason: str
        by: str
        at: datetime

    @event(NodeCredentialRevoked)
    def _credential_revoked(self, credential_id: str, reason: str, by: str, at: datetime) -> None:
        old = self.credentials[credential_id]
        self.credentials[credential_id] = msgspec.structs.replace(old, revoked_at=at, revoked_by=by, reason=reason)
        self.fenced = f"credential {credential_id} revoked by {by}: {reason}"

    class NodeReadmitted(TimedAggregate.Event):
        by: str
        at: datetime

    @event(NodeReadmitted)
    def _fence_lifted(self, by: str, at: datetime) -> None:
        self.fenced = ""

    class NodeReady(TimedAggregate.Event):
        epoch: int
        by: str
        at: datetime

    @event(NodeReady)
    def _ready(self, epoch: int, by: str, at: datetime) -> None:
        self.status, self.status_reason = NodeStatus.READY, ""

    class NodeNotReady(TimedAggregate.Event):
        reason: str
        by: str
        at: datetime

    @event(NodeNotReady)
    def _not_ready(self, reason: str, by: str, at: datetime) -> None:
        self.status, self.status_reason = NodeStatus.NOT_READY, reason

    class NodeWentOffline(TimedAggregate.Event):
        reason: str
        lost: list[str]
        by: str
        at: datetime

    @event(NodeWentOffline)
    def _went_offline(self, reason: str, lost: list[str], by: str, at: datetime) -> None:
        self.status, self.status_reason = NodeStatus.OFFLINE, reason

    # Older logs only: node usage is derived from the Allocation events now (see the module's docstring).
    class AllocationPlaced(TimedAggregate.Event):
        placement: Placement
        by: str
        at: datetime

    @event(AllocationPlaced)
    def _allocation_placed(self, placement: Placement, by: str, at: datetime) -> None:
        pass

    class AllocationReleased(TimedAggregate.Event):
        allocation_id: str
        by: str
        at: datetime

    @event(AllocationReleased)
    def _allocation_released(self, allocation_id: str, by: str, at: datetime) -> None:
        pass

    class NodeDeprovisioned(TimedAggregate.Event):
        forced: bool
        lost: list[str]
        by: str
        at: datetime

    @event(NodeDeprovisioned)
    def _deprovisioned(self, forced: bool, lost: list[str], by: str, at: datetime) -> None:
        self.removed = True

    class HoldPlaced(TimedAggregate.Event):
        hold_id: str
        effect: Effect
        source: Source
        reason: str
        evict: bool
        by: str
        at: datetime

    @event(HoldPlaced)
    def _hold_placed(self, hold_id: str, effect: Effect, source: Source, reason: str, evict: bool, by: str, at: datetime) -> None:
        self.holds[hold_id] = Hold(id=hold_id, effect=effect, source=source, reason=reason, by=by, at=at, evict=evict)
        self.refused_holds.pop(hold_id, None)

    class HoldReleased(TimedAggregate.Event):
        hold_id: str
        releaser_source: Source
        forced: bool
        by: str
        at: datetime

    @event(HoldReleased)
    def _hold_released(self, hold_id: str, releaser_source: Source, forced: bool, by: str, at: datetime) -> None:
        del self.holds[hold_id]

    class MonitoringHoldRefused(TimedAggregate.Event):
        hold_id: str
        effect: Effect
        hold_reason: str
        refusal: str
        by: str
        at: datetime

    @event(MonitoringHoldRefused)
    def _monitoring_refused(self, hold_id: str, effect: Effect, hold_reason: str, refusal: str, by: str, at: datetime) -> None:
        self.last_refusal = refusal
        self.refused_holds[hold_id] = RefusedHold(id=hold_id, effect=effect, reason=hold_reason, by=by, at=at)

    class MonitoringRefusalWithdrawn(TimedAggregate.Event):
        hold_id: str
        by: str
        at: datetime

    @event(MonitoringRefusalWithdrawn)
    def withdraw_refusal(self, hold_id: str, by: str, at: datetime) -> None:
        """The refused hold's alert resolved: it no longer waits for room under the ceiling."""
        self.refused_holds.pop(hold_id, None)

    class NodeRemoved(TimedAggregate.Event):
        forced: bool
        lost: list[str]
        by: str
        at: datetime

    @event(NodeRemoved)
    def _removed(self, forced: bool, lost: list[str], by: str, at: datetime) -> None:
        self.removed = True
