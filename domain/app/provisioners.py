"""Provisioner handlers: cluster admins define and delete provisioners; the scheduler asks for nodes and drops
requests nothing waits for; the provisioner runner records each step of a node's life.

A step that changes a node goes out in one commit with the node's own events: a drain with its deprovision hold,
a deletion with the node's removal and its work's loss. A step the request's state no longer allows (another
writer moved it first) answers False or None: the runner's next look decides again on what is true then.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from domain.app.allocations import Allocations
from domain.app.errors import Forbidden, Invalid, NotFound, invalid
from domain.app.ids import hold_id, node_id
from domain.app.unit_of_work import UnitOfWork, command
from domain.holds import HoldError
from domain.node import Node, NodeError
from domain.provisioner import Provisioner, ProvisionerError, provisioner_id
from domain.provisioner_spec import ProvisionerBody, name_problem, to_spec
from domain.tenancy.common import Source
from domain.tenancy.permissions import Principal

BY = "provisioner"


class ProvisionerHandlers:
    def __init__(self, uow: UnitOfWork, allocations: Allocations) -> None:
        self.uow, self.allocations = uow, allocations

    @command
    def set_provisioner(self, name: str, body: ProvisionerBody, principal: Principal, at: datetime) -> Provisioner:
        """Define a provisioner or change its definition (cluster admins); its live nodes keep running."""
        _admin(principal)
        if (problem := name_problem(name)) is not None:
            raise invalid("name", problem)
        spec, problems = to_spec(body)
        if spec is None:
            raise Invalid(problems)
        found = self.find(name)
        if found is None:
            found = Provisioner.define(name, spec, by=principal.username, at=at)
        elif not found.change(spec, by=principal.username, at=at):
            return found
        self.uow.save(found)
        return found

    @command
    def delete_provisioner(self, name: str, principal: Principal, at: datetime) -> Provisioner:
        """No new nodes; requests not yet made are canceled and its nodes drained and deleted by its runner."""
        _admin(principal)
        found = self.find(name)
        if found is None or found.deleted:
            raise NotFound(f"provisioner {name}")
        found.delete(by=principal.username, at=at)
        self.uow.save(found)
        return found

    def find(self, name: str) -> Provisioner | None:
        pid = provisioner_id(name)
        return self.uow.load(Provisioner, pid, "provisioner") if pid in self.uow.repository else None

    @command
    def request_nodes(self, name: str, reasons: list[str], at: datetime) -> list[str]:
        """The scheduler's ask: one node per reason, within maxNodes; the request ids (the nodes' names)."""
        found = self.find(name)
        if found is None or found.deleted:
            return []
        made = found.request(reasons, at=at)
        if made:
            self.uow.save(found)
        return made

    @command
    def cancel_request(self, name: str, request_id: str, reason: str, at: datetime) -> bool:
        return self._step(name, lambda p: p.cancel(request_id, reason, at=at)) is not None

    @command
    def start_create(self, name: str, request_id: str, at: datetime) -> int | None:
        """Recorded before the provider is asked: the attempt's number, None when it is not to be made now."""
        attempt: int | None = self._step(name, lambda p: p.start_create(request_id, at=at))
        return attempt

    @command
    def record_created(self, name: str, request_id: str, instance: str, at: datetime) -> bool:
        return self._step(name, lambda p: p.created(request_id, instance, at=at)) is not None

    @command
    def record_create_failed(self, name: str, request_id: str, error: str, at: datetime) -> datetime | None:
        """The attempt failed; when the next one is due (None: the request moved on meanwhile)."""
        due: datetime | None = self._step(name, lambda p: p.create_failed(request_id, error, at=at))
        return due

    @command
    def record_up(self, name: str, request_id: str, node: str, at: datetime) -> float | None:
        """Its node registered READY; the provision latency in seconds."""
        latency: float | None = self._step(name, lambda p: p.came_up(request_id, node, at=at))
        return latency

    @command
    def start_delete(self, name: str, request_id: str, reason: str, at: datetime) -> bool:
        return self._step(name, lambda p: p.start_delete(request_id, reason, at=at)) is not None

    @command
    def drain_node(self, name: str, request_id: str, reason: str, at: datetime, even_if_busy: bool = False) -> bool:
        """A deprovision hold on the request's node (removed at once if empty, else once its work ends). Work
        placed since the runner looked makes an idle drain moot: False, and the node stays."""
        found, node = self._load(name), self._node(request_id)
        on_node = self.allocations.on_node(node.id) if node is not None else []
        if node is None or (on_node and not even_if_busy):
            return False
        try:
            found.drain(request_id, reason, at=at)
            node.deprovision(hold_id(node.id, "deprovision", BY, at.isoformat()), Source.PROVISIONER, reason, on_node,
                             by=BY, at=at)
        except (ProvisionerError, HoldError, NodeError):
            return False
        self.uow.save(found, node)
        return True

    @command
    def finish_delete(self, name: str, request_id: str, at: datetime) -> bool:
        """The provider deleted it: the request ends and its node, if still there, is removed (its work lost and
        retried or failed by policy)."""
        found, node = self._load(name), self._node(request_id)
        try:
            found.deleted_node(request_id, at=at)
        except ProvisionerError:
            return False
        touched: list[Any] = [found]
        if node is not None and not node.removed:
            why = found.history[-1].end_reason if found.history else "deleted"
            lost = node.go_offline(self.allocations.on_node(node.id), by=BY, at=at,
                                   reason=f"provisioned node deleted: {why}")
            node.remove([], by=BY, at=at)  # its work was lost as it went offline
            touched += [node, *self.allocations.lose(lost, f"node {node.name} deleted by provisioner {name}: {why}",
                                                      BY, at)]
        self.uow.save(*touched)
        return True

    def _step(self, name: str, change: Any) -> Any:
        found = self._load(name)
        try:
            result = change(found)
        except ProvisionerError:
            return None
        self.uow.save(found)
        return True if result is None else result

    def _load(self, name: str) -> Provisioner:
        found = self.find(name)
        if found is None:
            raise NotFound(f"provisioner {name}")
        return found

    def _node(self, request_id: str) -> Node | None:
        nid = node_id(request_id)
        return self.uow.load(Node, nid, "node") if nid in self.uow.repository else None


def _admin(principal: Principal) -> None:
    if not principal.is_cluster_admin:
        raise Forbidden("provisioners are defined and deleted by cluster admins only")
