"""Each node of a multinode job is told its rank and its peers; when a rank fails, the others are told to stop."""

from domain.agent_protocol import Assignments
from domain.multinode import leader_port
from domain.node import Capacity, Node
from tests.unit.projections.builders import T0, Feed, GiB, at, request, submit, uid, wire

MPI = ("version: v4\njobs:\n  train: {image: {uri: docker://alpine:3.20}, script: 'mpirun hostname',"
       " multinode: {nodes: 2, implementation: openmpi, procs-per-node: 4}}\n")


def addressed(name: str, address: str) -> Node:
    n = Node.register(uid(name), name, "cpu-small", Capacity(cpu=8, memory=32 * GiB, agent_address=address),
                      by="agent", at=T0)
    n.mark_ready(1, by="agent", at=T0)
    return n


def placed_on_two():
    feed, n1, n2 = Feed(), addressed("node-1", "10.0.0.1"), addressed("node-2", "10.0.0.2")
    feed.save(n1, n2)
    workflow = submit(MPI)
    allocation = request(workflow, "train")
    allocation.place([str(n1.id), str(n2.id)], by="scheduler", at=at(1))
    workflow.stage_started("train", 1, "node-1", at(1))
    feed.save(workflow, allocation)
    return feed, allocation, n1, n2


def test_each_node_is_told_its_rank_and_every_peer_in_rank_order():
    feed, allocation, n1, n2 = placed_on_two()
    [first] = wire(feed.views.assignments(n1.id))
    [second] = wire(feed.views.assignments(n2.id))
    peers = {"hosts": ("10.0.0.1", "10.0.0.2"), "port": leader_port(allocation.id), "procs_per_node": 4,
             "implementation": "openmpi"}
    assert first["peers"] == {"rank": 0, **peers} and second["peers"] == {"rank": 1, **peers}


def test_a_single_node_job_gets_no_peers():
    feed, n1 = Feed(), addressed("node-1", "10.0.0.1")
    feed.save(n1)
    workflow = submit("version: v4\njobs:\n  main: {image: {uri: docker://alpine:3.20}, script: 'echo hi'}\n")
    allocation = request(workflow, "main")
    allocation.place([str(n1.id)], by="scheduler", at=at(1))
    feed.save(workflow, allocation)
    [spec] = wire(feed.views.assignments(n1.id))
    assert "peers" not in spec


def test_when_a_rank_fails_the_other_is_told_to_stop_and_the_failed_one_is_never_started_again():
    feed, allocation, n1, n2 = placed_on_two()
    allocation.rank_exited(str(n2.id), 7, allocation.epoch, by="agent", at=at(2))
    feed.save(allocation)
    assert feed.views.assignments(n2.id) == Assignments([], [], [])
    answer = feed.views.assignments(n1.id)
    assert answer.start == []
    [order] = answer.stop
    assert order.rank_stop and order.reason == "rank 1 failed: the job stops on every node"


def test_a_rank_that_finished_is_not_started_again_while_its_peer_still_runs():
    feed, allocation, n1, n2 = placed_on_two()
    allocation.rank_exited(str(n1.id), 0, allocation.epoch, by="agent", at=at(2))
    feed.save(allocation)
    assert feed.views.assignments(n1.id).start == []
    assert [s["peers"]["rank"] for s in wire(feed.views.assignments(n2.id))] == [1]


def test_the_activity_stream_tells_each_rank_s_exit_with_its_node():
    feed, allocation, n1, n2 = placed_on_two()
    allocation.rank_exited(str(n2.id), 7, allocation.epoch, by="agent", at=at(2))
    feed.save(allocation)
    messages = [row.message for row in feed.views.workflows.events(allocation.workflow_id)]
    assert messages[-1] == "Rank 1 on node-2 exited with code 7"


def test_a_one_node_multinode_job_still_gets_its_hostfile_and_rank():
    feed, n1 = Feed(), addressed("node-1", "10.0.0.1")
    feed.save(n1)
    workflow = submit(MPI.replace("nodes: 2", "nodes: 1"))
    allocation = request(workflow, "train")
    allocation.place([str(n1.id)], by="scheduler", at=at(1))
    feed.save(workflow, allocation)
    [spec] = wire(feed.views.assignments(n1.id))
    assert (spec["peers"]["rank"], spec["peers"]["hosts"]) == (0, ("10.0.0.1",))


def test_a_rank_s_exit_wakes_every_node_of_the_job_waiting_for_its_assignments():
    from api.composition.wakeups import AssignmentWaiters
    feed, allocation, n1, n2 = placed_on_two()
    allocation.rank_exited(str(n2.id), 7, allocation.epoch, by="agent", at=at(2))
    [exited] = [e for e in allocation.collect_events() if type(e).__qualname__ == "Allocation.RankExited"]
    assert AssignmentWaiters(feed.views).touched([exited]) == {str(n1.id), str(n2.id)}


def test_without_procs_per_node_each_node_runs_as_many_processes_as_the_job_has_cores():
    feed, n1 = Feed(), addressed("node-1", "10.0.0.1")
    feed.save(n1)
    workflow = submit(MPI.replace(", procs-per-node: 4}", "}, resource: {cpu: {cores: 3}}").replace("nodes: 2", "nodes: 1"))
    allocation = request(workflow, "train")
    allocation.place([str(n1.id)], by="scheduler", at=at(1))
    feed.save(workflow, allocation)
    [spec] = wire(feed.views.assignments(n1.id))
    assert spec["peers"]["procs_per_node"] == 3


def test_the_agent_builds_a_multinode_rank_with_its_peers():
    from api.agent.starts import build_spec
    feed, _, n1, _ = placed_on_two()
    [spec] = feed.views.assignments(n1.id).start
    assert build_spec(spec).peers == spec.peers and spec.peers is not None
