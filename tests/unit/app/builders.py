"""An in-memory Roving application and principals for application-layer tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from domain.app import ReadModels, Roving
from domain.tenancy import Role
from domain.tenancy.permissions import Principal

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


class PlainHasher:
    """Tests need no real hashing cost; production injects scrypt."""

    def hash(self, password: str) -> str:
        return "plain$" + password

    def verify(self, password: str, stored: str) -> bool:
        return stored == "plain$" + password


def app(read_models: ReadModels | None = None) -> Roving:
    """Without read models the application knows no nodes, no owners' allocations and reads priorities itself."""
    env = {"PERSISTENCE_MODULE": "eventsourcing.popo", "ROVING_CLUSTER": "test",
           "TRANSCODER_TOPIC": "adapters.transcoder:MsgspecTranscoder"}  # the production transcoder
    return Roving(env=env, passwords=PlainHasher(), read_models=read_models)


ADMIN = Principal(user_id=uuid4(), username="root", role=Role.CLUSTER_ADMIN, organization_id=None,
                  is_cluster_admin=True)


def user(org=None, name="alice") -> Principal:
    return Principal(user_id=uuid4(), username=name, role=Role.USER, organization_id=org or uuid4())


def later(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


PIPELINE = """
version: v4
jobs:
  pre:
    image: {uri: docker://alpine}
    script: echo pre
    policy:
      retry: {on: [75, node], attempts: 2}
  post:
    image: {uri: docker://alpine}
    script: echo post
    depends-on: [{name: pre, status: FINISHED}]
"""
