"""A cluster's per-stage log cap (`logs.maxBytesPerStage`): set by an admin, checked, and told to every agent."""

from __future__ import annotations

from tests.unit.api.harness import Api
from tests.unit.api.test_node_and_agent_routes import AGENT


def test_an_admin_s_log_cap_reaches_the_agents_and_a_negative_one_is_refused_naming_the_key():
    api = Api()
    assert api.request("GET", "/v4/agent/config", AGENT).json()["log_max_bytes_per_stage"] == 0
    refused = api.request("PUT", "/v4/admin/centralconfig", api.admin, json={"logs.maxBytesPerStage": -1})
    assert refused.status_code == 400 and "logs.maxBytesPerStage" in refused.text
    changed = api.request("PUT", "/v4/admin/centralconfig", api.admin, json={"logs": {"maxBytesPerStage": 10**9}})
    assert changed.status_code == 200, changed.text
    assert api.request("GET", "/v4/agent/config", AGENT).json()["log_max_bytes_per_stage"] == 10**9
