"""The Nodes page shows which provisioner made each node and every provisioner's nodes, those being made too."""

from __future__ import annotations

from datetime import UTC, datetime

from domain.tenancy import Role, Source
from tests.browser.test_ui_http import session
from tests.unit.api.harness import Api
from tests.unit.api.harness import token as api_token

ELASTIC = {"provider": "local", "template": {"cpu": 4, "memory": "4GiB", "annotations": {"pool": "burst"}},
           "maxNodes": 3, "idleSeconds": 20}


def test_the_nodes_page_names_the_provisioner_of_a_node_and_lists_nodes_being_made():
    api = Api()
    assert api.request("PUT", "/v4/provisioners/elastic", api.admin, json=ELASTIC).status_code == 201
    roving, now = api.services.roving, datetime.now(UTC)
    up, coming = roving.request_nodes("elastic", ["a1", "a2"], now)
    roving.start_create("elastic", up, now)
    agent = api_token("agent", Role.USER, source=Source.AGENT)
    registered = api.request("POST", "/v4/agent/register", agent,
                             json={"name": up, "cpu": 4, "memory": 4 * 2**30, "definition": "elastic"})
    assert registered.is_success
    page = api.request("GET", "/ui/nodes", headers=session(api)).text
    assert "<th>Provisioner</th>" in page
    assert f'{up}</a></td>' in page and "elastic <span class=\"hint\">CREATING, 4 cpu, 4.0 GiB pool=burst</span>" in page
    provisioners = page[page.index('id="provisioners"'):]
    assert "1 of 3" not in provisioners and "2 of 3" in provisioners
    assert f"{coming} REQUESTED" in provisioners and f'href="/ui/nodes/{coming}"' not in provisioners
