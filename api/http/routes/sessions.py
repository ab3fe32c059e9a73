"""A person's tokens: the access and refresh pair a login answers, and `/v4/auth/refresh` that renews it.

The access token is short (ROVING_TOKEN_TTL); the refresh token (ROVING_REFRESH_TTL) is good for one exchange:
each refresh answers a new pair and revokes the token it spent. Spending one again revokes the login's whole
family (reuse detection). Agents, webhooks and `roving up`'s admin token have no refresh token.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.auth.tokens import REFRESH, Identity, InvalidToken, issue, new_family, verify
from api.http.answers import TokenPair, answers
from api.http.errors import Unauthorized
from api.http.routes import common as c
from domain.tenancy.permissions import Principal
from domain.tenancy.revocation import family_jti


class RefreshRequest(msgspec.Struct, forbid_unknown_fields=True):
    refresh_token: str


def lifetimes(request: Request) -> tuple[timedelta, timedelta]:
    """(access token ttl, refresh token ttl) as configured."""
    found = c.settings(request)
    return timedelta(seconds=found.token_ttl_seconds), timedelta(seconds=found.refresh_ttl_seconds)


def token_pair(request: Request, identity: Identity, at: datetime, family: str = "") -> dict[str, Any]:
    """A login's answer: `token` and `expires_in` as before, with the refresh token beside them."""
    access_ttl, refresh_ttl = lifetimes(request)
    family, key = family or new_family(), c.services(request).key
    return {"token": issue(identity, key, access_ttl, at, family=family),
            "expires_in": int(access_ttl.total_seconds()),
            "refresh_token": issue(identity, key, refresh_ttl, at, kind=REFRESH, family=family),
            "refresh_expires_in": int(refresh_ttl.total_seconds())}


def identity_of(known: Principal) -> Identity:
    """What a refreshed token says of its person: role and groups as the tenancy view has them now."""
    return Identity(user_id=known.user_id, username=known.username, role=known.role,
                    organization_id=known.organization_id, group_ids=sorted(known.group_ids))


@answers(TokenPair)
async def refresh(request: Request) -> Response:
    """Spend a refresh token for a new pair; 401 with the reason for anything else (expired, reused, disabled)."""
    wanted, svc, at = await c.body(request, RefreshRequest), c.services(request), c.now()
    try:
        claims = verify(wanted.refresh_token, svc.key, at, kind=REFRESH)
    except InvalidToken as error:
        raise Unauthorized(f"refresh token refused: {error.reason}") from None
    if claims.sub is None or not claims.fam:
        raise Unauthorized("refresh token refused: it names no login")
    refused = await c.call(svc.roving.tenancy.spend_refresh_token, claims.jti, claims.fam, claims.sub,
                           datetime.fromtimestamp(claims.exp, UTC), at + lifetimes(request)[1], at)
    await c.settle(request)
    if refused:
        raise Unauthorized(f"refresh token refused: {refused}")
    known = svc.views.tenancy.principal_for(claims.sub)
    if known is None:
        raise Unauthorized("refresh token refused: unknown account")
    return c.json(token_pair(request, identity_of(known), at, claims.fam))


async def revoke_family(request: Request, user: UUID | None, family: str, at: datetime) -> None:
    """Logout: the login's refresh token and every access token it gave are refused from now on."""
    until = at + lifetimes(request)[1] + timedelta(seconds=1)
    await c.call(c.services(request).roving.tenancy.revoke_token, family_jti(family), user, until, "logout",
                 c.principal(request), at)


routes = [Route("/v4/auth/refresh", refresh, methods=["POST"])]
