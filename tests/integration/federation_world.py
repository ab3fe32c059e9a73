"""Control planes for federation tests: members whose application writes to their own nats-server (so the
hub sources real ROVING_<CLUSTER> streams), and a federated control plane that reads the hub."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import msgspec
import nats

from adapters.logs import LogWriter
from api.composition.services import Services
from api.composition.settings import load_settings
from api.http.app import create_app
from domain.app import Roving
from domain.tenancy import Role
from projections.views import Views
from tests.integration.ledger import env_for
from tests.unit.api.harness import JOB, KEY, PASSWORD, SYSTEM, Api, FakeLeases, FakeLogs, PlainHasher, SyncTailer, token


def member_api(url: str, cluster: str) -> Api:
    """A control plane of `cluster` on the nats-server at `url`, driven in process like the unit tests' Api."""
    api = Api.__new__(Api)
    roving, views = Roving(env=env_for(url, cluster), passwords=PlainHasher()), Views()
    api.services = Services(roving=roving, views=views, tailer=SyncTailer(roving, views), key=KEY,
                            logs=FakeLogs(), leases=FakeLeases(), nats_url=url, cluster=cluster)
    api.app = create_app(load_settings({"ROVING_CLUSTER": cluster}), api.services)
    stored = roving.recorder.max_notification_id() or 0  # a restarted member reads what it holds
    if not stored:
        roving.create_user(None, "admin", "admin@example.org", PASSWORD, "cluster_admin", SYSTEM, datetime.now(UTC))
    api.admin = token("admin", Role.CLUSTER_ADMIN)
    api.services.tailer.wait_for(roving.last_position or stored)
    return api


def federated_api(hub_url: str) -> Api:
    """This control plane (cluster `test`, in memory), told where the hub is."""
    api = Api()
    api.app.state.settings = msgspec.structs.replace(load_settings({}), federation_hub=hub_url)
    return api


def close(api: Api) -> None:
    api.services.roving.close()


def tenant(api: Api, org: str, username: str) -> str:
    """The user's token, creating the organization and the user unless this cluster has them already."""
    login = api.request("POST", "/v4/auth/login", json={"username": username, "password": PASSWORD})
    if login.status_code == 200:
        return login.json()["token"]
    return api.organization_with_user(org, username)[1]


def submit(api: Api, who: str, name: str) -> str:
    answer = api.request("POST", "/v4/workflows", who, json={"name": name, "definition": JOB})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def write_log(url: str, cluster: str, workflow_id: str, stage: str, text: bytes) -> None:
    """A stage's output on the cluster's own LOGS stream, as its node agent writes it."""
    async def write() -> None:
        nc = await nats.connect(url)
        writer = await LogWriter(nc.jetstream(), cluster, flush_interval=0.02).start()
        try:
            writer.append(workflow_id, stage, "stdout", text)
            writer.end(workflow_id, stage, "exited")
        finally:
            await writer.close()
            await nc.close()
    asyncio.run(write())
