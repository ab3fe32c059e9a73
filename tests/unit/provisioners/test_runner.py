"""The provisioners' runner against the real application and views, with a provider that records what it is asked:
a failure is recorded and retried, a node that never came up is deleted before it is asked again, a lost one is
deleted before its request closes, and a control plane taking over adopts what was made."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.provisioners import AgentLaunch, Order, ProviderError
from api.provisioning.runner import ProvisionerRunner
from domain.provisioner_spec import ProvisionerBody, TemplateBody
from projections.views import Views
from tests.unit.api.harness import SyncTailer
from tests.unit.app.builders import ADMIN, T0, app, later

LAUNCH = AgentLaunch(api="http://127.0.0.1:1", token_file=Path("/nonexistent/agent.token"), work_root=Path("/tmp"),
                     log_dir=Path("/tmp"))


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self):
        return self.now


class Recorder:
    """A provider whose answers the test sets; every call is kept in order."""

    blocking = False

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []
        self.fail_creates = 0
        self.dead: set[str] = set()

    def create(self, order: Order) -> str:
        self.calls.append(("create", order.request, order.attempt))
        if self.fail_creates:
            self.fail_creates -= 1
            raise ProviderError("create program exited 1: no capacity")
        return f"i-{order.request}"

    def delete(self, order: Order) -> None:
        self.calls.append(("delete", order.request, order.attempt))

    def alive(self, order: Order) -> bool | None:
        return order.request not in self.dead

    def adopt(self, order: Order) -> None:
        self.calls.append(("adopt", order.request, order.attempt))


@pytest.fixture
def world():
    roving, views = app(), Views()
    tailer = SyncTailer(roving, views)
    body = ProvisionerBody(provider="local", template=TemplateBody(cpu=4, memory="4GiB"), max_nodes=2, idle_seconds=20,
                           boot_timeout_seconds=60)
    roving.set_provisioner("elastic", body, ADMIN, T0)
    provider, clock = Recorder(), Clock()
    runner = ProvisionerRunner(roving, views, None, LAUNCH, clock=clock)
    runner.providers["elastic"] = provider
    provider.kind = "local"

    def tick(seconds: float) -> None:
        tailer.wait_for(roving.last_position)
        clock.now = later(seconds)
        runner.tick()
        tailer.wait_for(roving.last_position)
    return roving, views, provider, tick


def state(views, request="elastic-1"):
    p = views.provisioners.get("elastic")
    found = p.requests.get(request) or next(r for r in p.history if r.id == request)
    return found.state.value, found.attempts


def register(roving, name="elastic-1", seconds=5):
    return roving.register_node(name, 4, 4 << 30, {}, {}, "elastic", "127.0.0.1", None, later(seconds))[0]


def test_a_failed_create_is_recorded_and_asked_again_after_its_backoff(world):
    roving, views, provider, tick = world
    roving.request_nodes("elastic", ["a1"], later(1))
    provider.fail_creates = 1
    tick(2)
    assert state(views) == ("FAILED", 1)
    assert "no capacity" in views.provisioners.get("elastic").requests["elastic-1"].last_error
    tick(3)
    assert provider.calls == [("create", "elastic-1", 1)]  # the backoff (5 s) is not over
    retry_at = views.provisioners.get("elastic").requests["elastic-1"].retry_at
    tick((retry_at - T0).total_seconds())
    assert state(views) == ("CREATED", 2) and provider.calls[-1] == ("create", "elastic-1", 2)
    register(roving)
    tick(10)
    assert state(views) == ("UP", 2)


def test_a_node_that_never_registers_is_deleted_before_it_is_asked_for_again(world):
    roving, views, provider, tick = world
    roving.request_nodes("elastic", ["a1"], later(1))
    tick(2)
    tick(63)
    assert provider.calls == [("create", "elastic-1", 1), ("delete", "elastic-1", 1)]
    assert state(views) == ("FAILED", 1)
    assert "did not register READY within 60s" in views.provisioners.get("elastic").requests["elastic-1"].last_error


def test_a_lost_node_is_deleted_by_the_provider_before_its_request_closes_and_its_node_is_removed(world):
    roving, views, provider, tick = world
    roving.request_nodes("elastic", ["a1"], later(1))
    tick(2)
    nid = register(roving)
    tick(6)
    provider.dead.add("elastic-1")
    tick(8)
    assert provider.calls[-1] == ("delete", "elastic-1", 1)
    assert state(views) == ("DELETED", 1)
    assert roving.repository.get(nid).removed


def test_an_idle_node_is_drained_then_deleted(world):
    roving, views, provider, tick = world
    roving.request_nodes("elastic", ["a1"], later(1))
    tick(2)
    register(roving, seconds=5)  # idle from its registration on: no work was placed on it
    tick(6)
    tick(5 + 19)
    assert state(views) == ("UP", 1)
    tick(5 + 20)  # drained: the deprovision hold removes the empty node at once
    tick(5 + 21)
    assert state(views) == ("DELETED", 1) and provider.calls[-1] == ("delete", "elastic-1", 1)


def test_taking_a_provisioner_over_adopts_what_was_made(world):
    roving, views, provider, tick = world
    roving.request_nodes("elastic", ["a1", "a2"], later(1))
    tick(2)
    register(roving)
    tick(6)
    successor = ProvisionerRunner(roving, views, None, LAUNCH, clock=lambda: later(7))
    successor.providers["elastic"] = provider
    provider.calls.clear()
    successor.tick()
    assert sorted(c for c in provider.calls if c[0] == "adopt") == [("adopt", "elastic-1", 1), ("adopt", "elastic-2", 1)]


def test_a_node_registered_under_the_provisioner_that_it_did_not_ask_for_is_deleted_and_removed(world):
    roving, views, provider, tick = world
    roving.request_nodes("elastic", ["a1"], later(1))
    tick(2)
    made, stray = register(roving), register(roving, "elastic-9")
    tick(6)
    assert ("delete", "elastic-9", 1) in provider.calls and ("delete", "elastic-1", 1) not in provider.calls
    assert roving.repository.get(stray).removed and not roving.repository.get(made).removed


def test_a_view_that_lags_the_log_never_makes_a_provider_act_on_old_news(world):
    """A restarted control plane's views start from a snapshot: one showing a node UP that the log has since deleted
    must not start its agent again (it would come back as a node nobody manages)."""
    roving, views, provider, tick = world
    roving.request_nodes("elastic", ["a1"], later(1))
    tick(2)
    register(roving)
    tick(6)
    upto = views.position
    provider.dead.add("elastic-1")
    tick(8)
    assert state(views) == ("DELETED", 1)
    stale = Views()
    records = roving.recorder.select_notifications(start=1, limit=upto)
    stale.apply([(r.id, roving.mapper.to_domain_event(r)) for r in records])
    assert stale.provisioners.get("elastic").requests["elastic-1"].state.value == "UP"
    provider.calls.clear()
    waiting = ProvisionerRunner(roving, stale, None, LAUNCH, clock=lambda: later(9), ready=lambda: False)
    waiting.providers["elastic"] = provider
    waiting.tick()
    assert provider.calls == []  # not caught up: it does nothing at all
    successor = ProvisionerRunner(roving, stale, None, LAUNCH, clock=lambda: later(9))
    successor.providers["elastic"] = provider
    successor.tick()
    assert [c for c in provider.calls if c[0] == "adopt"] == []
