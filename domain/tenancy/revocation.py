"""A revoked token: its `jti`, whose it was, until when it would have worked, who revoked it and why.

One aggregate per token id, so revoking twice is one event and two writers cannot race. Views keep the
revoked ids until `expires` (after that the signature check refuses the token anyway).
"""

from __future__ import annotations

from datetime import datetime
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import event

from domain.tenancy.common import TenancyError, TenantAggregate, require_aware

TOKENS = uuid5(NAMESPACE_URL, "roving:tokens")
MAX_JTI = 128


def revocation_id(jti: str) -> UUID:
    return uuid5(TOKENS, jti)


def family_jti(family: str) -> str:
    """The id a revocation of a whole login names: every access and refresh token of that login carries it."""
    return f"family:{family}"


class RevokedToken(TenantAggregate):
    class Revoked(TenantAggregate.Created):
        jti: str
        subject: str
        expires: datetime
        reason: str
        by: str
        at: datetime

    @event(Revoked)
    def __init__(self, id: UUID, jti: str, subject: str, expires: datetime, reason: str, by: str,
                 at: datetime) -> None:
        self.jti, self.subject, self.expires, self.reason = jti, subject, expires, reason

    @classmethod
    def revoke(cls, jti: str, subject: str, expires: datetime, reason: str, *, by: str, at: datetime) -> RevokedToken:
        if not jti.strip() or len(jti) > MAX_JTI:
            raise TenancyError("jti", f"must be a token id of 1 to {MAX_JTI} characters")
        if not reason.strip():
            raise TenancyError("reason", "say why the token is revoked")
        return cls(id=revocation_id(jti), jti=jti, subject=subject, expires=require_aware(expires),
                   reason=reason.strip(), by=by, at=require_aware(at))
