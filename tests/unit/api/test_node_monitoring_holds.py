"""Monitoring holds through the webhook: the ceiling says why it refused and is counted; an alert's
`fb_release: admin` hold is released by an admin with force, and by no one else."""

import asyncio
import json
from datetime import UTC, datetime

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from api.cli.client import Client
from api.cli.main import build_parser, execute
from api.composition.refused_alerts import RefusedAlertsLoop
from domain.tenancy import Role, Source
from tests.unit.api.harness import Api, token, webhook_token

AGENT = token("agent", Role.USER, source=Source.AGENT)
MONITORING = webhook_token()


def register(api, name):
    body = {"name": name, "cpu": 2, "memory": 2**30, "devices": {}, "annotations": {}, "definition": "local",
            "address": "127.0.0.1", "metrics_port": None}
    assert api.request("POST", "/v4/agent/register", AGENT, json=body).status_code == 200


def alert(status, node="n1", **labels):
    labels = {"alertname": "RovingNodeMemoryErrors", "fb_action": "cordon", "node": node, **labels}
    one = {"status": status, "labels": labels, "annotations": {"summary": f"memory errors on {node}"},
           "fingerprint": "feed" + node, "startsAt": "2026-01-01T00:00:00Z"}
    return {"version": "4", "status": status, "receiver": "roving", "alerts": [one]}


def refused_so_far(api) -> float:
    text = api.request("GET", "/metrics").text
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == "roving_monitoring_holds_refused_total")


@pytest.fixture(scope="module")
def api():
    api = Api()
    register(api, "n1")
    register(api, "n2")
    return api


def holds_of(api, node):
    return api.request("GET", f"/v4/nodes/{node}/holds", api.admin).json()["holds"]


def test_the_default_ceiling_lets_a_two_node_pool_hold_one_node_and_refuses_the_second_saying_why(api):
    before = refused_so_far(api)
    assert api.request("POST", "/v4/alerts", MONITORING, json=alert("firing")).json()["outcomes"] == ["n1: placed"]
    [outcome] = api.request("POST", "/v4/alerts", MONITORING, json=alert("firing", node="n2")).json()["outcomes"]
    assert outcome.startswith("n2: refused: monitoring already holds 1 of 2 nodes")
    assert "limit of 1 (nodeHealth.maxMonitoringHeldPercent 20% of 2" in outcome
    assert refused_so_far(api) == before + 1
    assert holds_of(api, "n2") == []


def test_a_refused_hold_is_placed_once_the_ceiling_is_raised_not_an_hour_later(api):
    loop = RefusedAlertsLoop(api.services.roving, api.services.views, runner=None)
    assert loop.tick(datetime.now(UTC)) == []  # no room yet
    changed = api.request("PUT", "/v4/admin/centralconfig", api.admin, json={"nodeHealth.maxMonitoringHeldPercent": 100})
    assert changed.status_code == 200, changed.text
    api.services.tailer.wait_for(api.services.roving.last_position)
    assert len(loop.tick(datetime.now(UTC))) == 1
    api.services.tailer.wait_for(api.services.roving.last_position)
    [hold] = holds_of(api, "n2")
    assert (hold["source"], hold["reason"], hold["by"]) == ("monitoring", "memory errors on n2", "alertmanager")
    for node in ("n1", "n2"):
        assert api.request("POST", "/v4/alerts", MONITORING, json=alert("resolved", node=node)).json()["outcomes"] == [
            f"{node}: released"]


@pytest.fixture(scope="module")
def kept(api):
    """A hold placed by an alert labelled fb_release: admin, whose alert has resolved."""
    changed = api.request("PUT", "/v4/admin/centralconfig", api.admin, json={"nodeHealth.maxMonitoringHeldPercent": 50})
    assert changed.status_code == 200, changed.text
    placed = api.request("POST", "/v4/alerts", MONITORING, json=alert("firing", fb_release="admin"))
    assert placed.json()["outcomes"] == ["n1: placed"]
    resolved = api.request("POST", "/v4/alerts", MONITORING, json=alert("resolved", fb_release="admin"))
    assert "--force" in resolved.json()["outcomes"][0]
    [hold] = api.request("GET", "/v4/nodes/n1/holds", api.admin).json()["holds"]
    return hold["id"]


def test_an_admin_without_force_is_told_to_use_it(api, kept):
    answer = api.request("DELETE", f"/v4/nodes/n1/holds/{kept}", api.admin)
    assert answer.status_code == 403
    assert "by an admin with force" in answer.text


def test_a_user_asking_for_force_is_refused_clearly(api, kept):
    _, user = api.organization_with_user("acme", "mallory")
    answer = api.request("DELETE", f"/v4/nodes/n1/holds/{kept}?force=true", user)
    assert answer.status_code == 403
    assert answer.json()["error"] == "managing nodes needs the cluster admin role"
    assert len(api.request("GET", "/v4/nodes/n1/holds", api.admin).json()["holds"]) == 1


def test_a_bad_force_value_is_a_400_naming_force(api, kept):
    answer = api.request("DELETE", f"/v4/nodes/n1/holds/{kept}?force=maybe", api.admin)
    assert answer.status_code == 400 and "force" in answer.text


def test_an_admin_releases_it_with_force_from_the_cli(api, kept, capsys):
    def handle(request: httpx.Request) -> httpx.Response:
        answer = api.request(request.method, str(request.url), api.admin, content=request.content)
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)
    client = Client("http://roving.test", transport=httpx.MockTransport(handle))
    args = build_parser().parse_args(["node", "hold", "release", "n1", kept, "--force", "-o", "json"])
    assert execute(args, client) == 0
    printed = "".join(line for line in capsys.readouterr().out.splitlines(True) if " request " not in line)
    assert json.loads(printed) == {"released": [kept]}
    assert api.request("GET", "/v4/nodes/n1/holds", api.admin).json()["holds"] == []


def test_two_nodes_alerted_at_once_are_decided_one_after_the_other_so_the_ceiling_holds():
    api = Api()
    register(api, "n1")
    register(api, "n2")

    async def both():
        transport = httpx.ASGITransport(app=api.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://roving.test") as client:
            headers = {"Authorization": f"Bearer {MONITORING}"}
            return await asyncio.gather(*(client.post("/v4/alerts", json=alert("firing", node=n), headers=headers)
                                          for n in ("n1", "n2")))
    outcomes = sorted(o for answer in asyncio.run(both()) for o in answer.json()["outcomes"])
    assert [o.split(": ")[1] for o in outcomes].count("placed") == 1, outcomes
    assert sum(bool(holds_of(api, n)) for n in ("n1", "n2")) == 1
