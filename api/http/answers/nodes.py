"""Answers about nodes: the node list with holds and capacity, node events, holds placed and released, evictions,
agent credentials, Prometheus service discovery targets, and the outcomes of monitoring alerts."""

import enum

from api.http.answers.base import Answer, Timestamp


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
