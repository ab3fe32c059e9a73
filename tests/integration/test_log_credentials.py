"""The log asks who is calling: anonymous and wrong-password clients are refused, each role keeps to its
subjects (an agent appends job output and can never write an event), and the store is encrypted on disk."""

from __future__ import annotations

import asyncio
import contextlib
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import nats
import nats.errors
import nats.js.errors
import pytest

from adapters.federation import Federation
from adapters.federation_members import Member
from adapters.logs import Logs
from adapters.nats_auth import Credentials, agent_log_url, agent_url, without_credentials
from adapters.nats_server import LeafSpec, NatsServer
from adapters.nats_tls import connect_options
from api.agent.args import AgentConfig
from api.agent.main import run_agent
from tests.integration.ledger import Ledger, Ledgers, env_for
from tests.unit.agent.fake_api import A1, FakeApi

CLUSTER = "creds"
EVENT_SUBJECT = f"roving.{CLUSTER}.workflow.{uuid4()}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path_factory.mktemp("creds") / "nats", clusters=(CLUSTER,)).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def ledgers(server: NatsServer) -> Iterator[Ledgers]:
    """The control plane's log: its streams exist, written with the control plane's credentials."""
    app = Ledgers(env=env_for(server.url, CLUSTER))
    app.open_with_entries(2)
    yield app
    app.close()


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 30))


async def refusal(url: str) -> str:
    nc = nats.NATS()
    try:
        await nc.connect(url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=2, error_cb=_ignore)
    except Exception as error:  # noqa: BLE001 - the refusal is what the test reads
        return str(error)
    finally:
        with contextlib.suppress(TimeoutError):  # nats-py's close hangs after a failed TLS handshake
            await asyncio.wait_for(nc.close(), 2)  # a refused connect leaves its socket open otherwise
    return "connected"


async def _ignore(_: Exception) -> None:
    return None


class Session:
    """One client connection that remembers every error the server sent it."""

    def __init__(self, url: str) -> None:
        self.url, self.errors = url, []

    async def __aenter__(self) -> Session:
        async def record(error: Exception) -> None:
            self.errors.append(str(error))

        self.nc = await nats.connect(self.url, error_cb=record, allow_reconnect=False)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.nc.close()

    async def violations(self) -> list[str]:
        await self.nc.flush()
        await asyncio.sleep(0.2)
        return [e.lower() for e in self.errors if "permissions violation" in e.lower()]  # nats-py lowercases


def test_an_anonymous_client_is_refused(server: NatsServer) -> None:
    assert "Authorization Violation" in run(refusal(server.address))


def test_a_client_with_a_wrong_password_is_refused(server: NatsServer) -> None:
    wrong = Credentials(server.auth["control"].user, "not-the-password")
    assert "Authorization Violation" in run(refusal(wrong.url(server.address)))


def test_a_client_with_another_roles_user_and_the_control_password_is_refused(server: NatsServer) -> None:
    mixed = Credentials(server.auth["agent"].user, server.auth["control"].password)
    assert "Authorization Violation" in run(refusal(mixed.url(server.address)))


def test_credentials_the_store_key_and_the_config_are_readable_by_their_owner_only(server: NatsServer) -> None:
    secrets = [server.auth.path(role) for role in ("control", "agent", "federation", "reader")]
    for path in [*secrets, server.store_dir / "store.key", server.config_path]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert server.auth["control"].password not in without_credentials(server.url)


def test_an_agent_cannot_publish_a_workflow_event(server: NatsServer, ledgers: Ledgers) -> None:
    async def attempt() -> tuple[list[str], bool]:
        async with Session(server.url_for("agent")) as agent:
            await agent.nc.publish(EVENT_SUBJECT, b'{"forged": true}')
            with pytest.raises(nats.errors.TimeoutError):
                await agent.nc.jetstream().publish(EVENT_SUBJECT, b'{"forged": true}', timeout=1)
            return await agent.violations(), await stored(server, EVENT_SUBJECT)

    violations, landed = run(attempt())
    assert any(f'publish to "{EVENT_SUBJECT}"' in v for v in violations)
    assert landed is False


