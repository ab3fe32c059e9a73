"""Signed bearer tokens: HMAC-SHA256 over compact msgspec JSON claims, base64url, `rv1.<claims>.<signature>`.

Two kinds: short-lived `access` tokens for people (CLI, web) and long-lived `webhook` tokens for the
Alertmanager principal (source monitoring). `verify` accepts only the kind it is asked for, so a webhook
token never works as a login. The signing key lives in a 0600 file made by `load_or_create_key`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
import stat
from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID

import msgspec

from domain.tenancy import Principal, Role, Source

PREFIX = "rv1"
KEY_BYTES = 32
ACCESS, WEBHOOK = "access", "webhook"
WEBHOOK_TTL = timedelta(days=365)


class InvalidToken(Exception):
    """A token refused; `reason` is one of malformed, bad signature, expired, wrong kind."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class KeyFileError(Exception):
    """The signing key file is unusable: readable by others, or too short."""


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

    def principal(self, owned_group_ids: frozenset[UUID] = frozenset(),
                  explain_group_ids: frozenset[UUID] = frozenset()) -> Principal:
        """The domain principal; group ownership and grants come from the tenancy view, not the token."""
        return Principal(
            user_id=self.sub, username=self.username, role=self.role, organization_id=self.org,
            group_ids=frozenset(self.groups), owned_group_ids=owned_group_ids, explain_group_ids=explain_group_ids,
            is_cluster_admin=self.role is Role.CLUSTER_ADMIN, source=self.source,
        )


def issue(claims: Identity, key: bytes, ttl: timedelta, now: datetime, *, kind: str = ACCESS,
          token_id: str | None = None) -> str:
    """A signed token for `claims`, valid from `now` for `ttl`."""
    if ttl <= timedelta(0):
        raise ValueError(f"ttl must be positive, got {ttl}")
    issued = int(now.timestamp())
    payload = Claims(sub=claims.user_id, username=claims.username, role=claims.role, org=claims.organization_id,
                     groups=list(claims.group_ids), source=claims.source, kind=kind, iat=issued,
                     exp=issued + int(ttl.total_seconds()), jti=token_id or secrets.token_urlsafe(12))
    body = f"{PREFIX}.{_b64(msgspec.json.encode(payload))}"
    return f"{body}.{_b64(_sign(body, key))}"


def verify(token: str, key: bytes, now: datetime, *, kind: str = ACCESS) -> Claims:
    """The token's claims, or InvalidToken saying why not (signature before content: nothing unsigned is read)."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise InvalidToken("malformed", f"expected {PREFIX}.<claims>.<signature>")
    body = f"{parts[0]}.{parts[1]}"
    if not hmac.compare_digest(_sign(body, key), _unb64(parts[2])):
        raise InvalidToken("bad signature")
    try:
        claims = msgspec.json.decode(_unb64(parts[1]), type=Claims)
    except msgspec.DecodeError as error:
        raise InvalidToken("malformed", str(error)) from None
    if claims.kind != kind:
        raise InvalidToken("wrong kind", f"a {claims.kind} token where a {kind} token is needed")
    if int(now.timestamp()) >= claims.exp:
        raise InvalidToken("expired", f"at {datetime.fromtimestamp(claims.exp, now.tzinfo).isoformat()}")
    return claims


def issue_webhook(name: str, key: bytes, now: datetime, ttl: timedelta = WEBHOOK_TTL) -> str:
    """A long-lived token for the Alertmanager webhook: a monitoring principal with no account behind it."""
    identity = Identity(user_id=None, username=name, role=Role.USER, organization_id=None, source=Source.MONITORING)
    return issue(identity, key, ttl, now, kind=WEBHOOK)


def verify_webhook(token: str, key: bytes, now: datetime) -> Claims:
    return verify(token, key, now, kind=WEBHOOK)


def load_or_create_key(path: Path) -> bytes:
    """Read the signing key, or create a random one readable only by its owner (mode 0600)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    with os.fdopen(fd, "wb") as out:
        os.fchmod(out.fileno(), 0o600)  # the umask may have taken bits the mode asked for; never adds any
        out.write(secrets.token_bytes(KEY_BYTES))
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise KeyFileError(f"{path} is readable by others (mode {mode:04o}); run chmod 600 {path}")
    key = path.read_bytes()
    if len(key) < KEY_BYTES:
        raise KeyFileError(f"{path} holds {len(key)} bytes; a signing key needs at least {KEY_BYTES}")
    return key


def _sign(body: str, key: bytes) -> bytes:
    return hmac.new(key, body.encode(), hashlib.sha256).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise InvalidToken("malformed", "not base64url") from None
