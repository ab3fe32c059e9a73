"""The scheduler's input from the views: queued and running allocations, nodes, definitions, group policies and
projects.

Each pass reads every live allocation, and most are as they were at the last pass: `SnapshotValues` keeps each
one's scheduler value between passes and makes it again only when the queue's entry for it (renewed by every event of
the allocation, its workflow's submission and any tenant priority change), its workflow (by version) or its earlier
preemptions changed.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

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
from domain.workflow import Workflow
from domain.workflow_volumes import volumes_of
from projections.nodes import NodesView
from projections.projects import ProjectsView
from projections.queue import QueueView
from projections.tenancy import TenancyView
from projections.workflows import WorkflowsView


def scheduler_snapshot(now: datetime, queue: QueueView, workflows: WorkflowsView, nodes: NodesView,
                       tenancy: TenancyView, projects: ProjectsView | None = None,
                       kept: SnapshotValues | None = None) -> Snapshot:
    """READY allocations queue; RUNNING ones hold their nodes until their execute timeout's deadline. `kept` (the
    values of the last pass) spares making again the values of allocations that did not change."""
    values = kept if kept is not None else SnapshotValues()
    preemptions = _preemptions(queue.in_states(QueueState.PREEMPTED))
    queued, running = values.take(queue, workflows, preemptions)
    views, pools = node_views(nodes)
    return Snapshot(queued=queued, running=running, nodes=views,
                    definitions=pools, group_policies=tuple(group_policies(tenancy)),
                    projects=project_limits(projects, tenancy) if projects is not None else ())


_NODE_VIEWS: weakref.WeakKeyDictionary[NodesView, tuple[int, tuple[NodeView, ...], tuple[Definition, ...]]] = \
    weakref.WeakKeyDictionary()


def node_views(nodes: NodesView) -> tuple[tuple[NodeView, ...], tuple[Definition, ...]]:
    """The registered nodes as the scheduler sees them, and the definitions they form; made again only when a node
    event moved the view (every pass and every submission asks, and nodes change seldom)."""
    with nodes.lock:
        known = _NODE_VIEWS.get(nodes)
        if known is not None and known[0] == nodes.revision:
            return known[1], known[2]
        views = tuple(to_node_view(n) for n in nodes.nodes())
        pools = tuple(definitions(list(views)))
        _NODE_VIEWS[nodes] = (nodes.revision, views, pools)
        return views, pools


Preemptions = dict[tuple[UUID, str], tuple[datetime, ...]]


class SnapshotValues:
    """The scheduler values of the live allocations as the last pass made them, each with what it was made from."""

    def __init__(self) -> None:
        self._kept: dict[UUID, tuple[tuple[Any, ...], QueuedAllocation]] = {}

    def take(self, queue: QueueView, workflows: WorkflowsView,
             preemptions: Preemptions) -> tuple[tuple[QueuedAllocation, ...], tuple[RunningAllocation, ...]]:
        """The READY allocations' values and the RUNNING ones'; only these are kept for the next pass."""
        kept, self._kept = self._kept, {}
        queued = tuple(self._value(a, queue, workflows, preemptions, kept) for a in queue.in_states(QueueState.READY))
        running = tuple(self._value(a, queue, workflows, preemptions, kept) for a in queue.in_states(QueueState.RUNNING))
        return queued, running  # type: ignore[return-value]  # a RUNNING allocation's value is a RunningAllocation

    def _value(self, a: Allocation, queue: QueueView, workflows: WorkflowsView, preemptions: Preemptions,
               kept: dict[UUID, tuple[tuple[Any, ...], QueuedAllocation]]) -> QueuedAllocation:
        workflow = workflows.workflow(a.workflow_id)
        # the entry is renewed whenever the allocation, its owner or a tenant's priority changes; held here, a renewed
        # one is never the same object as the one kept
        made_from = (queue.entry(a.id), workflow, workflow.version if workflow is not None else None,
                     preemptions.get((a.workflow_id, a.stage), ()))
        known = kept.get(a.id)
        if known is not None and _same(known[0], made_from):
            value = known[1]
        else:
            value = _queued(a, made_from[0].queued, workflow, preemptions)
            if a.state is QueueState.RUNNING:
                value = _running(a, value)
        self._kept[a.id] = (made_from, value)
        return value


def _same(kept: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    return kept[0] is now[0] and kept[1] is now[1] and kept[2] == now[2] and kept[3] == now[3]


def _queued(a: Allocation, job: QueuedAllocation, workflow: Workflow | None,
            preemptions: Preemptions) -> QueuedAllocation:
    """The allocation's value from the queue's (`job`, made as if it were a job) and its workflow's stage."""
    state = workflow.stages.get(a.stage) if workflow is not None else None
    kind = _kind(state.template.kind if state is not None else "job")
    base = job if kind is Kind.JOB else msgspec.structs.replace(job, kind=kind)
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


def _preemptions(allocations: list[Allocation]) -> Preemptions:
    """When each stage was preempted before, for the per-window preemption guard."""
    found: dict[tuple[UUID, str], list[datetime]] = defaultdict(list)
    for a in allocations:
        if a.state is QueueState.PREEMPTED and a.ended_at is not None:
            found[(a.workflow_id, a.stage)].append(a.ended_at)
    return {key: tuple(sorted(times)) for key, times in found.items()}


def node_definitions(nodes: NodesView) -> list[Definition]:
    """The definitions the registered nodes form, without building a whole snapshot (submission check)."""
    return list(node_views(nodes)[1])


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
