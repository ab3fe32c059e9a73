"""The Provisioner aggregate: a definition and the durable state of every node it was asked for, from the request
to the node's deletion.

Requests live in the aggregate they count against, so `maxNodes` holds under concurrency: two writers asking at
once are ordered by the log's expected-sequence check and the second decides again on what the first made. Each
step of a request is an event recorded before (CreateStarted, DeleteStarted) or after (Created, NodeUp,
NodeDeleted) the provider acts, so a restarted control plane knows what was under way: a create is asked again
under the same request id (providers are idempotent by it), never as a second node.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

import msgspec
from eventsourcing.domain import event

from domain.provisioner_spec import Spec
from domain.timed import TimedAggregate

ROOT = uuid5(NAMESPACE_URL, "roving")
BACKOFF_FIRST, BACKOFF_LONGEST = 5.0, 300.0
HISTORY = 20           # ended requests kept for `provisioner show`
LATENCIES = 10         # provision latencies kept for the arrival estimate


def provisioner_id(name: str) -> UUID:
    return uuid5(ROOT, f"provisioner:{name}")


class ProvisionerError(Exception):
    """A step the request's state does not allow; the message says why."""


class State(str, enum.Enum):
    REQUESTED = "REQUESTED"   # asked for by the scheduler, nothing made yet
    CREATING = "CREATING"     # the provider was asked to make it
    CREATED = "CREATED"       # the provider made it; its agent has not registered yet
    UP = "UP"                 # its node registered and is READY
    DRAINING = "DRAINING"     # idle (or its provisioner deleted): a deprovision hold, removed once empty
    DELETING = "DELETING"     # the provider is asked to delete it
    DELETED = "DELETED"
    FAILED = "FAILED"         # a create failed (or the node never came up): asked again at `retry_at`
    CANCELED = "CANCELED"     # no longer needed before anything was made


PENDING = frozenset({State.REQUESTED, State.CREATING, State.CREATED, State.FAILED})
ENDED = frozenset({State.DELETED, State.CANCELED})


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """One node asked for; its id is the node's name (`<provisioner>-<n>`), the provider's idempotency key."""

    id: str
    state: State
    requested_at: datetime
    reason: str = ""            # what it was asked for (an allocation id)
    attempts: int = 0
    instance: str = ""          # the provider's id of what it made
    node_id: str = ""
    last_error: str = ""
    retry_at: datetime | None = None
    started_at: datetime | None = None  # when the provider was last asked to make it
    up_at: datetime | None = None
    ended_at: datetime | None = None
    end_reason: str = ""


def backoff(attempts: int) -> float:
    """Seconds before attempt `attempts + 1`: 5 s doubling to 5 min, so a broken provider is not hammered."""
    return min(BACKOFF_FIRST * (1 << max(attempts - 1, 0)), BACKOFF_LONGEST)


