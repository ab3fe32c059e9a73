"""Revoking a workflow's token (FB_WORKFLOW_TOKEN) before its workflow ends: its owner or a cluster admin.

Every token of one workflow carries the same id (`workflow:<id>`), so one revocation refuses the tokens its
running stages hold, and the stages it starts later get none.
"""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.auth.tokens import workflow_jti
from api.http import fields
from api.http.answers.more import TokenRevoked
from api.http.routes import common as c
from domain.app import access
from domain.app.errors import NotFound

KEPT = timedelta(days=366)  # longer than any workflow token lives, so none of this workflow's works again


class Revoke(msgspec.Struct, forbid_unknown_fields=True):
    reason: fields.Reason = "revoked by the workflow's owner"


async def revoke(request: Request) -> Response:
    workflow, svc = c.uuid_param(request, "id", "workflow"), c.services(request)
    wanted = await c.body(request, Revoke)
    detail = await c.call(svc.views.workflows.get, workflow)
    if detail is None:
        raise NotFound("workflow")
    principal = c.principal(request)
    access.stop_work(principal, detail.owner)  # who may end the workflow may end its token
    owner, at = UUID(detail.owner.user_id) if detail.owner.user_id else None, c.now()
    fresh = await c.call(svc.roving.tenancy.revoke_token, workflow_jti(str(workflow)), owner, at + KEPT,
                         wanted.reason, principal, at)
    await c.settle(request)
    return c.json(TokenRevoked(workflow=str(workflow), revoked=True, already=not fresh), status=201 if fresh else 200)


routes = [Route("/v4/workflows/{id}/token:revoke", revoke, methods=["POST"])]
