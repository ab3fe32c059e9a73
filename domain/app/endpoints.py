"""Endpoint handlers: create and delete persistent endpoints, bind workflow services to them, follow readiness.

A binding change and the cancel it decides (a taken-over workflow) are saved in the same commit as the
command that caused it, so the proxy never sees a canceled workflow still bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import TracebackType
from typing import Any
from uuid import UUID

import msgspec

from domain.app import access
from domain.app.allocations import Allocations
from domain.app.errors import Conflict, NotFound, invalid
from domain.app.ids import endpoint_id
from domain.app.unit_of_work import UnitOfWork, command
from domain.endpoint import Endpoint, OwnerKind, Strategy
from domain.endpoint_values import Decision, EndpointError
from domain.fuzzfile.replicas import replica_port
from domain.fuzzfile.schema import Workflow as Definition
from domain.tenancy.permissions import Principal
from domain.workflow import Workflow, WorkflowError

STRATEGY_ANNOTATION = "roving.endpoint-strategy"
LOCAL_HOST = "127.0.0.1"  # local agents run services on the control plane's host
ENDED = ("FINISHED", "FAILED", "CANCELED")


def persistent_endpoints(definition: Definition) -> list[tuple[str, str, int]]:
    """(service, endpoint name, port) for every `persistent: true` endpoint of the definition's services."""
    found = []
    for service_name, service in (definition.services or {}).items():
        network = service.network
        if network is None:
            continue
        ports = {p.name: p.port for p in network.ports or []}
        for endpoint in network.endpoints or []:
            if endpoint.persistent:
                found.append((service_name, endpoint.name, ports.get(endpoint.port_name, 0)))
    return found


def endpoint_env(definition: Definition, base_url: str) -> dict[str, str]:
    """`FB_SERVICE_<SERVICE>_ENDPOINT_URL` and `_PATH` for each service's persistent endpoint."""
    env: dict[str, str] = {}
    for service, name, _ in persistent_endpoints(definition):
        key = "FB_SERVICE_" + service.upper().replace("-", "_").replace(".", "_") + "_ENDPOINT"
        path = f"/endpoints/{name}/"
        env[f"{key}_URL"], env[f"{key}_PATH"] = base_url.rstrip("/") + path, path
    return env


def with_endpoint_env(definition: Definition, base_url: str) -> Definition:
    """The definition with the endpoint variables added to every job and service (their own env wins)."""
    extra = [f"{k}={v}" for k, v in endpoint_env(definition, base_url).items()]
    if not extra:
        return definition

    def add(steps: dict[str, Any] | None) -> dict[str, Any] | None:
        if steps is None:
            return None
        return {name: msgspec.structs.replace(step, env=[*extra, *(step.env or [])]) for name, step in steps.items()}

    return msgspec.structs.replace(definition, jobs=add(definition.jobs), services=add(definition.services))


