"""Volume provisioner handlers: cluster admins define and delete the programs that make a storage class's volumes;
a submission asks for the volumes it mounts; the storage runner records what each program answered, which lets the
waiting workflows run (their bindings get the volume's directory) or ends them with the program's reason."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from domain.app.allocations import Allocations
from domain.app.endpoints import EndpointHandlers
from domain.app.errors import Forbidden, Invalid, NotFound, invalid
from domain.app.unit_of_work import UnitOfWork, command
from domain.storage_provisioner import STORAGE_PROVISIONERS, State, StorageError, StorageProvisioners, Volume
from domain.storage_provisioner_spec import StorageBody, name_problem, to_spec
from domain.tenancy.permissions import Principal
from domain.volumes import Binding
from domain.workflow import Workflow, WorkflowError

BY = "volume-provisioner"
ENDED = ("FINISHED", "FAILED", "CANCELED")


def current(uow: UnitOfWork) -> StorageProvisioners | None:
    """The cluster's volume provisioners, None before the first was defined."""
    if STORAGE_PROVISIONERS not in uow.repository:
        return None
    return uow.load(StorageProvisioners, STORAGE_PROVISIONERS, "volume provisioners")


def ask_volumes(uow: UnitOfWork, workflow: UUID, organization: str, bindings: dict[str, Binding],
                at: datetime) -> tuple[dict[str, Binding], list[Any]]:
    """A submission's provisioned volumes asked of their provisioners: each ready one bound to its directory, the
    others requested with the workflow waiting; the aggregate to save with the workflow when it changed."""
    wanted = {name: b for name, b in bindings.items() if b.provisioner}
    found = current(uow) if wanted else None
    if not wanted:
        return bindings, []
    if found is None:
        raise invalid(f"volumes.{next(iter(wanted))}.reference", "its volume provisioner was deleted")
    changed, bound = False, dict(bindings)
    for name, b in wanted.items():
        before = found.volumes.get(b.request)
        try:
            volume = found.ask(_volume(b, organization, at), str(workflow), at=at)
        except StorageError as error:
            raise invalid(f"volumes.{name}.reference", str(error)) from error
        changed = changed or volume != before
        bound[name] = msgspec.structs.replace(b, path=volume.path if volume.state is State.READY else "")
    return bound, [found] if changed else []


def _volume(b: Binding, organization: str, at: datetime) -> Volume:
    scope, storage_class, *rest = b.reference.removeprefix("volume://").split("/")
    return Volume(request=b.request, provisioner=b.provisioner, storage_class=storage_class, reference=b.reference,
                  organization=organization, scope=scope, name=rest[0] if rest else "", uid=b.uid, gid=b.gid, mode=b.mode,
                  state=State.REQUESTED, requested_at=at)


class StorageHandlers:
    def __init__(self, uow: UnitOfWork, allocations: Allocations, endpoints: EndpointHandlers) -> None:
        self.uow, self.allocations, self.endpoints = uow, allocations, endpoints

    def find(self) -> StorageProvisioners | None:
        return current(self.uow)

    @command
    def set_volume_provisioner(self, name: str, body: StorageBody, principal: Principal,
                               at: datetime) -> StorageProvisioners:
        """Define a volume provisioner or change its definition (cluster admins)."""
        _admin(principal)
        if (problem := name_problem(name)) is not None:
            raise invalid("name", problem)
        spec, problems = to_spec(body)
        if spec is None:
            raise Invalid(problems)
        found = current(self.uow) or StorageProvisioners.start(at=at)
        try:
            changed = found.define(name, spec, by=principal.username, at=at)
        except StorageError as error:
            raise invalid("class", str(error)) from error
        if changed:
            self.uow.save(found)
        return found

    @command
    def delete_volume_provisioner(self, name: str, principal: Principal, at: datetime) -> list[Volume]:
        """No new volumes of its class (those made stay where they are); the workflows waiting for one end."""
        _admin(principal)
        found = current(self.uow)
        if found is None or name not in found.definitions:
            raise NotFound(f"volume provisioner {name}")
        failed = found.remove(name, by=principal.username, at=at)
        touched = [found]
        for volume in failed:
            touched += self._end_waiters(found.volumes[volume.request], volume.waiting, at)
        self.uow.save(*touched)
        return failed

    @command
    def volume_ready(self, request: str, path: str, at: datetime) -> bool:
        """The program made it: its waiting workflows are bound to its directory (False: it moved on meanwhile)."""
        found = current(self.uow)
        try:
            before = found.ready(request, path, at=at) if found is not None else None
        except StorageError:
            return False
        if found is None or before is None:
            return False
        touched: list[Any] = [found]
        for workflow in self._live(before.waiting):
            bindings = {n: {**b, "path": path} if b.get("request") == request else b
                        for n, b in workflow.volume_bindings.items()}
            workflow.bind_volumes(bindings, by=BY, at=at)
            touched.append(workflow)
        self.uow.save(*touched)
        return True

    @command
    def volume_failed(self, request: str, reason: str, at: datetime) -> bool:
        """The program failed: the volume is FAILED with its reason, and the workflows waiting for it end with it."""
        found = current(self.uow)
        try:
            before = found.fail(request, reason, at=at) if found is not None else None
        except StorageError:
            return False
        if found is None or before is None:
            return False
        self.uow.save(found, *self._end_waiters(found.volumes[request], before.waiting, at))
        return True

    def _end_waiters(self, volume: Volume, waiting: tuple[str, ...], at: datetime) -> list[Any]:
        why = f"volume {volume.reference} could not be provisioned by {volume.provisioner}: {volume.reason}"
        touched: list[Any] = []
        for workflow in self._live(waiting):
            live = self.allocations.live_of(workflow)
            try:
                workflow.cancel(by=BY, at=at, reason=why)
            except WorkflowError:
                continue
            touched.append(workflow)
            for allocation in live:
                allocation.cancel(why, by=BY, at=at)
                touched += [allocation, *self.allocations.release(allocation, BY, at)]
                if workflow.stage(allocation.stage).kind == "service":
                    touched += self.endpoints.service_stopped(workflow, allocation.stage, why, at)
        return touched

    def _live(self, ids: tuple[str, ...]) -> list[Workflow]:
        found = []
        for text in ids:
            wid = UUID(text)
            if wid in self.uow.repository:
                workflow = self.uow.load(Workflow, wid, "workflow")
                if workflow.status not in ENDED:
                    found.append(workflow)
        return found


def _admin(principal: Principal) -> None:
    if not principal.is_cluster_admin:
        raise Forbidden("volume provisioners are defined and deleted by cluster admins only")
