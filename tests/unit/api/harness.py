"""An in-process API over the real application (in-memory store) and real views, driven through httpx."""

from __future__ import annotations

import asyncio
import tempfile
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from adapters.auth.tokens import Identity, issue, issue_webhook
from adapters.catalog_store import open_catalog
from adapters.secret_store import open_secret_store
from api.composition.services import Services
from api.composition.settings import load_settings
from api.http.app import create_app
from domain.app import ReadModelFunctions, Roving
from domain.app.ids import user_id
from domain.tenancy import Role, Source
from domain.tenancy.permissions import Principal
from projections.provisioners import pool_definitions
from projections.views import Views
from tests.unit.api.memory_objects import MemoryObjects

KEY = b"k" * 32
PASSWORD = "Correct-Horse-9-battery"
SYSTEM = Principal(user_id=None, username="setup", role=Role.CLUSTER_ADMIN, organization_id=None, is_cluster_admin=True)


class PlainHasher:
    def hash(self, password: str) -> str:
        return "plain$1$1$" + password

    def verify(self, password: str, stored: str) -> bool:
        return stored == "plain$1$1$" + password


class SyncTailer:
    """Feeds the views from the application's recorder when asked to wait: read-your-writes without a thread."""

    def __init__(self, app: Roving, views: Views) -> None:
        self.app, self.views, self.caught_up = app, views, True

    def wait_for(self, position: int, timeout: float = 5.0) -> bool:
        while self.views.position < position:
            records = self.app.recorder.select_notifications(start=self.views.position + 1, limit=500)
            if not records:
                return False
            self.views.apply([(r.id, self.app.mapper.to_domain_event(r)) for r in records])
        return True


class FakeLogs:
    """The control plane's LogReader as the routes see it: a synchronous read (it may block, retrying an outage)."""

    def __init__(self) -> None:
        self.lines: dict[tuple[str, str], bytes] = {}

    def read(self, workflow_id: str, stage: str) -> bytes:
        return self.lines.get((workflow_id, stage), b"")

    def read_range(self, workflow_id: str, stage: str, offset: int, limit: int | None) -> tuple[bytes, int]:
        whole = self.read(workflow_id, stage)
        start = offset if offset >= 0 else max(0, len(whole) + offset)
        return whole[start:None if limit is None else start + limit], len(whole)

    async def follow(self, workflow_id: str, stage: str):
        """What was written, as stdout, then the end (the real follow waits for the stage's end marker)."""
        if text := self.lines.get((workflow_id, stage), b""):
            yield "stdout", text


class FakeLeases:
    def __init__(self) -> None:
        self.touched: list[str] = []

    def touch(self, node: str) -> None:
        self.touched.append(node)


def services(wired: bool = False) -> Services:
    """`wired`: the application asks the views about owners' priorities and live allocations, as `roving up`'s does
    (a priority change then moves the owner's queued allocations)."""
    env = {"PERSISTENCE_MODULE": "eventsourcing.popo", "ROVING_CLUSTER": "test",
           "TRANSCODER_TOPIC": "adapters.transcoder:MsgspecTranscoder"}
    views = Views()
    wiring = {"priorities": views.tenancy.owner_priorities,
              "allocations_of_owner": views.queue.live_allocations_of,
              "definitions": lambda: pool_definitions(views.nodes, views.provisioners)} if wired else {}
    read_models = ReadModelFunctions(projects=views.projects.paths, projects_of=views.projects.member_of, **wiring)
    roving = Roving(env=env, passwords=PlainHasher(), read_models=read_models)
    secrets = open_secret_store(roving, tempfile.mkdtemp(prefix="roving-secrets-"))  # its key ring is made on first use
    catalog = open_catalog(roving, views.catalog_sources.sources, tempfile.mkdtemp(prefix="roving-catalog-"))
    return Services(roving=roving, views=views, tailer=SyncTailer(roving, views), key=KEY, logs=FakeLogs(),
                    leases=FakeLeases(), nats_url="nats://control:c0ntrol@127.0.0.1:4222",
                    agent_nats_url="nats://agent:ag3nt@127.0.0.1:4222", cluster="test", secrets=secrets,
                    catalog=catalog, objects=MemoryObjects())


def token(username: str, role: Role = Role.USER, org: Any = None, source: Source = Source.ADMIN,
          ttl: timedelta = timedelta(hours=1), now: datetime | None = None) -> str:
    identity = Identity(user_id=user_id(username) if source is Source.ADMIN else None, username=username, role=role,
                        organization_id=org, source=source)
    return issue(identity, KEY, ttl, now or datetime.now(UTC))


def webhook_token() -> str:
    return issue_webhook("alertmanager", KEY, datetime.now(UTC))


class Api:
    """A synchronous face on the ASGI app for tests that read as sentences."""

    def __init__(self, env: dict[str, str] | None = None, wired: bool = False) -> None:
        self.services = services(wired)
        self.app = create_app(load_settings(env or {}), self.services)
        now = datetime.now(UTC)
        self.services.roving.create_user(None, "admin", "admin@example.org", PASSWORD, "cluster_admin", SYSTEM, now)
        self.admin = token("admin", Role.CLUSTER_ADMIN)
        self.services.tailer.wait_for(self.services.roving.last_position)

    def request(self, method: str, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}))
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return asyncio.run(self._send(method, path, headers, kwargs))

    async def _send(self, method: str, path: str, headers: dict, kwargs: dict) -> httpx.Response:
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://roving.test") as client:
            return await client.request(method, path, headers=headers, **kwargs)

    def organization_with_user(self, org: str, username: str, role: str = "user") -> tuple[str, str]:
        """An organization and one user in it; returns (org id, the user's token)."""
        org_id = self.request("POST", "/v4/organizations", self.admin, json={"name": org}).json()["id"]
        body = {"username": username, "email": f"{username}@{org}.org", "password": PASSWORD, "role": role}
        created = self.request("POST", f"/v4/organizations/{org_id}/users", self.admin, json=body)
        assert created.status_code == 201, created.text
        login = self.request("POST", "/v4/auth/login", json={"username": username, "password": PASSWORD})
        return org_id, login.json()["token"]


JOB = """
version: v1
jobs:
  hello:
    image: {uri: docker://alpine}
    script: echo hello
    resource: {cpu: {cores: 1}, memory: {size: 1GiB}}
"""
