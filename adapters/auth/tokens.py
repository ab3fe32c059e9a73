"""Signed bearer tokens: HMAC-SHA256 over compact msgspec JSON claims, base64url, `rv1.<claims>.<signature>`.

Four kinds: short-lived `access` tokens for people (CLI, web), their long-lived `refresh` tokens (exchanged
once each for a new pair, `/v4/auth/refresh`), long-lived `webhook` tokens for the Alertmanager principal
(source monitoring), and `workflow` tokens, which a running stage finds in FB_WORKFLOW_TOKEN: its workflow's
owner (source workflow), naming the workflow (`wf`), refused once it ends (api.http.workflow_tokens). `verify`
accepts only the kind it is asked for, so a webhook token never works as a login. Every token names the key that
signed it (`kid`); the key ring (adapters.auth.keyring) signs with its newest key and verifies with any it still
holds. A token's `jti` is what a revocation names (checked against the tenancy view on every request,
api.http.auth); a login's tokens share a `fam` (family), so revoking the family ends the login's every access and
refresh token.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from datetime import datetime, timedelta
from uuid import UUID

import msgspec

from adapters.auth.keyring import KEY_BYTES, KeyFileError, KeyRing, key_id, load_or_create_key, ring_of
from domain.tenancy import Principal, Role, Source

__all__ = ["KEY_BYTES", "KeyFileError", "KeyRing", "load_or_create_key"]  # the key file lives in adapters.auth.keyring
PREFIX = "rv1"
ACCESS, REFRESH, WEBHOOK, WORKFLOW = "access", "refresh", "webhook", "workflow"
WEBHOOK_TTL = timedelta(days=365)


class InvalidToken(Exception):
    """A token refused; `reason` is one of malformed, bad signature, expired, wrong kind."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class Identity(msgspec.Struct, frozen=True):
    """Whom a token speaks for."""

    user_id: UUID | None
    username: str
    role: Role
    organization_id: UUID | None
    group_ids: list[UUID] = []
    source: Source = Source.ADMIN


class Claims(msgspec.Struct, frozen=True):
    """A token's signed payload; times are Unix seconds."""

    sub: UUID | None
    username: str
    role: Role
    org: UUID | None
    groups: list[UUID]
    source: Source
    kind: str
    iat: int
    exp: int
    jti: str
    kid: str = ""  # tokens from before the key ring have none: any key of the ring may have signed them
    fam: str = ""  # the login a person's token belongs to; none for agents, webhooks and `roving up`'s token
    wf: str = ""  # a workflow token's workflow

    def principal(self, owned_group_ids: frozenset[UUID] = frozenset(),
                  explain_group_ids: frozenset[UUID] = frozenset()) -> Principal:
        """The domain principal; group ownership and grants come from the tenancy view, not the token."""
        return Principal(
            user_id=self.sub, username=self.username, role=self.role, organization_id=self.org,
            group_ids=frozenset(self.groups), owned_group_ids=owned_group_ids, explain_group_ids=explain_group_ids,
            is_cluster_admin=self.role is Role.CLUSTER_ADMIN, source=self.source,
        )


def issue(claims: Identity, key: bytes, ttl: timedelta, now: datetime, *, kind: str = ACCESS,
          token_id: str | None = None, family: str = "", workflow: str = "") -> str:
    """A signed token for `claims`, valid from `now` for `ttl`."""
    if ttl <= timedelta(0):
        raise ValueError(f"ttl must be positive, got {ttl}")
    issued, ring = int(now.timestamp()), ring_of(key)
    payload = Claims(sub=claims.user_id, username=claims.username, role=claims.role, org=claims.organization_id,
                     groups=list(claims.group_ids), source=claims.source, kind=kind, iat=issued,
                     exp=issued + int(ttl.total_seconds()), jti=token_id or secrets.token_urlsafe(12), kid=ring.kid,
                     fam=family, wf=workflow)
    body = f"{PREFIX}.{_b64(msgspec.json.encode(payload))}"
    return f"{body}.{_b64(_sign(body, bytes(ring)))}"


def verify(token: str, key: bytes, now: datetime, *, kind: str = ACCESS) -> Claims:
    """The token's claims, or InvalidToken saying why not (signature before content: nothing unsigned is read)."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise InvalidToken("malformed", f"expected {PREFIX}.<claims>.<signature>")
    body, signature = f"{parts[0]}.{parts[1]}", _unb64(parts[2])
    signer = _signer(body, signature, ring_of(key), parts[1])
    try:
        claims = msgspec.json.decode(_unb64(parts[1]), type=Claims)
    except msgspec.DecodeError as error:
        raise InvalidToken("malformed", str(error)) from None
    if claims.kid and claims.kid != signer:
        raise InvalidToken("bad signature", "signed by another key than the one it names")
    if claims.kind != kind:
        raise InvalidToken("wrong kind", f"a {claims.kind} token where a {kind} token is needed")
    if int(now.timestamp()) >= claims.exp:
        raise InvalidToken("expired", f"at {datetime.fromtimestamp(claims.exp, now.tzinfo).isoformat()}")
    return claims


def new_family() -> str:
    """The id a login's tokens share."""
    return secrets.token_urlsafe(12)


def issue_webhook(name: str, key: bytes, now: datetime, ttl: timedelta = WEBHOOK_TTL) -> str:
    """A long-lived token for the Alertmanager webhook: a monitoring principal with no account behind it."""
    identity = Identity(user_id=None, username=name, role=Role.USER, organization_id=None, source=Source.MONITORING)
    return issue(identity, key, ttl, now, kind=WEBHOOK)


def verify_webhook(token: str, key: bytes, now: datetime) -> Claims:
    return verify(token, key, now, kind=WEBHOOK)


def workflow_jti(workflow_id: str) -> str:
    """The id every token of one workflow carries: revoking it ends them all."""
    return f"workflow:{workflow_id}"


def issue_workflow(owner: Identity, workflow_id: str, key: bytes, ttl: timedelta, now: datetime) -> str:
    """A running stage's token: its workflow's owner, as a workflow (never more than the owner may do)."""
    identity = Identity(user_id=owner.user_id, username=owner.username, role=owner.role,
                        organization_id=owner.organization_id, source=Source.WORKFLOW)
    return issue(identity, key, ttl, now, kind=WORKFLOW, token_id=workflow_jti(workflow_id), workflow=workflow_id)


def _signer(body: str, signature: bytes, ring: KeyRing, encoded_claims: str) -> str:
    """The id of the ring's key that made `signature`, or InvalidToken. A key the ring does not hold yet (a newer
    one made elsewhere) is looked up by the id the claims name; nothing else of them is read before the check."""
    for key in ring.candidates():
        if hmac.compare_digest(_sign(body, key), signature):
            return key_id(key)
    named = _named_kid(encoded_claims)
    found = ring.key_for(named) if named else None
    if found is not None and hmac.compare_digest(_sign(body, found), signature):
        return named
    raise InvalidToken("bad signature")


def _named_kid(encoded_claims: str) -> str:
    try:
        return str(msgspec.json.decode(_unb64(encoded_claims)).get("kid") or "")
    except (msgspec.DecodeError, AttributeError, InvalidToken):
        return ""


def _sign(body: str, key: bytes) -> bytes:
    return hmac.new(key, body.encode(), hashlib.sha256).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise InvalidToken("malformed", "not base64url") from None
