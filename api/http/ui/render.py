"""Server-side rendering: `string.Template` files under templates/, every value escaped on the way in."""

from __future__ import annotations

import html
from datetime import datetime
from functools import cache
from pathlib import Path
from string import Template
from typing import Any
from urllib.parse import quote

from starlette.responses import HTMLResponse

TEMPLATES = Path(__file__).parent / "templates"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
NAV = (("Dashboard", "/ui/"), ("Workflows", "/ui/workflows"), ("Queue", "/ui/queue"), ("Nodes", "/ui/nodes"),
       ("Endpoints", "/ui/endpoints"), ("Catalog", "/ui/catalog"), ("Audit", "/ui/audit"), ("API", "/ui/api"))


class Html(str):
    """Markup already escaped (or written by us): `fill` passes it through untouched."""


def esc(value: Any) -> Html:
    if isinstance(value, Html):
        return value
    if value is None:
        return Html("")
    return Html(html.escape(str(value), quote=True))


@cache
def template(name: str) -> Template:
    return Template((TEMPLATES / f"{name}.html").read_text())


def fill(template_name: str, /, **values: Any) -> Html:
    """The template with every value escaped, except those already `Html`."""
    return Html(template(template_name).substitute({k: esc(v) for k, v in values.items()}))


def when(value: Any) -> Html:
    """An ISO time as `2026-12-04 08:21:57Z`, with the full value in a <time> element for scripts."""
    if not value:
        return Html("")
    text = str(value)
    try:
        shown = datetime.fromisoformat(text.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%SZ")
    except ValueError:
        shown = text
    return Html(f'<time datetime="{esc(text)}">{esc(shown)}</time>')


def status(value: Any) -> Html:
    text = str(value or "")
    return Html(f'<span class="status st-{esc(text.upper())}">{esc(text)}</span>')


def table(headers: list[str], rows: list[list[Any]], empty: str = "Nothing here yet.", id: str = "") -> Html:
    """A table; cells are escaped unless they are `Html`."""
    attr = f' id="{esc(id)}"' if id else ""
    if not rows:
        return Html(f'<p class="empty"{attr}>{esc(empty)}</p>')
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return Html(f'<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def link(href: str, text: Any) -> Html:
    return Html(f'<a href="{esc(href)}">{esc(text)}</a>')


def node_link(name: Any) -> Html:
    """A node's name as a link to its page (its holds and event log); nothing when there is no node."""
    return link(f"/ui/nodes/{quote(str(name), safe='')}", name) if name else Html("")


def hidden_csrf(token: str) -> Html:
    return Html(f'<input type="hidden" name="csrf" value="{esc(token)}">')


def nav(current: str, user: Any = None) -> Html:
    """The menu; Audit only for those who may read it (cluster admins, organization owners), never a link to a 403."""
    readers_only = {"/ui/audit": audit_reader(user)}
    items = "".join(f'<a href="{href}"{" class=current" if href == current else ""}>{label}</a>'
                    for label, href in NAV if readers_only.get(href, True))
    return Html(items)


def audit_reader(user: Any) -> bool:
    if user is None:
        return False
    return bool(user.is_cluster_admin or user.owns_organization(user.organization_id))


def page(title: str, body: Html, *, user: Any = None, csrf: str = "", current: str = "", status_code: int = 200,
         script: str = "") -> HTMLResponse:
    """The layout around `body`; `user` (a Principal) adds the navigation and the sign-out form."""
    if user is not None:
        who = fill("account", username=user.username, role=getattr(user.role, "value", user.role),
                   csrf=hidden_csrf(csrf))
        menu = nav(current, user)
    else:
        who, menu = Html(""), Html("")
    scripts = Html(f'<script src="/ui/static/{esc(script)}" defer></script>' if script else "")
    text = fill("layout", title=title, nav=menu, account=who, body=body, scripts=scripts)
    return HTMLResponse(text, status_code=status_code,
                        headers={"Content-Security-Policy": CSP, "Cache-Control": "no-store",
                                 "Referrer-Policy": "same-origin"})
