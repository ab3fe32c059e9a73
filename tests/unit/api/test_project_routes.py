"""Projects over HTTP: the Contract's PUT, the 400 naming the project for work that can never fit, PROJECT_QUOTA
and SHARED_RESOURCE in `why` with their figures, shared resources in the queue stats, and who sees which project."""

from datetime import UTC, datetime

import pytest

from api.scheduler.runner import SchedulerRunner
from tests.unit.api.harness import Api

JOB = """
version: v4
project: {project}
jobs:
  work:
    image: {{uri: docker://alpine}}
    script: sleep 60
    resource: {{cpu: {{cores: {cores}}}{shared}}}
"""


def job(project: str, cores: int = 1, shared: str = "") -> str:
    return JOB.format(project=project, cores=cores, shared=f", shared: {{{shared}}}" if shared else "")


@pytest.fixture(scope="module")
def api():
    api = Api()
    api.alice = api.organization_with_user("acme", "alice")[1]
    api.bob = api.organization_with_user("globex", "bob")[1]
    return api


def submit(api: Api, token: str, definition: str):
    return api.request("POST", "/v4/workflows", token, json={"name": "w", "definition": definition})


def schedule(api: Api) -> None:
    services = api.services
    services.tailer.wait_for(services.roving.last_position)
    SchedulerRunner(services.roving, services.views, services.tailer, None, state=services.scheduling).tick()
    services.tailer.wait_for(services.roving.last_position)


def test_put_makes_a_project_with_its_quota_and_members_then_changes_it(api):
    made = api.request("PUT", "/v4/projects/physics", api.admin, json={"quota": {"cpu": 4}, "members": ["alice"]})
    assert made.status_code == 201, made.text
    assert (made.json()["quota"], made.json()["members"], made.json()["used"]) == ({"cpu": 4}, ["alice"], {})
    again = api.request("PUT", "/v4/projects/physics", api.admin, json={"quota": {"cpu": 4, "memory": "8GiB"}})
    assert again.status_code == 200 and again.json()["quota"] == {"cpu": 4, "memory": 8 << 30}
    assert again.json()["members"] == ["alice"]  # left out: kept
    refused = api.request("PUT", "/v4/projects/physics", api.admin, json={}, headers={"If-None-Match": "*"})
    assert refused.status_code == 409


def test_a_user_may_not_make_projects_and_bad_input_names_the_field(api):
    assert api.request("PUT", "/v4/projects/mine", api.alice, json={}).status_code == 403
    bad = api.request("PUT", "/v4/projects/physics", api.admin, json={"quota": {"cpu": "lots"}})
    assert bad.status_code == 400 and bad.json()["errors"][0]["path"] == "quota.cpu"
    orphan = api.request("PUT", "/v4/projects/nowhere/child", api.admin, json={})
    assert orphan.status_code == 400 and "project nowhere does not exist" in orphan.text


def test_work_that_can_never_fit_is_refused_with_400_naming_the_project(api):
    answer = submit(api, api.alice, job("physics", cores=6))
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"] == [{"path": "jobs.work.resource", "message":
                                        "can never run under project physics's quota: it asks cpu 6, the quota is 4"}]


def test_a_non_member_is_refused_and_sees_no_project(api):
    answer = submit(api, api.bob, job("physics"))
    assert answer.status_code == 403 and "not a member of project physics" in answer.text
    assert api.request("GET", "/v4/projects", api.bob).json()["projects"] == []
    assert api.request("GET", "/v4/projects/physics", api.bob).status_code == 404
    mine = api.request("GET", "/v4/projects/physics", api.alice).json()
    assert mine["members"] == ["alice"] and "grants" not in mine


def test_over_quota_work_waits_with_project_quota_and_the_figures(api):
    api.services.roving.register_node("n1", 16, 64 << 30, {}, {}, "pool", "127.0.0.1", 9100, datetime.now(UTC))
    first = submit(api, api.alice, job("physics", cores=3)).json()["id"]
    second = submit(api, api.alice, job("physics", cores=3)).json()["id"]
    schedule(api)
    ran = api.request("GET", f"/v4/workflows/{first}/why?all=true", api.alice).json()["stages"][0]
    why = api.request("GET", f"/v4/workflows/{second}/why", api.alice).json()["stages"][0]
    assert ran["reason"] in ("READY_TO_SCHEDULE", "RUNNING")
    assert why["reason"] == "PROJECT_QUOTA", why
    assert {k: why["facts"][k] for k in ("project", "resource", "used", "asked", "limit")} == \
        {"project": "physics", "resource": "cpu", "used": 3, "asked": 3, "limit": 4}
    assert why["detail"] == "waiting for project physics's quota of cpu: 3 of 4 in use, this asks 3"
    shown = api.request("GET", "/v4/projects/physics", api.admin).json()
    assert shown["used"] == {"cpu": 3} and shown["running"] == 1


