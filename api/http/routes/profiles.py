"""Application profile routes: `PUT|GET|DELETE /v4/profiles/{name}` and `GET /v4/profiles`. Cluster admins set and
delete; every user reads (domain.app.access.profile_reader). The body is domain.profiles.ProfileBody."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http.answers import Profile, Profiles
from api.http.routes import common as c
from domain.profiles import ProfileBody


async def put(request: Request) -> Response:
    body = await c.body(request, ProfileBody)
    answer = await c.call(c.services(request).roving.set_profile, request.path_params["name"], body,
                          c.principal(request), c.now())
    return c.json(answer)


async def get(request: Request) -> Response:
    return c.json(await c.call(c.services(request).roving.profile, request.path_params["name"], c.principal(request)))


async def list_profiles(request: Request) -> Response:
    rows = await c.call(c.services(request).roving.list_profiles, c.principal(request))
    return c.json(Profiles(profiles=[Profile(**row) for row in rows]))


async def delete(request: Request) -> Response:
    answer = await c.call(c.services(request).roving.delete_profile, request.path_params["name"],
                          c.principal(request), c.now())
    return c.json(answer)


routes = [
    Route("/v4/profiles", list_profiles, methods=["GET"]),
    Route("/v4/profiles/{name}", put, methods=["PUT"]),
    Route("/v4/profiles/{name}", get, methods=["GET"]),
    Route("/v4/profiles/{name}", delete, methods=["DELETE"]),
]
