"""Admins hold nodes, monitoring places evidence, and tenants never see each other's work."""

from __future__ import annotations

import httpx

ALERT = {
    "version": "4", "status": "firing", "receiver": "roving", "groupLabels": {}, "commonLabels": {},
    "commonAnnotations": {}, "externalURL": "http://alertmanager", "groupKey": "k", "truncatedAlerts": 0,
    "alerts": [{"status": "firing", "labels": {"alertname": "EccErrors", "fb_action": "cordon", "node": "local-2"},
                "annotations": {"summary": "ECC errors"}, "startsAt": "2026-12-01T12:00:00Z",
                "endsAt": "0001-01-01T00:00:00Z", "fingerprint": "abc123", "generatorURL": ""}],
}


def holds_of(stack, name: str) -> list[dict]:
    return next(n for n in stack.client.get("/v4/nodes").json()["nodes"] if n["name"] == name)["holds"]


def test_cordon_records_reason_and_owner_and_uncordon_releases_it(stack):
    answer = stack.client.post("/v4/nodes/local-1/cordon", json={"reason": "bios update"})
    assert answer.status_code in (200, 201), answer.text
    [hold] = holds_of(stack, "local-1")
    assert (hold["effect"], hold["source"], hold["reason"], hold["by"]) == ("cordon", "admin", "bios update", "admin")
    assert stack.client.post("/v4/nodes/local-1/uncordon").status_code == 200
    assert holds_of(stack, "local-1") == []


def test_an_alert_places_a_monitoring_hold_that_uncordon_keeps_and_resolution_releases(stack):
    config = stack.client.put("/v4/admin/centralconfig", json={"nodeHealth.maxMonitoringHeldPercent": 50})
    assert config.status_code == 200, config.text
    webhook = httpx.Client(base_url=stack.url, headers=stack.auth(stack.token("alertmanager")))
    with webhook:
        assert webhook.post("/v4/alerts", json=ALERT).status_code == 200
        assert [h["source"] for h in holds_of(stack, "local-2")] == ["monitoring"]
        stack.client.post("/v4/nodes/local-2/uncordon")
        assert [h["reason"] for h in holds_of(stack, "local-2")] == ["ECC errors"]
        resolved = {**ALERT, "status": "resolved", "alerts": [{**ALERT["alerts"][0], "status": "resolved",
                                                                "endsAt": "2026-12-01T12:10:00Z"}]}
        assert webhook.post("/v4/alerts", json=resolved).status_code == 200
    assert holds_of(stack, "local-2") == []


def test_the_webhook_token_cannot_manage_nodes(stack):
    with httpx.Client(base_url=stack.url, headers=stack.auth(stack.token("alertmanager"))) as webhook:
        assert webhook.post("/v4/nodes/local-1/cordon", json={"reason": "x"}).status_code in (401, 403)


def test_a_call_without_a_valid_token_is_refused(stack):
    assert httpx.get(stack.url + "/v4/workflows").status_code == 401
    assert httpx.get(stack.url + "/v4/workflows", headers=stack.auth("rv1.forged.token")).status_code == 401


def member(stack, org: str, username: str) -> httpx.Client:
    org_id = stack.client.post("/v4/organizations", json={"name": org}).json()["id"]
    password = "Correct-Horse-9-battery"
    created = stack.client.post(f"/v4/organizations/{org_id}/users",
                                json={"username": username, "email": f"{username}@example.org",
                                      "password": password, "role": "user"})
    assert created.status_code == 201, created.text
    token = httpx.post(stack.url + "/v4/auth/login", json={"username": username, "password": password}).json()["token"]
    return httpx.Client(base_url=stack.url, headers=stack.auth(token), timeout=30)


def test_a_tenant_never_sees_another_tenants_workflow(stack):
    alice, bob = member(stack, "org-a", "alice"), member(stack, "org-b", "bob")
    with alice, bob:
        workflow_id = stack.submit("version: v4\njobs:\n  a:\n    image: {uri: docker://alpine}\n    command: [\"true\"]\n",
                                   "alices", client=alice)
        assert alice.get(f"/v4/workflows/{workflow_id}").status_code == 200
        for path in ("", "/events", "/why", "/log/a"):
            assert bob.get(f"/v4/workflows/{workflow_id}{path}").status_code == 404
        assert workflow_id not in {w["id"] for w in bob.get("/v4/workflows").json()["workflows"]}
        assert bob.get("/v4/scheduler/queue", params={"mine": "false"}).status_code in (200, 403)
        rows = bob.get("/v4/scheduler/queue", params={"mine": "false"}).json().get("allocations", [])
        assert all(r.get("workflow_id") != workflow_id for r in rows)


def test_a_weak_password_is_refused_naming_every_rule_it_breaks(stack):
    org_id = stack.client.post("/v4/organizations", json={"name": "org-weak"}).json()["id"]
    answer = stack.client.post(f"/v4/organizations/{org_id}/users",
                               json={"username": "carol", "email": "carol@example.org", "password": "carol", "role": "user"})
    assert answer.status_code == 400
    messages = [e["message"] for e in answer.json()["errors"]]
    assert len(messages) >= 3 and all(e["path"] == "password" for e in answer.json()["errors"])
    assert all("carol" not in m.lower() or "username" in m.lower() for m in messages)
