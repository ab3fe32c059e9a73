"""A node whose lease lapses is counted in roving_nodes_lost_total and shows OFFLINE in roving_nodes on /metrics."""

import time

from prometheus_client.parser import text_string_to_metric_families

from api.scheduler.runner import SchedulerRunner
from domain.tenancy import Role, Source
from tests.unit.api.harness import Api, token

AGENT = token("agent", Role.USER, source=Source.AGENT)


class LapsedLeases:
    ttl = 0.0

    def alive(self, node: str) -> bool:
        return False


def metric(api, name: str, **labels) -> float:
    text = api.request("GET", "/metrics").text
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def with_node(name: str) -> Api:
    """An API whose one node `name` registered (its lease read by the runner's leases, not the test's clock)."""
    api = Api()
    body = {"name": name, "cpu": 1, "memory": 2**30, "devices": {}, "annotations": {}, "definition": "x",
            "address": "127.0.0.1", "metrics_port": None}
    assert api.request("POST", "/v4/agent/register", AGENT, json=body).status_code == 200
    return api


def test_a_lost_node_is_counted_and_shown_offline(monkeypatch):
    monkeypatch.setattr("api.scheduler.runner.LAPSE_CONFIRM_SECONDS", 0.01)
    api = with_node("lost1")
    before = metric(api, "roving_nodes_lost_total")
    runner = SchedulerRunner(api.services.roving, api.services.views, api.services.tailer, LapsedLeases(),
                             holder="t", lease_grace=1e-9)
    time.sleep(0.01)
    runner.check_leases()  # seen lapsed once: not yet lost (one read may come from a server catching up)
    assert metric(api, "roving_nodes", status="OFFLINE") == 0
    time.sleep(0.02)
    runner.check_leases()  # still lapsed, later: lost
    api.services.tailer.wait_for(api.services.roving.last_position)
    assert metric(api, "roving_nodes_lost_total") == before + 1
    assert metric(api, "roving_nodes", status="OFFLINE") == 1


class OnceMissedLeases:
    """One read misses every lease (a server of an R3 cluster catching up after its restart), the next finds them."""

    ttl = 0.0

    def __init__(self) -> None:
        self.reads = 0

    def alive(self, node: str) -> bool:
        self.reads += 1
        return self.reads > 1


def test_a_lease_read_lapsed_once_and_then_alive_loses_no_node(monkeypatch):
    monkeypatch.setattr("api.scheduler.runner.LAPSE_CONFIRM_SECONDS", 0.01)
    api = with_node("blip1")
    before = metric(api, "roving_nodes_lost_total")
    runner = SchedulerRunner(api.services.roving, api.services.views, api.services.tailer, OnceMissedLeases(),
                             holder="t", lease_grace=1e-9)
    time.sleep(0.01)
    runner.check_leases()
    time.sleep(0.02)
    runner.check_leases()
    api.services.tailer.wait_for(api.services.roving.last_position)
    assert metric(api, "roving_nodes_lost_total") == before
    assert metric(api, "roving_nodes", status="OFFLINE") == 0
