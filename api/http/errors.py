"""Errors to answers: domain refusals and bad bodies become JSON 4xx; never a traceback for bad input."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import msgspec
from eventsourcing.persistence import OperationalError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from adapters.jetstream.refusals import ServerRefused
from domain.app.errors import Busy, Conflict, Forbidden, Invalid, LoginRefused, NotFound, StaleEpoch
from domain.tenancy.permissions import Denied, Outcome

RETRY_AFTER_SECONDS = 2  # the embedded server is restarted within about a second
AT_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")


class Unauthorized(Exception):
    """No usable bearer token; `reason` says why (missing, malformed, bad signature, expired, wrong kind)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BadRequest(Exception):
    """A request the route itself cannot read (query parameter, content type); `path` names the part."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path, self.message = path, message


def problem(status: int, message: str, path: str = "", **extra: object) -> Response:
    """A JSON error answer: `{"error", "errors": [{"path", "message"}]}`."""
    body = {"error": message, "errors": [{"path": path, "message": message}], **extra}
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return Response(msgspec.json.encode(body), status_code=status, media_type="application/json", headers=headers)


def decode_error_path(error: msgspec.MsgspecError) -> tuple[str, str]:
    """msgspec's `... - at `$.a.b`` as ("a.b", "...")."""
    text = str(error)
    match = AT_PATH.search(text)
    if not match:
        return "body", text
    path = match.group("path").lstrip(".") or "body"
    return path, text[: match.start()]


async def on_invalid(request: Request, error: Invalid) -> Response:
    problems = [{"path": p.path, "message": p.message} for p in error.problems]
    body = {"error": str(error), "errors": problems}
    return Response(msgspec.json.encode(body), status_code=400, media_type="application/json")


async def on_decode(request: Request, error: msgspec.MsgspecError) -> Response:
    path, message = decode_error_path(error)
    return problem(400, message, path)


async def on_bad_request(request: Request, error: BadRequest) -> Response:
    return problem(400, error.message, error.path)


async def on_not_found(request: Request, error: NotFound) -> Response:
    return problem(404, str(error))


async def on_forbidden(request: Request, error: Forbidden) -> Response:
    return problem(403, str(error))


async def on_conflict(request: Request, error: Conflict) -> Response:
    return problem(409, str(error), code="conflict")


async def on_stale_epoch(request: Request, error: StaleEpoch) -> Response:
    """The agent protocol's fence: this placement is over, stop the copy that runs it (never 'try again')."""
    return problem(409, str(error), code="stale_epoch")


async def on_busy(request: Request, error: Busy) -> Response:
    """A command that kept meeting concurrent writes within its retries: nothing was saved, try again soon."""
    answer = problem(503, str(error), code="busy")
    answer.headers["Retry-After"] = "1"
    return answer


async def on_denied(request: Request, error: Denied) -> Response:
    if error.decision.outcome is Outcome.NOT_VISIBLE:
        return problem(404, "not found")
    return problem(403, error.decision.reason)


async def on_unauthorized(request: Request, error: Unauthorized | LoginRefused) -> Response:
    reason = error.reason if isinstance(error, Unauthorized) else str(error)
    return problem(401, reason)


async def on_log_unavailable(request: Request, error: OperationalError) -> Response:
    """The log could not be reached, did not acknowledge in time, or refused the write for a reason of its own (a
    full disk refuses an atomic batch as "incomplete"): try again soon (a write whose acknowledgement was lost may
    have landed; reading back tells). What the log probe knows of the cause is said too."""
    what = "refused the write" if isinstance(error, ServerRefused) else "is unavailable"
    cause = log_failure(request)
    message = f"the log {what}: {error}" + (f" ({cause})" if cause else "")
    answer = problem(503, message, "log", code="log_unavailable")
    answer.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return answer


def log_failure(request: Request) -> str:
    """Why the log takes no writes now, as this process's probe last saw (adapters/log_probe.py), or ""."""
    probe = getattr(getattr(request.app.state, "services", None), "log_probe", None)
    return probe.failure() if probe is not None else ""


async def on_http(request: Request, error: HTTPException) -> Response:
    return problem(error.status_code, str(error.detail))


# Each handler takes its own exception type (Starlette calls it only with that type).
Handler = Callable[..., Awaitable[Response]]
HANDLERS: dict[type[Exception], Handler] = {
    Invalid: on_invalid, msgspec.ValidationError: on_decode, msgspec.DecodeError: on_decode,
    BadRequest: on_bad_request, NotFound: on_not_found, Forbidden: on_forbidden, Conflict: on_conflict,
    StaleEpoch: on_stale_epoch, Busy: on_busy, Denied: on_denied, Unauthorized: on_unauthorized, LoginRefused: on_unauthorized,
    HTTPException: on_http, OperationalError: on_log_unavailable,
}
