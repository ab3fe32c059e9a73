"""The endpoint proxy: `/endpoints/{id-or-name}/{path}` streams HTTP to the service an endpoint is bound to.

The caller's Roving token travels in `FB-Authorization` and is never forwarded; the service's own
`Authorization` passes through untouched. Scope is enforced here (public endpoints need no token), for HTTP and
for WebSockets alike (`api.http.routes.proxy_ws`). A request body larger than `BUFFERED` streams to the service as it
arrives: the API never holds an upload whole, so the body cap (`ROVING_MAX_BODY_BYTES`) does not apply here.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import structlog
from starlette.background import BackgroundTask
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from adapters.upstream import Failed, Unreachable, Upstream
from api.http.auth import claims_for, principal_of
from api.http.errors import Unauthorized, problem
from api.http.routes import common as c
from api.http.timeouts import BodyTimeout
from api.http.wake import not_serving, woken
from domain.app import access
from domain.endpoint import Endpoint, Scope

log = structlog.get_logger("roving.proxy")
ROVING_AUTH = "fb-authorization"
ROVING_TOKEN_PREFIX = "rv1."
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "transfer-encoding", "upgrade", "host", "content-length", ROVING_AUTH})
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
# A body of known small length is read whole and sent as one response (Starlette's streaming response costs
# a task group per request); unknown lengths (server-sent events, chunked) and larger bodies stream.
BUFFERED = 64 * 1024
NOT_PASSED_BACK = frozenset(h.encode() for h in HOP_BY_HOP - {"content-length"})
TURNS = itertools.count()  # round robin over an endpoint's ready replicas


def upstream(request: HTTPConnection) -> Upstream:
    """One pooled client per app; the lifespan closes it (`app.state.proxy_client`)."""
    state = request.app.state
    client = getattr(state, "proxy_client", None)
    if client is None:
        client = state.proxy_client = Upstream()
    return client


def roving_principal(request: HTTPConnection) -> tuple[Any, bool]:
    """The caller, and whether `Authorization` must be stripped because it held a Roving token.

    The token belongs in `FB-Authorization`; a Roving token sent in `Authorization` by mistake is honoured
    but never forwarded, whether or not `FB-Authorization` came too (clients that send the token in both are
    common). Any other `Authorization` is the service's own and passes through untouched."""
    carried = holds_roving_token(request.headers.get("authorization", ""))
    value = request.headers.get(ROVING_AUTH)
    if value:
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("malformed FB-Authorization header; expected Bearer <token>")
        return _principal(request, token.strip()), carried
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip().startswith(ROVING_TOKEN_PREFIX):
        return _principal(request, token.strip()), True
    return None, carried


def holds_roving_token(value: str) -> bool:
    """Whether a header value carries something shaped like a Roving token, under any scheme or none."""
    return any(part.startswith(ROVING_TOKEN_PREFIX) for part in value.replace(",", " ").split())


def _principal(request: HTTPConnection, token: str) -> Any:
    svc = c.services(request)
    claims = claims_for(token, svc.key, datetime.now(UTC), request.url.path)
    return principal_of(claims, svc.views.tenancy)


def forwarded_headers(request: HTTPConnection, strip_authorization: bool,
                      dropped: frozenset[str] = HOP_BY_HOP) -> list[tuple[str, str]]:
    headers = [(k, v) for k, v in request.headers.items() if k not in dropped]
    if strip_authorization:
        headers = [(k, v) for k, v in headers if k != "authorization"]
    prefix = request.url.path[: len(request.url.path) - len(request.path_params.get("path", ""))]
    return headers + [("x-forwarded-proto", request.url.scheme), ("x-forwarded-prefix", prefix.rstrip("/")),
                      ("x-forwarded-host", request.headers.get("host", ""))]


def pick(endpoint: Endpoint, avoid: str = "") -> str:
    """One ready replica's host:port, taking turns over the ready ones (another than `avoid` when there is one);
    "" when none is ready. Only targets whose port the service's own processes bound on their node are taken."""
    targets = endpoint.reachable_targets()
    others = [t for t in targets if t != avoid] or targets
    return others[next(TURNS) % len(others)] if others else ""


def target_url(endpoint: Endpoint, request: HTTPConnection, scheme: str = "http", target: str = "") -> str:
    query = request.url.query
    where = target or pick(endpoint)
    return f"{scheme}://{where}/{request.path_params.get('path', '')}" + (f"?{query}" if query else "")


async def lookup(request: HTTPConnection) -> Endpoint | None:
    """A dict read when the views are idle (no thread hop on every proxied request); while the tailer is
    applying a batch, wait for it off the loop rather than stall every other request."""
    view, key = c.services(request).views.endpoints, request.path_params["key"]
    if view.lock.acquire(blocking=False):
        try:
            return view.find(key)
        finally:
            view.lock.release()
    return await c.call(view.find, key)


