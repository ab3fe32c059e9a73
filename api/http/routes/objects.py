"""Object store routes: put (streamed in), get and head (streamed out), delete, and a paged list.

    PUT    /v4/objects/user/NAME[?force=true]          body: the bytes; 201 created or replaced, 200 unchanged
    PUT    /v4/objects/group/GROUP/NAME[?force=true]
    GET    /v4/objects/user/NAME   (HEAD: the headers only: size, sha256)
    DELETE /v4/objects/user/NAME
    GET    /v4/objects?location=object://group/ml/runs/&page_size=100&page_token=...

Who may do what is domain.objects.access; the bytes go through adapters.object_store without being held whole. A
put's body is not capped by ROVING_MAX_BODY_BYTES (api.http.limits lets it through) but by
ROVING_OBJECT_MAX_BYTES: a declared length over it is refused before a byte is read, a streamed one as it passes.

Each user's and each group's objects are held to the cluster's `objects.*` quota (bytes and count), and all of them
together to `objects.storeBytes`, the object store's room apart from the log's: a put past any is a 507 naming the
quota with its figures (used, limit). Only the holder's own figures are said, never another's or the store's total
beyond its limit; the log, and so `/readyz`, is untouched by a full object store.
A holder has at most a few puts running at once in each API process (adapters.object_ledger); one more is a 429
with Retry-After.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from adapters.object_ledger import Busy
from adapters.object_meta import Quota
from adapters.object_store import ObjectMeta, QuotaExceeded, TooLarge
from api.http import answers as shapes
from api.http.errors import BadRequest, problem
from api.http.routes import common as c
from api.http.routes import paging
from domain.app.errors import NotFound
from domain.objects.access import Holder, Verdict, decide_put, holder_of, may_replace
from domain.objects.names import Location, ObjectNameError, Scope, check_name, parse_location
from projections import workflow_pages as pages

DEFAULT_PAGE, MAX_PAGE = 100, 1000


def location_of(request: Request) -> Location:
    """The location the path names (`/v4/objects/user/NAME`, `/v4/objects/group/GROUP/NAME`); 400 naming `name`."""
    params = request.path_params
    try:
        name = check_name(params["name"])
        if "group" in params:
            return parse_location(f"object://group/{params['group']}/{name}")
        return Location(Scope.USER, name)
    except ObjectNameError as error:
        raise BadRequest("name", error.reason) from None


def holder(request: Request, location: Location) -> Holder:
    tenancy = c.services(request).views.tenancy
    return holder_of(location, c.principal(request), lambda group: tenancy.group(group) is not None)


def store_of(request: Request) -> Any:
    store = c.services(request).objects
    if store is None:
        raise NotFound("object store (this control plane runs without one)")
    return store


async def put_object(request: Request) -> Response:
    location, force, principal = location_of(request), c.query_bool(request, "force"), c.principal(request)
    if location.is_folder:
        raise BadRequest("name", f"{location.uri} is a folder; a put names the object (the CLI adds the file's name)")
    owner, store = holder(request, location), store_of(request)
    limit = store.max_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return too_large(limit)

    def decide(existing: ObjectMeta | None, digest: str) -> Verdict:
        verdict = decide_put(location, existing.digest if existing else None, digest, force)
        if verdict is Verdict.REPLACED and existing is not None:
            may_replace(principal, owner, existing.uploaded_by, "replacing")
        return verdict

    quota = await quota_of(request, owner)
    if declared.isdigit() and int(declared) > quota.bytes:
        return quota_full(owner, QuotaExceeded("bytes", int(declared), quota.bytes))
    try:
        verdict, meta = await store.put(owner, location.name, request.stream(), decide,
                                        (str(principal.user_id or ""), principal.username), quota)
    except TooLarge as error:
        return too_large(error.limit)
    except QuotaExceeded as error:
        return quota_full(owner, error)
    except Busy as error:
        return busy(owner, error)
    status = 200 if verdict is Verdict.UNCHANGED else 201
    return c.json(shapes.ObjectPut(object=location.uri, result=verdict.value, **meta.shown()), status=status)


async def quota_of(request: Request, owner: Holder) -> Quota:
    config = await c.call(c.services(request).roving.scheduler_config)
    if owner.scope is Scope.GROUP:
        return Quota(bytes=config.object_group_bytes, objects=config.object_group_count,
                     store_bytes=config.object_store_bytes)
    return Quota(bytes=config.object_user_bytes, objects=config.object_user_count, store_bytes=config.object_store_bytes)


def quota_full(owner: Holder, error: QuotaExceeded) -> Response:
    """507 naming the full quota and its figures; of the whole store only its limit (its use is everyone's)."""
    if error.what == "store bytes":
        room = f"it holds at most {error.limit:,} bytes" if error.limit else "the server's storage is used up"
        return problem(507, f"the object store is full: {room} (objects.storeBytes)", "body",
                       quota="objects.storeBytes", limit=error.limit)
    unit = "Objects" if error.what == "objects" else "Bytes"
    key = f"objects.{owner.scope.value}{unit}"
    message = (f"{owner.scope.value} {owner.label}'s objects would pass their quota: {error.used:,} of "
               f"{error.limit:,} {unit.lower()} ({key})")
    return problem(507, message, "body", quota=key, used=error.used, limit=error.limit)


def busy(owner: Holder, error: Busy) -> Response:
    """429: the holder's puts at once are bounded (each holds a share of its quota while it streams)."""
    answer = problem(429, f"{owner.scope.value} {owner.label} has {error.limit} puts running; at most {error.limit} "
                          "run at once: retry when one ends", "body", limit=error.limit)
    answer.headers["Retry-After"] = "1"
    return answer


def too_large(limit: int) -> Response:
    return problem(413, f"an object is at most {limit:,} bytes (ROVING_OBJECT_MAX_BYTES)", "body", limit=limit)


async def found(request: Request) -> tuple[Location, Holder, ObjectMeta]:
    location = location_of(request)
    owner = holder(request, location)
    meta = None if location.is_folder else await store_of(request).meta(owner, location.name)
    if meta is None:
        raise NotFound(f"object {location.uri}")
    return location, owner, meta


async def get_object(request: Request) -> Response:
    """The bytes (HEAD: only the headers). Content-Length is the object's size, so a read cut short (the object
    replaced meanwhile) is an incomplete answer the client notices, never a shorter file taken for whole."""
    _, owner, meta = await found(request)
    headers = {"Content-Length": str(meta.size), "ETag": f'"{meta.sha256}"', "Roving-Object-Sha256": meta.sha256,
               "Roving-Object-Modified": meta.modified}
    if request.method == "HEAD":
        return Response(status_code=200, headers=headers, media_type="application/octet-stream")
    return StreamingResponse(store_of(request).read(owner, meta), headers=headers,
                             media_type="application/octet-stream")


async def delete_object(request: Request) -> Response:
    location = location_of(request)
    principal = c.principal(request)
    owner = holder(request, location)
    gone = await store_of(request).delete(owner, location.name,
                                          lambda meta: may_replace(principal, owner, meta.uploaded_by, "deleting"))
    if gone is None:
        raise NotFound(f"object {location.uri}")
    return c.json(shapes.ObjectDeleted(object=location.uri, deleted=True))


async def list_objects(request: Request) -> Response:
    """A page of the objects under `location` (default object://user/: all of yours), by name; `q` is part of the
    name. `limit` and `next` (as every list pages) or `page_size` and `page_token`: `next` and `next_page_token`
    are null on the last page."""
    c.only_params(request, ("location", "page_size", "page_token", "q", *paging.PARAMS))
    try:
        location = parse_location(request.query_params.get("location") or "object://user/")
    except ObjectNameError as error:
        raise BadRequest("location", error.reason) from None
    size = c.query_int(request, "page_size") or paging.limit(request, MAX_PAGE) or DEFAULT_PAGE
    if not 1 <= size <= MAX_PAGE:
        raise BadRequest("page_size", f"expected 1 to {MAX_PAGE}, got {size}")
    resumed, q = paging.after(request, "objects", [str]), paging.search(request)
    after = resumed[0] if resumed is not None else page_after(request.query_params.get("page_token", ""))
    rows = [m for m in await store_of(request).list(holder(request, location), location.name)
            if m.name > after and (q is None or q in m.name.lower())]
    page = rows[:size]
    last = page[-1].name if len(rows) > size else None
    scope = Location(location.scope, "", location.group)
    return c.json(shapes.ObjectList(objects=[shapes.StoredObject(object=f"{scope.uri}{m.name}", **m.shown()) for m in page],
                                    next_page_token=page_token(last) if last is not None else None,
                                    next=pages.encode("objects", [last]) if last is not None else None))


def page_token(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")


def page_after(token: str) -> str:
    if not token:
        return ""
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise BadRequest("page_token", "not a token this list gave") from None


routes = [
    Route("/v4/objects", list_objects, methods=["GET"]),
    Route("/v4/objects/user/{name:path}", put_object, methods=["PUT"]),
    Route("/v4/objects/user/{name:path}", get_object, methods=["GET"]),
    Route("/v4/objects/user/{name:path}", delete_object, methods=["DELETE"]),
    Route("/v4/objects/group/{group}/{name:path}", put_object, methods=["PUT"]),
    Route("/v4/objects/group/{group}/{name:path}", get_object, methods=["GET"]),
    Route("/v4/objects/group/{group}/{name:path}", delete_object, methods=["DELETE"]),
]
