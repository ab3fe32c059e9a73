"""Test helpers: an in-memory application with two organizations, their people and groups, and a real cipher."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import msgspec

from adapters.secret_store import open_secret_store
from domain.agent_start import Start
from domain.app import Roving
from domain.app.ids import group_id, org_id, user_id
from domain.app.secrets import SecretHandlers
from domain.tenancy import Role, Source
from domain.tenancy.permissions import Principal
from tests.unit.agent.fake_api import wire

T0 = datetime(2026, 1, 1, tzinfo=UTC)
VALUE = "hf_live_7f3a9c2e-never-shown"
SYSTEM = Principal(user_id=None, username="setup", role=Role.CLUSTER_ADMIN, organization_id=None, is_cluster_admin=True)
ENV = {"PERSISTENCE_MODULE": "eventsourcing.popo", "ROVING_CLUSTER": "test",
       "TRANSCODER_TOPIC": "adapters.transcoder:MsgspecTranscoder"}


def start_spec(**fields: Any) -> Start:
    """A run spec as the assignments answer carries it (tests.unit.agent.fake_api.wire), typed: a job of `echo hi`,
    with `fields` in place."""
    return msgspec.convert(wire(str(uuid4()), **{"workflow_id": str(uuid4()), "stage": "train", "job": "train",
                                                 "script": "echo hi", **fields}), Start)


class PlainHasher:
    def hash(self, password: str) -> str:
        return "plain$1$1$" + password

    def verify(self, password: str, stored: str) -> bool:
        return stored == "plain$1$1$" + password


class World:
    """acme (alice a member of ml, bob its owner, olivia the org owner) and globex (mallory); admin runs the cluster."""

    def __init__(self, data_dir: Path) -> None:
        self.roving = Roving(env=ENV, passwords=PlainHasher())
        self.secrets: SecretHandlers = open_secret_store(self.roving, data_dir)
        self.acme, self.globex = self.roving.create_organization("acme", SYSTEM, T0), \
            self.roving.create_organization("globex", SYSTEM, T0)
        for name, org, role in (("alice", self.acme, "user"), ("bob", self.acme, "user"),
                                ("olivia", self.acme, "org_owner"), ("mallory", self.globex, "user")):
            self.roving.create_user(org, name, f"{name}@example.org", "Correct-Horse-9-battery", role, SYSTEM, T0)
        self.roving.create_user(None, "admin", "admin@example.org", "Correct-Horse-9-battery", "cluster_admin",
                                SYSTEM, T0)
        self.ml = self.roving.create_group(self.acme, "ml", SYSTEM, T0)
        self.roving.add_member(self.ml, user_id("bob"), "group_owner", SYSTEM, T0)
        self.roving.add_member(self.ml, user_id("alice"), "member", SYSTEM, T0)

    def who(self, name: str, source: Source = Source.ADMIN) -> Principal:
        org = {"alice": "acme", "bob": "acme", "olivia": "acme", "mallory": "globex"}.get(name)
        role = {"olivia": Role.ORG_OWNER, "admin": Role.CLUSTER_ADMIN}.get(name, Role.USER)
        groups = frozenset({group_id(org_id("acme"), "ml")}) if name in ("alice", "bob") else frozenset()
        owned = frozenset({group_id(org_id("acme"), "ml")}) if name == "bob" else frozenset()
        return Principal(user_id=user_id(name), username=name, role=role, organization_id=org_id(org) if org else None,
                         group_ids=groups, owned_group_ids=owned, is_cluster_admin=role is Role.CLUSTER_ADMIN,
                         source=source)

    def owner(self, name: str) -> dict[str, str]:
        p = self.who(name)
        groups = sorted(str(g) for g in p.group_ids)
        return {"organization_id": str(p.organization_id or ""), "group_id": groups[0] if groups else "",
                "user_id": str(p.user_id), "username": name}

    def create(self, name: str, scope: str = "user", by: str = "alice", value: str = VALUE, group: str = "") -> UUID:
        return self.secrets.create_secret(name, value, scope, self.who(by), T0, group=group)

    def stored_bytes(self) -> bytes:
        """Every event as the recorder keeps it (state bytes), concatenated."""
        records = self.roving.recorder.select_notifications(start=1, limit=100_000)
        return b"".join(r.state for r in records)