async def admitted(request: HTTPConnection) -> tuple[Endpoint, bool] | Response:
    """The endpoint the caller may reach and whether to strip `Authorization`, or the refusal to answer."""
    try:
        endpoint = await lookup(request)
    except Exception as error:  # a broken view must not read as "no such endpoint"
        log.exception("endpoint_lookup_failed", key=request.path_params["key"])
        return problem(503, f"endpoint lookup failed: {type(error).__name__}; try again")
    if endpoint is None:
        return problem(404, "endpoint not found")
    try:
        who, strip = roving_principal(request)
    except Unauthorized as error:
        return problem(401, error.reason)
    if who is not None:  # the access log (and the WebSocket log) name the caller
        request.scope.setdefault("state", {})["principal"] = who
    if endpoint.scope is not Scope.PUBLIC:
        if who is None:
            return problem(401, "this endpoint needs a Roving token in FB-Authorization: Bearer <token>")
        if not access.reaches(who, endpoint):
            return problem(404, "endpoint not found")
    if endpoint.serving_target() is None:  # a pool scaled to zero wakes for this request (api.http.wake)
        awake = await woken(request, endpoint, lookup)
        if isinstance(awake, Response):
            return awake
        endpoint = awake or endpoint
        if endpoint.serving_target() is None:
            return not_serving(endpoint)
    if refused := endpoint.unreachable_reason():  # ready, but at a port that is not (or not known to be) its own
        log.warning("proxy.target_refused", endpoint=endpoint.name, reason=refused)
        return problem(502, f"endpoint {endpoint.name}: not forwarded: {refused}")
    return endpoint, strip


async def proxy(request: Request) -> Response:
    found = await admitted(request)
    if isinstance(found, Response):
        return found
    endpoint, strip = found
    traffic = c.services(request).traffic
    if traffic is None:
        return await forward(request, endpoint, await body_of(request), strip)
    traffic.begin(endpoint.name)  # what the autoscaler measures: until the answer (or its head) is back
    try:
        return await forward(request, endpoint, await body_of(request), strip)
    finally:
        traffic.end(endpoint.name)


class Upload:
    """A request body sent on to the service as it arrives; remembers whether reading it began (no replay) and
    whether the caller stalled (the upstream client reports that only as a broken send)."""

    def __init__(self, request: Request, length: int | None) -> None:
        self.request, self.length, self.started = request, length, False
        self.stalled: BodyTimeout | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self.started = True
        try:
            async for chunk in self.request.stream():
                if chunk:
                    yield chunk
        except BodyTimeout as error:
            self.stalled = error
            raise

    def raise_if_stalled(self) -> None:
        """A caller too slow with its body is answered 408 (connection closed), not 502: the fault is theirs."""
        if self.stalled is not None:
            raise self.stalled


async def body_of(request: Request) -> bytes | Upload:
    """A small body of declared length, read whole (a retry can send it again); any other body streams."""
    length = request.headers.get("content-length")
    declared = int(length) if length and length.isdigit() else None
    if declared is not None and declared <= BUFFERED:
        return await request.body()
    if declared is None and "transfer-encoding" not in request.headers:
        return b""  # HTTP/1.1: no length and no chunking means no body
    return Upload(request, declared)


def body_headers(request: Request, strip: bool, body: bytes | Upload) -> list[tuple[str, str]]:
    headers = forwarded_headers(request, strip)
    if isinstance(body, Upload) and body.length is not None:  # the service sees the length, not chunks
        headers.append(("content-length", str(body.length)))
    return headers


async def forward(request: Request, endpoint: Endpoint, body: bytes | Upload, strip: bool,
                  retried: bool = False, avoid: str = "") -> Response:
    target = pick(endpoint, avoid)
    if not target:
        return problem(503, endpoint.not_serving_reason())
    try:
        answer = await upstream(request).open(request.method, target_url(endpoint, request, target=target),
                                              body_headers(request, strip, body), body)
    except Unreachable as error:
        if isinstance(body, Upload):
            body.raise_if_stalled()
        # A takeover may have moved the binding while this request was routed, or another replica may answer:
        # try once more (a streamed body only if none of it was read yet).
        fresh = await lookup(request)
        elsewhere = fresh is not None and any(t != target for t in fresh.reachable_targets())
        if fresh is not None and elsewhere and not retried and not (isinstance(body, Upload) and body.started):
            return await forward(request, fresh, body, strip, retried=True, avoid=target)
        return problem(502, f"endpoint {endpoint.name}: service at {target} is not answering ({error})")
    except Failed as error:
        if isinstance(body, Upload):
            body.raise_if_stalled()
        return problem(502, f"endpoint {endpoint.name}: {error}")
    headers = [(k, v) for k, v in answer.headers if k not in NOT_PASSED_BACK]
    try:
        whole = None if request.method == "HEAD" else await answer.small_body(BUFFERED)
    except Failed as error:
        return problem(502, f"endpoint {endpoint.name}: {error}")
    if whole is not None:
        response = Response(whole, status_code=answer.status)
    else:
        response = StreamingResponse(answer.chunks(), status_code=answer.status, background=BackgroundTask(answer.close))
    response.raw_headers = headers
    return response


routes = [
    Route("/endpoints/{key}/{path:path}", proxy, methods=METHODS),
    Route("/endpoints/{key}", proxy, methods=METHODS),
]