def test_an_agent_cannot_read_the_event_log_or_the_control_planes_replies(server: NatsServer, ledgers) -> None:
    async def attempt() -> list[str]:
        async with Session(server.url_for("agent")) as agent:
            await agent.nc.subscribe(f"roving.{CLUSTER}.>")
            await agent.nc.subscribe("_ROVING_CONTROL.>")
            await agent.nc.publish(f"$JS.API.DIRECT.GET.ROVING_{CLUSTER.upper()}", b'{"seq": 1}')
            await agent.nc.publish(f"$JS.API.STREAM.DELETE.ROVING_{CLUSTER.upper()}", b"")
            return await agent.violations()

    violations = run(attempt())
    assert f'subscription to "roving.{CLUSTER}.>"' in violations[0]
    assert 'subscription to "_roving_control.>"' in violations[1]
    assert "direct.get" in violations[2] and "stream.delete" in violations[3]


def test_a_reader_reads_events_but_cannot_write_or_delete_them(server: NatsServer, ledgers: Ledgers) -> None:
    stream = f"ROVING_{CLUSTER.upper()}"

    async def attempt() -> tuple[int, list[str]]:
        async with Session(server.url_for("reader")) as reader:
            first = await reader.nc.jetstream().get_msg(stream, 1, direct=True)
            await reader.nc.publish(EVENT_SUBJECT, b"{}")
            await reader.nc.publish(f"$JS.API.STREAM.PURGE.{stream}", b"")
            return first.seq, await reader.violations()

    seq, violations = run(attempt())
    assert seq == 1
    assert any(EVENT_SUBJECT in v for v in violations) and any("stream.purge" in v for v in violations)


def test_an_agent_given_its_own_url_writes_job_logs_the_control_plane_reads(server, tmp_path: Path) -> None:
    url = agent_log_url(server.url, server.store_dir.parent)
    assert url == server.url_for("agent")

    async def main(api: FakeApi) -> bytes:
        stop = asyncio.Event()
        config = AgentConfig(node="n1", api=api.url, token="tok", cpus=1, memory=2**30, devices={},
                             workdir=tmp_path, heartbeat=0.2, poll=0.05, kill_grace=0.3)
        control = await nats.connect(server.url)
        logs = Logs(control.jetstream(), CLUSTER)
        await logs.ensure()  # the control plane creates the stream; an agent may only look it up
        agent = asyncio.create_task(run_agent(config, stop))
        try:
            return b"".join([chunk async for chunk in logs.follow("wf-1", "job")])
        finally:
            stop.set()
            await agent
            await control.close()

    with FakeApi() as api:
        api.config = {"nats_url": url, "cluster": CLUSTER}
        api.start = [{"allocation_id": A1, "epoch": 1, "workflow_id": "wf-1", "stage": "job", "script": "echo out"}]
        assert asyncio.run(asyncio.wait_for(main(api), 15)) == b"out\n"


def test_an_agent_cannot_make_a_stream_that_would_capture_events(server: NatsServer) -> None:
    async def attempt() -> list[str]:
        async with Session(server.url_for("agent")) as agent:
            with pytest.raises(nats.errors.TimeoutError):
                await agent.nc.jetstream(timeout=1).add_stream(name="LOGS_OTHER", subjects=[f"roving.{CLUSTER}.>"])
            return await agent.violations()

    assert any('publish to "$js.api.stream.create.logs_other"' in v for v in run(attempt()))


def test_agents_are_never_handed_the_control_planes_credentials(tmp_path: Path) -> None:
    control = Credentials("roving-control", "cp-secret").url("nats://10.0.0.1:4222")
    agent = Credentials("roving-agent", "ag-secret")
    assert agent_url(control, agent) == "nats://roving-agent:ag-secret@10.0.0.1:4222"
    assert agent_url(control, None) == "nats://10.0.0.1:4222"
    assert agent_log_url(control, tmp_path) == "nats://10.0.0.1:4222"  # no agent.creds in this data dir
    assert agent_url("nats://10.0.0.1:4222", agent) == "nats://10.0.0.1:4222"  # an open server stays open


async def stored(server: NatsServer, subject: str) -> bool:
    nc = await nats.connect(server.url)
    try:
        await nc.jetstream().get_last_msg(f"ROVING_{CLUSTER.upper()}", subject)
        return True
    except nats.js.errors.NotFoundError:
        return False
    finally:
        await nc.close()


