"""Input snapshot the scheduler decides over: queued and running allocations, nodes, definitions, policies.

These are the scheduler's own frozen value types; the application layer maps aggregates onto them, so the
decision function never depends on how workflows, allocations or nodes are stored.
"""
from __future__ import annotations

import enum
from datetime import datetime

import msgspec


class Kind(enum.Enum):
    JOB = "job"
    SERVICE = "service"
    STAGING = "staging"


class NodeStatus(enum.Enum):
    READY = "READY"
    NOT_READY = "NOT_READY"
    OFFLINE = "OFFLINE"


class HoldEffect(enum.Enum):
    CORDON = "cordon"
    EVICT = "evict"
    DEPROVISION = "deprovision"


class HoldSource(enum.Enum):
    ADMIN = "admin"
    MONITORING = "monitoring"
    PROVISIONER = "provisioner"


class Hold(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    effect: HoldEffect
    source: HoldSource
    reason: str = ""
    by: str = ""


class Dependency(msgspec.Struct, frozen=True, kw_only=True):
    """What a queued allocation still waits on: stage names and the condition each must reach."""

    stages: tuple[str, ...]
    condition: str = "FINISHED"


class QueuedAllocation(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    workflow_id: str
    stage: str
    kind: Kind = Kind.JOB
    organization_id: str = ""
    group_id: str = ""
    user_id: str = ""
    workflow_priority: int = 0
    organization_priority: int = 0
    group_priority: int = 0
    user_priority: int = 0
    submitted_at: datetime
    cpu: int = 1
    memory: int = 0
    devices: dict[str, int] = {}
    annotations: dict[str, str] = {}
    exclusive: bool = False
    nodes: int = 1
    segments: tuple[str, ...] = ()
    volume_node: str = ""  # the node name holding a volume this stage uses (ephemeral volumes live on one node)
    execute_timeout: int | float | None = None  # seconds; a non-finite one stays a float for sanity to refuse
    preemptible: bool = False
    host_ports: tuple[int, ...] = ()
    waiting_on: Dependency | None = None
    provisioning: str = ""  # "volume X is being provisioned by P": a volume it mounts is not made yet
    preemptions: tuple[datetime, ...] = ()
    project: str = ""  # the project path its workflow runs under ("" before any project existed)
    shared: dict[str, int] = {}  # cluster-wide counted resources it holds while it runs (licenses), by name
    # A service under a project: its workflow's largest job charge (quotas.charge's keys), which must still fit
    # beside it when it starts. A service holds its quota until its jobs end: without the room, services could fill
    # a quota while their own jobs wait for it, for good.
    companion: dict[str, int] = {}


class RunningAllocation(QueuedAllocation, frozen=True, kw_only=True):
    node_ids: tuple[str, ...]
    started_at: datetime
    deadline: datetime | None = None


class NodeView(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str = ""
    definition_id: str = ""
    status: NodeStatus = NodeStatus.READY
    cpu: int
    memory: int
    devices: dict[str, int] = {}
    annotations: dict[str, str] = {}
    segment: str = ""
    holds: tuple[Hold, ...] = ()


class NodeShape(msgspec.Struct, frozen=True, kw_only=True):
    cpu: int
    memory: int
    devices: dict[str, int] = {}
    node: str = ""  # a node of this shape, which a refusal names ("" for a provisioner's template)


class Definition(msgspec.Struct, frozen=True, kw_only=True):
    """A static provisioner definition: the pool its nodes form, with a real cap on their number."""

    id: str
    annotations: dict[str, str] = {}
    segment: str = ""
    max_nodes: int
    shape: NodeShape  # its largest node (what messages name)
    shapes: tuple[NodeShape, ...] = ()  # every distinct node shape it holds (a GPU node beside bigger CPU-only ones)


class PendingNode(msgspec.Struct, frozen=True, kw_only=True):
    """A node a provisioner was asked for and has not brought up yet (domain.provisioner's request)."""

    request_id: str
    state: str  # REQUESTED | CREATING | CREATED | FAILED
    requested_at: datetime
    expected_at: datetime
    attempts: int = 0
    last_error: str = ""
    retry_at: datetime | None = None


class NodeTemplate(msgspec.Struct, frozen=True, kw_only=True):
    """A provisioner's node template: the scheduler treats it as virtual nodes arriving at their expected time."""

    provisioner: str
    cpu: int
    memory: int
    devices: dict[str, int] = {}
    annotations: dict[str, str] = {}
    segment: str = ""
    max_nodes: int
    nodes: int = 0  # made and not yet deleted (these are real nodes already, or on their way out)
    pending: tuple[PendingNode, ...] = ()
    expected_seconds: float = 60.0


class GroupPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Which groups' running work this group may preempt; empty means none."""

    group_id: str
    may_preempt: tuple[str, ...] = ()


class ProjectLimit(msgspec.Struct, frozen=True, kw_only=True):
    """A project as the scheduler needs it: its quota's limits (`cpu`, `memory`, `devices.NAME`) and who may run
    work in it (user ids)."""

    path: str
    limits: dict[str, int] = {}
    members: tuple[str, ...] = ()


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    queued: tuple[QueuedAllocation, ...] = ()
    running: tuple[RunningAllocation, ...] = ()
    nodes: tuple[NodeView, ...] = ()
    definitions: tuple[Definition, ...] = ()
    group_policies: tuple[GroupPolicy, ...] = ()
    templates: tuple[NodeTemplate, ...] = ()  # provisioners that may make nodes (domain.scheduler.provisioning)
    projects: tuple[ProjectLimit, ...] = ()  # every live project; work of a project not here is held


def label(allocation: QueuedAllocation) -> str:
    """How people name an allocation in texts: its workflow and its job (stage)."""
    noun = "service" if allocation.kind is Kind.SERVICE else "job"
    return f"workflow {allocation.workflow_id} {noun} {allocation.stage}"
