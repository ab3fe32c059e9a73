"""Volume handlers: bind a submission's persistent volumes to their directories and owners, and refuse what this
cluster cannot give it (an owner without POSIX ids, a segment no node provides, one stage across two segments)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from domain.app.config import ConfigHandlers
from domain.app.errors import Invalid
from domain.app.read_models import ReadModels
from domain.app.storage_provisioners import ask_volumes, current
from domain.app.unit_of_work import UnitOfWork
from domain.fuzzfile.schema import Problem
from domain.fuzzfile.schema import Workflow as Definition
from domain.fuzzfile.stages import list_steps
from domain.fuzzfile.transfers import mounted_volumes
from domain.scheduler.segments import segment_problems
from domain.tenancy.group import Group
from domain.tenancy.permissions import Principal
from domain.tenancy.user import User
from domain.volumes import Binding, Owner, Storage, bind, storage_warnings
from domain.workflow import Workflow


class VolumeHandlers:
    def __init__(self, uow: UnitOfWork, config: ConfigHandlers, read_models: ReadModels) -> None:
        self.uow, self.config, self.read_models = uow, config, read_models

    def storage(self) -> Storage:
        settings = self.config.scheduler_config()
        provisioners = current(self.uow)
        return Storage(root=settings.storage_root, classes=dict(settings.storage_classes),
                       provisioned=provisioners.classes() if provisioners is not None else {})

    def resolve(self, definition: Definition, owner: dict[str, str],
                principal: Principal) -> tuple[dict[str, Binding], list[Problem]]:
        """The persistent volumes' bindings, and the problems that refuse the submission (each field named)."""
        bindings, problems = bind(definition, self.storage(), self._owner(owner, principal))
        segments = {name: b.segment for name, b in bindings.items()}
        return bindings, problems + segment_problems(_steps(definition), segments, self._segments())

    def bind(self, workflow: Workflow, principal: Principal, at: datetime) -> list[Any]:
        """Record the persistent volumes' bindings on the workflow; Invalid names each volume it refuses. A volume
        provisioner's volume not ready yet is asked for (the aggregate returned, to save with the workflow)."""
        bindings, problems = self.resolve(workflow.definition, workflow.owner, principal)
        if problems:
            raise Invalid(problems)
        bindings, touched = ask_volumes(self.uow, workflow.id, workflow.owner.get("organization_id", ""), bindings, at)
        workflow.bind_volumes({n: _recorded(b) for n, b in bindings.items()}, by=principal.username, at=at)
        return touched

    def warnings(self, definition: Definition) -> list[Problem]:
        """What `validate` says this cluster will not do as written (see domain.volumes.storage_warnings)."""
        return storage_warnings(definition, self.storage(), self._segments())

    def _segments(self) -> set[str] | None:
        found = getattr(self.read_models, "node_segments", None)
        return found() if found is not None else None

    def _owner(self, owner: dict[str, str], principal: Principal) -> Owner:
        user = self._get(User, owner.get("user_id", ""))
        group = self._get(Group, owner.get("group_id", ""))
        member = group is not None and user is not None and user.id in group.members
        return Owner(organization=owner.get("organization_id", ""), username=principal.username,
                     uid=getattr(user, "uid", None), group=getattr(group, "name", ""), gid=getattr(group, "gid", None),
                     member=member)

    def _get(self, kind: type, text: str) -> Any:
        try:
            found = self.uow.repository.get(UUID(text)) if text and UUID(text) in self.uow.repository else None
        except ValueError:
            return None
        return found if isinstance(found, kind) else None


def _recorded(binding: Binding) -> dict[str, Any]:
    """A binding as the workflow's event keeps it; a local one as it always was (no provisioner, no request)."""
    recorded: dict[str, Any] = msgspec.to_builtins(binding)
    if not binding.provisioner:
        recorded.pop("provisioner")
        recorded.pop("request")
    return recorded


def _steps(definition: Definition) -> list[tuple[str, list[str]]]:
    found: dict[str, list[str]] = {}
    for step in list_steps(definition):
        spec = step.template
        path = f"{'services' if spec.kind == 'service' else 'jobs'}.{spec.step}"
        if spec.kind in ("job", "service"):
            found.setdefault(path, mounted_volumes(spec.mounts))
    return list(found.items())
