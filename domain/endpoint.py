"""The Endpoint aggregate: a persistent name, its owner and scope, the serving binding and a pending takeover.

A takeover with strategy `ready` (the default) keeps the old binding serving until the new service is
ready, then asks for the old workflow to be canceled; strategy `start` cancels the old workflow as soon as
the new one asks. A new service that never becomes ready leaves the old binding serving.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

import msgspec
from eventsourcing.domain import event

from domain.endpoint_reach import event_ports, kept, refusal, replica_order
from domain.endpoint_values import Binding, Decision, EndpointError, check_name, check_target, choice
from domain.timed import TimedAggregate


class OwnerKind(str, enum.Enum):
    USER = "user"
    GROUP = "group"
    ORGANIZATION = "organization"


class Scope(str, enum.Enum):
    USER = "user"
    GROUP = "group"
    ORGANIZATION = "organization"
    PUBLIC = "public"


class Strategy(str, enum.Enum):
    READY = "ready"
    START = "start"


class Pending(msgspec.Struct, frozen=True, kw_only=True):
    workflow_id: UUID
    service: str
    strategy: Strategy
    requested_at: datetime
    replaces: UUID | None = None


def audience(owner_kind: OwnerKind, owner_id: str, scope: Scope, group_id: str, organization_id: str) -> tuple[str, str]:
    """The group and organization whose members may see the endpoint, checked against its owner and scope."""
    group = owner_id if owner_kind is OwnerKind.GROUP else group_id
    org = owner_id if owner_kind is OwnerKind.ORGANIZATION else organization_id
    if scope is Scope.USER and owner_kind is not OwnerKind.USER:
        raise EndpointError(f"scope user needs a user owner, not a {owner_kind.value}")
    if scope is Scope.GROUP and owner_kind is OwnerKind.ORGANIZATION:
        raise EndpointError("scope group needs a user or group owner, not an organization")
    if scope is Scope.GROUP and not group:
        raise EndpointError("scope group needs the group whose members may use the endpoint")
    if scope is Scope.ORGANIZATION and not org:
        raise EndpointError("scope organization needs the organization whose members may use the endpoint")
    return group, org


class Endpoint(TimedAggregate):
    """A persistent name and what serves it."""

    # Set once a ReplicaReady event was seen: before that (histories older than replicas) the binding's own
    # target is the one ready target.
    tracks_replicas: bool = False

    @event("EndpointCreated")
    def __init__(
        self, id: UUID, name: str, owner_kind: OwnerKind, owner_id: str, scope: Scope, group_id: str,
        organization_id: str, by: str, at: datetime,
    ) -> None:
        self.name, self.owner_kind, self.owner_id, self.scope = name, owner_kind, owner_id, scope
        self.group_id, self.organization_id = group_id, organization_id
        self.binding: Binding | None = None
        self.pending: Pending | None = None
        self.deleted = False
        self.last_failure = ""
        self.unbound_reason = "no workflow has bound this endpoint yet"

    @classmethod
    def create(
        cls, id: UUID, name: str, owner_kind: OwnerKind | str, owner_id: str, scope: Scope | str, *, by: str,
        at: datetime, group_id: str = "", organization_id: str = "",
    ) -> Endpoint:
        check_name(name)
        kind, scope = choice(OwnerKind, owner_kind, "owner kind"), choice(Scope, scope, "scope")
        if not owner_id:
            raise EndpointError(f"endpoint {name} needs an owner {kind.value} id")
        group, org = audience(kind, owner_id, scope, group_id, organization_id)
        return cls(id=id, name=name, owner_kind=kind, owner_id=owner_id, scope=scope, group_id=group,
                   organization_id=org, by=by, at=at)

    # What it serves, read off its state: the ready replicas of its bound service, which of their targets the
    # proxy may reach (a port its own service listens on) and why not, and why nothing is served at all.

    @property
    def members(self) -> dict[str, str]:
        """Ready replicas of the bound service: stage name -> host:port (made lazily for restored snapshots)."""
        found: dict[str, str] = self.__dict__.setdefault("_members", {})
        return found

    @property
    def unready(self) -> dict[str, str]:
        """Replicas of the bound service out of the endpoint: stage name -> why."""
        found: dict[str, str] = self.__dict__.setdefault("_unready", {})
        return found

    @property
    def listening(self) -> dict[str, tuple[int, ...] | None]:
        """Ready replicas: stage name -> the ports its own processes listen on, as its agent last said."""
        found: dict[str, tuple[int, ...] | None] = self.__dict__.setdefault("_listening", {})
        return found

    def reachable_targets(self) -> list[str]:
        """The ready targets the proxy may reach: each one's port is one its own service bound on its node."""
        return [target for target, refusal in self._checked() if not refusal]

    def unreachable_reason(self) -> str:
        """Why no ready target may be reached (the proxy's 502), "" when one may."""
        refusals = [refusal for _, refusal in self._checked()]
        return "" if not refusals or not all(refusals) else "; ".join(refusals)

    def _checked(self) -> list[tuple[str, str]]:
        """(target, why the proxy must not reach it or "") for every ready target."""
        if self.binding is None or self.deleted:
            return []
        if not self.tracks_replicas:
            return [(self.binding.target, refusal(self.binding.service, self.binding.port, self.binding.listening))]
        found = []
        for name in sorted(self.members, key=replica_order):
            target = self.members[name]
            port = int(target.rpartition(":")[2] or 0)
            found.append((target, refusal(name, port, self.listening.get(name))))
        return found

    def serving_targets(self) -> list[str]:
        """host:port of every ready replica of the bound service, in replica order."""
        if self.deleted or self.binding is None:
            return []
        if not self.tracks_replicas:
            return [self.binding.target]
        return [self.members[name] for name in sorted(self.members, key=replica_order)]

    def serving_target(self) -> Binding | None:
        """The binding requests go to while one of its replicas is ready, or None (then `not_serving_reason` is
        the 503's message)."""
        return self.binding if self.serving_targets() else None

    def not_serving_reason(self) -> str:
        if self.deleted:
            return f"endpoint {self.name} was deleted"
        if self.binding is not None and self.serving_targets():
            return ""
        if self.binding is not None:
            why = "; ".join(f"{name}: {reason}" for name, reason in sorted(self.unready.items())) or "no replica is ready"
            return f"endpoint {self.name}: service {self.binding.service} is not ready ({why})"
        if self.pending is not None:
            return (f"endpoint {self.name} is waiting for workflow {self.pending.workflow_id} service "
                    f"{self.pending.service} to become ready")
        return f"endpoint {self.name} has no ready service: {self.unbound_reason}"

    def binding_target(self) -> str:
        return self.binding.target if self.binding is not None else ""

    def _is_bound(self, workflow_id: UUID, service: str) -> bool:
        return self.binding is not None and (self.binding.workflow_id, self.binding.service) == (workflow_id, service)

    def visible_to(self, user_id: str | None, group_ids: Iterable[str] = (), organization_ids: Iterable[str] = ()) -> bool:
        """Scope rules; `user_id` None is an anonymous caller, who sees only public endpoints."""
        if self.deleted:
            return False
        if self.scope is Scope.PUBLIC:
            return True
        if user_id is None:
            return False
        if self.owner_kind is OwnerKind.USER and user_id == self.owner_id:
            return True
        if self.scope is Scope.GROUP:
            return self.group_id in set(group_ids)
        if self.scope is Scope.ORGANIZATION:
            return self.organization_id in set(organization_ids)
        return False

    def request_binding(
        self, workflow_id: UUID, service: str, *, by: str, at: datetime, strategy: Strategy | str = Strategy.READY,
    ) -> Decision:
        """A workflow's service asks for this endpoint; a bound endpoint starts a takeover."""
        self._alive()
        strategy = choice(Strategy, strategy, "takeover strategy")
        if self.pending is not None:
            if (self.pending.workflow_id, self.pending.service) == (workflow_id, service):
                return Decision()
            raise EndpointError(f"endpoint {self.name} already has a pending takeover by workflow "
                                f"{self.pending.workflow_id}; wait until it completes or fails")
        old = self.binding
        if old is not None and old.workflow_id == workflow_id:
            raise EndpointError(f"endpoint {self.name} is already bound to workflow {workflow_id}")
        if old is None:
            self._binding_requested(workflow_id=workflow_id, service=service, strategy=strategy, by=by, at=at)
            return Decision()
        self._takeover_pending(workflow_id=workflow_id, service=service, strategy=strategy,
                               old_workflow_id=old.workflow_id, by=by, at=at)
        if strategy is Strategy.START:
            reason = f"taken over by workflow {workflow_id} (strategy start)"
            self._unbound(workflow_id=old.workflow_id, reason=reason, by=by, at=at)
            return Decision(cancel_workflow=old.workflow_id, reason=reason)
        return Decision()

    def service_ready(self, workflow_id: UUID, service: str, host: str, port: int, *, by: str, at: datetime,
                      replica: str = "", listening: tuple[int, ...] | None = None) -> Decision:
        """The pending service (its first ready `replica`) passed its readiness probe: bind it, and retire the old
        workflow if any. A replica of the bound service joins it; a repeated readiness is no news."""
        self._alive()
        replica = replica or service
        if self._is_bound(workflow_id, service):
            self.replica_ready(workflow_id, service, replica, host, port, by=by, at=at, listening=listening)
            return Decision()
        pending = self._expect_pending(workflow_id, service)
        check_target(self.name, host, port)
        old = self.binding
        self._bound(workflow_id=workflow_id, service=service, host=host, port=port, by=by, at=at,
                    listening=event_ports(listening))
        if replica != service:  # a lone service is its binding's own target
            self._replica_ready(replica=replica, host=host, port=port, by=by, at=at, listening=event_ports(listening))
        if pending.replaces is None:
            return Decision()
        self._takeover_completed(old_workflow_id=pending.replaces, workflow_id=workflow_id, by=by, at=at)
        if old is None:  # strategy start: the old workflow was canceled when the takeover began
            return Decision()
        return Decision(cancel_workflow=old.workflow_id, reason=f"endpoint {self.name} taken over by workflow {workflow_id}")

    def replica_ready(self, workflow_id: UUID, service: str, replica: str, host: str, port: int, *, by: str,
                      at: datetime, listening: tuple[int, ...] | None = None) -> bool:
        """A replica of the bound service is ready (again), or says anew which ports it listens on: requests may go
        to it. False when nothing changed."""
        self._alive()
        check_target(self.name, host, port)
        target, ports = f"{host}:{port}", event_ports(listening)
        if self.tracks_replicas:
            known = self.members.get(replica) == target and self.listening.get(replica) == kept(ports)
        else:
            known = self.binding_target() == target and self.binding is not None and \
                self.binding.listening == kept(ports)
        if not self._is_bound(workflow_id, service) or known:
            return False
        self._replica_ready(replica=replica, host=host, port=port, by=by, at=at, listening=ports)
        return True

    def replica_unready(self, workflow_id: UUID, service: str, replica: str, reason: str, *, by: str,
                        at: datetime) -> bool:
        """A replica of the bound service failed its readiness probe (or ended): no request goes to it, the
        others keep serving. False when it was out already."""
        self._alive()
        if not self._is_bound(workflow_id, service):
            return False
        if self.tracks_replicas and replica not in self.members and self.unready.get(replica) == reason:
            return False
        self._replica_unready(replica=replica, reason=reason, by=by, at=at)
        return True

    def service_stopped(self, workflow_id: UUID, service: str, reason: str, *, by: str, at: datetime) -> None:
        """A service ended: a pending one failed its takeover (the old binding keeps serving); a bound one unbinds."""
        self._alive()
        if self.pending is not None and (self.pending.workflow_id, self.pending.service) == (workflow_id, service):
            self._takeover_failed(workflow_id=workflow_id, reason=reason, by=by, at=at)
        elif self.binding is not None and (self.binding.workflow_id, self.binding.service) == (workflow_id, service):
            self._unbound(workflow_id=workflow_id, reason=reason, by=by, at=at)

    def delete(self, *, by: str, at: datetime) -> None:
        self._alive()
        self._deleted(by=by, at=at)

    def _expect_pending(self, workflow_id: UUID, service: str) -> Pending:
        if self.pending is None or (self.pending.workflow_id, self.pending.service) != (workflow_id, service):
            raise EndpointError(f"endpoint {self.name} has no pending binding for workflow {workflow_id} service {service}")
        return self.pending

    def _alive(self) -> None:
        if self.deleted:
            raise EndpointError(f"endpoint {self.name} was deleted")

    @event("BindingRequested")
    def _binding_requested(self, workflow_id: UUID, service: str, strategy: Strategy, by: str, at: datetime) -> None:
        self.pending = Pending(workflow_id=workflow_id, service=service, strategy=strategy, requested_at=at)

    @event("TakeoverPending")
    def _takeover_pending(
        self, workflow_id: UUID, service: str, strategy: Strategy, old_workflow_id: UUID, by: str, at: datetime,
    ) -> None:
        self.pending = Pending(workflow_id=workflow_id, service=service, strategy=strategy, requested_at=at,
                               replaces=old_workflow_id)

    # `listening` is absent from events written before the proxy checked ports: None, "not said"
    @event("EndpointBound")
    def _bound(self, workflow_id: UUID, service: str, host: str, port: int, by: str, at: datetime,
               listening: list[int] | None = None) -> None:
        self.binding = Binding(workflow_id=workflow_id, service=service, host=host, port=port, bound_at=at,
                               listening=kept(listening))
        self.pending, self.last_failure = None, ""
        self.tracks_replicas = False  # until its ReplicaReady: a new binding starts with no replica of its own
        self.members.clear()
        self.unready.clear()
        self.listening.clear()

    @event("ReplicaReady")
    def _replica_ready(self, replica: str, host: str, port: int, by: str, at: datetime,
                       listening: list[int] | None = None) -> None:
        if not self.tracks_replicas:  # the first one: the binding's own target was the only one until now
            self.members.clear()
            self.listening.clear()
        self.tracks_replicas = True
        self.members[replica] = f"{host}:{port}"
        self.listening[replica] = kept(listening)
        self.unready.pop(replica, None)

    @event("ReplicaUnready")
    def _replica_unready(self, replica: str, reason: str, by: str, at: datetime) -> None:
        if not self.tracks_replicas and self.binding is not None:
            self.members[self.binding.service] = self.binding.target
            self.listening[self.binding.service] = self.binding.listening
        self.tracks_replicas = True
        self.members.pop(replica, None)
        self.listening.pop(replica, None)
        self.unready[replica] = reason

    @event("TakeoverCompleted")
    def _takeover_completed(self, old_workflow_id: UUID, workflow_id: UUID, by: str, at: datetime) -> None:
        pass

    @event("TakeoverFailed")
    def _takeover_failed(self, workflow_id: UUID, reason: str, by: str, at: datetime) -> None:
        self.pending, self.last_failure = None, f"workflow {workflow_id} never became ready: {reason}"
        if self.binding is None:
            self.unbound_reason = self.last_failure

    @event("EndpointUnbound")
    def _unbound(self, workflow_id: UUID, reason: str, by: str, at: datetime) -> None:
        self.binding, self.unbound_reason = None, reason

    @event("EndpointDeleted")
    def _deleted(self, by: str, at: datetime) -> None:
        self.deleted, self.binding, self.pending = True, None, None
