"""The Catalog pages: search the templates a person may use, a run form per template with its inputs grouped by
display_category, and Start (the workflow's page follows).

Descriptions are Markdown rendered with raw HTML off and links checked (markdown-it's commonmark: no javascript:,
vbscript: or file: links), so a source's text cannot put a script or a live handler on the page; the page's CSP
forbids inline scripts besides. The pages ask the catalog handlers the API routes ask, as the signed-in person.
"""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import quote, urlencode
from uuid import uuid4

import msgspec
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from api.http.routes import catalog as routes
from api.http.routes import common as c
from api.http.ui import render
from api.http.ui.core import Refused, api, csrf_for, refusal
from domain.app.errors import Conflict, Invalid
from domain.catalog import CatalogError
from domain.tenancy.permissions import Principal

FIELD = "v."  # form fields holding values are named v.NAME
MAX_QUERY = 200


@cache
def markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})


def described(text: str) -> render.Html:
    """A description's Markdown as HTML: raw HTML in it is shown as text, unsafe links are left as text."""
    # markdown-it escapes raw HTML itself (html off) and drops unsafe links: its output is markup to keep
    return render.Html(parts("markdown")(render.Html(markdown().render(text or ""))))


def parts(name: str) -> Any:
    return render.part("catalog_parts", name)


def template_href(row: dict[str, Any]) -> str:
    return f"/ui/catalog/{quote(row['name'], safe='')}?{urlencode({'source': row['source']})}"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def category_choices(categories: list[str], chosen: str) -> render.Html:
    """The category filter's options: every category of the templates the person can see, and "all"."""
    return render.Html(parts("categories")(categories, chosen))


async def catalog_page(request: Request, who: Principal) -> Response:
    query = request.query_params.get("q", "")[:MAX_QUERY]
    category = request.query_params.get("category", "")[:MAX_QUERY]
    everything = await api(routes.list_templates, request, q=query)
    answer = await api(routes.list_templates, request, q=query, category=category) if category else everything
    categories = sorted({t["category"] for t in everything["templates"] if t["category"]})
    cards = [render.fill("catalog_card", href=template_href(t), title=t["display_name"], key=t["key"],
                         category=t["category"] or t["scope"], description=described(t["description"]))
             for t in answer["templates"]]
    warnings = render.joined((source_warning(s) for s in answer["sources"] if s["error"] or s["problems"]), "")
    empty = "No template matches." if query or category else "No catalog source you can see holds templates yet."
    body = render.fill("catalog", query=query, warnings=warnings, count=plural(len(cards), "template"),
                       categories=category_choices(categories, category),
                       cards=render.joined(cards, "") if cards else render.Html(
                           render.macro("empty")(empty, "catalog-empty")))
    return render.page("Catalog", body, user=who, csrf=csrf_for(request), current="/ui/catalog")


def source_warning(source: dict[str, Any]) -> render.Html:
    """A source that could not be read (or some of whose templates could not): the others still show."""
    what = (f"could not be read: {source['error']}" if source["error"] else "has templates that could not be read: "
            + "; ".join(f"{p['path']}: {p['message']}" for p in source["problems"]))
    return render.Html(parts("source_warning")(source["name"], source["scope"], what))


def field(spec: dict[str, Any], entered: dict[str, str], errors: dict[str, list[str]]) -> render.Html:
    """One input of the run form, by kind: a choice, a whole number, true/false, or text (references too); after a
    refused Start, with the value the person entered and the refusal that names it beside it."""
    name = spec["name"]
    default = entered.get(name, spec["default"])
    if spec["kind"] == "bool" and not spec["options"]:
        default = "true" if (default == "true" if isinstance(default, str) else bool(default)) else "false"
    return render.Html(parts("field")(spec, FIELD + name, default, errors.get(name, [])))


def beside_fields(problems: list[tuple[str, str]], names: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Each refusal by the input it names (`values.Cores`, or a Fuzzfile path ending in that name, as
    `jobs.render.resource.cpu.cores`), and the rest, which name no input, for the top of the form."""
    by_input: dict[str, list[str]] = {}
    rest = []
    lowered = {n.lower(): n for n in names}
    for path, message in problems:
        last = path.removeprefix("values.").rsplit(".", 1)[-1].lower()
        name = lowered.get(last) if path else None
        if name is not None:
            by_input.setdefault(name, []).append(message)
        else:
            rest.append(f"{path}: {message}" if path else message)
    return by_input, rest


class Retry(msgspec.Struct, frozen=True):
    """A refused Start shown again: what was entered and each refusal (path, message)."""

    source: str
    values: dict[str, str]
    workflow_name: str
    problems: list[tuple[str, str]]
    status: int


async def template_page(request: Request, who: Principal, retry: Retry | None = None) -> Response:
    found = await api(routes.show_template, request,
                      source=retry.source if retry else request.query_params.get("source", ""))
    names = [i["name"] for g in found["groups"] for i in g["inputs"]]
    errors, general = beside_fields(retry.problems if retry else [], names)
    entered = retry.values if retry else {}
    fields = [[field(i, entered, errors) for i in g["inputs"]] for g in found["groups"]]
    action = f"/ui/catalog/{quote(found['name'], safe='')}/start"
    body = render.fill("catalog_template", key=found["key"], scope=found["scope"], category=found["category"],
                       description=described(found["description"]), groups=render.Html(parts("groups")(found, fields, general)),
                       action=action, source=found["source"], csrf=render.hidden_csrf(csrf_for(request)),
                       name=retry.workflow_name if retry else found["name"], template=found["template"])
    return render.page(found["display_name"], body, user=who, csrf=csrf_for(request), current="/ui/catalog",
                       status_code=retry.status if retry else 200)


async def start(request: Request, who: Principal) -> Response:
    """The run form's Start: the template rendered with its values and submitted as the signed-in person."""
    fields = request.state.form
    values = {k.removeprefix(FIELD): v for k, v in fields.items() if k.startswith(FIELD)}
    workflow_name = fields.get("workflow_name", "").strip()
    if len(workflow_name) > 256:
        raise Refused(400, "workflow_name: expected at most 256 characters")
    handlers = routes.catalog(request)
    try:
        started = await c.call(handlers.start, who, request.path_params["name"], values, uuid4(), c.now(),
                               workflow_name, fields.get("source", ""), routes.render_budget())
    except (Invalid, Conflict, CatalogError) as error:  # the form again, the refusal beside the field it names
        problems = [(p.path, p.message) for p in getattr(error, "problems", [])] or [("", str(error))]
        status = 400 if isinstance(error, CatalogError) else refusal(error).status
        retry = Retry(fields.get("source", ""), values, workflow_name or request.path_params["name"], problems, status)
        return await template_page(request, who, retry)
    await c.settle(request)
    return RedirectResponse(f"/ui/workflows/{started['id']}", status_code=303)

