"""The event classes read models handle, looked up on their aggregates once, at import.

Most events are made by eventsourcing's `@event("Name")` decorator on an aggregate's command, so the class exists
only at run time and a type checker does not see it as an attribute: `event_of` fetches it and fails the import
when the aggregate no longer has it. Events an aggregate declares as classes (`User.PriorityUpdated`) are used as
they are (Allocation's, Workflow's, the tenants' and projects' that read models read, ClusterConfig's).
"""

from __future__ import annotations

from eventsourcing.domain import Aggregate

from domain.allocation import Allocation
from domain.cluster_config import ClusterConfig
from domain.node import Node
from domain.project import Project
from domain.tenancy.group import Group
from domain.tenancy.organization import Organization
from domain.tenancy.revocation import RevokedToken
from domain.tenancy.user import User
from domain.workflow import Workflow

EventClass = type[Aggregate.Event]


def event_of(aggregate: type[Aggregate], name: str) -> EventClass:
    """The aggregate's event class of this name; an aggregate without it stops the import, naming both."""
    found = vars(aggregate).get(name)
    if not (isinstance(found, type) and issubclass(found, aggregate.Event)):
        raise AttributeError(f"{aggregate.__qualname__} has no event {name!r}")
    return found


NodeRegistered = event_of(Node, "NodeRegistered")
NodeRejoined = event_of(Node, "NodeRejoined")
NodeReady = event_of(Node, "NodeReady")
NodeNotReady = event_of(Node, "NodeNotReady")
NodeWentOffline = event_of(Node, "NodeWentOffline")
HoldPlaced = event_of(Node, "HoldPlaced")
HoldReleased = event_of(Node, "HoldReleased")
AllocationPlaced = event_of(Node, "AllocationPlaced")
AllocationReleased = event_of(Node, "AllocationReleased")
NodeDeprovisioned = event_of(Node, "NodeDeprovisioned")
NodeCredentialIssued = event_of(Node, "NodeCredentialIssued")
NodeCredentialRevoked = event_of(Node, "NodeCredentialRevoked")
NodeReadmitted = event_of(Node, "NodeReadmitted")
NodeRemoved = event_of(Node, "NodeRemoved")
MonitoringHoldRefused = event_of(Node, "MonitoringHoldRefused")

Requested = Allocation.Requested
ProfileBound = Allocation.ProfileBound
Readied = Allocation.Readied
Placed = Allocation.Placed
Requeued = Allocation.Requeued
Ended = Allocation.Ended
RankExited = Allocation.RankExited
SchedulingBlocked = Allocation.SchedulingBlocked
AllocationPriorityUpdated = Allocation.PriorityUpdated

Submitted = Workflow.Submitted
StageReadied = Workflow.StageReadied
StageStarted = Workflow.StageStarted
StageRunning = Workflow.StageRunning
TransferProgressed = Workflow.TransferProgressed
ImageProgressed = Workflow.ImageProgressed
StageNoted = Workflow.StageNoted
VolumesBound = Workflow.VolumesBound
ServiceUnready = Workflow.ServiceUnready
ServiceReadyAgain = Workflow.ServiceReadyAgain
ServiceScaled = Workflow.ServiceScaled
StageFinished = Workflow.StageFinished
StageFailed = Workflow.StageFailed
StageRetried = Workflow.StageRetried
RetriesExhausted = Workflow.RetriesExhausted
StagePreempted = Workflow.StagePreempted
StageSkipped = Workflow.StageSkipped
Canceled = Workflow.Canceled
ConfigChanged = ClusterConfig.Changed
OrganizationCreated = Organization.Created
GroupCreated = Group.Created
UserRegistered = User.Registered
TokenRevoked = RevokedToken.Revoked
TENANT_PRIORITY_UPDATED = (Organization.PriorityUpdated, Group.PriorityUpdated, User.PriorityUpdated)

ProjectCreated = Project.Created
ProjectGranted = Project.Granted
ProjectRevoked = Project.Revoked
ProjectDeleted = Project.Deleted
ProjectRestored = Project.Restored
TenantPriorityUpdated = Organization.PriorityUpdated | Group.PriorityUpdated | User.PriorityUpdated
