"""The UI's session: the API's own access token in an HttpOnly cookie, and CSRF tokens bound to it.

The cookie carries the same signed token `/v4/auth/login` answers, so a UI request is authenticated by the
same code as an API request (`api.http.auth.claims_for` and `principal_of`) and sees what that token would see.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from adapters.auth.tokens import Identity, issue
from api.http.auth import claims_for, principal_of
from api.http.errors import Unauthorized
from domain.tenancy.permissions import Principal

COOKIE = "roving_session"
PRE_SESSION = "roving_login"  # a random value the login form's CSRF token is bound to (no session yet)
CSRF_FIELD = "csrf"
PATH = "/ui"


def session_token(request: Request) -> str | None:
    return request.cookies.get(COOKIE) or None


def principal_from_cookie(request: Request) -> Principal | None:
    """The principal the cookie's token names, or None when there is no usable session."""
    token = session_token(request)
    if token is None:
        return None
    svc = request.app.state.services
    try:
        claims = claims_for(token, svc.key, datetime.now(UTC), "/ui/")
        return principal_of(claims, svc.views.tenancy)
    except Unauthorized:
        return None


def issue_session(request: Request, user: Any) -> tuple[str, int]:
    """An access token for `user` as `/v4/auth/login` issues one, but lasting the UI's own session length
    (ROVING_UI_SESSION_TTL): a browser holds no refresh token; (token, seconds it lasts)."""
    svc = request.app.state.services
    known = svc.views.tenancy.principal_for(user.id)
    identity = Identity(user_id=user.id, username=user.username, role=user.role, organization_id=user.organization_id,
                        group_ids=sorted(known.group_ids) if known else [])
    ttl = timedelta(seconds=request.app.state.settings.ui_session_ttl_seconds)
    return issue(identity, svc.key, ttl, datetime.now(UTC)), int(ttl.total_seconds())


def https(request: Request) -> bool:
    return request.url.scheme == "https"


def set_cookie(response: Response, request: Request, name: str, value: str, max_age: int) -> None:
    """HttpOnly, SameSite=Strict, scoped to /ui, Secure whenever the page came over https."""
    response.set_cookie(name, value, max_age=max_age, path=PATH, httponly=True, samesite="strict",
                        secure=https(request))


def clear_cookie(response: Response, request: Request, name: str = COOKIE) -> None:
    response.delete_cookie(name, path=PATH, httponly=True, samesite="strict", secure=https(request))


def csrf_token(request: Request, bound_to: str) -> str:
    """An HMAC of the session (or pre-session) value under the signing key: nothing to store, nothing to guess."""
    key = request.app.state.services.key
    return hmac.new(key, b"roving-ui-csrf\n" + bound_to.encode(), hashlib.sha256).hexdigest()


def csrf_ok(request: Request, given: str, bound_to: str | None) -> bool:
    return bool(given) and bound_to is not None and hmac.compare_digest(given, csrf_token(request, bound_to))


def new_pre_session() -> str:
    return secrets.token_urlsafe(24)


def cross_site(request: Request) -> bool:
    """A browser says where a form came from: Sec-Fetch-Site, else Origin (`null` when the page hid it).
    A client that sends neither is no browser, so no other site can have made it post."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site not in ("same-origin", "none")
    origin = request.headers.get("origin")
    return origin is not None and origin.rstrip("/") != f"{request.url.scheme}://{request.url.netloc}"
