"""Catalog routes: sources (`GET|POST /v4/catalog/sources`, `DELETE /v4/catalog/sources/{id}`), the templates a caller
sees (`GET /v4/catalog?q=&category=`, with each source's status), one template (`GET /v4/catalog/templates/{name}`),
and `POST /v4/catalog/templates/{name}:render` (the Fuzzfile) and `:start` (a workflow). A template in several
sources is named by `?source=` (or the body's `source`). Permissions are the application's (domain.app.catalog).

A render runs within a budget (domain.catalog.budget) whose deadline, RENDER_SECONDS, is this layer's clock: past
any limit the answer is a 400 naming the template and the limit, well within the 10 s a caller may wait.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http import answers as shapes
from api.http import fields
from api.http.errors import BadRequest, problem
from api.http.routes import common as c
from api.http.routes.workflows import MAX_NAME, submission_id
from domain.app.catalog import CatalogHandlers
from domain.app.errors import NotFound
from domain.catalog import Budget, detail, summary
from domain.catalog.inputs import MAX_VALUES_BYTES

RENDER_SECONDS = 3.0  # a render's wall-clock deadline (real templates take milliseconds)


def render_budget(seconds: float = RENDER_SECONDS) -> Budget:
    """A budget whose deadline starts now, read from this process's monotonic clock."""
    until = time.monotonic() + seconds
    return Budget(expired=lambda: time.monotonic() > until, seconds=seconds)


class AddSource(msgspec.Struct, forbid_unknown_fields=True):
    name: fields.Text
    location: fields.Text
    kind: fields.Text = ""  # folder for an absolute path, git otherwise
    ref: fields.Text = ""
    scope: fields.Text = "group"
    owner: fields.Text = ""


MAX_INPUTS = 1_024  # names a person's values may give: a template takes its inputs, far fewer
MAX_INPUT_NAME = 253


class Values(msgspec.Struct, forbid_unknown_fields=True):
    # as many names as a values file could hold, each a name; the whole as a values file (MAX_VALUES_BYTES)
    values: Annotated[dict[Annotated[str, msgspec.Meta(max_length=MAX_INPUT_NAME)], Any],
                      msgspec.Meta(max_length=MAX_INPUTS)] = {}
    source: fields.Text = ""
    name: str = msgspec.field(default="")  # the workflow's name (start only)


def bounded(wanted: Values) -> Values:
    """The values, refused past a values file's size (a template renders them, the start stores them)."""
    size = len(msgspec.json.encode(wanted.values))
    if size > MAX_VALUES_BYTES:
        raise BadRequest("values", f"the values take at most {MAX_VALUES_BYTES} bytes (as JSON), not {size}")
    return wanted


def catalog(request: Request) -> CatalogHandlers:
    found = c.services(request).catalog
    if found is None:
        raise NotFound("catalog (this control plane serves none)")
    return found


async def add_source(request: Request) -> Response:
    wanted = await c.body(request, AddSource)
    kind = wanted.kind or ("folder" if wanted.location.startswith("/") else "git")
    answer = await c.call(catalog(request).add_source, wanted.name, kind, wanted.location, wanted.ref, wanted.scope,
                          wanted.owner, c.principal(request), c.now())
    await c.settle(request)
    return c.json(answer, status=201)


async def list_sources(request: Request) -> Response:
    c.only_params(request, ())
    rows = await c.call(catalog(request).sources, c.principal(request))
    return c.json(shapes.CatalogSources(sources=[shapes.CatalogSource(**row) for row in rows]))


async def remove_source(request: Request) -> Response:
    source = c.uuid_param(request, "id", "catalog source")
    answer = await c.call(catalog(request).remove_source, source, c.principal(request), c.now())
    await c.settle(request)
    return c.json(answer)


async def list_templates(request: Request) -> Response:
    c.only_params(request, ("q", "category"))
    found = await c.call(catalog(request).catalog, c.principal(request), request.query_params.get("q", ""),
                         request.query_params.get("category", ""))
    return c.json(shapes.Catalog(templates=[summary(t) for t in found["templates"]], sources=found["sources"]))


async def show_template(request: Request) -> Response:
    c.only_params(request, ("source",))
    found = await c.call(catalog(request).template, c.principal(request), request.path_params["name"],
                         request.query_params.get("source", ""))
    return c.json(detail(found))


async def render(request: Request) -> Response:
    wanted = bounded(await c.body(request, Values))
    answer = await c.call(catalog(request).render, c.principal(request), request.path_params["name"], wanted.values,
                          c.now(), wanted.source or request.query_params.get("source", ""), render_budget())
    return c.json(answer)


async def start(request: Request) -> Response:
    """As `POST /v4/workflows`: an `Idempotency-Key` names the same workflow again."""
    wanted = bounded(await c.body(request, Values))
    if len(wanted.name) > MAX_NAME:
        return problem(400, f"expected at most {MAX_NAME} characters", "name")
    answer = await c.call(catalog(request).start, c.principal(request), request.path_params["name"], wanted.values,
                          submission_id(request), c.now(), wanted.name,
                          wanted.source or request.query_params.get("source", ""), render_budget())
    await c.settle(request)
    return c.json(answer, status=201)


routes = [
    Route("/v4/catalog", list_templates, methods=["GET"]),
    Route("/v4/catalog/sources", list_sources, methods=["GET"]),
    Route("/v4/catalog/sources", add_source, methods=["POST"]),
    Route("/v4/catalog/sources/{id}", remove_source, methods=["DELETE"]),
    Route("/v4/catalog/templates/{name}:render", render, methods=["POST"]),
    Route("/v4/catalog/templates/{name}:start", start, methods=["POST"]),
    Route("/v4/catalog/templates/{name}", show_template, methods=["GET"]),
]
