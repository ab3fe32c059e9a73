"""`workflow describe` shows the owner's priority inputs as they are now, as the queue does, not as submitted."""

from tests.unit.api.harness import JOB, Api


def test_describe_shows_the_organizations_new_priority_after_a_change():
    api = Api(wired=True)  # as `roving up`: a priority change moves the owner's queued allocations
    org, alice = api.organization_with_user("acme", "alice")
    workflow = api.request("POST", "/v4/workflows", alice, json={"name": "w", "definition": JOB}).json()["id"]
    before = api.request("GET", f"/v4/workflows/{workflow}", alice).json()["stages"][0]["priority"]
    assert before["organization"] == 0
    changed = api.request("PUT", f"/v4/organizations/{org}/priority", api.admin, json={"priority": 7})
    assert changed.status_code == 200, changed.text
    described = api.request("GET", f"/v4/workflows/{workflow}", alice).json()
    queued = api.request("GET", "/v4/scheduler/queue", alice).json()["queue"]
    row = next(r for r in queued if r["workflow_id"] == workflow)
    assert described["stages"][0]["priority"]["organization"] == 7
    assert {k: described["stages"][0]["priority"][k] for k in row["priority_inputs"]} == row["priority_inputs"]