class Provisioner(TimedAggregate):
    @staticmethod
    def create_id(name: str, **_: Any) -> UUID:
        return provisioner_id(name)

    @event("Defined")
    def __init__(self, name: str, spec: Spec, by: str, at: datetime) -> None:
        self.name, self.spec, self.deleted = name, spec, False
        self.requests: dict[str, Request] = {}
        self.history: list[Request] = []
        self.counter = 0
        self.latencies: list[float] = []
        self.changed_by, self.changed_at = by, at

    @classmethod
    def define(cls, name: str, spec: Spec, *, by: str, at: datetime) -> Provisioner:
        return cls(name=name, spec=spec, by=by, at=at)

    def change(self, spec: Spec, *, by: str, at: datetime) -> bool:
        """Record a new definition (or revive a deleted one); False when it says the same."""
        if spec == self.spec and not self.deleted:
            return False
        self._changed(spec=spec, by=by, at=at)
        return True

    def delete(self, *, by: str, at: datetime) -> None:
        """No more requests; its nodes are drained and deleted by its runner."""
        if not self.deleted:
            self._deleted(by=by, at=at)

    def live(self) -> list[Request]:
        return sorted(self.requests.values(), key=lambda r: (r.requested_at, _number(r.id)))

    def pending(self) -> list[Request]:
        return [r for r in self.live() if r.state in PENDING]

    def get(self, request_id: str) -> Request:
        found = self.requests.get(request_id)
        if found is None:
            raise ProvisionerError(f"provisioner {self.name} has no live request {request_id}")
        return found

    def room(self) -> int:
        """How many more nodes may be asked for: maxNodes less every node made or being made."""
        return max(0, self.spec.max_nodes - len(self.requests))

    def request(self, reasons: list[str], *, at: datetime) -> list[str]:
        """Ask for one node per reason (an allocation id), within maxNodes; a reason some pending request already
        serves asks for nothing (a pass deciding again on a view that lags its own last request)."""
        if self.deleted:
            raise ProvisionerError(f"provisioner {self.name} was deleted; it makes no new nodes")
        served = {r.reason for r in self.pending()}
        fresh = [reason for reason in dict.fromkeys(reasons) if reason not in served][: self.room()]
        ids = [f"{self.name}-{self.counter + n}" for n in range(1, len(fresh) + 1)]
        if ids:
            self._requested(ids=ids, reasons=fresh, at=at)
        return ids

    def expected_seconds(self) -> float:
        """How long a node takes to come up: the median of the last measured ones, else the definition's guess."""
        if not self.latencies:
            return self.spec.expected_boot_seconds
        ordered = sorted(self.latencies)
        return ordered[len(ordered) // 2]

    def start_create(self, request_id: str, *, at: datetime) -> int:
        """The provider is about to be asked; returns the attempt's number. A failed request waits its backoff."""
        found = self.get(request_id)
        if found.state is State.FAILED and found.retry_at is not None and found.retry_at > at:
            raise ProvisionerError(f"{request_id} is retried at {found.retry_at.isoformat()}, not before")
        if found.state not in (State.REQUESTED, State.FAILED, State.CREATING):
            raise ProvisionerError(f"{request_id} is {found.state.value}; only a requested or failed node is created")
        self._create_started(request_id=request_id, attempt=found.attempts + 1, at=at)
        return found.attempts + 1

    def created(self, request_id: str, instance: str, *, at: datetime) -> None:
        self._expect(request_id, State.CREATING)
        self._created(request_id=request_id, instance=instance, at=at)

    def create_failed(self, request_id: str, error: str, *, at: datetime) -> datetime:
        """The provider failed, or the node did not register in time: asked again after the backoff."""
        found = self._expect(request_id, State.CREATING, State.CREATED)
        retry_at = at + timedelta(seconds=backoff(found.attempts))
        self._create_failed(request_id=request_id, error=error[-2000:], retry_at=retry_at, at=at)
        return retry_at

    def came_up(self, request_id: str, node_id: str, *, at: datetime) -> float:
        """Its node registered READY; returns the provision latency (request to READY) in seconds."""
        found = self._expect(request_id, State.CREATING, State.CREATED)
        latency = max(0.0, (at - found.requested_at).total_seconds())
        self._node_up(request_id=request_id, node_id=node_id, latency=latency, at=at)
        return latency

    def cancel(self, request_id: str, reason: str, *, at: datetime) -> None:
        self._expect(request_id, State.REQUESTED, State.FAILED)
        self._canceled(request_id=request_id, reason=reason, at=at)

    def drain(self, request_id: str, reason: str, *, at: datetime) -> None:
        self._expect(request_id, State.UP)
        self._draining(request_id=request_id, reason=reason, at=at)

    def start_delete(self, request_id: str, reason: str, *, at: datetime) -> None:
        """The provider is about to be asked to delete it (idle, lost, or its provisioner deleted)."""
        found = self.get(request_id)
        if found.state is State.DELETING:
            return
        if found.state not in (State.CREATING, State.CREATED, State.UP, State.DRAINING, State.FAILED):
            raise ProvisionerError(f"{request_id} is {found.state.value}; nothing of it is left to delete")
        self._delete_started(request_id=request_id, reason=reason, at=at)

    def deleted_node(self, request_id: str, *, at: datetime) -> None:
        self._expect(request_id, State.DELETING)
        self._node_deleted(request_id=request_id, at=at)

    def _expect(self, request_id: str, *states: State) -> Request:
        found = self.get(request_id)
        if found.state not in states:
            wanted = " or ".join(s.value for s in states)
            raise ProvisionerError(f"{request_id} is {found.state.value}, not {wanted}")
        return found

    def _update(self, request_id: str, **changes: Any) -> None:
        self.requests[request_id] = msgspec.structs.replace(self.requests[request_id], **changes)

    def _end(self, request_id: str, state: State, reason: str, at: datetime) -> None:
        ended = msgspec.structs.replace(self.requests.pop(request_id), state=state, ended_at=at, end_reason=reason)
        self.history = [*self.history, ended][-HISTORY:]

    @event("Changed")
    def _changed(self, spec: Spec, by: str, at: datetime) -> None:
        self.spec, self.deleted, self.changed_by, self.changed_at = spec, False, by, at

    @event("Deleted")
    def _deleted(self, by: str, at: datetime) -> None:
        self.deleted, self.changed_by, self.changed_at = True, by, at

    @event("NodesRequested")
    def _requested(self, ids: list[str], reasons: list[str], at: datetime) -> None:
        for request_id, reason in zip(ids, reasons, strict=True):
            self.requests[request_id] = Request(id=request_id, state=State.REQUESTED, requested_at=at, reason=reason)
        self.counter += len(ids)

    @event("CreateStarted")
    def _create_started(self, request_id: str, attempt: int, at: datetime) -> None:
        self._update(request_id, state=State.CREATING, attempts=attempt, retry_at=None, started_at=at)

    @event("Created")
    def _created(self, request_id: str, instance: str, at: datetime) -> None:
        self._update(request_id, state=State.CREATED, instance=instance)

    @event("CreateFailed")
    def _create_failed(self, request_id: str, error: str, retry_at: datetime, at: datetime) -> None:
        self._update(request_id, state=State.FAILED, last_error=error, retry_at=retry_at, instance="")

    @event("NodeUp")
    def _node_up(self, request_id: str, node_id: str, latency: float, at: datetime) -> None:
        self._update(request_id, state=State.UP, node_id=node_id, up_at=at)
        self.latencies = [*self.latencies, latency][-LATENCIES:]

    @event("RequestCanceled")
    def _canceled(self, request_id: str, reason: str, at: datetime) -> None:
        self._end(request_id, State.CANCELED, reason, at)

    @event("Draining")
    def _draining(self, request_id: str, reason: str, at: datetime) -> None:
        self._update(request_id, state=State.DRAINING, end_reason=reason)

    @event("DeleteStarted")
    def _delete_started(self, request_id: str, reason: str, at: datetime) -> None:
        self._update(request_id, state=State.DELETING, end_reason=reason)

    @event("NodeDeleted")
    def _node_deleted(self, request_id: str, at: datetime) -> None:
        self._end(request_id, State.DELETED, self.requests[request_id].end_reason, at)


def _number(request_id: str) -> int:
    tail = request_id.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0