class EndpointHandlers:
    def __init__(self, uow: UnitOfWork, allocations: Allocations, base_url: str) -> None:
        self.uow, self.allocations, self.base_url = uow, allocations, base_url

    @command
    def create_endpoint(self, name: str, owner_kind: str, scope: str, principal: Principal, at: datetime,
                        owner_id: str = "") -> UUID:
        eid = endpoint_id(name)
        if eid in self.uow.repository:
            raise Conflict(f"endpoint {name!r} already exists")
        kind = OwnerKind(owner_kind) if owner_kind in {k.value for k in OwnerKind} else owner_kind
        owner = owner_id or access.endpoint_owner_id(kind, principal)
        groups = sorted(str(g) for g in principal.group_ids)
        with _endpoint_errors("endpoint"):
            access.check_endpoint_owner(kind, owner, principal)
            endpoint = Endpoint.create(eid, name, kind, owner, scope, by=principal.username, at=at,
                                       group_id=groups[0] if groups else "",
                                       organization_id=str(principal.organization_id or ""))
        self.uow.save(endpoint)
        return eid

    @command
    def delete_endpoint(self, endpoint: UUID, principal: Principal, at: datetime) -> None:
        found = self.uow.load(Endpoint, endpoint, "endpoint")
        if found.deleted or not access.manages_endpoint(found, principal):
            raise NotFound("endpoint")
        with _endpoint_errors("endpoint"):
            found.delete(by=principal.username, at=at)
        self.uow.save(found)

    def bind(self, workflow: Workflow, definition: Definition, principal: Principal, at: datetime,
             strategy: str | None = None) -> list[Any]:
        """Ask each persistent endpoint of the definition for a binding; returns what to save with the workflow."""
        wanted = strategy or (definition.annotations or {}).get(STRATEGY_ANNOTATION) or Strategy.READY.value
        touched: list[Any] = []
        for index, (service, name, _) in enumerate(persistent_endpoints(definition)):
            where = f"services.{service}.network.endpoints[{index}]"
            found = self._endpoint(name)
            if found is None or found.deleted or not access.manages_endpoint(found, principal):
                raise invalid(where, f"no persistent endpoint named {name!r}; create it with `roving endpoint create {name}`")
            with _endpoint_errors(where):
                decision = found.request_binding(workflow.id, service, by=principal.username, at=at, strategy=wanted)
            touched += [found, *self._carry_out(decision, principal.username, at)]
        return touched

    def service_ready(self, workflow: Workflow, stage: str, at: datetime, host: str = LOCAL_HOST,
                      listening: tuple[int, ...] | None = None) -> list[Any]:
        """A service (or one replica: `stage`) passed its readiness probe: bind its pending endpoints and retire
        what they replace, or join the endpoints it is bound to already. The target is the service's node
        (`host`, where its agent registered) at its declared port; `listening` is what its processes bound."""
        service, touched = workflow.service_of(stage), []
        for endpoint, port in self._endpoints_for(workflow, service):
            before = endpoint.version
            try:
                decision = endpoint.service_ready(workflow.id, service, host, replica_port(port, stage),
                                                  by="agent", at=at, replica=stage, listening=listening)
            except EndpointError:
                continue  # superseded or deleted meanwhile: the service simply serves no endpoint
            if endpoint.version != before:
                touched += [endpoint, *self._carry_out(decision, "agent", at)]
        return touched

    def replica_unready(self, workflow: Workflow, stage: str, reason: str, at: datetime) -> list[Any]:
        """A ready service (or replica) failed its readiness probe: out of its endpoints, still running."""
        service, touched = workflow.service_of(stage), []
        for endpoint, _ in self._endpoints_for(workflow, service):
            if endpoint.replica_unready(workflow.id, service, stage, reason, by="agent", at=at):
                touched.append(endpoint)
        return touched

    def service_stopped(self, workflow: Workflow, stage: str, reason: str, at: datetime) -> list[Any]:
        """The service ended: a pending takeover fails (the old binding keeps serving), a bound one unbinds. A
        replica ending while others live, or a service being restarted, only leaves the endpoint."""
        service = workflow.service_of(stage)
        live = workflow.live_replicas(service)
        if stage in live:  # restarted (on-failure, node loss): out of its endpoints until the new attempt is ready
            return self.replica_unready(workflow, stage, f"restarting after: {reason}", at)
        if live:  # other replicas serve on
            return self.replica_unready(workflow, stage, f"ended: {reason}", at)
        touched: list[Any] = []
        for _, name, _ in persistent_endpoints(workflow.definition):
            endpoint = self._endpoint(name)
            if endpoint is not None and not endpoint.deleted:
                before = endpoint.version
                endpoint.service_stopped(workflow.id, service, reason, by="agent", at=at)
                if endpoint.version != before:
                    touched.append(endpoint)
        return touched

    def _endpoint(self, name: str) -> Endpoint | None:
        eid = endpoint_id(name)
        found = self.uow.repository.get(eid) if eid in self.uow.repository else None
        return found if isinstance(found, Endpoint) else None

    def _endpoints_for(self, workflow: Workflow, service: str) -> list[tuple[Endpoint, int]]:
        """The service's endpoints that wait for it or are bound to it, with the port they reach it on."""
        found = []
        mine = (workflow.id, service)
        for owner, name, port in persistent_endpoints(workflow.definition):
            endpoint = self._endpoint(name) if owner == service else None
            if endpoint is None:
                continue
            pending, bound = endpoint.pending, endpoint.binding
            if (pending is not None and (pending.workflow_id, pending.service) == mine) \
                    or (bound is not None and (bound.workflow_id, bound.service) == mine):
                found.append((endpoint, port))
        return found

    def _carry_out(self, decision: Decision, by: str, at: datetime) -> list[Any]:
        """Cancel the workflow a takeover retired, with `stop_workflow` semantics, for the same commit."""
        if decision.cancel_workflow is None or decision.cancel_workflow not in self.uow.repository:
            return []
        old = self.uow.repository.get(decision.cancel_workflow)
        if not isinstance(old, Workflow) or old.status in ENDED:
            return []
        live = self.allocations.live_of(old)
        try:
            old.cancel(by=by, at=at, reason=decision.reason)
        except WorkflowError:
            return []
        touched: list[Any] = [old]
        for alloc in live:
            alloc.cancel(decision.reason, by=by, at=at)
            touched += [alloc, *self.allocations.release(alloc, by, at)]
        return touched


def base_url(env: Mapping[str, str]) -> str:
    """Where persistent endpoints are reached from outside: ROVING_PUBLIC_URL, else the API's listen address."""
    return env.get("ROVING_PUBLIC_URL") or f"http://{env.get('ROVING_LISTEN') or '127.0.0.1:8080'}"


class _endpoint_errors:
    """EndpointError from the aggregate becomes Invalid at `path` (400 naming the field)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if isinstance(error, EndpointError):
            raise invalid(self.path, str(error)) from error

