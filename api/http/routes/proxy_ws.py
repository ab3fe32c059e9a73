"""The endpoint proxy for WebSockets: `/endpoints/{id-or-name}/{path}` bridged to the service's own WebSocket.

The same access rule as HTTP (`api.http.routes.proxy.admitted`): a Roving token in `FB-Authorization`, or a public
endpoint. A refusal is the same problem answer as over HTTP (401, 404, 503), sent before the handshake completes;
a service that refuses the handshake or cannot be reached is a 502. Once both sides are open, text and binary
messages pass unchanged each way and a close on either side closes the other with its code.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import structlog
from starlette.responses import Response
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from adapters.upstream import Failed, Refused, Socket, Unreachable, connect
from api.http.errors import problem
from api.http.routes.proxy import HOP_BY_HOP, admitted, forwarded_headers, pick, target_url, upstream
from domain.endpoint import Endpoint

log = structlog.get_logger("roving.proxy")
# The handshake's own headers: the upstream client makes its own key, version, extensions and subprotocol offer.
HANDSHAKE = HOP_BY_HOP | {"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
                          "sec-websocket-protocol", "sec-websocket-accept"}
POLICY_VIOLATION = 1008  # the close code when the server cannot send an HTTP refusal before the handshake


async def refuse(websocket: WebSocket, answer: Response) -> None:
    """An HTTP answer instead of the handshake when the server can send one (uvicorn can), else a close."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(answer)
    else:
        await websocket.close(POLICY_VIOLATION)


async def open_service(websocket: WebSocket, endpoint: Endpoint, strip: bool, target: str) -> Socket:
    protocols = [p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
    return await connect(upstream(websocket), target_url(endpoint, websocket, scheme="ws", target=target),
                         forwarded_headers(websocket, strip, HANDSHAKE), protocols)


async def proxy_websocket(websocket: WebSocket) -> None:
    found = await admitted(websocket)
    if isinstance(found, Response):
        return await refuse(websocket, found)
    endpoint, strip = found
    target = pick(endpoint)
    try:
        service = await open_service(websocket, endpoint, strip, target)
    except Refused as error:
        return await refuse(websocket, problem(502, f"endpoint {endpoint.name}: {error}"))
    except Unreachable as error:
        return await refuse(websocket, problem(502, f"endpoint {endpoint.name}: service at "
                                                    f"{target} is not answering ({error})"))
    except Failed as error:
        return await refuse(websocket, problem(502, f"endpoint {endpoint.name}: {error}"))
    started, ended = time.perf_counter(), {"by": "-", "code": 1006}
    try:
        await websocket.accept(subprotocol=service.subprotocol)
        ended.update(await bridge(websocket, service))
    finally:  # one line per WebSocket, as the access log has one per request
        await service.close()  # the service's side never outlives the caller's (a no-op once closed)
        who = getattr(websocket.scope.get("state", {}).get("principal"), "username", "-")
        log.info("websocket", endpoint=endpoint.name, path=websocket.url.path, principal=who, closed_by=ended["by"],
                 close_code=ended["code"], duration_ms=round((time.perf_counter() - started) * 1000, 2))


async def bridge(websocket: WebSocket, service: Socket) -> dict[str, Any]:
    """Both directions until one side closes; the other is then closed with the same code. Says who closed, how."""
    ended: dict[str, Any] = {}  # the first side to close, and its code
    inbound = asyncio.create_task(caller_to_service(websocket, service, ended))
    outbound = asyncio.create_task(service_to_caller(websocket, service, ended))
    try:
        await asyncio.wait({inbound, outbound}, return_when=asyncio.FIRST_COMPLETED)
        return ended or {"by": "bridge", "code": 1011}  # a side that failed without a close
    finally:
        for task in (inbound, outbound):
            task.cancel()
        for task in (inbound, outbound):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await service.close()


async def caller_to_service(websocket: WebSocket, service: Socket, ended: dict[str, Any]) -> None:
    """The caller's messages on to the service, until the caller closes."""
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                code = message.get("code") or 1000
                break
            data = message.get("text") if message.get("text") is not None else message.get("bytes")
            if data is not None:
                await service.send(data)
    except WebSocketDisconnect as gone:
        code = gone.code
    ended.setdefault("by", "caller")
    ended.setdefault("code", code)
    await service.close(code)


async def service_to_caller(websocket: WebSocket, service: Socket, ended: dict[str, Any]) -> None:
    """The service's messages on to the caller, until the service closes."""
    async for kind, data in service.messages():
        if kind == "close":
            break
        await (websocket.send_text(data) if isinstance(data, str) else websocket.send_bytes(data))
    ended.setdefault("by", "service")
    ended.setdefault("code", service.close_code)
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):  # the caller may already be gone
        await websocket.close(service.close_code)


routes = [
    WebSocketRoute("/endpoints/{key}/{path:path}", proxy_websocket),
    WebSocketRoute("/endpoints/{key}", proxy_websocket),
]
