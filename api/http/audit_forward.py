"""Audit reads on an API worker that does not hold the audit: passed to the one that does.

DuckDB lets one process open the audit file (api.composition.audit_lease), so a worker without it forwards
the request, with the caller's own credentials, to the address the owner announced (its private listener);
the owner checks the token and the caller's scope as for any request. A forwarded request is never forwarded
again: if the owner moved meanwhile, the caller gets 503 and tries again.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Awaitable, Callable

import httpx
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from api.http.routes import common as c

FORWARDED = "roving-forwarded"
SENT_ON = ("authorization", "content-type", "accept", "cookie", "roving-position")
SENT_BACK = ("content-type", "content-disposition", "retry-after", "roving-position")
TIMEOUT_SECONDS = 60.0
Handler = Callable[[Request], Awaitable[Response]]


def to_audit_owner(handler: Handler) -> Handler:
    """`handler` where this process holds the audit; elsewhere, the owner's answer to the same request."""
    @functools.wraps(handler)
    async def route(request: Request) -> Response:
        services = c.services(request)
        if services.audit is not None or services.audit_owner is None or request.headers.get(FORWARDED):
            return await handler(request)
        owner = await c.call(services.audit_owner)
        if not owner:
            raise HTTPException(503, "the audit log is starting in another API worker; try again in a few seconds")
        return await forward(request, owner, services.settings)
    return route


async def forward(request: Request, owner: str, settings) -> Response:
    headers = {name: value for name, value in request.headers.items() if name in SENT_ON}
    headers[FORWARDED] = "1"
    async with httpx.AsyncClient(base_url=owner, timeout=TIMEOUT_SECONDS, verify=_trust(settings)) as client:
        try:
            answer = await client.request(request.method, request.url.path, params=tuple(request.query_params.multi_items()),
                                          content=await request.body(), headers=headers)
        except httpx.HTTPError:
            raise HTTPException(503, "the API worker holding the audit log did not answer; try again") from None
    kept = {name: value for name, value in answer.headers.items() if name in SENT_BACK}
    return Response(answer.content, status_code=answer.status_code, headers=kept)


def _trust(settings) -> ssl.SSLContext | bool:
    """The owner serves with the API's own certificate; its private address is not a name the certificate holds."""
    cert = getattr(settings, "tls_cert", None)
    if not cert:
        return True
    context = ssl.create_default_context(cafile=str(cert))
    context.check_hostname = False
    return context
