"""Workflow tokens: each running stage gets FB_WORKFLOW_TOKEN, so a job can start child workflows as its owner.

Issued where a stage is handed to its agent (the assignments answer, like the secrets it resolves): an HMAC over
the owner and the workflow, signed in memory with no log write and no extra round trip (a few microseconds a
stage: tests/unit/api/test_workflow_tokens.py measures it). It travels in the job's environment only, never on a
command line, in a log or in an event. On every request it is checked against the views: a token whose workflow
has ended (finished, failed, canceled) is refused, as is one revoked by its workflow's id
(`roving workflow revoke-token`). It speaks for the owner as the owner's groups stand now, with source `workflow`,
and only on the routes below: start, list, follow and stop workflows, read the object store, list secrets' names
(their values still reach only the agents, for the children's `secret://` references). Everything else, creating
or changing secrets included, is 403.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import msgspec

from adapters.auth.tokens import Claims, Identity, issue_workflow, workflow_jti
from api.http.errors import Unauthorized
from domain.agent_protocol import Assignments, Start
from domain.fuzzfile.images import BUILD
from domain.tenancy import Role

VARIABLE = "FB_WORKFLOW_TOKEN"
ENDED = frozenset({"FINISHED", "FAILED", "CANCELED"})
ALLOWED: tuple[tuple[str, re.Pattern[str]], ...] = tuple((method, re.compile(pattern)) for method, pattern in (
    ("GET", r"/v4/auth/whoami"),
    ("POST", r"/v4/workflows(:validate)?"),
    ("GET", r"/v4/workflows(/[^/]+(/(events|why|log/[^/]+|allocations/[^/]+/explain))?)?"),
    ("PATCH", r"/v4/workflows/[^/]+:stop"),
    ("GET", r"/v4/secrets"),
    ("GET", r"/v4/objects(/.*)?"),
    ("HEAD", r"/v4/objects/.+"),
    ("PUT", r"/v4/objects/.+"),
    ("DELETE", r"/v4/objects/.+"),
))


class WorkflowTokens:
    """Tokens issued lately, by workflow, for one issuer that answers the same running work again and again (the
    agents' push): one is handed out again while it is younger than REUSE and its owner's identity, the key
    and the life asked are the same, so its expiry is at most that much earlier than a fresh one's."""

    REUSE = timedelta(seconds=60)
    MOST = 10_000  # workflows remembered at most (then all are forgotten at once)

    def __init__(self) -> None:
        self._issued: dict[str, tuple[tuple[Any, ...], datetime, str]] = {}

    def issue(self, identity: Identity, workflow: str, key: bytes, ttl: timedelta, now: datetime) -> str:
        made_from = (identity, key, ttl)
        known = self._issued.get(workflow)
        if known is not None and known[0] == made_from and timedelta(0) <= now - known[1] < self.REUSE:
            return known[2]
        if len(self._issued) >= self.MOST:
            self._issued.clear()
        token = issue_workflow(identity, workflow, key, ttl, now)
        self._issued[workflow] = (made_from, now, token)
        return token


def with_workflow_tokens(answer: Assignments[Start], views: Any, key: bytes, ttl: timedelta,
                         now: datetime, kept: WorkflowTokens | None = None) -> Assignments[Start]:
    """The assignments answer with FB_WORKFLOW_TOKEN in the env of every stage it starts (not image builds, which
    run our code); a workflow whose token was revoked, or whose owner is unknown, gets none. `kept` hands out a
    token issued lately for the same workflow again."""
    if not answer.start:
        return answer
    return msgspec.structs.replace(answer, start=[_with_token(spec, views, key, ttl, now, kept)
                                                  for spec in answer.start])


def _with_token(spec: Start, views: Any, key: bytes, ttl: timedelta, now: datetime,
                kept: WorkflowTokens | None) -> Start:
    workflow = spec.workflow_id
    if spec.kind == BUILD or not workflow or views.tenancy.is_revoked(workflow_jti(workflow)):
        return spec
    owner = views.queue.owner(UUID(workflow))
    user = views.tenancy.user(owner.user_id) if owner.user_id else None
    if user is None:
        return spec
    identity = Identity(user_id=user.id, username=user.username, role=Role.USER, organization_id=user.organization_id)
    token = (kept.issue if kept is not None else issue_workflow)(identity, workflow, key, ttl, now)
    return msgspec.structs.replace(spec, env={**spec.env, VARIABLE: token})


def check_workflow_token(claims: Claims, method: str, path: str, views: Any) -> str | None:
    """For a workflow token: Unauthorized once its workflow has ended; the reason it may not make this request
    (403), or None."""
    # status() reads a workflow that left the views' hot set from the log: an ended one stays ended
    status = views.workflows.status(claims.wf) if claims.wf else None
    if status in ENDED:
        raise Unauthorized(f"token refused: its workflow {claims.wf} has ended ({status})")
    if any(method == allowed and pattern.fullmatch(path) for allowed, pattern in ALLOWED):
        return None
    return (f"a workflow token may not {method} {path}: it starts, follows and stops workflows, uses the object "
            "store and lists secrets' names; everything else needs a person's token")
