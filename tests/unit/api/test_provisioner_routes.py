"""Provisioners over HTTP: the contract's PUT and GET, errors naming the field, who sees settings, and a job that
fits no node waiting for one (why says WAITING_FOR_PROVISION, the provisioner shows the request)."""

from __future__ import annotations

import pytest

from api.provisioning.asks import Asks
from api.scheduler.runner import SchedulerRunner
from tests.unit.api.harness import Api

CONTRACT = {"provider": "local", "template": {"cpu": 4, "memory": "4GiB"}, "maxNodes": 2, "idleSeconds": 20}
COMMAND = {"provider": "command", "template": {"cpu": 8, "memory": "16GiB", "devices": {"nvidia.com/gpu": 1}},
           "maxNodes": 4, "settings": {"create": "/opt/cloud/create", "delete": "/opt/cloud/delete"}}
BIG_JOB = """
version: v4
jobs:
  train:
    image: {uri: docker://alpine}
    script: train
    resource: {cpu: {cores: 3}, memory: {size: 2GiB}}
"""


@pytest.fixture(scope="module")
def api():
    return Api()


def test_the_contract_body_defines_a_provisioner_that_the_list_shows(api):
    created = api.request("PUT", "/v4/provisioners/elastic", api.admin, json=CONTRACT)
    assert created.status_code == 201, created.text
    shown = created.json()
    assert (shown["name"], shown["provider"], shown["maxNodes"], shown["idleSeconds"]) == ("elastic", "local", 2, 20)
    assert shown["template"]["cpu"] == 4 and shown["template"]["memory"] == 4 * 2**30 and shown["nodes"] == []
    again = api.request("PUT", "/v4/provisioners/elastic", api.admin, json=CONTRACT)
    assert again.status_code == 200
    listed = api.request("GET", "/v4/provisioners", api.admin).json()["provisioners"]
    assert [p["name"] for p in listed] == ["elastic"]


@pytest.mark.parametrize(("body", "field"), [
    ({**CONTRACT, "maxNodes": "two"}, "maxNodes"),
    ({**CONTRACT, "maxNodes": 0}, "maxNodes"),
    ({**CONTRACT, "template": {"cpu": 4, "memory": "lots"}}, "template.memory"),
    ({**CONTRACT, "template": {"cpu": 4}}, "memory"),
    ({**CONTRACT, "provider": "aws"}, "provider"),
    ({**CONTRACT, "colour": "blue"}, "colour"),
    ({**COMMAND, "settings": {"create": "create.sh", "delete": "/x"}}, "settings.create"),
])
def test_a_bad_definition_is_a_400_naming_the_field(api, body, field):
    answer = api.request("PUT", "/v4/provisioners/bad", api.admin, json=body)
    assert answer.status_code == 400, answer.text
    assert field in answer.text


def test_users_read_provisioners_without_their_settings_and_may_not_change_them(api):
    assert api.request("PUT", "/v4/provisioners/cloud", api.admin, json=COMMAND).status_code == 201
    _, user = api.organization_with_user("lab", "ursula")
    assert api.request("PUT", "/v4/provisioners/mine", user, json=CONTRACT).status_code == 403
    assert api.request("DELETE", "/v4/provisioners/cloud", user).status_code == 403
    seen = api.request("GET", "/v4/provisioners/cloud", user).json()
    assert seen["template"]["devices"] == {"nvidia.com/gpu": 1} and "settings" not in seen
    assert api.request("GET", "/v4/provisioners/cloud", api.admin).json()["settings"]["create"] == "/opt/cloud/create"


def test_a_job_no_node_fits_waits_for_a_node_the_scheduler_asked_for():
    api = Api()
    assert api.request("PUT", "/v4/provisioners/elastic", api.admin, json=CONTRACT).status_code == 201
    org, user = api.organization_with_user("lab", "ursula")
    submitted = api.request("POST", "/v4/workflows", user, json={"name": "big", "definition": BIG_JOB})
    assert submitted.status_code == 201, submitted.text
    services = api.services
    runner = SchedulerRunner(services.roving, services.views, services.tailer, None, state=services.scheduling)
    runner.after_pass.append(Asks(services.roving))
    runner.tick()
    runner.tick()  # the next pass finds the request it asked for: the same node, now REQUESTED
    [stage] = api.request("GET", f"/v4/workflows/{submitted.json()['id']}/why", user).json()["stages"]
    assert stage["reason"] == "WAITING_FOR_PROVISION", stage
    assert stage["facts"]["provisioner"] == "elastic" and stage["facts"]["state"] == "REQUESTED"
    assert stage["facts"]["request"] == "elastic-1" and stage["facts"]["template"]["cpu"] == 4
    [node] = api.request("GET", "/v4/provisioners/elastic", user).json()["nodes"]
    assert (node["node"], node["state"]) == ("elastic-1", "REQUESTED")


def test_work_no_template_could_ever_hold_is_refused_at_submission():
    api = Api(wired=True)
    api.request("PUT", "/v4/provisioners/small", api.admin, json={**CONTRACT, "template": {"cpu": 2, "memory": "1GiB"}})
    _, user = api.organization_with_user("lab", "ursula")
    refused = api.request("POST", "/v4/workflows", user, json={"name": "big", "definition": BIG_JOB})
    assert refused.status_code in (400, 422), refused.text
    assert "small: cpu 3 > 2 per node" in refused.text
