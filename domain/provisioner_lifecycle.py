"""What a provisioner's runner does next, pure: from its requests, what its nodes look like and the time, the steps.

Each live request moves by one rule at a time: make it (requested, or failed and its backoff over), note its node
came up, give up on a node that did not register within `bootTimeoutSeconds` (deleted and asked again later, never
waited for forever), drain a node idle for `idleSeconds`, and delete what was drained, lost (its node went OFFLINE,
was removed, or the provider says it is gone) or belongs to a deleted provisioner.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import msgspec

from domain.provisioner import Provisioner, Request, State


class NodeFacts(msgspec.Struct, frozen=True, kw_only=True):
    """A provisioned node as the views show it."""

    id: str
    status: str            # READY | NOT_READY | OFFLINE
    removed: bool = False
    allocations: int = 0
    idle_since: datetime | None = None


class Do(str, enum.Enum):
    CREATE = "create"
    UP = "up"
    TIMED_OUT = "timed_out"
    CANCEL = "cancel"
    DRAIN = "drain"
    DELETE = "delete"       # record the intent, then ask the provider, then close the request
    FINISH = "finish"       # DELETING already recorded: ask the provider (again), then close the request


@dataclass(frozen=True)
class Step:
    do: Do
    request: Request
    reason: str = ""


def next_steps(provisioner: Provisioner, nodes: Mapping[str, NodeFacts], gone: set[str], busy: set[str],
               now: datetime) -> list[Step]:
    """`nodes`: the provisioner's nodes by name; `gone`: requests whose instance the provider reports vanished;
    `busy`: requests a step is already under way for (left alone)."""
    steps = []
    for request in provisioner.live():
        if request.id in busy:
            continue
        step = _step(provisioner, request, nodes.get(request.id), request.id in gone, now)
        if step is not None:
            steps.append(step)
    return steps


def _step(p: Provisioner, r: Request, node: NodeFacts | None, gone: bool, now: datetime) -> Step | None:
    if r.state in (State.REQUESTED, State.FAILED):
        if p.deleted:
            return Step(Do.CANCEL, r, "its provisioner was deleted")
        due = r.state is State.REQUESTED or r.retry_at is None or r.retry_at <= now
        return Step(Do.CREATE, r) if due else None
    if r.state in (State.CREATING, State.CREATED):
        return _coming(p, r, node, gone, now)
    if r.state is State.UP:
        return _running(p, r, node, gone, now)
    if r.state is State.DRAINING:
        lost = _lost(node, gone)
        if lost or (node is not None and node.removed):
            return Step(Do.DELETE, r, f"lost while draining: {lost}" if lost else r.end_reason or "drained")
        return None
    if r.state is State.DELETING:
        return Step(Do.FINISH, r, r.end_reason)
    return None


def _coming(p: Provisioner, r: Request, node: NodeFacts | None, gone: bool, now: datetime) -> Step | None:
    if node is not None and node.status == "READY" and not node.removed:
        return Step(Do.UP, r)
    started = r.started_at or r.requested_at
    waited = (now - started).total_seconds()
    if r.state is State.CREATED and gone:
        return Step(Do.TIMED_OUT, r, f"the provider reports instance {r.instance or r.id} gone before its node "
                                     "registered")
    if waited >= p.spec.boot_timeout_seconds:
        return Step(Do.TIMED_OUT, r, f"node {r.id} did not register READY within {p.spec.boot_timeout_seconds:g}s "
                                     f"(attempt {r.attempts})")
    if r.state is State.CREATING:
        return Step(Do.CREATE, r)  # interrupted (a restart, a lost lease): asked again under the same id
    return None


def _running(p: Provisioner, r: Request, node: NodeFacts | None, gone: bool, now: datetime) -> Step | None:
    lost = _lost(node, gone)
    if lost:
        return Step(Do.DELETE, r, f"lost: {lost}")
    assert node is not None
    if node.removed:
        return Step(Do.DELETE, r, "its node was removed")
    if p.deleted:
        return Step(Do.DRAIN, r, "its provisioner was deleted")
    if node.allocations or node.idle_since is None:
        return None
    idle = (now - node.idle_since).total_seconds()
    if idle >= p.spec.idle_seconds:
        return Step(Do.DRAIN, r, f"idle for {idle:.0f}s (idleSeconds {p.spec.idle_seconds:g})")
    return None


def _lost(node: NodeFacts | None, gone: bool) -> str:
    if gone:
        return "the provider reports its instance gone"
    if node is None:
        return "its node is not registered"
    if node.removed:
        return ""  # deprovisioned or removed: handled as drained by the caller
    if node.status == "OFFLINE":
        return "its node went OFFLINE"
    return ""
