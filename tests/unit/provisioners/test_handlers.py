"""The provisioner commands: admins only, maxNodes under concurrent asks, a drain that work outran, a deletion that
takes the node and its work with it."""

from __future__ import annotations

import threading
from uuid import uuid4

import msgspec
import pytest

from domain.app import Forbidden, Invalid
from domain.app.ids import allocation_id, node_id
from domain.node import Node
from domain.provisioner_spec import ProvisionerBody, TemplateBody
from tests.unit.app.builders import ADMIN, PIPELINE, T0, app, later, user

BODY = ProvisionerBody(provider="local", template=TemplateBody(cpu=4, memory="4GiB"), max_nodes=2, idle_seconds=20)


def defined(max_nodes: int = 2):
    roving = app()
    roving.set_provisioner("elastic", msgspec_replace(BODY, max_nodes=max_nodes), ADMIN, T0)
    return roving


def msgspec_replace(body: ProvisionerBody, **changes) -> ProvisionerBody:
    return msgspec.structs.replace(body, **changes)


def brought_up(roving, reason="a1"):
    [rid] = roving.request_nodes("elastic", [reason], later(1))
    roving.start_create("elastic", rid, later(2))
    roving.record_created("elastic", rid, f"local:{rid}:1", later(2))
    nid, _ = roving.register_node(rid, 4, 4 << 30, {}, {}, "elastic", "127.0.0.1", None, later(3))
    assert roving.record_up("elastic", rid, str(nid), later(3)) == 2.0
    return rid, nid


def test_only_cluster_admins_define_and_delete_provisioners_and_bad_bodies_name_the_field():
    roving = app()
    with pytest.raises(Forbidden):
        roving.set_provisioner("elastic", BODY, user(), T0)
    with pytest.raises(Invalid, match="template.cpu"):
        roving.set_provisioner("elastic", msgspec_replace(BODY, template=TemplateBody(cpu=0, memory="1GiB")), ADMIN, T0)
    with pytest.raises(Invalid, match="name"):
        roving.set_provisioner("Elastic Pool", BODY, ADMIN, T0)
    roving.set_provisioner("elastic", BODY, ADMIN, T0)
    with pytest.raises(Forbidden):
        roving.delete_provisioner("elastic", user(), later(1))


def test_concurrent_asks_never_make_more_than_max_nodes():
    roving = defined(max_nodes=3)
    made: list[str] = []
    threads = [threading.Thread(target=lambda n=n: made.extend(roving.request_nodes("elastic", [f"a{n}"], later(1))))
               for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(made) == ["elastic-1", "elastic-2", "elastic-3"]
    assert len(roving.provisioners.find("elastic").requests) == 3


def test_an_idle_drain_is_moot_when_work_was_placed_meanwhile():
    roving = defined()
    rid, nid = brought_up(roving)
    wid = uuid4()
    roving.submit_workflow(wid, "pipe", PIPELINE, 0, None, user(), later(4))
    roving.place(allocation_id(wid, "pre", 1), [nid], "scheduler", later(5))
    assert roving.drain_node("elastic", rid, "idle for 20s", later(30)) is False
    assert roving.provisioners.find("elastic").requests[rid].state.value == "UP"


def test_an_idle_node_is_deprovisioned_at_once_and_its_request_closed_after_the_provider_deleted_it():
    roving = defined()
    rid, nid = brought_up(roving)
    assert roving.drain_node("elastic", rid, "idle for 20s", later(30))
    node = roving.repository.get(nid)
    assert node.removed and [h.source.value for h in node.holds.values()] == ["provisioner"]
    assert roving.start_delete("elastic", rid, "idle for 20s", later(31))
    assert roving.finish_delete("elastic", rid, later(32))
    assert roving.provisioners.find("elastic").room() == 2


def test_deleting_a_lost_node_removes_it_and_retries_its_work_elsewhere():
    roving = defined()
    rid, nid = brought_up(roving)
    wid = uuid4()
    roving.submit_workflow(wid, "pipe", PIPELINE, 0, None, user(), later(4))
    pre = allocation_id(wid, "pre", 1)
    roving.place(pre, [nid], "scheduler", later(5))
    roving.start_delete("elastic", rid, "lost: the provider reports its instance gone", later(6))
    assert roving.finish_delete("elastic", rid, later(7))
    node: Node = roving.repository.get(node_id(rid))
    assert node.removed and roving.allocations.on_node(node.id) == []
    assert roving.repository.get(pre).state.value == "EVICTED"
    assert roving.repository.get(allocation_id(wid, "pre", 2)).state.value == "READY"  # retry on: [node]


def test_a_step_the_request_moved_past_answers_none_instead_of_failing():
    roving = defined()
    [rid] = roving.request_nodes("elastic", ["a1"], later(1))
    roving.start_create("elastic", rid, later(2))
    assert roving.cancel_request("elastic", rid, "unneeded", later(3)) is False
    assert roving.record_up("elastic", "elastic-9", "x", later(3)) is None
