"""The node agent protocol as types: what an agent sends (register, heartbeat, reports) and what it is answered
(its registration, its assignments and stop orders, a batch's results).

One set of types for the three parties: the route decodes requests and encodes answers with them, the assignments
projection builds its answer with them, and the agent encodes what it sends and decodes what it is answered with
them (and its outbox journal holds `Report`s). A field renamed on one side is then a type error or a failed decode,
never a key that silently reads None. Plain msgspec Structs, no I/O: they live in the domain so that the
projections (which may not import `api`) and the agent (which may not import the HTTP app) share them.

The JSON field names and values are the protocol's: agents and control planes of neighbouring versions talk to each
other, and an agent reads the journal an older one wrote (tests/unit/agent/test_protocol_compat.py holds literal
bodies of the older shapes). Fields that were sent only when set (`rank_stop`, a batch result's `code`) are omitted
when at their default, so an answer's bytes (and its ETag) stay as they were. The run spec itself is
domain/agent_start.py's `Start`.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeVar
from uuid import UUID

import msgspec

from domain.agent_start import Start as Start  # the run spec, re-exported: every protocol type is here

Port = Annotated[int, msgspec.Meta(ge=1, le=65535)]
MAX_LISTENING = 1024  # ports one readiness may name: each is stored in the endpoint's events
# A registration is stored in the node's events, each event one JetStream message (1 MiB): bounds as the API's
# (api/http/fields.py), generous for a node (its own annotations, set by its admin, and the agent's own).
MAX_NODE_ANNOTATIONS = 256
MAX_ANNOTATION_KEY = 253
MAX_ANNOTATION_VALUE = 1_024
MAX_DEFINITION = 253  # a node definition's name
MAX_ADDRESS = 253  # a DNS name's longest spelling (domain/agent_address.py checks what it may be)
MAX_REPORT_REASON = 4_096  # characters of a report's reason kept; the rest is cut (see `bounded_reason`)
NodeAnnotations = Annotated[
    dict[Annotated[str, msgspec.Meta(max_length=MAX_ANNOTATION_KEY)],
         Annotated[str, msgspec.Meta(max_length=MAX_ANNOTATION_VALUE)]],
    msgspec.Meta(max_length=MAX_NODE_ANNOTATIONS)]
Event = Literal["started", "ready", "unready", "exited", "ran_on_host", "progress", "image", "note"]


class Register(msgspec.Struct):
    """`POST /v4/agent/register`: the node as its agent sees it."""

    name: str
    cpu: int
    memory: int
    devices: dict[str, int] = {}
    annotations: NodeAnnotations = {}
    definition: Annotated[str, msgspec.Meta(max_length=MAX_DEFINITION)] = ""
    address: Annotated[str, msgspec.Meta(max_length=MAX_ADDRESS)] = ""
    metrics_port: int | None = None
    segment: str = ""  # the storage segment the node is in (`roving agent --segment`)


class Registered(msgspec.Struct):
    """The answer to a registration: the node's id and epoch, and the node's own (revocable) credential."""

    node_id: UUID
    epoch: int
    token: str = ""
    credential_id: str = ""
    bus_key: str = ""  # base64 of the node's key at this epoch for the agent bus (older control planes: none)


class Heartbeat(msgspec.Struct):
    """`POST /v4/agent/heartbeat`: the node's lease, at its epoch, with the allocations running there."""

    node_id: UUID
    epoch: int
    running: list[str] = []


class Beat(msgspec.Struct):
    """The answer to a heartbeat: the lease is kept; the node's agent bus key at its epoch (a resumed agent, which
    did not register, learns it here; older control planes answer `{"ok": true}` only)."""

    ok: bool = True
    bus_key: str = ""


class Pushed(msgspec.Struct):
    """What the control plane pushes to one node over the agent bus, sealed with that node's key: the assignments
    answer the long poll would give (`assignments`, an `Assignments[Start]`), its ETag, and `seq` (the publisher's
    clock in ns, increasing): an agent takes only a newer one than the last, so an old message replayed is refused."""

    node_id: UUID
    epoch: int
    seq: int
    etag: str
    assignments: msgspec.Raw