def test_shared_resources_wait_with_their_reason_and_show_in_the_queue_stats(api):
    api.request("PUT", "/v4/admin/centralconfig", api.admin, json={"scheduler.sharedResources": {"ansys": 2}})
    api.request("PUT", "/v4/projects/cfd", api.admin, json={"members": ["alice"]})
    holder = submit(api, api.alice, job("cfd", shared="ansys: 2")).json()["id"]
    waiting = submit(api, api.alice, job("cfd", shared="ansys: 1")).json()["id"]
    schedule(api)
    assert api.request("GET", f"/v4/workflows/{holder}", api.alice).json()["stages"][0]["status"] != "READY"
    why = api.request("GET", f"/v4/workflows/{waiting}/why", api.alice).json()["stages"][0]
    assert why["reason"] == "SHARED_RESOURCE" and why["facts"]["resource"] == "ansys", why
    assert why["detail"] == "waiting for shared resource ansys: 2 of 2 in use, this asks 1"
    stats = api.request("GET", "/v4/scheduler/stats", api.alice).json()
    assert stats["shared_resources"] == [{"name": "ansys", "total": 2, "used": 2, "free": 0, "holders": 1}]
    too_many = submit(api, api.alice, job("cfd", shared="ansys: 3"))
    assert too_many.status_code == 400 and "the cluster has 2" in too_many.text


def test_a_project_grant_lets_a_user_see_the_subtrees_work_in_their_own_organization(api):
    wid = submit(api, api.alice, job("physics")).json()["id"]
    org = api.request("GET", "/v4/auth/whoami", api.alice).json()["organization_id"]
    body = {"username": "carol", "email": "carol@acme.org", "password": "Correct-Horse-9-battery", "role": "user"}
    assert api.request("POST", f"/v4/organizations/{org}/users", api.admin, json=body).status_code == 201
    carol_token = api.request("POST", "/v4/auth/login", json={"username": "carol",
                                                                "password": body["password"]}).json()["token"]
    assert api.request("GET", f"/v4/workflows/{wid}", carol_token).status_code == 404
    granted = api.request("PATCH", "/v4/projects/physics", api.admin,
                          json={"grant": {"carol": ["workflow:view", "project:view"]}})
    assert granted.status_code == 200 and granted.json()["grants"] == {"carol": ["workflow:view", "project:view"]}
    assert api.request("GET", f"/v4/workflows/{wid}", carol_token).status_code == 200
    assert api.request("GET", "/v4/projects/physics", carol_token).status_code == 200
    assert api.request("POST", f"/v4/workflows/{wid}:stop", carol_token).status_code == 403


def test_a_service_that_leaves_its_jobs_no_room_in_the_quota_is_refused(api):
    """A service holds its quota until its jobs end: a 3-core service and a 2-core job under physics's 4 could only
    wait for each other."""
    served = job("physics", cores=2).replace("jobs:", """services:
  web:
    image: {uri: docker://alpine}
    script: serve
    resource: {cpu: {cores: 3}}
jobs:""")
    answer = submit(api, api.alice, served)
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"] == [{"path": "services.web.resource", "message":
                                        "can never run under project physics's quota: it asks cpu 3 and its "
                                        "workflow's largest job 2 beside it, the quota is 4"}]


def test_validate_says_what_submission_would_refuse_for_the_project(api):
    answer = api.request("POST", "/v4/workflows:validate", api.alice, json={"definition": job("physics", cores=6)})
    assert answer.json()["valid"] is False
    assert answer.json()["errors"] == [{"path": "jobs.work.resource", "message":
                                        "can never run under project physics's quota: it asks cpu 6, the quota is 4"}]
    other = api.request("POST", "/v4/workflows:validate", api.bob, json={"definition": job("physics")}).json()
    assert other["valid"] is False and "not a member of project physics" in other["errors"][0]["message"]
