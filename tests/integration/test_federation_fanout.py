"""Fan-out through a real hub and two member clusters (the topology of test_federation.py), each member a
control plane writing its own stream: `queue show|stats` on a federated control plane merge both members and
scope by cluster, `workflow why|log` answer for another cluster's workflow, a tenant sees only their own work
through the hub, a stop is refused naming the owning cluster, and a member that goes down is shown stale with
its data, then converges with nothing duplicated when it returns."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.nats_server import NatsServer
from api.federate.main import federate_main
from domain.scheduler.reasons import Reason, Why
from tests.integration.federation_world import close, federated_api, member_api, submit, tenant, write_log
from tests.integration.test_federation import member_server, topology, wait_for  # noqa: F401 - pytest fixture, found by name

NEEDS = "needs 64 cores; the largest node has 8"
C2_URL = "https://c2.example:8080"


def queue(api: Any, who: str | None = None, **params: Any) -> dict:
    answer = api.request("GET", "/v4/scheduler/queue", who or api.admin, params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def rows(answer: dict) -> Counter:
    """(cluster, workflow id) of every row, counted: a duplicate shows as a 2."""
    return Counter((r["cluster"], r["workflow_id"]) for r in answer["queue"])


def clusters(answer: dict) -> dict[str, dict]:
    return {c["cluster"]: c for c in answer["clusters"]}


def test_fan_out_why_tenancy_and_a_member_down_then_back(
    topology: dict[str, NatsServer], capsys: pytest.CaptureFixture[str]  # noqa: F811 - the imported fixture
) -> None:
    hub, c1, c2 = topology["hub"], topology["c1"], topology["c2"]
    members = {"c1": member_api(c1.url, "c1"), "c2": member_api(c2.url, "c2")}
    here = federated_api(hub.url)
    try:
        ids: dict[str, dict[str, str]] = {}
        for cluster, api in members.items():
            alice, bob = tenant(api, "acme", "alice"), tenant(api, "globex", "bob")
            ids[cluster] = {"alice": submit(api, alice, f"{cluster}-alice"), "bob": submit(api, bob, f"{cluster}-bob")}
        waiting = next(r.id for r in members["c1"].services.views.queue.rows()
                       if str(r.workflow_id) == ids["c1"]["alice"])
        members["c1"].services.roving.record_blocked(waiting, Why(reason=Reason.INSUFFICIENT_RESOURCES, message=NEEDS),
                                                      by="scheduler", at=datetime.now(UTC))
        write_log(c1.url, "c1", ids["c1"]["alice"], "hello", b"hello from c1\n")
        assert federate_main(["--hub", hub.url, "--member", "c1", "--member", "c2", "--api", f"c2={C2_URL}"]) == 0
        alice = tenant(here, "acme", "alice")
        expected = Counter((c, w) for c, by in ids.items() for w in by.values())

        # fan-out: both members' rows, each labelled; this cluster has none
        answer = wait_for(lambda: (a := queue(here)) and rows(a) == expected and a, what="both members in the queue")
        assert {c: (x["available"], x["stale"]) for c, x in clusters(answer).items()} == {
            "c1": (True, False), "c2": (True, False), "test": (True, False)}
        assert all(x["last_event_age_seconds"] < 60 for c, x in clusters(answer).items() if c != "test")
        stats = here.request("GET", "/v4/scheduler/stats", here.admin).json()
        assert {c["cluster"]: c["total"] for c in stats["clusters"]} == {"c1": 2, "c2": 2, "test": 0}

        # scoping, and a cluster the federation does not know
        assert set(rows(queue(here, cluster="c2"))) == {("c2", w) for w in ids["c2"].values()}
        assert rows(queue(here, cluster=["c1", "c2"])) == expected
        unknown = here.request("GET", "/v4/scheduler/queue", here.admin, params={"cluster": "c1,c3"})
        assert unknown.status_code == 400 and "unknown cluster 'c3'" in unknown.json()["error"]

        # why and log across clusters, as the workflow's own tenant
        why = here.request("GET", f"/v4/workflows/{ids['c1']['alice']}/why", alice).json()
        assert why["cluster"] == "c1" and (why["stages"][0]["reason"], why["stages"][0]["detail"]) == (
            "INSUFFICIENT_RESOURCES", NEEDS)
        log = here.request("GET", f"/v4/workflows/{ids['c1']['alice']}/log/hello", alice)
        assert log.status_code == 200 and log.text == "hello from c1\n", log.text

        # tenancy through the hub: only alice's rows; bob's work is not found, whichever cluster has it
        assert set(rows(queue(here, alice))) == {(c, by["alice"]) for c, by in ids.items()}
        for cluster in ("c1", "c2"):
            assert here.request("GET", f"/v4/workflows/{ids[cluster]['bob']}/why", alice).status_code == 404

        # a stop on another cluster's workflow is refused, naming that cluster and where it is
        stop = here.request("PATCH", f"/v4/workflows/{ids['c2']['alice']}:stop", alice)
        assert stop.status_code == 409 and (stop.json()["cluster"], stop.json()["url"]) == ("c2", C2_URL)

        # c2 goes down: still listed, with its rows, stale with the age of its data; c1 keeps working
        close(members.pop("c2"))
        c2.stop()
        down = wait_for(lambda: (a := queue(here)) and clusters(a)["c2"]["stale"] and a, what="c2 shown stale")
        assert clusters(down)["c2"]["available"] is False and clusters(down)["c2"]["last_event_age_seconds"] >= 0
        assert rows(down) == expected
        described = here.request("GET", f"/v4/workflows/{ids['c2']['alice']}", alice).json()
        assert (described["cluster"], described["stale"]) == ("c2", True)
        more = submit(members["c1"], tenant(members["c1"], "acme", "alice"), "c1-during-outage")
        expected[("c1", more)] += 1
        wait_for(lambda: rows(queue(here)) == expected, what="c1's new work while c2 is down")

        # c2 returns with its store and works again: the view converges, nothing twice
        topology["c2"] = c2 = member_server(c2.store_dir.parent, "c2", hub, port=c2.port).start()
        members["c2"] = member_api(c2.url, "c2")
        later = submit(members["c2"], tenant(members["c2"], "acme", "alice"), "c2-after-outage")
        expected[("c2", later)] += 1
        back = wait_for(lambda: (a := queue(here)) and rows(a) == expected and not clusters(a)["c2"]["stale"] and a,
                        timeout=30, what="c2 back and the queue converged")
        assert max(rows(back).values()) == 1 and back["total"] == sum(expected.values())
        assert clusters(back)["c2"]["total"] == members["c2"].services.views.queue.stats()["total"] == 3

        # the hub itself stops: what it last held is still shown, every member stale, never an empty queue
        hub.stop()
        blind = queue(here)
        assert rows(blind) == expected and blind["hub"]["available"] is False
        assert {c: x["stale"] for c, x in clusters(blind).items()} == {"c1": True, "c2": True, "test": False}
    finally:
        for api in members.values():
            close(api)
