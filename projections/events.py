"""The event classes read models handle, each one declared on its aggregate (`Node.HoldPlaced`), named here once.

Every aggregate declares the events read models read as classes in its own body (eventsourcing's `@event(Class)`
form), so a handler types its event, and an event an aggregate no longer has stops the import (and mypy).
"""

from __future__ import annotations

from domain.allocation import Allocation
from domain.cluster_config import ClusterConfig
from domain.node import Node
from domain.project import Project
from domain.tenancy.group import Group
from domain.tenancy.organization import Organization
from domain.tenancy.revocation import RevokedToken
from domain.tenancy.user import User
from domain.workflow import Workflow

NodeRegistered = Node.NodeRegistered
NodeRejoined = Node.NodeRejoined
NodeReady = Node.NodeReady
NodeNotReady = Node.NodeNotReady
NodeWentOffline = Node.NodeWentOffline
HoldPlaced = Node.HoldPlaced
HoldReleased = Node.HoldReleased
AllocationPlaced = Node.AllocationPlaced
AllocationReleased = Node.AllocationReleased
NodeDeprovisioned = Node.NodeDeprovisioned
NodeCredentialIssued = Node.NodeCredentialIssued
NodeCredentialRevoked = Node.NodeCredentialRevoked
NodeReadmitted = Node.NodeReadmitted
NodeRemoved = Node.NodeRemoved
MonitoringHoldRefused = Node.MonitoringHoldRefused
NodeActivity = NodeRegistered | NodeRejoined | NodeReady | AllocationPlaced | AllocationReleased  # a node was in use

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
