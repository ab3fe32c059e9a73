"""The scheduler's input from the views: queued and running allocations, nodes, definitions, group policies and
projects."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.allocation import Allocation, QueueState
from domain.fuzzfile import Stage
from domain.fuzzfile.transfers import TRANSFER_KINDS
from domain.node_admission import to_node_view
from domain.scheduler import sanity
from domain.scheduler.quotas import largest_job
from domain.scheduler.segments import stage_segments
from domain.scheduler.snapshot import (
    Definition,
    GroupPolicy,
    Kind,
    NodeShape,
    NodeView,
    ProjectLimit,
    QueuedAllocation,
    RunningAllocation,
    Snapshot,
)
from domain.workflow import Workflow, volumes_of
from projections.nodes import NodesView
from projections.projects import ProjectsView
from projections.queue import QueueView
from projections.queue_rows import to_queued
from projections.tenancy import TenancyView
from projections.workflows import WorkflowsView


def scheduler_snapshot(now: datetime, queue: QueueView, workflows: WorkflowsView, nodes: NodesView,
                       tenancy: TenancyView, projects: ProjectsView | None = None) -> Snapshot:
    """READY allocations queue; RUNNING ones hold their nodes until their execute timeout's deadline."""
    preemptions = _preemptions(queue.in_states(QueueState.PREEMPTED))
    queued = [_queued(a, queue, workflows, preemptions) for a in queue.in_states(QueueState.READY)]
    running = [_running(a, _queued(a, queue, workflows, preemptions)) for a in queue.in_states(QueueState.RUNNING)]
    views = [to_node_view(n) for n in nodes.nodes()]
    return Snapshot(queued=tuple(queued), running=tuple(running), nodes=tuple(views),
                    definitions=tuple(definitions(views)), group_policies=tuple(group_policies(tenancy)),
                    projects=project_limits(projects, tenancy) if projects is not None else ())


def _queued(a: Allocation, queue: QueueView, workflows: WorkflowsView,
            preemptions: dict[tuple[UUID, str], tuple[datetime, ...]]) -> QueuedAllocation:
    workflow = workflows.workflow(a.workflow_id)
    state = workflow.stages.get(a.stage) if workflow is not None else None
    kind = _kind(state.template.kind if state is not None else "job")
    base = to_queued(a, queue.owner(a.workflow_id), queue.inputs(a), kind)
    extra: dict[str, Any] = {}
    if workflow is not None and state is not None:
        if node := volume_node(workflow, state.template):
            extra["volume_node"] = node
        if segments := volume_segments(workflow, state.template):
            extra["segments"] = segments
        if provisioning := volume_provisioning(workflow, state.template):
            extra["provisioning"] = provisioning
        if kind is Kind.SERVICE and (ports := host_ports(workflow, state.spec.step)):
            extra["host_ports"] = ports
        if kind is Kind.SERVICE and base.project and (room := largest_job(workflow.step_specs())):
            extra["companion"] = room
    if earlier := preemptions.get((a.workflow_id, a.stage), ()):
        extra["preemptions"] = earlier
    return QueuedAllocation(**{**_fields(base), **extra}) if extra else base


def _kind(stage_kind: str) -> Kind:
    if stage_kind == "service":
        return Kind.SERVICE
    return Kind.STAGING if stage_kind in TRANSFER_KINDS else Kind.JOB


def volume_node(workflow: Workflow, spec: Stage) -> str:
    """The node holding the volumes this stage uses, once one of the workflow's stages started there."""
    nodes = workflow.volume_nodes
    return next((nodes[v] for v in volumes_of(spec) if v in nodes), "") if nodes else ""


def volume_segments(workflow: Workflow, spec: Stage) -> tuple[str, ...]:
    """The storage segments of the persistent volumes this stage uses: it runs only on a node in that segment."""
    bindings = workflow.volume_bindings
    if not bindings:
        return ()
    return stage_segments(volumes_of(spec), {name: b.get("segment", "") for name, b in bindings.items()})


def volume_provisioning(workflow: Workflow, spec: Stage) -> str:
    """Why this stage waits for a volume it mounts: its volume provisioner has not made it yet ("" : none)."""
    bindings = workflow.volume_bindings
    for name in volumes_of(spec) if bindings else ():
        if (b := bindings.get(name)) and b.get("provisioner") and not b.get("path"):
            return f"volume {name} is being provisioned by {b['provisioner']}"
    return ""


