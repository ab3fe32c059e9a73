"""Node routes: list, show, holds, cordon, uncordon, evict, deprovision, remove, the node's credentials (list,
revoke, readmit), Prometheus service discovery."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal
from uuid import UUID

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http import fields
from api.http.answers import (
    CredentialRevoked,
    Credentials,
    Evicted,
    HoldCreated,
    Holds,
    Node,
    NodeEvents,
    NodeList,
    Readmitted,
    Released,
    Removed,
    TargetGroup,
    answers,
)
from api.http.answers.nodes import credential_of, hold_of, node_event_of, node_of
from api.http.routes import common as c
from api.http.routes import paging
from domain.app import access
from domain.app.errors import NotFound
from domain.app.ids import node_id
from projections import workflow_pages as pages

LIVE = frozenset({"READY", "NOT_READY"})


class Reason(msgspec.Struct, forbid_unknown_fields=True):
    reason: fields.Reason = ""


class NewHold(msgspec.Struct, forbid_unknown_fields=True):
    effect: Literal["cordon", "evict", "deprovision"] = "cordon"
    reason: fields.Reason = ""


class Release(msgspec.Struct, forbid_unknown_fields=True):
    force: bool = False  # an admin releasing monitoring evidence (an alert labelled fb_release: admin)


class Deprovision(msgspec.Struct, forbid_unknown_fields=True):
    evict: bool = False
    force: bool = False


def target(request: Request, raw: str | None = None) -> UUID:
    """`{id}` is the node's id or its name (names map to ids deterministically)."""
    raw = request.path_params["id"] if raw is None else raw
    try:
        return UUID(raw)
    except ValueError:
        return node_id(raw)


def visible_work(request: Request) -> Callable[[str], bool]:
    """A node lists only the allocations its reader may see: other tenants' work is not theirs to know."""
    who, queue = c.principal(request), c.services(request).views.queue

    def seen(allocation: str) -> bool:
        found = queue.allocation(allocation)
        return access.visible(who, access.work(queue.owner(found.workflow_id)) if found is not None else None)
    return seen


async def found(request: Request, raw: str | None = None) -> Any:
    row = await c.call(c.services(request).views.nodes.get, target(request, raw))
    if row is None:
        raise NotFound("node")
    return row


def node_key(row: Any) -> list[Any]:
    return [row.name, str(row.id)]


@answers(NodeList)
async def list_nodes(request: Request) -> Response:
    """By name; `q` is part of the name; with `limit`, at most that many and `next` while more remain (without
    it, every node, as before lists paged)."""
    limit, q = paging.limit(request), paging.search(request)
    after = paging.after(request, "nodes", [str, str])
    rows = await c.call(c.services(request).views.nodes.list)
    chosen = sorted((r for r in rows if q is None or q in r.name.lower()), key=node_key)
    shown, more = pages.after_key(chosen, node_key, "nodes", limit, after)
    seen = visible_work(request)
    return c.json(NodeList(nodes=[node_of(r, seen) for r in shown], next=more))


@answers(Node)
async def show(request: Request) -> Response:
    return c.json(node_of(await found(request), visible_work(request)))


@answers(Holds)
async def holds(request: Request) -> Response:
    return c.json(Holds(holds=[hold_of(h) for h in (await found(request)).holds]))


@answers(NodeEvents)
async def node_events(request: Request) -> Response:
    """A node's event log, newest first (the last 200); work the caller may not see is named by no id."""
    node = await found(request)
    rows, seen = c.services(request).views.node_events.of(node.id), visible_work(request)
    return c.json(NodeEvents(node=node.name, events=[node_event_of(r, seen) for r in rows]))


async def command(request: Request, method: str, *args: Any, status: int = 200) -> Any:
    """Call one node command with (node, *args, principal, at) and wait for the views to show it."""
    roving = c.services(request).roving
    result = await c.call(getattr(roving, method), target(request), *args, c.principal(request), c.now())
    await c.settle(request)
    return result


@answers(HoldCreated)
async def cordon(request: Request) -> Response:
    wanted = await c.body(request, Reason)
    return c.json(HoldCreated(hold_id=await command(request, "cordon", wanted.reason)), status=201)


