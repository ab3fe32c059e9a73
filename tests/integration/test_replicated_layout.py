"""A stack on a three-server NATS cluster with ROVING_NATS_REPLICAS=3 keeps every stream it makes (the event log,
the leases and probe buckets, the job log, the image and object buckets) on three servers, and a layout an R1 stack
made there moves to three replicas when the stack starts again with the setting."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import nats
import pytest

from adapters.nats_cluster import LocalCluster
from api.composition.settings import load_settings
from api.composition.stack import Stack


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    running = LocalCluster(tmp_path_factory.mktemp("cluster")).start()
    yield running
    running.stop()


def replicas_by_stream(url: str) -> dict[str, int]:
    async def read() -> dict[str, int]:
        nc = await nats.connect(url.split(","))
        try:
            return {info.config.name: info.config.num_replicas for info in await nc.jetstream().streams_info()}
        finally:
            await nc.close()
    return asyncio.run(read())


def started(data_dir: Path, url: str, cluster: str, replicas: int) -> Stack:
    settings = load_settings({"ROVING_DATA_DIR": str(data_dir), "ROVING_NATS_URL": url, "ROVING_CLUSTER": cluster,
                              "ROVING_NATS_REPLICAS": str(replicas), "ROVING_LOCAL_NODES": "0"})
    stack = Stack(settings, scheduler=False).start()
    deadline = time.monotonic() + 20
    while stack.log_probe.failure() and time.monotonic() < deadline:  # its first write makes its bucket
        time.sleep(0.1)
    token = (data_dir / "admin.token").read_text().strip()

    async def put() -> httpx.Response:  # a person's first object makes their bucket
        transport = httpx.ASGITransport(app=stack.app())
        async with httpx.AsyncClient(transport=transport, base_url="http://roving.test") as client:
            return await client.put("/v4/objects/user/notes.txt", content=b"kept on three servers",
                                    headers={"Authorization": f"Bearer {token}"})
    assert asyncio.run(put()).status_code in (200, 201)  # 200: the same content again
    return stack


def of_cluster(found: dict[str, int], cluster: str) -> dict[str, int]:
    return {name: count for name, count in found.items() if cluster.upper() in name.upper()}


def test_every_stream_a_stack_makes_on_three_servers_has_three_replicas(cluster, tmp_path: Path) -> None:
    stack = started(tmp_path, cluster.url, "ha", replicas=3)
    try:
        found = replicas_by_stream(cluster.url)
    finally:
        stack.stop()
    ours = of_cluster(found, "ha") | {name: count for name, count in found.items() if name.startswith("OBJ_")}
    kinds = {"ROVING_HA", "KV_roving_ha_leases", "KV_roving_ha_probe", "LOGS_HA"}
    assert kinds <= set(ours), found
    assert any(name.startswith("OBJ_") and "image" in name.lower() for name in ours), found
    assert len([name for name in ours if name.startswith("OBJ_")]) >= 2, found  # images and the person's bucket
    assert {name: count for name, count in found.items() if count != 3} == {}


def test_a_layout_made_with_one_replica_moves_to_three_when_the_stack_starts_again_with_three(
        cluster, tmp_path: Path) -> None:
    started(tmp_path, cluster.url, "grow", replicas=1).stop()
    assert set(of_cluster(replicas_by_stream(cluster.url), "grow").values()) == {1}
    stack = started(tmp_path, cluster.url, "grow", replicas=3)
    try:
        grown = of_cluster(replicas_by_stream(cluster.url), "grow")
    finally:
        stack.stop()
    assert {"ROVING_GROW", "KV_roving_grow_leases", "KV_roving_grow_probe", "LOGS_GROW"} <= set(grown)
    assert {name: count for name, count in grown.items() if count != 3} == {}
