"""Roving: the application as its callers see it, one unit of work shared by the handler of each aggregate family.

`Roving(env, passwords, read_models)` builds the handlers and answers under the method names the API, the
scheduler runner and the agent protocol call (`FACE`); each name is one handler's method, nothing more. Commands
run in a unit of work and decide again after a lost write race (`unit_of_work.command`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain.app.allocations import Allocations
from domain.app.autoscaling import AutoscaleHandlers
from domain.app.config import ConfigHandlers
from domain.app.endpoints import EndpointHandlers, base_url
from domain.app.nodes import NodeHandlers
from domain.app.profiles import ProfileHandlers
from domain.app.read_models import NoReadModels, ReadModels
from domain.app.scheduling import SchedulingHandlers
from domain.app.tenancy import PasswordHasher, TenancyHandlers
from domain.app.unit_of_work import UnitOfWork
from domain.app.workflows import WorkflowHandlers


class Roving(UnitOfWork):
    """Storage comes from configuration (PERSISTENCE_MODULE); password hashing and the read models are injected."""

    def __init__(self, env: dict[str, str] | None = None, passwords: PasswordHasher | None = None,
                 read_models: ReadModels | None = None) -> None:
        super().__init__(env)
        self.cluster = self.env.get("ROVING_CLUSTER") or "local"
        self.read_models = read_models or NoReadModels()
        self.configuration = ConfigHandlers(self, self.cluster)
        self.profiles = ProfileHandlers(self)
        self.allocations = Allocations(self, self.configuration, self.read_models)
        self.scheduling = SchedulingHandlers(self, self.allocations, self.configuration, self.read_models,
                                             self.profiles)
        self.endpoints = EndpointHandlers(self, self.allocations, base_url(self.env))
        self.allocations.service_lost = self.endpoints.service_stopped
        self.workflows = WorkflowHandlers(self, self.allocations, self.endpoints, self.scheduling, self.profiles)
        self.projects = self.workflows.projects
        self.nodes = NodeHandlers(self, self.allocations, self.configuration)
        self.tenancy = TenancyHandlers(self, self.allocations, passwords, self.configuration)  # type: ignore[arg-type]
        self.autoscaling = AutoscaleHandlers(self, self.allocations, self.endpoints)


# Which handler answers each name callers use (`roving.submit_workflow(...)` is `roving.workflows.submit_workflow`).
FACE = {
    "workflows": ("submit_workflow", "stop_workflow", "report", "validate_workflow"),
    "scheduling": ("place", "preempt", "record_blocked", "check_feasible_submission"),
    "nodes": ("register_node", "check_agent", "node_lost", "cordon", "add_hold", "uncordon", "release_hold",
              "evict", "deprovision", "remove_node", "apply_alerts", "node_credentials", "revoke_node_credential",
              "readmit_node"),
    "endpoints": ("create_endpoint", "delete_endpoint"),
    "tenancy": ("create_organization", "create_user", "login", "set_priority", "create_group", "set_preempt_list",
                "add_member", "remove_member", "set_explainer", "set_posix_id"),
    "configuration": ("config", "scheduler_config", "change_config"),
    "profiles": ("set_profile", "delete_profile", "profile", "list_profiles"),
    "autoscaling": ("scale_service",),
    "projects": ("put_project", "change_project", "delete_project", "set_group_project"),
}


def _delegate(family: str, name: str) -> Callable[..., Any]:
    def call(self: Roving, *args: Any, **kwargs: Any) -> Any:
        return getattr(getattr(self, family), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"`{family}.{name}`"
    return call


for _family, _names in FACE.items():
    for _name in _names:
        setattr(Roving, _name, _delegate(_family, _name))
