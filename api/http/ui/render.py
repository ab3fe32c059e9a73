"""Server-side rendering: Jinja2 templates under templates/ with autoescape on, through Starlette's Jinja2Templates.

A value reaches a page escaped unless it is `Markup` (what a template or a macro of templates/macros.html answered,
or a catalog description markdown-it rendered with raw HTML off), so no page decides escaping by hand."""

from __future__ import annotations

from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape
from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

TEMPLATES = Path(__file__).parent / "templates"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
NAV = (("Dashboard", "/ui/"), ("Workflows", "/ui/workflows"), ("Queue", "/ui/queue"), ("Nodes", "/ui/nodes"),
       ("Endpoints", "/ui/endpoints"), ("Catalog", "/ui/catalog"), ("Audit", "/ui/audit"), ("API", "/ui/api"))

Html = Markup  # markup a template made: passed through untouched by the next template


def nothing_for_none(value: Any) -> Any:
    return "" if value is None else value


@cache
def templates() -> Jinja2Templates:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                      finalize=nothing_for_none, keep_trailing_newline=False, auto_reload=False)
    return Jinja2Templates(env=env)


def esc(value: Any) -> Markup:
    return Markup("") if value is None else escape(value)


def fill(template_name: str, /, **values: Any) -> Markup:
    """The template rendered; its values escaped by autoescape, except Markup."""
    return Markup(templates().get_template(f"{template_name}.html").render(**values))


def macro(name: str) -> Any:
    """One macro of templates/macros.html (the small pieces pages share), callable from Python."""
    return getattr(templates().get_template("macros.html").module, name)


def part(template_name: str, name: str) -> Any:
    """One macro of another template file: a page's own pieces, kept beside the page."""
    return getattr(templates().get_template(f"{template_name}.html").module, name)


def when(value: Any) -> Markup:
    """An ISO time as `2026-12-04 08:21:57Z`, with the full value in a <time> element for scripts."""
    if not value:
        return Markup("")
    text = str(value)
    try:
        shown = datetime.fromisoformat(text.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%SZ")
    except ValueError:
        shown = text
    return Markup(macro("when")(text, shown))


def status(value: Any) -> Markup:
    return Markup(macro("status")(str(value or "")))


def table(headers: list[Any], rows: list[list[Any]], empty: str = "Nothing here yet.", id: str = "") -> Markup:
    """A table; cells are escaped unless they are Markup."""
    return Markup(macro("table")(headers, rows, empty, id))


def link(href: str, text: Any, id: str = "", cls: str = "") -> Markup:
    return Markup(macro("link")(href, text, id, cls))


def node_link(name: Any) -> Markup:
    """A node's name as a link to its page (its holds and event log); nothing when there is no node."""
    return link(f"/ui/nodes/{quote(str(name), safe='')}", name) if name else Markup("")


def hidden_csrf(token: str) -> Markup:
    return Markup(macro("hidden_csrf")(token))


def joined(parts: Any, sep: str = ", ") -> Markup:
    """Pieces (Markup kept, text escaped) with `sep` between them."""
    return Markup(macro("joined")(list(parts), sep))


def options(choices: Any, current: str, labels: dict[str, str] | None = None, empty: str = "any") -> Markup:
    return Markup(macro("options")(list(choices), current, labels or {}, empty))


def nav(current: str, user: Any = None) -> Markup:
    """The menu; Audit only for those who may read it (cluster admins, organization owners), never a link to a 403."""
    readers_only = {"/ui/audit": audit_reader(user)}
    return Markup(macro("nav")([(label, href) for label, href in NAV if readers_only.get(href, True)], current))


def audit_reader(user: Any) -> bool:
    if user is None:
        return False
    return bool(user.is_cluster_admin or user.owns_organization(user.organization_id))


def page(title: str, body: Markup, *, user: Any = None, csrf: str = "", current: str = "", status_code: int = 200,
         script: str = "") -> HTMLResponse:
    """The layout around `body`; `user` (a Principal) adds the navigation and the sign-out form."""
    if user is not None:
        who = fill("account", username=user.username, role=getattr(user.role, "value", user.role),
                   csrf=hidden_csrf(csrf))
        menu = nav(current, user)
    else:
        who, menu = Markup(""), Markup("")
    text = fill("layout", title=title, nav=menu, account=who, body=body, script=script)
    return HTMLResponse(text, status_code=status_code,
                        headers={"Content-Security-Policy": CSP, "Cache-Control": "no-store",
                                 "Referrer-Policy": "same-origin"})
