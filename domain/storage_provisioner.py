"""The StorageProvisioners aggregate: the cluster's volume provisioners (each an admin's program for one storage
class) and every volume they were asked for, from the request to ready (its directory) or failed (the reason).

One aggregate for the cluster: a storage class names at most one provisioner, checked on the writes themselves,
and `list` is a read of it. A volume's request id is derived from what it is (organization, scope, owner id,
class, name), so asking again for the same volume is the same request: the program, idempotent by it, answers with
the directory it made before, and two organizations (or two owners) never share one. The workflows waiting for a
volume are kept on its request: ready, they are given its directory; failed, they end with the reason.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

import msgspec
from eventsourcing.domain import event

from domain.storage_provisioner_spec import StorageSpec
from domain.timed import TimedAggregate

ROOT = uuid5(NAMESPACE_URL, "roving")
STORAGE_PROVISIONERS = uuid5(ROOT, "storage-provisioners")
REASON_MOST = 1000  # a failure's reason as kept and shown


class StorageError(Exception):
    """A change the definitions or a volume's state do not allow; the message says why."""


class State(str, enum.Enum):
    REQUESTED = "REQUESTED"  # the program has not answered yet
    READY = "READY"          # the program made it: `path` is its directory on the nodes
    FAILED = "FAILED"        # the program failed: `reason` says why; a later submission asks again


class Volume(msgspec.Struct, frozen=True, kw_only=True):
    """One volume asked of a provisioner, and whose it is."""

    request: str
    provisioner: str
    storage_class: str
    reference: str          # volume://SCOPE/CLASS[/NAME]
    organization: str
    scope: str              # user | group
    name: str
    uid: int
    gid: int
    mode: int
    state: State
    requested_at: datetime
    attempts: int = 1
    path: str = ""
    reason: str = ""
    ended_at: datetime | None = None  # when it became READY or FAILED
    waiting: tuple[str, ...] = ()     # ids of the workflows held until it is ready


def volume_request(organization: str, scope: str, owner: int, storage_class: str, name: str) -> str:
    """The request id of one volume: the same volume, the same id (the program's idempotency key)."""
    return str(uuid5(ROOT, f"volume:{organization}/{scope}/{owner}/{storage_class}/{name}"))


class StorageProvisioners(TimedAggregate):
    @staticmethod
    def create_id(**_: Any) -> UUID:
        return STORAGE_PROVISIONERS

    @event("Started")
    def __init__(self, at: datetime) -> None:
        self.definitions: dict[str, StorageSpec] = {}
        self.changed: dict[str, tuple[str, datetime]] = {}  # name -> (by, at) of its last definition
        self.volumes: dict[str, Volume] = {}

    @classmethod
    def start(cls, *, at: datetime) -> StorageProvisioners:
        return cls(at=at)

    def define(self, name: str, spec: StorageSpec, *, by: str, at: datetime) -> bool:
        """Define or change a provisioner; False when it says the same. Its class may be no other's."""
        other = self.provisioner_of(spec.storage_class)
        if other not in (None, name):
            raise StorageError(f"storage class {spec.storage_class} is made by volume provisioner {other}")
        if self.definitions.get(name) == spec:
            return False
        self._defined(name=name, spec=spec, by=by, at=at)
        return True

    def remove(self, name: str, *, by: str, at: datetime) -> list[Volume]:
        """No more volumes of its class; the ones it was still making fail. The failed volumes, for their waiters."""
        if name not in self.definitions:
            raise StorageError(f"no volume provisioner {name}")
        pending = [v for v in self.volumes.values() if v.provisioner == name and v.state is State.REQUESTED]
        self._removed(name=name, by=by, at=at)
        for found in pending:
            self.fail(found.request, f"volume provisioner {name} was deleted", at=at)
        return [self.volumes[v.request] for v in pending]

    def provisioner_of(self, storage_class: str) -> str | None:
        return next((n for n, s in self.definitions.items() if s.storage_class == storage_class), None)

    def classes(self) -> dict[str, str]:
        """Storage class -> the provisioner that makes its volumes."""
        return {spec.storage_class: name for name, spec in self.definitions.items()}

    def of(self, name: str) -> list[Volume]:
        return sorted((v for v in self.volumes.values() if v.provisioner == name), key=lambda v: v.requested_at)

    def pending(self) -> list[Volume]:
        return sorted((v for v in self.volumes.values() if v.state is State.REQUESTED), key=lambda v: v.requested_at)

    def ask(self, wanted: Volume, workflow: str, *, at: datetime) -> Volume:
        """The volume for a workflow: ready as it is, else requested (again, after a failure) with the workflow
        among those waiting for it."""
        if wanted.provisioner not in self.definitions:
            raise StorageError(f"no volume provisioner {wanted.provisioner}")
        found = self.volumes.get(wanted.request)
        if found is not None and found.state is State.READY:
            return found
        if found is None or found.state is State.FAILED:
            attempts = found.attempts + 1 if found is not None else 1
            self._requested(volume=msgspec.structs.replace(wanted, state=State.REQUESTED, attempts=attempts,
                                                           requested_at=at, waiting=(workflow,)), at=at)
        elif workflow not in found.waiting:
            self._waiting(request=wanted.request, workflow=workflow, at=at)
        return self.volumes[wanted.request]

    def ready(self, request: str, path: str, *, at: datetime) -> Volume:
        """The program made it at `path`; the volume as it was (its waiters) before they were let go."""
        found = self._expect(request)
        self._ready(request=request, path=path, at=at)
        return found

    def fail(self, request: str, reason: str, *, at: datetime) -> Volume:
        found = self._expect(request)
        self._failed(request=request, reason=reason[-REASON_MOST:], at=at)
        return found

    def _expect(self, request: str) -> Volume:
        found = self.volumes.get(request)
        if found is None or found.state is not State.REQUESTED:
            state = found.state.value if found is not None else "unknown"
            raise StorageError(f"volume request {request} is {state}, not REQUESTED")
        return found

    def _update(self, request: str, **changes: Any) -> None:
        self.volumes[request] = msgspec.structs.replace(self.volumes[request], **changes)

    @event("Defined")
    def _defined(self, name: str, spec: StorageSpec, by: str, at: datetime) -> None:
        self.definitions[name] = spec
        self.changed[name] = (by, at)

    @event("Removed")
    def _removed(self, name: str, by: str, at: datetime) -> None:
        self.definitions.pop(name, None)
        self.changed.pop(name, None)

    @event("VolumeRequested")
    def _requested(self, volume: Volume, at: datetime) -> None:
        self.volumes[volume.request] = volume

    @event("VolumeWaited")
    def _waiting(self, request: str, workflow: str, at: datetime) -> None:
        self._update(request, waiting=(*self.volumes[request].waiting, workflow))

    @event("VolumeReady")
    def _ready(self, request: str, path: str, at: datetime) -> None:
        self._update(request, state=State.READY, path=path, reason="", ended_at=at, waiting=())

    @event("VolumeFailed")
    def _failed(self, request: str, reason: str, at: datetime) -> None:
        self._update(request, state=State.FAILED, reason=reason, ended_at=at, waiting=())