@answers(Released)
async def uncordon(request: Request) -> Response:
    return c.json(Released(released=await command(request, "uncordon")))


@answers(Evicted)
async def evict(request: Request) -> Response:
    wanted = await c.body(request, Reason)
    return c.json(Evicted(evicted=await command(request, "evict", wanted.reason)))


@answers(Evicted)
async def deprovision(request: Request) -> Response:
    wanted = await c.body(request, Deprovision)
    return c.json(Evicted(evicted=await command(request, "deprovision", wanted.evict, wanted.force)))


@answers(HoldCreated)
async def add_hold(request: Request) -> Response:
    wanted = await c.body(request, NewHold)
    return c.json(HoldCreated(hold_id=await command(request, "add_hold", wanted.effect, wanted.reason)), status=201)


@answers(Released)
async def release_hold(request: Request) -> Response:
    """`force` comes as `?force=true` or as a JSON body field; either one is enough."""
    force = c.query_bool(request, "force") or (await c.body(request, Release)).force
    roving, hold = c.services(request).roving, request.path_params["hold"]
    await c.call(roving.release_hold, target(request), hold, c.principal(request), c.now(), force=force)
    await c.settle(request)
    return c.json(Released(released=[hold]))


@answers(Removed)
async def remove(request: Request) -> Response:
    await command(request, "remove_node")
    return c.json(Removed(removed=True))


@answers(Credentials)
async def credentials(request: Request) -> Response:
    """The tokens issued to the node's agents, by id, with when each expires and whether it was revoked."""
    found = await c.call(c.services(request).roving.node_credentials, target(request), c.principal(request))
    return c.json(Credentials(credentials=[credential_of(x) for x in found]))


@answers(CredentialRevoked)
async def revoke_credential(request: Request) -> Response:
    """The token is refused from now on and the node is fenced: OFFLINE, its work placed elsewhere, and its agent
    registers again only by a cluster admin's hand."""
    wanted = await c.body(request, Reason)
    lost = await command(request, "revoke_node_credential", request.path_params["credential"],
                         wanted.reason or "revoked by an administrator")
    return c.json(CredentialRevoked(revoked=request.path_params["credential"], fenced=True, lost=lost))


@answers(Readmitted)
async def readmit(request: Request) -> Response:
    """Lift the fence a revoked credential put on the node: its agent registers again as any agent does."""
    return c.json(Readmitted(readmitted=await command(request, "readmit_node")))


@answers(list[TargetGroup])
async def sd_config(request: Request) -> Response:
    """Prometheus HTTP service discovery: one target group per live node that exposes a metrics port."""
    rows = await c.call(c.services(request).views.nodes.list)
    groups = [TargetGroup(targets=[f"{r.address or '127.0.0.1'}:{r.port}"],
                          labels={"node": r.name, "node_id": str(r.id), "definition": r.definition, "status": r.status})
              for r in rows if r.status in LIVE and r.port]
    return c.json(groups)


routes = [
    Route("/v4/nodes", list_nodes, methods=["GET"]),
    Route("/v4/nodes/-/sd_config", sd_config, methods=["GET"]),
    Route("/v4/nodes/{id}", show, methods=["GET"]),
    Route("/v4/nodes/{id}", remove, methods=["DELETE"]),
    Route("/v4/nodes/{id}/cordon", cordon, methods=["POST"]),
    Route("/v4/nodes/{id}/uncordon", uncordon, methods=["POST"]),
    Route("/v4/nodes/{id}/evict", evict, methods=["POST"]),
    Route("/v4/nodes/{id}/deprovision", deprovision, methods=["POST"]),
    Route("/v4/nodes/{id}/events", node_events, methods=["GET"]),
    Route("/v4/nodes/{id}/holds", holds, methods=["GET"]),
    Route("/v4/nodes/{id}/holds", add_hold, methods=["POST"]),
    Route("/v4/nodes/{id}/holds/{hold}", release_hold, methods=["DELETE"]),
    Route("/v4/nodes/{id}/credentials", credentials, methods=["GET"]),
    Route("/v4/nodes/{id}/readmit", readmit, methods=["POST"]),
    Route("/v4/nodes/{id}/credentials/{credential}", revoke_credential, methods=["DELETE"]),
]
