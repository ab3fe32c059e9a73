"""Secret routes: create (201 `{"id"}`), list names and scopes (never values), delete, rotate the key. Permissions are the
application's (domain.app.secrets); a value goes in once and never comes back in any answer."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http import answers as shapes
from api.http.answers import answers
from api.http.routes import common as c
from domain.agent_protocol import Assignments, Start
from domain.app.errors import NotFound
from domain.app.secrets import SecretHandlers
from domain.secrets import referenced


class CreateSecret(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    value: str
    scope: str = "user"
    group: str = ""


def secrets(request: Request) -> SecretHandlers:
    found = c.services(request).secrets
    if found is None:
        raise NotFound("secrets (this control plane keeps none)")
    return found


@answers(shapes.SecretCreated)
async def create(request: Request) -> Response:
    wanted = await c.body(request, CreateSecret)
    created = await c.call(secrets(request).create_secret, wanted.name, wanted.value, wanted.scope,
                           c.principal(request), c.now(), group=wanted.group)
    return c.json(shapes.SecretCreated(id=str(created)), status=201)


@answers(shapes.Secrets)
async def list_secrets(request: Request) -> Response:
    rows = await c.call(secrets(request).list_secrets, c.principal(request))
    return c.json(shapes.Secrets(secrets=[shapes.Secret(**row) for row in rows]))


@answers(shapes.Deleted)
async def delete(request: Request) -> Response:
    secret = c.uuid_param(request, "id", "secret")
    await c.call(secrets(request).delete_secret, secret, c.principal(request), c.now())
    return c.json(shapes.Deleted(id=str(secret), deleted=True))


async def rotate_key(request: Request) -> Response:
    """Cluster admins: a new current key, and every secret resealed with it."""
    answer = await c.call(secrets(request).rotate_key, c.principal(request), c.now())
    return c.json(answer)


async def resolved(svc: Any, answer: Assignments[Start]) -> Assignments[Start]:
    """The agent assignments answer with secret values in place of `secret://` references (for api.http.routes.agent;
    services built without a secret store, and answers without a reference, are handed on as they are). A reference
    the owner cannot read makes its job fail saying why (domain.app.secret_reading.resolve_spec)."""
    store = svc.secrets
    if store is None or not any(referenced(spec.env) for spec in answer.start):
        return answer
    return await c.call(store.resolve_assignments, answer)


routes = [
    Route("/v4/secrets/-/rotate-key", rotate_key, methods=["POST"]),
    Route("/v4/secrets", create, methods=["POST"]),
    Route("/v4/secrets", list_secrets, methods=["GET"]),
    Route("/v4/secrets/{id}", delete, methods=["DELETE"]),
]