def host_ports(workflow: Workflow, service: str) -> tuple[int, ...]:
    """The ports a service's `network.ports` asks of its node: two services asking one port never share it."""
    found = (workflow.definition.services or {}).get(service)
    ports = found.network.ports if found is not None and found.network is not None else None
    return tuple(sorted({p.port for p in ports or ()}))


def _running(a: Allocation, base: QueuedAllocation) -> RunningAllocation:
    assert a.started_at is not None, "a RUNNING allocation has started"  # set by the event that made it RUNNING
    deadline = sanity.deadline(a.started_at, a.execute_timeout_seconds)  # None past year 9999: no known end
    return RunningAllocation(**_fields(base), node_ids=tuple(a.nodes), started_at=a.started_at, deadline=deadline)


def _fields(value: QueuedAllocation) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__struct_fields__}


def _preemptions(allocations: list[Allocation]) -> dict[tuple[UUID, str], tuple[datetime, ...]]:
    """When each stage was preempted before, for the per-window preemption guard."""
    found: dict[tuple[UUID, str], list[datetime]] = defaultdict(list)
    for a in allocations:
        if a.state is QueueState.PREEMPTED and a.ended_at is not None:
            found[(a.workflow_id, a.stage)].append(a.ended_at)
    return {key: tuple(sorted(times)) for key, times in found.items()}


def node_definitions(nodes: NodesView) -> list[Definition]:
    """The definitions the registered nodes form, without building a whole snapshot (submission check)."""
    with nodes.lock:
        return definitions([to_node_view(n) for n in nodes.nodes()])


def node_segments(nodes: NodesView) -> set[str] | None:
    """The storage segments registered nodes are in ("" for none); None before any node registered."""
    with nodes.lock:
        found = {n.capacity.segment for n in nodes.nodes()}
    return found or None


def definitions(views: list[NodeView]) -> list[Definition]:
    """One Definition per definition id: its largest node's shape, annotations all share, and its count."""
    pools: dict[str, list[NodeView]] = defaultdict(list)
    for view in views:
        if view.definition_id:
            pools[view.definition_id].append(view)
    return [_definition(definition_id, members) for definition_id, members in sorted(pools.items())]


def _definition(definition_id: str, members: list[NodeView]) -> Definition:
    largest = max(members, key=lambda v: (v.cpu, v.memory, sum(v.devices.values())))
    common = dict(members[0].annotations)
    for view in members[1:]:
        common = {k: v for k, v in common.items() if view.annotations.get(k) == v}
    segments = {v.segment for v in members}
    shapes: dict[tuple[int, int, tuple[tuple[str, int], ...]], str] = {}  # each shape, with the first node (by name) that has it
    for v in sorted(members, key=lambda v: v.name):
        shapes.setdefault((v.cpu, v.memory, tuple(sorted(v.devices.items()))), v.name)
    return Definition(
        id=definition_id, annotations=common, segment=segments.pop() if len(segments) == 1 else "",
        max_nodes=len(members), shape=NodeShape(cpu=largest.cpu, memory=largest.memory, devices=dict(largest.devices),
                                                node=largest.name),
        shapes=tuple(NodeShape(cpu=cpu, memory=memory, devices=dict(devices), node=shapes[(cpu, memory, devices)])
                     for cpu, memory, devices in sorted(shapes)),
    )


def group_policies(tenancy: TenancyView) -> list[GroupPolicy]:
    return [GroupPolicy(group_id=str(g.id), may_preempt=tuple(str(p) for p in g.preempt))
            for g in tenancy.groups() if g.preempt]


def project_limits(projects: ProjectsView, tenancy: TenancyView) -> tuple[ProjectLimit, ...]:
    """Each live project's limits and who may run work in it: its members, and cluster admins (who may submit into
    any project), by user id."""
    found = projects.limits()
    if not found:
        return ()
    admins = tenancy.admin_ids()
    return tuple(ProjectLimit(path=path, limits=quota, members=members + admins) for path, quota, members in found)
