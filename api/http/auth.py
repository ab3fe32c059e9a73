"""Bearer tokens: verify with `adapters.auth.tokens`, build the Principal, refuse with 401 and a reason."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters.auth.tokens import WORKFLOW, Claims, InvalidToken, verify, verify_webhook
from api.http.errors import Unauthorized, problem
from api.http.workflow_tokens import check_workflow_token
from domain.tenancy import Role, Source
from domain.tenancy.permissions import Principal
from domain.tenancy.revocation import family_jti

PUBLIC = frozenset({"/healthz", "/readyz", "/metrics", "/v4/auth/login", "/v4/auth/refresh", "/v4/openapi.json",
                    "/v4/version", "/v4/docs", "/v4/docs/start.js"})
DOCS_STATIC = "/v4/docs/static/"  # the try-it page's Swagger UI files (api.http.routes.openapi)
WEBHOOK_OR_ACCESS = frozenset({"/v4/alerts", "/v4/nodes/-/sd_config", "/v4/endpoints/-/sd_config"})
WEBHOOK_OR_ACCESS_UNDER = ("/v4/metrics/node/",)  # Prometheus scrapes a node's metrics with the monitoring token


def bearer(headers: Any) -> str:
    """The token of an `Authorization: Bearer <token>` header, or Unauthorized saying what is wrong."""
    value = headers.get("authorization")
    if not value:
        raise Unauthorized("missing bearer token (send Authorization: Bearer <token>)")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("malformed Authorization header; expected Bearer <token>")
    return token.strip()


def claims_for(token: str, key: bytes, now: datetime, path: str, workflow_tokens: bool = False) -> Claims:
    """Access tokens everywhere; with `workflow_tokens` (API requests, whose middleware holds them to their few
    routes; not the web UI or the endpoint proxy) a workflow's token too; the webhook token also on the
    Alertmanager and service-discovery paths."""
    try:
        return verify(token, key, now)
    except InvalidToken as error:
        if error.reason == "wrong kind" and workflow_tokens:
            try:
                return verify(token, key, now, kind=WORKFLOW)
            except InvalidToken as workflow_error:
                if workflow_error.reason != "wrong kind":
                    raise Unauthorized(f"token refused: {workflow_error.reason}") from None
        if error.reason == "wrong kind" and (path in WEBHOOK_OR_ACCESS or path.startswith(WEBHOOK_OR_ACCESS_UNDER)):
            try:
                return verify_webhook(token, key, now)
            except InvalidToken as webhook_error:
                raise Unauthorized(f"token refused: {webhook_error.reason}") from None
        raise Unauthorized(f"token refused: {error.reason}") from None


def principal_of(claims: Claims, tenancy: Any) -> Principal:
    """The domain principal: an account that exists and is active, with its role, groups, ownership and grants as
    the tenancy view has them now (never as the token claims them). A token without an account speaks only
    for a cluster component (agent, monitoring), as a plain user. A revoked token (by its `jti`) is refused."""
    if tenancy is not None and (tenancy.is_revoked(claims.jti) or (claims.fam and tenancy.is_revoked(family_jti(claims.fam)))):
        raise Unauthorized("token refused: revoked")
    if claims.sub is None:
        if claims.source is Source.ADMIN or claims.role is not Role.USER:
            raise Unauthorized("token refused: a token without an account speaks only for a cluster component")
        return claims.principal()
    if tenancy is None:
        raise Unauthorized("token refused: accounts are not known yet; try again")
    row = tenancy.user(claims.sub)
    if row is None:
        raise Unauthorized("token refused: unknown account")
    if row.disabled:
        raise Unauthorized("account disabled")
    found = tenancy.principal_for(claims.sub, claims.source)
    if found is None:
        raise Unauthorized("token refused: unknown account")
    return found


def authenticate(scope: Scope, key: bytes, tenancy: Any, now: datetime | None = None) -> Principal:
    """The principal of a request scope, or Unauthorized; the token's claims go in the scope's state (logout)."""
    token = bearer(HTTPConnection(scope).headers)
    claims = claims_for(token, key, now or datetime.now(UTC), scope["path"], workflow_tokens=True)
    scope.setdefault("state", {})["claims"] = claims
    return principal_of(claims, tenancy)


class AuthMiddleware:
    """Puts `request.state.principal` on every non-public request; answers 401 with the reason otherwise."""

    def __init__(self, app: ASGIApp, key: bytes, views: Any) -> None:
        self.app, self.key, self.views = app, key, views

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # the endpoint proxy checks its own callers (token in FB-Authorization; public endpoints need none),
        # so a service's own Authorization header can pass through untouched
        if scope["type"] != "http" or scope["path"] in PUBLIC or scope["path"].startswith(("/endpoints/", DOCS_STATIC)):
            await self.app(scope, receive, send)
            return
        try:
            principal = authenticate(scope, self.key, getattr(self.views, "tenancy", None))
            claims = scope["state"]["claims"]
            # off the loop: a workflow no longer in the views' hot set is read from the log
            refused = await run_in_threadpool(check_workflow_token, claims, scope["method"], scope["path"],
                                              self.views) if claims.kind == WORKFLOW else None
        except Unauthorized as error:
            await problem(401, error.reason)(scope, receive, send)
            return
        if refused is not None:
            await problem(403, refused)(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)
