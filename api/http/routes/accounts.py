"""Account routes: password login, who the caller is, the caller's own password, logout and token revocation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.auth.tokens import WEBHOOK_TTL, Identity
from api.http import answers as shapes
from api.http import fields, logins
from api.http.answers import TokenPair, Whoami, answers
from api.http.routes import common as c
from api.http.routes import sessions
from api.http.routes.names import names


class Login(msgspec.Struct, forbid_unknown_fields=True):
    username: fields.Text
    password: fields.Password


class Revocation(msgspec.Struct, forbid_unknown_fields=True):
    jti: fields.Text
    reason: fields.Reason = "revoked by an administrator"
    expires_at: datetime | None = None  # when the token would have run out; unknown: its longest possible life


class PasswordChange(msgspec.Struct, forbid_unknown_fields=True):
    current_password: fields.Password
    new_password: fields.Password


@answers(Whoami)
async def whoami(request: Request) -> Response:
    who, known = c.principal(request), names(request)
    groups = sorted(str(g) for g in who.group_ids)
    account = c.services(request).views.tenancy.user(who.user_id) if who.user_id else None
    return c.json(Whoami(user_id=str(who.user_id) if who.user_id else None, username=who.username, role=who.role,
                         organization_id=str(who.organization_id) if who.organization_id else None,
                         organization=known.organization(who.organization_id), groups=groups,
                         group_names=[known.group(g) or g for g in groups],
                         uid=account.uid if account is not None else None))


@answers(TokenPair)
async def login(request: Request) -> Response:
    """Password login; the answer is a short access token and its refresh token (api.http.routes.sessions); the password
    never leaves this function."""
    wanted, svc = await c.body(request, Login), c.services(request)
    at = c.now()
    user = await logins.gate(request).check(wanted.username, logins.address_of(request), svc.roving.login,
                                            wanted.username, wanted.password, at)
    await c.settle(request)  # the token names an account: the views know it before the caller can use it
    known = svc.views.tenancy.principal_for(user.id)
    identity = Identity(user_id=user.id, username=user.username, role=user.role, organization_id=user.organization_id,
                        group_ids=sorted(known.group_ids) if known else [])
    return c.json(sessions.token_pair(request, identity, at))


@answers(shapes.Changed)
async def change_password(request: Request) -> Response:
    """The caller's own password; the current one is asked for again, so a stolen token cannot take the account."""
    wanted, who = await c.body(request, PasswordChange), c.principal(request)
    await logins.gate(request).check(who.username, logins.address_of(request),
                                     c.services(request).roving.tenancy.change_password, who,
                                     wanted.current_password, wanted.new_password, c.now())
    await c.settle(request)
    return c.json(shapes.Changed(changed=True))


@answers(shapes.Revoked)
async def logout(request: Request) -> Response:
    """Revoke the token this request carries, and its login's refresh token: from the answer on, every API process
    refuses them."""
    claims, at = request.state.claims, c.now()
    expires = datetime.fromtimestamp(claims.exp, UTC)
    await c.call(c.services(request).roving.tenancy.revoke_token, claims.jti, claims.sub, expires, "logout",
                 c.principal(request), at)
    if claims.fam:
        await sessions.revoke_family(request, claims.sub, claims.fam, at)
    await c.settle(request)
    return c.json(shapes.Revoked(revoked=claims.jti))


@answers(shapes.Revoked)
async def revoke(request: Request) -> Response:
    """A cluster admin revokes any token by its id (`jti`, as the audit and the token's holder can tell)."""
    wanted = await c.body(request, Revocation)
    at = c.now()
    expires = wanted.expires_at or at + WEBHOOK_TTL + timedelta(days=1)
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    fresh = await c.call(c.services(request).roving.tenancy.revoke_token, wanted.jti, None, expires, wanted.reason,
                         c.principal(request), at)
    await c.settle(request)
    return c.json(shapes.Revoked(revoked=wanted.jti, already=not fresh), status=201 if fresh else 200)


routes = [
    Route("/v4/auth/login", login, methods=["POST"]),
    Route("/v4/auth/whoami", whoami, methods=["GET"]),
    Route("/v4/auth/logout", logout, methods=["POST"]),
    Route("/v4/auth/revoke", revoke, methods=["POST"]),
    Route("/v4/users/me/password", change_password, methods=["POST"]),
]
