"""Test helpers: endpoints and workflow ids in a line."""

from datetime import UTC, datetime, timedelta
from uuid import UUID

from domain.endpoint import Endpoint

T0 = datetime(2025, 1, 1, tzinfo=UTC)
OLD, NEW, OTHER = UUID(int=1), UUID(int=2), UUID(int=3)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def endpoint(name: str = "llm-chat", owner_kind: str = "user", owner_id: str = "alice", scope: str = "user",
             **kwargs) -> Endpoint:
    return Endpoint.create(UUID(int=100), name, owner_kind, owner_id, scope, by="alice", at=T0, **kwargs)


def bound(workflow_id: UUID = OLD, port: int = 8000) -> Endpoint:
    ep = endpoint()
    ep.request_binding(workflow_id, "vllm", by="alice", at=at(1))
    ep.service_ready(workflow_id, "vllm", "10.0.0.5", port, by="agent", at=at(2))
    return ep