@pytest.mark.parametrize("secure", [True, False])
def test_a_secret_written_to_the_log_lies_in_the_store_files_only_when_the_store_is_unencrypted(
        tmp_path: Path, secure: bool) -> None:
    with NatsServer(tmp_path / "nats", secure=secure) as server:
        app = Ledgers(env=env_for(server.url, "atrest"))
        try:
            app.save(Ledger(owner="DB_PASSWORD=hunter2"))
        finally:
            app.close()
    found = [p for p in (tmp_path / "nats" / "jetstream").rglob("*") if p.is_file() and b"hunter2" in p.read_bytes()]
    assert bool(found) is not secure, found



@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path_factory.mktemp("tls") / "nats", clusters=(CLUSTER,), tls=True).start()
    yield server
    server.stop()


def test_a_tls_server_is_used_end_to_end_by_the_control_plane_trusting_the_local_ca(tls_server) -> None:
    assert tls_server.url.startswith("tls://")
    app = Ledgers(env=env_for(tls_server.url, CLUSTER))
    try:
        ledger_id = app.open_with_entries(3)
        assert app.repository.get(ledger_id).entries == [0, 1, 2]
    finally:
        app.close()


def test_a_tls_server_refuses_plain_text_and_clients_that_do_not_trust_its_ca(tls_server) -> None:
    async def plain_text() -> bytes:
        reader, writer = await asyncio.open_connection(tls_server.host, tls_server.port)
        await reader.readline()  # INFO, which says tls_required
        writer.write(f"CONNECT {{\"user\": \"{tls_server.auth['control'].user}\"}}\r\nPING\r\n".encode())
        try:
            answer = await asyncio.wait_for(reader.read(200), 5)
        except TimeoutError:
            answer = b""  # the server waits for a TLS handshake and never answers plain text
        writer.close()
        return answer

    assert b"PONG" not in run(plain_text())
    untrusting = tls_server.url_for("control").split("?")[0]  # the same server, no CA named
    assert "CERTIFICATE_VERIFY_FAILED" in run(refusal(untrusting))


def test_an_agent_on_a_tls_server_gets_its_credentials_and_the_ca(tls_server) -> None:
    url = agent_log_url(tls_server.url, tls_server.store_dir.parent)
    assert url == tls_server.url_for("agent") and "ca=%2F" in url

    async def append() -> int:
        nc = await nats.connect(**connect_options(url))
        try:
            ack = await nc.jetstream().publish(f"roving_logs.{CLUSTER}.wf.job", b"out")
            return ack.seq
        finally:
            await nc.close()

    control = Ledgers(env=env_for(tls_server.url, CLUSTER))  # a control plane makes the log stream first
    try:
        async def ensure() -> None:
            nc = await nats.connect(**connect_options(tls_server.url))
            await Logs(nc.jetstream(), CLUSTER).ensure()
            await nc.close()

        run(ensure())
        assert run(append()) >= 1
    finally:
        control.close()


def test_the_federation_user_keeps_the_hubs_stream_and_cannot_write_an_event(tmp_path: Path) -> None:
    hub = NatsServer(tmp_path / "hub", name="hub", domain="hub", leaf=LeafSpec(port=0)).start()
    member = NatsServer(tmp_path / "c1", name="c1", domain="c1", leaf=LeafSpec(remotes=[hub.leaf_url])).start()
    try:
        app = Ledgers(env=env_for(member.url, "c1"))
        app.open_with_entries(2)
        app.close()
        federation = Federation(hub.url_for("federation"), [Member("c1", "c1")])
        assert [m.cluster for m in federation.ensure()] == ["c1"]
        deadline = time.monotonic() + 15
        while (status := federation.status()).messages < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status.messages == 3 and status.members[0].reachable

        async def forge() -> list[str]:
            async with Session(hub.url_for("federation")) as session:
                await session.nc.publish("roving.c1.ledger.forged", b"{}")
                await session.nc.publish("$JS.API.STREAM.DELETE.ROVING_FEDERATED", b"")
                return await session.violations()

        violations = run(forge())
        assert any("roving.c1.ledger.forged" in v for v in violations)
        assert any("stream.delete.roving_federated" in v for v in violations)
    finally:
        member.stop()
        hub.stop()
