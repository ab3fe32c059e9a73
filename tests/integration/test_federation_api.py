"""The federation API over a real hub and two member clusters (the topology of test_federation.py):
the fan-out answers name both clusters, `cluster=` scopes them, and a stopped member is unavailable."""

from __future__ import annotations

import json

import msgspec
import pytest

from adapters.nats_server import NatsServer
from api.composition.settings import load_settings
from api.federate.main import federate_main
from tests.integration.ledger import Ledgers, env_for
from tests.integration.test_federation import federated_keys, member_keys, submit, topology, wait_for  # noqa: F401 - pytest fixtures, found by name
from tests.unit.api.harness import Api
from tests.unit.api.test_cli import run


def api_for(hub: NatsServer) -> Api:
    api = Api()
    api.app.state.settings = msgspec.structs.replace(load_settings({}), federation_hub=hub.url)
    return api


def test_the_federation_api_fans_out_scopes_and_shows_a_stopped_member_unavailable(
    topology: dict[str, NatsServer], capsys: pytest.CaptureFixture[str]  # noqa: F811 - the imported fixture
) -> None:
    hub, c1, c2 = topology["hub"], topology["c1"], topology["c2"]
    apps = {"c1": Ledgers(env=env_for(c1.url, "c1")), "c2": Ledgers(env=env_for(c2.url, "c2"))}
    try:
        ids = {cluster: [submit(app, f"{cluster}-wf-{n}") for n in range(2)] for cluster, app in apps.items()}
        assert federate_main(["--hub", hub.url, "--member", "c1", "--member", "c2"]) == 0
        capsys.readouterr()
        wait_for(lambda: member_keys(c1, "c1") | member_keys(c2, "c2") <= set(federated_keys(hub)),
                 what="both clusters in the federated stream")
        api = api_for(hub)

        def get(path: str, **params: object) -> dict:
            answer = api.request("GET", path, api.admin, params=params)
            assert answer.status_code == 200, answer.text
            return answer.json()

        status = get("/v4/federation/status")
        assert status["exists"] is True
        assert {m["cluster"]: m["available"] for m in status["members"]} == {"c1": True, "c2": True}
        stats = {s["cluster"]: s for s in get("/v4/federation/queue/stats")["clusters"]}
        assert sorted(stats) == ["c1", "c2"]
        assert all(s["available"] is True and s["workflows"] == {"STARTED": 2} for s in stats.values())
        listed = get("/v4/federation/workflows")["workflows"]
        assert {(w["cluster"], w["id"]) for w in listed} == {(c, str(w)) for c, ws in ids.items() for w in ws}

        # scoping: repeated, comma-separated, one cluster
        assert [s["cluster"] for s in get("/v4/federation/queue/stats", cluster="c2")["clusters"]] == ["c2"]
        assert [s["cluster"] for s in get("/v4/federation/queue/stats", cluster=["c1", "c2"])["clusters"]] == ["c1", "c2"]
        only_c1 = get("/v4/federation/workflows", cluster="c1")
        assert {w["id"] for w in only_c1["workflows"]} == {str(w) for w in ids["c1"]}
        shown = get(f"/v4/federation/workflows/{ids['c2'][0]}")
        assert (shown["cluster"], shown["name"], shown["status"]) == ("c2", "c2-wf-0", "STARTED")
        events = get(f"/v4/federation/workflows/{ids['c2'][0]}/events")
        assert events["cluster"] == "c2" and events["events"] and {e["cluster"] for e in events["events"]} == {"c2"}
        scoped_out = api.request("GET", f"/v4/federation/workflows/{ids['c2'][0]}/events", api.admin,
                                 params={"cluster": "c1"})
        assert scoped_out.status_code == 404

        # c2 stops: it is unavailable in every answer, with what the hub already holds
        apps.pop("c2").close()
        c2.stop()
        wait_for(lambda: {m["cluster"]: m["state"] for m in get("/v4/federation/status")["members"]}["c2"]
                 == "unavailable", what="c2 shown unavailable")
        stats = {s["cluster"]: s for s in get("/v4/federation/queue/stats", cluster="c1,c2")["clusters"]}
        assert stats["c2"]["available"] is False and stats["c2"]["workflows"] == {"STARTED": 2}
        assert "does not answer" in stats["c2"]["error"]
        assert stats["c1"]["available"] is True
        answer = get("/v4/federation/workflows")
        assert {c["cluster"]: c["available"] for c in answer["clusters"]} == {"c1": True, "c2": False}
        assert {w["cluster"]: w["available"] for w in answer["workflows"]} == {"c1": True, "c2": False}
        events = get(f"/v4/federation/workflows/{ids['c2'][1]}/events")
        assert events["cluster"] == "c2" and events["available"] is False and events["events"]
        assert get(f"/v4/federation/workflows/{ids['c2'][1]}")["available"] is False

        capsys.readouterr()  # log lines of the stopped member's connection
        code, out, _ = run(api, api.admin, ["federation", "queue-stats", "-o", "json"], capsys)
        assert code == 0 and {s["cluster"]: s["available"] for s in json.loads(out[out.index("{\n"):])["clusters"]} == {
            "c1": True, "c2": False}

        # the hub itself stops: a 503 with the reason, not an empty federation
        hub.stop()
        down = api.request("GET", "/v4/federation/workflows", api.admin)
        assert down.status_code == 503 and "cannot reach the hub" in down.json()["error"]
    finally:
        for app in apps.values():
            app.close()
