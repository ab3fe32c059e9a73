"""Roving: the application as its callers see it, one unit of work shared by the handler of each aggregate family.

`Roving(env, passwords, read_models)` builds the handlers and answers under the method names the API, the
scheduler runner and the agent protocol call; each name is one handler's method, nothing more, declared with
`delegate` so type checkers see the handler's signature. Commands run in a unit of work and decide again after a
lost write race (`unit_of_work.command`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from domain.app.allocations import Allocations
from domain.app.autoscaling import AutoscaleHandlers
from domain.app.config import ConfigHandlers
from domain.app.credentials import PasswordHasher
from domain.app.endpoints import EndpointHandlers, base_url
from domain.app.nodes import NodeHandlers
from domain.app.profiles import ProfileHandlers
from domain.app.projects import ProjectHandlers
from domain.app.provisioners import ProvisionerHandlers
from domain.app.read_models import NoReadModels, ReadModels
from domain.app.scheduling import SchedulingHandlers
from domain.app.storage_provisioners import StorageHandlers
from domain.app.strays import StrayHandlers
from domain.app.tenancy import TenancyHandlers
from domain.app.unit_of_work import UnitOfWork
from domain.app.workflows import WorkflowHandlers

P = ParamSpec("P")
R = TypeVar("R")


def delegate(family: str, method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]:
    """`roving.NAME(...)` is `roving.<family>.NAME(...)`, with the handler method's own signature for type checkers."""
    name = method.__name__

    def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        answer: R = getattr(getattr(self, family), name)(*args, **kwargs)
        return answer

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"`{family}.{name}`"
    return call


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
        self.strays = StrayHandlers(self, self.allocations)
        self.tenancy = TenancyHandlers(self, self.allocations, passwords, self.configuration)  # type: ignore[arg-type]  # None only where nothing hashes (tools, tests)
        self.autoscaling = AutoscaleHandlers(self, self.allocations, self.endpoints)
        self.provisioners = ProvisionerHandlers(self, self.allocations)
        self.volume_provisioners = StorageHandlers(self, self.allocations, self.endpoints)

    # What callers call on the application (`roving.submit_workflow(...)`): each is one handler's method, typed as it.
    # workflows
    submit_workflow = delegate("workflows", WorkflowHandlers.submit_workflow)
    stop_workflow = delegate("workflows", WorkflowHandlers.stop_workflow)
    report = delegate("workflows", WorkflowHandlers.report)
    report_all = delegate("workflows", WorkflowHandlers.report_all)
    validate_workflow = delegate("workflows", WorkflowHandlers.validate_workflow)
    # scheduling
    place = delegate("scheduling", SchedulingHandlers.place)
    place_all = delegate("scheduling", SchedulingHandlers.place_all)
    preempt = delegate("scheduling", SchedulingHandlers.preempt)
    evict_stray = delegate("strays", StrayHandlers.evict_stray)
    deprovision_emptied = delegate("strays", StrayHandlers.deprovision_emptied)
    record_blocked = delegate("scheduling", SchedulingHandlers.record_blocked)
    record_blocked_all = delegate("scheduling", SchedulingHandlers.record_blocked_all)
    check_feasible_submission = delegate("scheduling", SchedulingHandlers.check_feasible_submission)
    # nodes
    register_node = delegate("nodes", NodeHandlers.register_node)
    check_agent = delegate("nodes", NodeHandlers.check_agent)
    node_lost = delegate("nodes", NodeHandlers.node_lost)
    cordon = delegate("nodes", NodeHandlers.cordon)
    add_hold = delegate("nodes", NodeHandlers.add_hold)
    uncordon = delegate("nodes", NodeHandlers.uncordon)
    release_hold = delegate("nodes", NodeHandlers.release_hold)
    evict = delegate("nodes", NodeHandlers.evict)
    deprovision = delegate("nodes", NodeHandlers.deprovision)
    remove_node = delegate("nodes", NodeHandlers.remove_node)
    apply_alerts = delegate("nodes", NodeHandlers.apply_alerts)
    node_credentials = delegate("nodes", NodeHandlers.node_credentials)
    revoke_node_credential = delegate("nodes", NodeHandlers.revoke_node_credential)
    readmit_node = delegate("nodes", NodeHandlers.readmit_node)
    retry_refused_holds = delegate("nodes", NodeHandlers.retry_refused_holds)
    # endpoints
    create_endpoint = delegate("endpoints", EndpointHandlers.create_endpoint)
    delete_endpoint = delegate("endpoints", EndpointHandlers.delete_endpoint)
    # tenancy
    create_organization = delegate("tenancy", TenancyHandlers.create_organization)
    create_user = delegate("tenancy", TenancyHandlers.create_user)
    login = delegate("tenancy", TenancyHandlers.login)
    set_priority = delegate("tenancy", TenancyHandlers.set_priority)
    create_group = delegate("tenancy", TenancyHandlers.create_group)
    set_preempt_list = delegate("tenancy", TenancyHandlers.set_preempt_list)
    add_member = delegate("tenancy", TenancyHandlers.add_member)
    remove_member = delegate("tenancy", TenancyHandlers.remove_member)
    set_explainer = delegate("tenancy", TenancyHandlers.set_explainer)
    set_posix_id = delegate("tenancy", TenancyHandlers.set_posix_id)
    # configuration
    config = delegate("configuration", ConfigHandlers.config)
    scheduler_config = delegate("configuration", ConfigHandlers.scheduler_config)
    change_config = delegate("configuration", ConfigHandlers.change_config)
    # profiles
    set_profile = delegate("profiles", ProfileHandlers.set_profile)
    delete_profile = delegate("profiles", ProfileHandlers.delete_profile)
    profile = delegate("profiles", ProfileHandlers.profile)
    list_profiles = delegate("profiles", ProfileHandlers.list_profiles)
    # autoscaling
    scale_service = delegate("autoscaling", AutoscaleHandlers.scale_service)
    # provisioners
    set_provisioner = delegate("provisioners", ProvisionerHandlers.set_provisioner)
    delete_provisioner = delegate("provisioners", ProvisionerHandlers.delete_provisioner)
    request_nodes = delegate("provisioners", ProvisionerHandlers.request_nodes)
    cancel_request = delegate("provisioners", ProvisionerHandlers.cancel_request)
    start_create = delegate("provisioners", ProvisionerHandlers.start_create)
    record_created = delegate("provisioners", ProvisionerHandlers.record_created)
    record_create_failed = delegate("provisioners", ProvisionerHandlers.record_create_failed)
    record_up = delegate("provisioners", ProvisionerHandlers.record_up)
    start_delete = delegate("provisioners", ProvisionerHandlers.start_delete)
    drain_node = delegate("provisioners", ProvisionerHandlers.drain_node)
    finish_delete = delegate("provisioners", ProvisionerHandlers.finish_delete)
    # volume provisioners
    set_volume_provisioner = delegate("volume_provisioners", StorageHandlers.set_volume_provisioner)
    delete_volume_provisioner = delegate("volume_provisioners", StorageHandlers.delete_volume_provisioner)
    volume_ready = delegate("volume_provisioners", StorageHandlers.volume_ready)
    volume_failed = delegate("volume_provisioners", StorageHandlers.volume_failed)
    # projects
    put_project = delegate("projects", ProjectHandlers.put_project)
    change_project = delegate("projects", ProjectHandlers.change_project)
    delete_project = delegate("projects", ProjectHandlers.delete_project)
    set_group_project = delegate("projects", ProjectHandlers.set_group_project)
