"""A node that could not use a stage's image says so, and the workflow's events keep its words."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import pytest

from tests.unit.api.harness import JOB, Api
from tests.unit.api.test_node_and_agent_routes import AGENT, REGISTER

WORDS = "image docker://alpine:3 was not used: this node's runtime is host"


@pytest.mark.parametrize("path", ["/v4/agent/reports", "/v4/agent/reports:batch"])
def test_an_image_that_was_not_used_is_an_event_of_the_workflow(path):
    api = Api()
    node = api.request("POST", "/v4/agent/register", AGENT, json=REGISTER).json()["node_id"]
    _, alice = api.organization_with_user("acme", "alice")
    workflow = api.request("POST", "/v4/workflows", alice, json={"definition": JOB}).json()["id"]
    allocation = api.request("GET", f"/v4/workflows/{workflow}", alice).json()["stages"][0]["allocation_id"]
    api.services.roving.place(UUID(allocation), [UUID(node)], "scheduler", datetime.now(UTC))
    api.services.tailer.wait_for(api.services.roving.last_position)
    reports = [{"node_id": node, "allocation_id": allocation, "epoch": 1, "event": event, "reason": reason}
               for event, reason in (("started", ""), ("ran_on_host", WORDS))]
    if path.endswith(":batch"):
        answers = [api.request("POST", path, AGENT, json={"node_id": node, "reports": reports})]
    else:
        answers = [api.request("POST", path, AGENT, json=report) for report in reports]
    assert all(answer.status_code == 200 for answer in answers), [answer.text for answer in answers]
    api.services.tailer.wait_for(api.services.roving.last_position)
    events = api.request("GET", f"/v4/workflows/{workflow}/events", alice).json()
    assert any(WORDS in str(event) for event in events.get("events", events)), events
