"""Node handlers: agent registration, lease loss, holds from admins and monitoring, evict, deprovision."""

from __future__ import annotations

from datetime import datetime
from types import TracebackType
from uuid import UUID

from domain.alerts import AlertPayloadError, apply_alert, parse_webhook, retry_refused
from domain.app import access
from domain.app.allocations import Allocations
from domain.app.config import ConfigHandlers
from domain.app.errors import Conflict, Forbidden, Invalid, StaleEpoch
from domain.app.ids import hold_id, node_id
from domain.app.unit_of_work import UnitOfWork, command
from domain.fuzzfile import Problem
from domain.holds import Effect, HoldError, NodeSummary, ReleaseRefused
from domain.node import Capacity, Credential, Node, NodeError, StaleAgent
from domain.tenancy.permissions import Principal
from domain.tenancy.revocation import RevokedToken, revocation_id


class NodeHandlers:
    def __init__(self, uow: UnitOfWork, allocations: Allocations, config: ConfigHandlers) -> None:
        self.uow, self.allocations, self.config = uow, allocations, config

    @command
    def register_node(self, name: str, cpu: int, memory: int, devices: dict[str, int], annotations: dict[str, str],
                      definition: str, address: str, metrics_port: int | None, at: datetime,
                      credential: tuple[str, datetime] | None = None,
                      principal: Principal | None = None, *, segment: str = "") -> tuple[UUID, int]:
        """(Re)register a node; `credential` (token id, expiry) is the token its agent is given for it. A fenced
        node registers again only by a cluster admin's hand, which lifts the fence."""
        capacity = Capacity(cpu=cpu, memory=memory, devices=dict(devices), annotations=dict(annotations),
                            segment=segment, agent_address=address, agent_port=metrics_port)
        nid = node_id(name)
        try:
            if nid in self.uow.repository:
                node = self.uow.repository.get(nid)
                if node.fence and not (principal is not None and principal.is_cluster_admin):
                    raise Forbidden(f"node {name} is fenced ({node.fence}); a cluster admin readmits it "
                                    f"(roving node readmit {name})")
                if principal is not None and principal.is_cluster_admin:
                    node.readmit(by=principal.username, at=at)
                lost = node.rejoin(capacity, self.allocations.on_node(nid), by="agent", at=at)
                touched = self.allocations.lose(lost, f"node {name} rejoined with a new epoch", "agent", at)
            else:
                node, touched = Node.register(nid, name, definition or "default", capacity, by="agent", at=at), []
            node.mark_ready(node.epoch, by="agent", at=at)
            if credential is not None:
                node.issue_credential(credential[0], credential[1], by="agent", at=at)
        except NodeError as error:
            raise Invalid([Problem(path="node", message=str(error))]) from error
        self.uow.save(node, *touched)
        return nid, node.epoch

    @command
    def readmit_node(self, node: UUID, principal: Principal, at: datetime) -> bool:
        """Lift a node's fence: its agent may register again (with the shared token). False when it was not fenced."""
        access.node_admin(principal)
        found = self.uow.load(Node, node, "node")
        fenced = bool(found.fence)
        found.readmit(by=principal.username, at=at)
        self.uow.save(found)
        return fenced

    def node_credentials(self, node: UUID, principal: Principal) -> list[Credential]:
        """The tokens issued to a node's agents (ids and dates, never the tokens): cluster admins."""
        access.node_admin(principal)
        return self.uow.load(Node, node, "node").credential_list()

    @command
    def revoke_node_credential(self, node: UUID, credential_id: str, reason: str, principal: Principal,
                               at: datetime) -> list[str]:
        """Refuse the token from now on and fence the node (OFFLINE, its work placed elsewhere); cluster admins."""
        access.node_admin(principal)
        found = self.uow.load(Node, node, "node")
        try:
            lost = found.revoke_credential(credential_id, reason, self.allocations.on_node(node),
                                           by=principal.username, at=at)
        except NodeError as error:
            raise Invalid([Problem(path="credential", message=str(error))]) from error
        credential = next(c for c in found.credential_list() if c.id == credential_id)
        touched = self.allocations.lose(lost, f"node {found.name} fenced (credential revoked)", principal.username, at)
        revoked = []
        if revocation_id(credential_id) not in self.uow.repository:
            revoked = [RevokedToken.revoke(credential_id, f"node/{found.name}", credential.expires, reason,
                                           by=principal.username, at=at)]
        self.uow.save(found, *touched, *revoked)
        return lost

    def check_agent(self, node: UUID, epoch: int) -> Node:
        found = self.uow.load(Node, node, "node")
        try:
            found.check_heartbeat(epoch)
        except StaleAgent as error:
            raise StaleEpoch(str(error)) from error
        return found

    @command
    def node_lost(self, node: UUID, at: datetime) -> None:
        found = self.uow.load(Node, node, "node")
        lost = found.go_offline(self.allocations.on_node(node), by="scheduler", at=at)
        self.uow.save(found, *self.allocations.lose(lost, f"node {found.name} lost (lease lapsed)", "scheduler", at))

    @command
    def cordon(self, node: UUID, reason: str, principal: Principal, at: datetime) -> str:
        return self.add_hold(node, Effect.CORDON, reason, principal, at)

    @command
    def add_hold(self, node: UUID, effect: Effect | str, reason: str, principal: Principal, at: datetime) -> str:
        found, source = self.uow.load(Node, node, "node"), access.hold_source(principal)
        hid = hold_id(node, str(effect), principal.username, at.isoformat())
        with _hold_errors():
            placed = found.place_hold(hid, Effect(effect), source, reason or "no reason given", by=principal.username,
                                      at=at)
        self.uow.save(found)  # a refusal by the monitoring ceiling is on record too
        if placed is None:
            raise Conflict(f"hold refused: {found.last_refusal}")
        return hid

    @command
    def uncordon(self, node: UUID, principal: Principal, at: datetime) -> list[str]:
        found = self.uow.load(Node, node, "node")
        access.hold_source(principal)
        released = found.release_admin_cordons(by=principal.username, at=at)
        self.uow.save(found)
        return released

    @command
    def release_hold(self, node: UUID, hold: str, principal: Principal, at: datetime, force: bool = False) -> None:
        found, source = self.uow.load(Node, node, "node"), access.hold_releaser(principal, force)
        with _hold_errors():
            found.release_hold(hold, by=principal.username, at=at, releaser_source=source, force=force)
        self.uow.save(found)

    @command
    def evict(self, node: UUID, reason: str, principal: Principal, at: datetime) -> list[str]:
        found, source = self.uow.load(Node, node, "node"), access.hold_source(principal)
        hid = hold_id(node, "evict", principal.username, at.isoformat())
        with _hold_errors():
            lost = found.evict(hid, source, reason or "evicted", self.allocations.on_node(node), by=principal.username,
                               at=at)
        self.uow.save(found, *self.allocations.lose(lost, f"evicted from {found.name}: {reason}", principal.username, at))
        return lost

    @command
    def deprovision(self, node: UUID, evict: bool, force: bool, principal: Principal, at: datetime) -> list[str]:
        found, source = self.uow.load(Node, node, "node"), access.hold_source(principal)
        hid = hold_id(node, "deprovision", principal.username, at.isoformat())
        with _hold_errors():
            lost = found.deprovision(hid, source, "deprovision", self.allocations.on_node(node), by=principal.username,
                                     at=at, evict=evict, force=force)
        touched = self.allocations.lose(lost, f"{found.name} deprovisioned", principal.username, at) if (evict or force) else []
        self.uow.save(found, *touched)
        return lost

    @command
    def remove_node(self, node: UUID, principal: Principal, at: datetime, force: bool = False) -> None:
        found = self.uow.load(Node, node, "node")
        access.hold_source(principal)
        with _hold_errors():
            lost = found.remove(self.allocations.on_node(node), by=principal.username, at=at, force=force)
        self.uow.save(found, *self.allocations.lose(lost, f"{found.name} removed", principal.username, at))

    @command
    def apply_alerts(self, payload: bytes, principal: Principal, at: datetime,
                     peers: dict[str, list[NodeSummary]]) -> list[str]:
        """Alertmanager's webhook: firing alerts place monitoring holds, resolved ones release them."""
        access.alert_sender(principal)
        try:
            commands = parse_webhook(payload)
        except AlertPayloadError as error:
            raise Invalid([_problem(text) for text in error.problems]) from error
        outcomes = []
        for alert in commands:
            nid = node_id(alert.node)
            if nid not in self.uow.repository:
                outcomes.append(f"{alert.node}: unknown node")
                continue
            found = self.uow.repository.get(nid)
            others = [p for p in peers.get(found.definition_id, []) if p.id != str(nid)]
            outcome = apply_alert(found, alert, by=principal.username, at=at, peers=others,
                                  max_monitoring_percent=self.config.max_monitoring_percent())
            self.uow.save(found)
            outcomes.append(f"{alert.node}: {outcome}")
        return outcomes


    @command
    def retry_refused_holds(self, node: UUID, peers: list[NodeSummary], at: datetime) -> list[str]:
        """Place the monitoring holds the ceiling refused on `node` once it allows them (the refused-alerts loop)."""
        found = self.uow.load(Node, node, "node")
        placed = retry_refused(found, peers=[p for p in peers if p.id != str(node)], at=at,
                               max_monitoring_percent=self.config.max_monitoring_percent())
        if placed:
            self.uow.save(found)
        return placed


class _hold_errors:
    """Hold and node rule violations become 409 answers that say which rule; a release the hold's source rules
    refuse is 403 (the caller may not, whatever the node's state)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if isinstance(error, ReleaseRefused):
            raise Forbidden(str(error)) from error
        if error is not None and isinstance(error, (HoldError, NodeError)):
            raise Conflict(str(error)) from error


def _problem(text: str) -> Problem:
    path, _, message = text.partition(": ")
    return Problem(path=path, message=message or text)

