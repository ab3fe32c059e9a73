"""Federation on one machine: a hub (domain `hub`) and two member clusters (domains `c1`, `c2`) that
connect to it as leaf nodes. The hub's ROVING_FEDERATED sources ROVING_C1 and ROVING_C2."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID, uuid4

import nats
import pytest

from adapters.federation import FEDERATED_STREAM, Federation
from adapters.federation_members import Member, origin_sequence
from adapters.hub_log import read_federated_view
from adapters.nats_server import LeafSpec, NatsServer
from api.federate.main import federate_main
from domain.fuzzfile import parse_fuzzfile
from domain.workflow import Workflow
from tests.integration.ledger import Ledgers, env_for

FUZZFILE = "version: v4\njobs:\n  main: {image: {uri: docker://alpine:3.20}, script: 'true'}\n"
MEMBERS = [Member("c1", "c1"), Member("c2", "c2")]


def wait_for(check: Callable[[], object], timeout: float = 20.0, what: str = "condition") -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


def member_server(root: Path, cluster: str, hub: NatsServer, port: int = 0) -> NatsServer:
    return NatsServer(root / cluster, port=port, name=cluster, domain=cluster, leaf=LeafSpec(remotes=[hub.leaf_url]))


async def _read_all(url: str, stream: str) -> list[tuple[str, dict[str, str], int]]:
    """(subject, headers, sequence) of every message in `stream`, by direct gets."""
    nc = await nats.connect(url)
    try:
        found, seq = [], 1
        while True:
            request = json.dumps({"seq": seq, "next_by_subj": ">", "batch": 500}).encode()
            inbox = nc.new_inbox()
            sub = await nc.subscribe(inbox)
            await nc.publish(f"$JS.API.DIRECT.GET.{stream}", request, reply=inbox)
            page = []
            while True:
                msg = await sub.next_msg(timeout=5)
                if (msg.headers or {}).get("Status"):
                    break
                page.append((msg.headers["Nats-Subject"], dict(msg.headers), int(msg.headers["Nats-Sequence"])))
            await sub.unsubscribe()
            if not page:
                return found
            found.extend(page)
            seq = page[-1][2] + 1
    finally:
        await nc.close()


def read_all(url: str, stream: str) -> list[tuple[str, dict[str, str], int]]:
    return asyncio.run(_read_all(url, stream))


def member_keys(server: NatsServer, cluster: str) -> set[tuple[str, int]]:
    return {(cluster, seq) for _, _, seq in read_all(server.url, Member(cluster, cluster).stream)}


def federated_keys(hub: NatsServer) -> list[tuple[str, int]]:
    keys = []
    for subject, headers, _ in read_all(hub.url, FEDERATED_STREAM):
        cluster = subject.split(".")[1]
        stream, seq = origin_sequence(headers)
        assert stream == Member(cluster, cluster).stream, f"{subject} came from {stream}"
        keys.append((cluster, seq))
    return keys


def submit(app: Ledgers, name: str) -> UUID:
    at = datetime.now(UTC)
    owner = {"organization": "org", "group": "grp", "user": "alice"}
    workflow = Workflow.submit(uuid4(), name, parse_fuzzfile(FUZZFILE).definition, owner, by="alice", at=at)
    workflow.stage_started("main", 1, "n1", at)
    app.save(workflow)
    return workflow.id


@pytest.fixture
def topology(tmp_path: Path) -> Iterator[dict[str, NatsServer]]:
    hub = NatsServer(tmp_path / "hub", name="hub", domain="hub", leaf=LeafSpec(port=0)).start()
    servers = {"hub": hub}
    try:
        for cluster in ("c1", "c2"):
            servers[cluster] = member_server(tmp_path, cluster, hub).start()
        yield servers
    finally:
        for server in servers.values():
            server.stop()


def test_federated_stream_converges_to_the_union_after_a_member_outage(
    topology: dict[str, NatsServer], capsys: pytest.CaptureFixture[str]
) -> None:
    hub, c1, c2 = topology["hub"], topology["c1"], topology["c2"]
    apps = {"c1": Ledgers(env=env_for(c1.url, "c1")), "c2": Ledgers(env=env_for(c2.url, "c2"))}
    try:
        workflows = {cluster: [submit(app, f"{cluster}-wf-{n}") for n in range(3)] for cluster, app in apps.items()}
        for app in apps.values():
            for _ in range(10):
                app.open_with_entries(2)
        assert federate_main(["--hub", hub.url, "--member", "c1=c1", "--member", "c2"]) == 0
        assert "ROVING_FEDERATED on" in capsys.readouterr().out
        federation = Federation(hub.url, MEMBERS)
        assert [m.cluster for m in federation.ensure()] == ["c1", "c2"]  # idempotent

        def converged() -> bool:
            expected = member_keys(c1, "c1") | member_keys(c2, "c2")
            return set(federated_keys(hub)) == expected

        wait_for(converged, what="both clusters in the federated stream")
        subjects = [s for s, _, _ in read_all(hub.url, FEDERATED_STREAM)]
        for cluster, ids in workflows.items():
            for wid in ids:
                assert f"roving.{cluster}.workflow.{wid}" in subjects

        view = read_federated_view(hub.url)
        for cluster, ids in workflows.items():
            assert {r["id"] for r in view.workflows(cluster)} == {str(w) for w in ids}
            assert view.events(ids[0])["cluster"] == cluster
        assert all(r["status"] == "STARTED" for r in view.workflows())

        # c2 goes down; c1 keeps working.
        apps.pop("c2").close()
        c2.stop()
        status = wait_for(lambda: (s := federation.status()).member("c2").state == "unavailable" and s,
                          what="c2 shown unavailable")
        assert status.member("c2").available is False and status.member("c2").reachable is False
        assert status.member("c2").last_seen_seq > 0  # what the hub already holds is kept, not emptied
        assert status.member("c1").available is True
        capsys.readouterr()
        assert federate_main(["status", "--hub", hub.url, "-o", "json"]) == 0
        shown = {m["cluster"]: m for m in json.loads(capsys.readouterr().out)["members"]}
        assert shown["c2"]["state"] == "unavailable" and "does not answer" in shown["c2"]["error"]
        assert shown["c1"]["available"] is True
        view = read_federated_view(hub.url, status=status)
        stats = {s["cluster"]: s for s in view.queue_stats("c1,c2")}
        assert stats["c2"]["available"] is False and stats["c2"]["workflows"] == {"STARTED": 3}
        assert stats["c1"]["available"] is True
        assert view.events(workflows["c2"][0], clusters=["c2"])["available"] is False
        for _ in range(10):
            apps["c1"].open_with_entries(2)
        submit(apps["c1"], "c1-during-outage")
        wait_for(lambda: member_keys(c1, "c1") <= set(federated_keys(hub)), what="c1 events during the outage")

        # c2 returns on its old port with its old store, and works again.
        topology["c2"] = c2 = member_server(c2.store_dir.parent, "c2", hub, port=c2.port).start()
        apps["c2"] = Ledgers(env=env_for(c2.url, "c2"))
        for _ in range(5):
            apps["c2"].open_with_entries(2)
        submit(apps["c2"], "c2-after-outage")

        wait_for(converged, timeout=30, what="the federated stream to converge after c2 returned")
        keys = federated_keys(hub)
        duplicates = [k for k, n in Counter(keys).items() if n > 1]
        assert duplicates == []
        per_cluster = Counter(c for c, _ in keys)
        assert sorted(per_cluster) == ["c1", "c2"]
        # in order: each cluster's events appear in the hub in their member-stream order
        for cluster in ("c1", "c2"):
            seqs = [s for c, s in keys if c == cluster]
            assert seqs == sorted(seqs)

        status = wait_for(lambda: (s := federation.status()) and all(m.state == "in-sync" for m in s.members) and s,
                          what="both members in sync")
        assert {m.cluster: m.last_seen_seq for m in status.members} == {
            "c1": max(s for c, s in keys if c == "c1"), "c2": max(s for c, s in keys if c == "c2")}
    finally:
        for app in apps.values():
            app.close()
