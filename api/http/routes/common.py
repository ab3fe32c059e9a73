"""What every route shares: services and principal from the request, msgspec bodies, one threadpool call."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import UUID

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from api.composition.services import Services
from api.http.errors import BadRequest
from domain.app.errors import NotFound
from domain.app.unit_of_work import saved_position
from domain.fuzzfile.decode import wide_numbers
from domain.tenancy.permissions import Principal

T = TypeVar("T")
SETTLE_SECONDS = 5.0
ENCODER = msgspec.json.Encoder()


def services(request: HTTPConnection) -> Services:
    return request.app.state.services


def principal(request: Request) -> Principal:
    return request.state.principal


def now() -> datetime:
    return datetime.now(UTC)


async def body(request: Request, type: type[T]) -> T:
    """The JSON body as `type`; an empty body means `{}`; bad fields raise msgspec errors (400 naming the field)."""
    raw = await request.body()
    value = msgspec.json.decode(raw or b"{}", type=type)
    out_of_range(msgspec.to_builtins(value))
    return value


def out_of_range(value: Any, path: str = "") -> None:
    """Raise BadRequest naming the first whole number a 64-bit store cannot keep (else it fails when saved: 500)."""
    for problem in wide_numbers(value, path)[:1]:
        raise BadRequest(problem.path or "body", problem.message)


def json(value: Any, status: int = 200) -> Response:
    return Response(ENCODER.encode(value), status_code=status, media_type="application/json")


def labelled(value: msgspec.Struct, label: dict[str, Any], status: int = 200) -> Response:
    """An answer with its cluster's label after its own fields (a federated control plane's: which cluster, can it
    be asked, how stale; api.http.fanout), or as it is on a single cluster, which labels nothing."""
    return json({**msgspec.to_builtins(value), **label} if label else value, status)


async def call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """One application or view call off the event loop (they block on storage or locks). The log position of what
    it saved is remembered for this request's `settle`."""
    result, position = await run_in_threadpool(_saving, function, args, kwargs)
    if position:
        _SAVED.set(max(position, _SAVED.get()))
    return result


def _saving(function: Callable[..., T], args: tuple, kwargs: dict) -> tuple[T, int]:
    saved_position()  # what an earlier call on this worker thread saved is not this call's
    result = function(*args, **kwargs)
    return result, saved_position()


_SAVED: contextvars.ContextVar[int] = contextvars.ContextVar("roving_saved_position", default=0)


async def settle(request: Request) -> None:
    """Read-your-writes: wait until the views have applied what this request saved (without a position of its own,
    the application's last saved position): not every write the process made meanwhile, which under load would
    keep the answer waiting for the views to catch up with other people's work."""
    svc = services(request)
    position = _SAVED.get() or svc.roving.last_position
    if not position:
        return
    waiters = getattr(svc, "positions", None)
    if waiters is not None:  # woken on the loop when the tailer's thread applied it: no worker thread held waiting
        await waiters.wait(position, timeout=SETTLE_SECONDS)
        return
    # A synchronous follower (tests) applies on demand; otherwise Views.wait_for blocks on what the tailer feeds
    tailer = svc.tailer if svc.tailer is not None and hasattr(svc.tailer, "wait_for") else svc.views
    if inspect.iscoroutinefunction(tailer.wait_for):
        await tailer.wait_for(position, timeout=SETTLE_SECONDS)
    else:
        await run_in_threadpool(tailer.wait_for, position, timeout=SETTLE_SECONDS)


async def settle_until(check: Callable[[], bool], seconds: float = SETTLE_SECONDS) -> bool:
    """Poll a view until `check()` holds (used when the application exposes no position)."""
    deadline = time.monotonic() + seconds
    while not await run_in_threadpool(check):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def uuid_param(request: Request, name: str, what: str) -> UUID:
    """A path parameter that must be a UUID; anything else is simply not found."""
    try:
        return UUID(request.path_params[name])
    except ValueError:
        raise NotFound(what) from None


def query_int(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(name, f"expected a whole number, got {raw!r}") from None
    out_of_range(value, name)
    return value


def only_params(request: Request, known: Iterable[str]) -> None:
    """A query parameter the route does not take is a 400 naming it (a typo must not widen an answer silently)."""
    allowed = set(known)
    for name in request.query_params:
        if name not in allowed:
            raise BadRequest(name, f"unknown query parameter; this route takes {', '.join(sorted(allowed))}")


def query_choice(request: Request, name: str, choices: Iterable[str], fold=str.lower) -> str | None:
    """An optional query parameter that must be one of `choices` (compared after `fold`); 400 naming it else."""
    raw = request.query_params.get(name) or None
    if raw is not None and fold(raw) not in {fold(c) for c in choices}:
        raise BadRequest(name, f"expected one of {', '.join(choices)}, got {raw!r}")
    return raw


def query_bool(request: Request, name: str) -> bool:
    raw = (request.query_params.get(name) or "false").lower()
    if raw not in ("true", "false", "1", "0", "yes", "no"):
        raise BadRequest(name, f"expected true or false, got {raw!r}")
    return raw in ("true", "1", "yes")


def settings(request: Request) -> Any:
    return request.app.state.settings
