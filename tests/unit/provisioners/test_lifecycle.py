"""What the runner does next for each request: make, note up, time out, drain when idle, delete what is lost."""

from domain.provisioner_lifecycle import Do, NodeFacts, next_steps
from tests.unit.provisioners.test_provisioner import later, provisioner


def steps(p, nodes=None, gone=(), busy=(), at=0.0):
    return [(s.do, s.request.id) for s in next_steps(p, nodes or {}, set(gone), set(busy), later(at))]


def up(p, rid="elastic-1", at=5.0):
    p.start_create(rid, at=later(0))
    p.created(rid, "i-1", at=later(1))
    p.came_up(rid, "nid", at=later(at))


def ready(allocations=0, idle_since=None, status="READY", removed=False) -> NodeFacts:
    return NodeFacts(id="nid", status=status, allocations=allocations, idle_since=idle_since, removed=removed)


def test_a_requested_node_is_made_and_noted_up_once_its_node_is_ready():
    p = provisioner()
    p.request(["a1"], at=later(0))
    assert steps(p) == [(Do.CREATE, "elastic-1")]
    assert steps(p, busy={"elastic-1"}) == []
    p.start_create("elastic-1", at=later(0))
    p.created("elastic-1", "i-1", at=later(1))
    assert steps(p, at=2) == []
    assert steps(p, {"elastic-1": ready(status="NOT_READY")}, at=3) == []
    assert steps(p, {"elastic-1": ready()}, at=4) == [(Do.UP, "elastic-1")]


def test_a_node_that_never_registers_times_out_and_is_never_waited_for_forever():
    p = provisioner(boot_timeout_seconds=60)
    p.request(["a1"], at=later(0))
    p.start_create("elastic-1", at=later(0))
    p.created("elastic-1", "i-1", at=later(1))
    assert steps(p, at=59) == []
    [step] = next_steps(p, {}, set(), set(), later(61))
    assert step.do is Do.TIMED_OUT and "did not register READY within 60s" in step.reason


def test_a_create_interrupted_by_a_restart_is_asked_again():
    p = provisioner()
    p.request(["a1"], at=later(0))
    p.start_create("elastic-1", at=later(0))
    assert steps(p, at=5) == [(Do.CREATE, "elastic-1")]


def test_a_failed_create_is_retried_once_its_backoff_is_over():
    p = provisioner()
    p.request(["a1"], at=later(0))
    p.start_create("elastic-1", at=later(0))
    p.create_failed("elastic-1", "boom", at=later(1))
    assert steps(p, at=2) == []
    assert steps(p, at=6) == [(Do.CREATE, "elastic-1")]


def test_an_idle_node_is_drained_after_idle_seconds_and_deleted_once_removed():
    p = provisioner(idle_seconds=20)
    p.request(["a1"], at=later(0))
    up(p)
    assert steps(p, {"elastic-1": ready(allocations=1)}, at=100) == []
    assert steps(p, {"elastic-1": ready(idle_since=later(50))}, at=69) == []
    [step] = next_steps(p, {"elastic-1": ready(idle_since=later(50))}, set(), set(), later(70))
    assert step.do is Do.DRAIN and "idle for 20s" in step.reason
    p.drain("elastic-1", step.reason, at=later(70))
    assert steps(p, {"elastic-1": ready(idle_since=later(50))}, at=71) == []
    assert steps(p, {"elastic-1": ready(removed=True)}, at=72) == [(Do.DELETE, "elastic-1")]
    p.start_delete("elastic-1", "idle", at=later(72))
    assert steps(p, {}, at=73) == [(Do.FINISH, "elastic-1")]


def test_a_node_gone_offline_or_reported_gone_is_lost_and_deleted():
    p = provisioner()
    p.request(["a1", "a2"], at=later(0))
    up(p, "elastic-1")
    up(p, "elastic-2")
    found = next_steps(p, {"elastic-1": ready(status="OFFLINE", allocations=1), "elastic-2": ready(allocations=1)},
                       {"elastic-2"}, set(), later(10))
    assert [(s.do, s.request.id) for s in found] == [(Do.DELETE, "elastic-1"), (Do.DELETE, "elastic-2")]
    assert "OFFLINE" in found[0].reason and "provider reports" in found[1].reason


def test_a_deleted_provisioner_cancels_what_is_not_made_and_drains_what_is():
    p = provisioner(max_nodes=3)
    p.request(["a1", "a2"], at=later(0))
    up(p, "elastic-1")
    p.delete(by="root", at=later(6))
    assert steps(p, {"elastic-1": ready(allocations=2)}, at=7) == [(Do.DRAIN, "elastic-1"), (Do.CANCEL, "elastic-2")]
