"""What a control plane's first start makes and every start writes: the cluster admin, and its token, the
Alertmanager webhook's and the shared agent token, each a file only its owner can read in the data directory."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from adapters.auth.password_hash import ScryptPasswords
from adapters.auth.tokens import Identity, issue, issue_webhook
from adapters.private_files import write_private
from domain.app import Conflict, Roving
from domain.app.ids import user_id
from domain.tenancy import Role, Source
from domain.tenancy.permissions import Principal

TOKEN_TTL = timedelta(days=30)


def write_secret(path: Path, text: str) -> None:
    """A file only its owner can read (0600), replaced atomically (API workers may write it at once)."""
    write_private(path, text + "\n")


def password_hasher() -> ScryptPasswords:
    """The hasher the application is given: at most one hash per core in memory at once (128 MiB each), and a
    weaker stored hash made again at its next right login."""
    return ScryptPasswords()


def strong_password() -> str:
    return secrets.token_urlsafe(18) + "aA1!"


def bootstrap_admin(roving: Roving, data_dir: Path, key: Any) -> None:
    """A cluster admin exists from the first start; its token is written to the data dir (0600)."""
    now = datetime.now(UTC)
    uid = user_id("admin")
    if uid not in roving.repository:
        password = strong_password()
        system = Principal(user_id=None, username="roving-up", role=Role.CLUSTER_ADMIN, organization_id=None,
                           is_cluster_admin=True)
        try:
            roving.create_user(None, "admin", "admin@roving.local", password, "cluster_admin", system, now)
            write_secret(data_dir / "admin.password", password)
        except Conflict:
            pass
    admin = Identity(user_id=uid, username="admin", role=Role.CLUSTER_ADMIN, organization_id=None)
    write_secret(data_dir / "admin.token", issue(admin, key, TOKEN_TTL, now))
    write_secret(data_dir / "alertmanager.token", issue_webhook("alertmanager", key, now))
    agent = Identity(user_id=None, username="agent", role=Role.USER, organization_id=None, source=Source.AGENT)
    write_secret(data_dir / "agent.token", issue(agent, key, TOKEN_TTL, now))
