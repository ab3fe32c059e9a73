"""What every UI page shares: the session check, the API's own handlers called for data, errors as pages.

A page never reads a view the API route would not: it calls the route's handler with the signed-in principal
and renders the JSON that handler answers, so a tenant sees exactly what the API would show them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlencode

import msgspec
from eventsourcing.persistence import OperationalError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from api.http.errors import BadRequest
from api.http.limits import BodyTooLarge
from api.http.ui import render, session
from domain.app.errors import Busy, Conflict, Forbidden, Invalid, NotFound
from domain.tenancy.permissions import Denied, Outcome, Principal

FORM = "application/x-www-form-urlencoded"
Page = Callable[[Request, Principal], Awaitable[Response]]


class Refused(Exception):
    """An answer the UI shows as an error page: the status and the sentence a person reads."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def refusal(error: Exception) -> Refused:
    """The API's translation of a domain error (api.http.errors), as a status and a sentence."""
    match error:
        case Refused():
            return error
        case Denied() if error.decision.outcome is Outcome.NOT_VISIBLE:
            return Refused(404, "Not found.")
        case Denied():
            return Refused(403, error.decision.reason)
        case NotFound():
            return Refused(404, f"Not found: {error}.")
        case Forbidden():
            return Refused(403, str(error))
        case BadRequest():
            return Refused(400, f"{error.path}: {error.message}")
        case Invalid():
            return Refused(400, "; ".join(f"{p.path}: {p.message}" for p in error.problems) or str(error))
        case msgspec.MsgspecError():
            return Refused(400, str(error))
        case Conflict():
            return Refused(409, str(error))
        case Busy() | OperationalError():
            return Refused(503, f"Try again in a moment: {error}")
        case BodyTooLarge():
            return Refused(413, str(error))
        case HTTPException():
            return Refused(error.status_code, str(error.detail))
    raise error


def error_page(request: Request, error: Refused, who: Principal | None) -> Response:
    csrf = csrf_for(request) if who is not None else ""
    return render.page("Error" if error.status != 404 else "Not found", render.fill("error", message=error.message),
                       user=who, csrf=csrf, status_code=error.status)


def with_query(request: Request, **params: Any) -> Request:
    """The same request with another query string, for calling an API handler with the parameters it reads."""
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return Request({**request.scope, "query_string": urlencode(kept).encode()}, request.receive)


def with_json(request: Request, value: Any) -> Request:
    """The same caller POSTing `value` as JSON: a form's fields handed to an API handler that reads a JSON body."""
    body = msgspec.json.encode(value)
    headers = [(k, v) for k, v in request.scope["headers"] if k not in (b"content-type", b"content-length")]
    headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}
    sent = Request({**request.scope, "method": "POST", "headers": headers, "query_string": b""}, receive)
    sent._body = body  # read once already by the form parser: this one is the body the handler sees
    return sent


async def api(handler: Callable[[Request], Awaitable[Response]], request: Request, **params: Any) -> Any:
    """The decoded JSON answer of an API route handler, called as the signed-in user; an error answer raises."""
    target = with_query(request, **params) if params else request
    answer = await handler(target)
    data = msgspec.json.decode(bytes(answer.body)) if answer.body else None
    if answer.status_code >= 400:
        raise Refused(answer.status_code, (data or {}).get("error", "refused"))
    return data


def csrf_for(request: Request) -> str:
    token = session.session_token(request)
    return session.csrf_token(request, token) if token else ""


async def form(request: Request) -> dict[str, str]:
    """An urlencoded form (the only kind the UI's forms send); each field's first value."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    raw = (await request.body()).decode("utf-8", errors="replace")
    if not raw:
        return {}
    if kind != FORM:
        raise Refused(415, f"expected a form ({FORM}), got {kind or 'no content type'}")
    return {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}


def signed_in(page: Page, *, post: bool = False) -> Callable[[Request], Awaitable[Response]]:
    """The page for a signed-in user: a GET without a session goes to the login form, a POST needs the form's
    CSRF token; domain refusals become error pages with the API's status."""
    async def endpoint(request: Request) -> Response:
        who = session.principal_from_cookie(request)
        if who is None:
            if post:
                return error_page(request, Refused(401, "Your session has ended; sign in again."), None)
            wanted = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse("/ui/login?" + urlencode({"next": wanted}), status_code=303)
        request.scope.setdefault("state", {})["principal"] = who
        try:
            if post:
                fields = await form(request)
                if not session.csrf_ok(request, fields.get(session.CSRF_FIELD, ""), session.session_token(request)):
                    raise Refused(403, "This form's CSRF token is missing or stale; reload the page and try again.")
                request.state.form = fields
            return await page(request, who)
        except Exception as error:  # noqa: BLE001 - refusal() re-raises what is not a refusal
            return error_page(request, refusal(error), who)
    return endpoint


def safe_next(value: str | None) -> str:
    """Only a UI path of our own: never another host (`//evil`, `https://...`)."""
    if value and value.startswith("/ui/") and not value.startswith("//") and "\\" not in value:
        return value
    return "/ui/"