class Report(msgspec.Struct):
    """`POST /v4/agent/reports` (and one item of a batch, and one entry of the agent's outbox journal)."""

    node_id: UUID
    allocation_id: UUID
    epoch: int
    event: Event
    exit_code: int | None = None
    reason: str = ""  # cut to MAX_REPORT_REASON by both sides, not refused: a refused report is dropped (its exit lost)
    ports: list[int | dict[str, Any]] = []  # a service's declared ports, echoed back in its ready report
    # a service's readiness changes after the first carry their count (`ready#2`): the outbox keys them apart
    change: int = 0
    # `ready`: the TCP ports the service's own processes listen on, as the agent saw them (older agents: None)
    listening: Annotated[list[Port], msgspec.Meta(max_length=MAX_LISTENING)] | None = None

    def key(self) -> tuple[str, int, str]:
        """(allocation, epoch, event): reports are idempotent by it; `ready#2` is a second readiness."""
        event = f"{self.event}#{self.change}" if self.change else self.event
        return str(self.allocation_id), self.epoch, event


class Reports(msgspec.Struct):
    """Many reports of one node in one request (`POST /v4/agent/reports:batch`): one commit for all of them."""

    node_id: UUID
    reports: list[Report]


class BatchResult(msgspec.Struct, omit_defaults=True):
    """One report's answer inside a batch, as the single route would answer it (200, 409 `stale_epoch`, ...)."""

    status: int
    code: str = ""
    error: str = ""


class BatchResults(msgspec.Struct):
    results: list[BatchResult]


class Stop(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An order to kill what runs of an allocation here; `rank_stop`: a multinode rank failed and the others stop,
    `ranks` of them in all (a rank told so before it started still reports its end)."""

    allocation_id: str
    epoch: int
    workflow_id: str
    stage: str
    state: str
    rank_stop: bool = False
    ranks: int = 0
    reason: str


S = TypeVar("S")  # a run spec: `Start`; `msgspec.Raw` for an agent reading each on its own


class Assignments(msgspec.Struct, Generic[S], omit_defaults=True):
    """`GET /v4/agent/assignments`: run specs to start, orders to stop, and the workflows whose volumes live on.

    The control plane builds `Assignments[Start]` and the agent decodes it; an agent reads `Assignments[msgspec.Raw]`
    when one run spec does not decode, so that one fails alone (api/agent/starts.py). `volumes` is None only from
    a control plane that does not say (the agent then removes no volume).

    `position`: the log position the views it was built from had applied (every API worker tails the same log, so
    positions compare across workers and pushes). An agent applies no answer older than the newest it applied: a
    push delayed past a newer poll answer would start work that answer had stopped. 0 (omitted, as are
    `volumes` at None: an answer's bytes and ETag stay as they were): an older control plane, taken as before."""

    start: list[S]
    stop: list[Stop]
    volumes: list[str] | None = None
    position: int = 0


class Config(msgspec.Struct):
    """`GET /v4/agent/config`: where the node's jobs' output goes (the agent role's NATS URL, None without one, and
    the cluster naming the stream). Both are always sent; an answer without them reads as "no log stream"."""

    nats_url: str | None = None
    cluster: str = ""
    log_max_bytes_per_stage: int = 0  # the cluster's logs.maxBytesPerStage (0: no cap; older APIs never send it)



def bounded_reason(report: Report) -> Report:
    """`report` with its reason cut to MAX_REPORT_REASON characters. Cut rather than refused: an agent drops a
    report the control plane refuses, and an older agent's long reason must not cost a stage its exit."""
    if len(report.reason) <= MAX_REPORT_REASON:
        return report
    cut = f" ... ({len(report.reason) - MAX_REPORT_REASON} characters cut)"
    return msgspec.structs.replace(report, reason=report.reason[:MAX_REPORT_REASON - len(cut)] + cut)
