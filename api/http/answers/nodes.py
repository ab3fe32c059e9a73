"""Answers about nodes: the node list with holds and capacity, node events, holds placed and released, evictions,
agent credentials, Prometheus service discovery targets, and the outcomes of monitoring alerts; and how a node's
answer is built from its view row (`node_of`, the one place: tests/unit/api/test_answer_rows.py names the row fields
it leaves out)."""

import enum
from collections.abc import Callable

from api.http.answers.base import Answer, Timestamp
from domain.node import Credential as IssuedCredential
from projections.node_events import NodeEventRow
from projections.nodes import HoldRow, NodeRow


class Hold(Answer):
    id: str
    effect: str
    source: str
    reason: str
    by: str
    at: Timestamp


class NodeStatus(str, enum.Enum):
    """domain.scheduler.snapshot.NodeStatus, and OFFLINE for a removed node."""

    READY = "READY"
    NOT_READY = "NOT_READY"
    OFFLINE = "OFFLINE"


class Resources(Answer):
    cpu: int
    memory: int
    devices: dict[str, int]


class Node(Answer):
    id: str
    name: str
    status: NodeStatus
    status_reason: str
    cpu: int
    memory: int
    devices: dict[str, int]
    annotations: dict[str, str]
    segment: str
    definition: str
    epoch: int
    allocations: list[str]
    accepts_new_work: bool
    removed: bool
    holds: list[Hold]
    allocated: Resources
    free: Resources


def hold_of(row: HoldRow) -> Hold:
    return Hold(id=row.id, effect=row.effect, source=row.source, reason=row.reason, by=row.by, at=row.at)


def everything(allocation: str) -> bool:
    return True


def node_of(row: NodeRow, seen: Callable[[str], bool] = everything) -> Node:
    """The node as its reader may see it: allocations `seen` refuses (another tenant's work) are left out."""
    return Node(
        id=str(row.id), name=row.name, status=NodeStatus(row.status), status_reason=row.status_reason, cpu=row.cpu,
        memory=row.memory, devices=row.devices, annotations=row.annotations, segment=row.segment,
        definition=row.definition, epoch=row.epoch, allocations=[a for a in row.allocations if seen(a)],
        accepts_new_work=row.accepts_new_work, removed=row.removed, holds=[hold_of(h) for h in row.holds],
        allocated=Resources(cpu=row.allocated_cpu, memory=row.allocated_memory, devices=row.allocated_devices),
        free=Resources(cpu=row.cpu - row.allocated_cpu, memory=row.memory - row.allocated_memory,
                       devices={d: n - row.allocated_devices.get(d, 0) for d, n in row.devices.items()}))


class NodeList(Answer):
    nodes: list[Node]
    next: str | None = None  # pass back as `?next=` for the following page; None: this was the last


class Holds(Answer):
    holds: list[Hold]


class NodeEvent(Answer):
    position: int
    at: Timestamp
    type: str
    by: str
    message: str
    allocation: str | None


def node_event_of(row: NodeEventRow, seen: Callable[[str], bool]) -> NodeEvent:
    """An allocation the reader may not see is named by no id."""
    return NodeEvent(position=row.position, at=row.at, type=row.type, by=row.by, message=row.message,
                     allocation=row.allocation if row.allocation and seen(row.allocation) else None)


class NodeEvents(Answer):
    node: str
    events: list[NodeEvent]


class HoldCreated(Answer):
    hold_id: str


class Released(Answer):
    released: list[str]


class Evicted(Answer):
    evicted: list[str]  # the allocations taken off the node


class Removed(Answer):
    removed: bool


class Credential(Answer):
    id: str
    issued_at: Timestamp
    expires: Timestamp
    revoked_at: Timestamp | None
    revoked_by: str | None
    reason: str | None


def credential_of(issued: IssuedCredential) -> Credential:
    return Credential(id=issued.id, issued_at=issued.issued_at, expires=issued.expires, revoked_at=issued.revoked_at,
                      revoked_by=issued.revoked_by, reason=issued.reason)


class Credentials(Answer):
    credentials: list[Credential]


class CredentialRevoked(Answer):
    revoked: str
    fenced: bool
    lost: list[str]


class Readmitted(Answer):
    readmitted: bool


class TargetGroup(Answer):
    targets: list[str]
    labels: dict[str, str]


class Outcomes(Answer):
    outcomes: list[str]  # per alert: `NODE: placed | already held | refused: WHY | released | ...`
