"""The shipped secure R3 layout as adapters.nats_shipped_cluster starts it on loopback (what the R3 benches measure) is
what it claims: anonymous and plain-text clients are refused, a server with another site's certificate cannot join its
routes, and a stack given the admin guide's settings runs its jobs to the end on R3 streams whose store is encrypted."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import nats
import pytest

from adapters.nats_server import NatsServerError, find_binary, free_ports
from adapters.nats_shipped_cluster import ShippedCluster, make_site, shipped_node
from adapters.nats_tls import connect_options, with_tls
from tests.e2e.stack import LocalStack
from tests.nats_connect import connect_refusal

try:
    find_binary()
    NO_SERVER = ""
except NatsServerError as error:
    NO_SERVER = str(error)
pytestmark = pytest.mark.skipif(bool(NO_SERVER), reason=NO_SERVER)

JOB = """
version: v4
jobs:
  hello:
    image: {uri: docker://alpine:3.20}
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    script: echo plaintext-marker-4f1c
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    running = ShippedCluster(tmp_path_factory.mktemp("shipped")).start()
    yield running
    running.stop()


def test_anonymous_and_plain_text_clients_are_refused_by_every_server(cluster: ShippedCluster) -> None:
    for server in cluster.servers:
        assert "CERTIFICATE_VERIFY_FAILED" in asyncio.run(connect_refusal(server.address))
        trusting = with_tls(server.address, cluster.site / "tls" / "ca.pem")
        assert "Authorization Violation" in asyncio.run(connect_refusal(trusting))
        assert asyncio.run(connect_refusal(server.url_for("reader"))) == "connected"


def test_a_server_with_another_sites_certificate_hears_nothing_the_cluster_carries(cluster: ShippedCluster,
                                                                                   tmp_path: Path) -> None:
    other = tmp_path / "site"
    make_site(other, ("local",))
    route, client = free_ports(2)
    routes = [*cluster.routes, route]
    intruder = shipped_node(tmp_path / "n", other, len(routes) - 1, routes, client).start()
    try:
        assert asyncio.run(heard_on(intruder.url_for("control"), cluster.url_for("control"))) == []
    finally:
        intruder.stop()
    refused = [line for s in cluster.servers for line in s.log_path.read_text().splitlines() if "TLS route" in line]
    assert refused, "no server of the cluster logged the intruder's refused route"


async def heard_on(listener_url: str, speaker_url: str, seconds: float = 3.0) -> list[bytes]:
    """What a subscriber on `listener_url` hears of `speaker_url`'s publishes over `seconds` (routes retry each second)."""
    listener = await nats.connect(**connect_options(listener_url))
    speaker = await nats.connect(**connect_options(speaker_url))
    heard: list[bytes] = []

    async def hear(msg: nats.aio.msg.Msg) -> None:
        heard.append(msg.data)
    try:
        await listener.subscribe("probe.route", cb=hear)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await speaker.publish("probe.route", b"from the cluster")
            await asyncio.sleep(0.2)
    finally:
        await speaker.close()
        await listener.close()
    return heard


def test_a_stack_with_the_admin_guides_settings_runs_jobs_on_encrypted_r3_streams(cluster: ShippedCluster,
                                                                                 tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    stack = LocalStack(tmp_path / "data", nodes=1, settings=cluster.env).start()
    try:
        workflow = stack.submit(JOB, name="plaintext-marker-4f1c")
        assert stack.wait_status(workflow, ("FINISHED", "FAILED", "CANCELED"))["status"] == "FINISHED"
        stack.stage_log(workflow, "hello", "plaintext-marker-4f1c")
    finally:
        stack.stop()
    assert asyncio.run(replicas(cluster.url_for("control"), "ROVING_LOCAL")) == 3
    stores = [path for s in cluster.servers for path in (s.store_dir / "jetstream").rglob("*") if path.is_file()]
    assert stores and not [p for p in stores if b"plaintext-marker-4f1c" in p.read_bytes()]


async def replicas(url: str, stream: str) -> int:
    nc = await nats.connect(**connect_options(url))
    try:
        return (await nc.jetstream().stream_info(stream)).config.num_replicas
    finally:
        await nc.close()
