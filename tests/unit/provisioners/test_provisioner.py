"""The Provisioner aggregate and its definition's checks: maxNodes across requests, each step of a node's life."""

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from domain.provisioner import Provisioner, ProvisionerError, State, backoff
from domain.provisioner_spec import ProvisionerBody, TemplateBody, name_problem, to_spec

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
GiB = 2**30


def later(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def body(**fields) -> ProvisionerBody:
    fields.setdefault("template", TemplateBody(cpu=4, memory="4GiB"))
    return ProvisionerBody(provider=fields.pop("provider", "local"), max_nodes=fields.pop("max_nodes", 2), **fields)


def provisioner(**fields) -> Provisioner:
    spec, problems = to_spec(body(**fields))
    assert spec is not None, problems
    return Provisioner.define("elastic", spec, by="root", at=T0)


def test_the_contract_body_decodes_and_reads_memory_as_a_size():
    raw = b'{"provider": "local", "template": {"cpu": 4, "memory": "4GiB"}, "maxNodes": 2, "idleSeconds": 20}'
    spec, problems = to_spec(msgspec.json.decode(raw, type=ProvisionerBody))
    assert problems == []
    assert (spec.provider, spec.template.cpu, spec.template.memory, spec.max_nodes, spec.idle_seconds) == \
        ("local", 4, 4 * GiB, 2, 20)


def test_bad_definitions_name_each_field_and_why():
    bad = body(provider="cloud", max_nodes=0, idle_seconds=-1, template=TemplateBody(cpu=0, memory="4 bananas"))
    _, problems = to_spec(bad)
    paths = {p.path for p in problems}
    assert {"provider", "maxNodes", "idleSeconds", "template.cpu", "template.memory"} <= paths
    _, problems = to_spec(body(provider="command", settings={"create": "make.sh", "extra": 1}))
    assert {p.path for p in problems} == {"settings.create", "settings.delete", "settings.extra"}
    assert "absolute path" in next(p.message for p in problems if p.path == "settings.create")
    assert name_problem("GPU pool") and name_problem("ok-name") is None


def test_requests_never_exceed_max_nodes_and_a_reason_already_served_asks_nothing():
    p = provisioner(max_nodes=2)
    assert p.request(["a1"], at=T0) == ["elastic-1"]
    assert p.request(["a1", "a2", "a3"], at=later(1)) == ["elastic-2"]  # a1 is served, one node of room left
    assert p.room() == 0 and p.request(["a4"], at=later(2)) == []


def test_a_node_goes_from_requested_to_deleted_and_frees_its_room():
    p = provisioner(max_nodes=1)
    [rid] = p.request(["a1"], at=T0)
    assert p.start_create(rid, at=later(1)) == 1
    p.created(rid, "local:elastic-1:123", at=later(2))
    assert p.came_up(rid, "node-id", at=later(7)) == 7.0
    assert p.expected_seconds() == 7.0
    p.drain(rid, "idle for 20s", at=later(40))
    p.start_delete(rid, "idle for 20s", at=later(41))
    p.deleted_node(rid, at=later(42))
    assert p.requests == {} and p.room() == 1
    [ended] = p.history
    assert (ended.state, ended.end_reason, ended.instance) == (State.DELETED, "idle for 20s", "local:elastic-1:123")


def test_a_failed_create_waits_its_backoff_then_is_asked_again_under_the_same_id():
    p = provisioner()
    [rid] = p.request(["a1"], at=T0)
    p.start_create(rid, at=T0)
    retry = p.create_failed(rid, "create exited 1: no capacity", at=later(1))
    assert retry == later(1 + backoff(1))
    with pytest.raises(ProvisionerError, match="retried at"):
        p.start_create(rid, at=later(2))
    assert p.start_create(rid, at=retry) == 2
    assert p.requests[rid].last_error == "create exited 1: no capacity"
    assert [backoff(n) for n in (1, 2, 3, 10)] == [5.0, 10.0, 20.0, 300.0]


def test_an_interrupted_create_is_asked_again_and_steps_out_of_order_are_refused():
    p = provisioner()
    [rid] = p.request(["a1"], at=T0)
    p.start_create(rid, at=T0)
    assert p.start_create(rid, at=later(30)) == 2  # a restarted runner found it CREATING
    with pytest.raises(ProvisionerError, match="CREATING, not UP"):
        p.drain(rid, "idle", at=later(31))
    with pytest.raises(ProvisionerError, match="not REQUESTED or FAILED"):
        p.cancel(rid, "unneeded", at=later(31))


def test_a_deleted_provisioner_asks_for_nothing_and_a_new_definition_revives_it():
    p = provisioner()
    p.delete(by="root", at=later(1))
    with pytest.raises(ProvisionerError, match="deleted"):
        p.request(["a1"], at=later(2))
    spec, _ = to_spec(body(max_nodes=3))
    assert p.change(spec, by="root", at=later(3)) and not p.deleted and p.spec.max_nodes == 3
    assert not p.change(spec, by="root", at=later(4))


def test_replaying_its_events_rebuilds_the_same_state():
    p = provisioner()
    [rid] = p.request(["a1"], at=T0)
    p.start_create(rid, at=T0)
    p.created(rid, "i-1", at=later(1))
    copy = None
    for event in p.collect_events():
        copy = event.mutate(copy)
    assert copy.requests == p.requests and copy.counter == p.counter and copy.spec == p.spec
