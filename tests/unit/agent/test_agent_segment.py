"""`roving agent --segment NAME`: the node registers in that storage segment, which placement and submission read."""

from __future__ import annotations

import pytest

from api.agent.args import UsageError
from domain.tenancy import Role, Source
from tests.unit.agent.test_agent_args import parse
from tests.unit.api.harness import Api, token


def test_the_segment_comes_from_the_flag_before_the_environment():
    assert parse("--segment", "fast-nvme").segment == "fast-nvme"
    assert parse(env={"ROVING_TOKEN": "t", "ROVING_SEGMENT": "hdd"}).segment == "hdd"
    assert parse().segment == ""


def test_a_malformed_segment_is_a_usage_error_naming_it():
    with pytest.raises(UsageError, match="--segment.*not a segment name"):
        parse("--segment", "../x")
    with pytest.raises(UsageError, match="ROVING_SEGMENT"):
        parse(env={"ROVING_TOKEN": "t", "ROVING_SEGMENT": "a b"})


def test_a_registered_node_is_listed_in_its_segment():
    api = Api()
    agent = token("agent", Role.USER, source=Source.AGENT)
    body = {"name": "n1", "cpu": 4, "memory": 8 * 2**30, "definition": "local", "segment": "fast-nvme"}
    assert api.request("POST", "/v4/agent/register", agent, json=body).status_code == 200
    api.services.tailer.wait_for(api.services.roving.last_position)
    nodes = api.request("GET", "/v4/nodes", api.admin).json()["nodes"]
    assert [(n["name"], n["segment"]) for n in nodes] == [("n1", "fast-nvme")]
