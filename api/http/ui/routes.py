"""The UI's route table under /ui/, and the gate that sends /ui/ requests to it ahead of bearer-token auth."""

from __future__ import annotations

from pathlib import Path

from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from api.http.ui import catalog, dashboard, login, nodes, pages, session, submit, workflows
from api.http.ui.core import signed_in

STATIC = Path(__file__).parent / "static"


async def home(request: Request) -> Response:
    """`/ui/` is the dashboard when signed in, the sign-in form otherwise (HTML either way)."""
    if session.principal_from_cookie(request) is None:
        return login.login_form(request)
    return await signed_in(dashboard.dashboard)(request)


async def to_home(request: Request) -> Response:
    return RedirectResponse("/ui/", status_code=307)


def ui_routes() -> list[BaseRoute]:
    return [
        Route("/ui", to_home),
        Route("/ui/", home, methods=["GET"]),
        Route("/ui/login", login.show, methods=["GET"]),
        Route("/ui/login", login.sign_in, methods=["POST"]),
        Route("/ui/logout", login.sign_out, methods=["POST"]),
        Route("/ui/workflows", signed_in(workflows.list_page), methods=["GET"]),
        Route("/ui/submit", signed_in(submit.submit_page), methods=["GET"]),
        Route("/ui/submit", signed_in(submit.submit, post=True), methods=["POST"]),
        Route("/ui/submit/validate", signed_in(submit.validate, post=True), methods=["POST"]),
        Route("/ui/workflows/{id}", signed_in(workflows.detail_page), methods=["GET"]),
        Route("/ui/workflows/{id}/stop", signed_in(submit.stop, post=True), methods=["POST"]),
        Route("/ui/workflows/{id}/resubmit", signed_in(submit.resubmit, post=True), methods=["POST"]),
        Route("/ui/workflows/{id}/retry", signed_in(submit.retry, post=True), methods=["POST"]),
        Route("/ui/workflows/{id}/edit", signed_in(submit.edit_page), methods=["GET"]),
        Route("/ui/workflows/{id}/edit", signed_in(submit.resubmit_edited, post=True), methods=["POST"]),
        Route("/ui/workflows/{id}/summary", signed_in(workflows.summary_fragment), methods=["GET"]),
        Route("/ui/workflows/{id}/events", signed_in(workflows.follow), methods=["GET"]),
        Route("/ui/workflows/{id}/logs/{stage}.txt", signed_in(workflows.log_raw), methods=["GET"]),
        Route("/ui/workflows/{id}/download/events", signed_in(workflows.download_events), methods=["GET"]),
        Route("/ui/workflows/{id}/download/logs/{stage}", signed_in(workflows.download_log), methods=["GET"]),
        Route("/ui/workflows/{id}/logs/{stage}", signed_in(workflows.log_page), methods=["GET"]),
        Route("/ui/nodes", signed_in(nodes.nodes_page), methods=["GET"]),
        Route("/ui/nodes/{id}", signed_in(nodes.node_page), methods=["GET"]),
        Route("/ui/nodes/{id}/{action}", signed_in(nodes.act, post=True), methods=["POST"]),
        Route("/ui/queue", signed_in(pages.queue_page), methods=["GET"]),
        Route("/ui/catalog", signed_in(catalog.catalog_page), methods=["GET"]),
        Route("/ui/catalog/{name}", signed_in(catalog.template_page), methods=["GET"]),
        Route("/ui/catalog/{name}/start", signed_in(catalog.start, post=True), methods=["POST"]),
        Route("/ui/endpoints", signed_in(pages.endpoints_page), methods=["GET"]),
        Route("/ui/api", signed_in(pages.api_page), methods=["GET"]),
        Route("/ui/audit", signed_in(pages.audit_page), methods=["GET"]),
        Route("/ui/audit/export.parquet", signed_in(pages.audit_export), methods=["GET"]),
        Mount("/ui/static", app=StaticFiles(directory=STATIC), name="ui-static"),
    ]


class UiGate:
    """Serves /ui/ itself (its session cookie is checked by the pages), and passes every other path on to the
    API's bearer-token auth untouched."""

    def __init__(self, app: ASGIApp) -> None:
        # Its own exception layer: these routes run ahead of the app's, so a static file's 404 (an HTTPException)
        # would otherwise reach the server as an unhandled error, a 500
        self.app, self.router = app, ExceptionMiddleware(Router(routes=ui_routes()))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == "/ui" or path.startswith("/ui/")):
            await self.router(scope, receive, send)
            return
        await self.app(scope, receive, send)
