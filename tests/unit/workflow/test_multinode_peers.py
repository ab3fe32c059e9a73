"""What a multinode rank is told: a hostfile in its MPI's syntax and the variables mpirun and torchrun read."""

from uuid import uuid4

from domain.allocation import Allocation, QueueState
from domain.fuzzfile import Resources
from domain.multinode import Peers, environment, hostfile, leader_port
from tests.unit.app.builders import T0, later

PEERS = Peers(rank=1, hosts=("10.0.0.1", "10.0.0.2"), port=29517, procs_per_node=4, implementation="openmpi")


def test_the_hostfile_lists_every_rank_in_its_mpi_syntax():
    assert hostfile(PEERS) == "10.0.0.1 slots=4\n10.0.0.2 slots=4\n"
    assert hostfile(Peers(rank=0, hosts=("a", "b"), port=1, procs_per_node=2, implementation="mpich")) == "a:2\nb:2\n"
    assert hostfile(Peers(rank=0, hosts=("a", "b"), port=1)) == "a\nb\n"


def test_every_rank_gets_its_rank_the_node_count_the_hostfile_and_the_leader():
    env = environment(PEERS, "/work/wf/train-1/hostfile")
    assert {k: env[k] for k in ("FB_NODE_RANK", "FB_NNODES", "FB_HOSTFILE", "FB_LEADER_ADDR", "FB_LEADER_PORT")} == {
        "FB_NODE_RANK": "1", "FB_NNODES": "2", "FB_HOSTFILE": "/work/wf/train-1/hostfile",
        "FB_LEADER_ADDR": "10.0.0.1", "FB_LEADER_PORT": "29517"}
    assert (env["NODE_RANK"], env["NNODES"], env["MASTER_ADDR"], env["MASTER_PORT"], env["WORLD_SIZE"]) == (
        "1", "2", "10.0.0.1", "29517", "8")
    assert env["FB_MPI_IMPLEMENTATION"] == "openmpi"


def test_the_leader_port_is_the_same_for_every_rank_and_in_its_range():
    allocation = uuid4()
    assert leader_port(allocation) == leader_port(str(allocation))
    assert 29500 <= leader_port(allocation) < 30500


def test_a_new_placement_forgets_the_ranks_that_exited_before_it():
    a = Allocation.request(uuid4(), uuid4(), "train", 1, Resources(nodes=2), by="s", at=T0)
    a.mark_ready(by="s", at=T0)
    first = a.place(["n1", "n2"], by="s", at=later(1))
    a.rank_exited("n1", 0, first, by="agent", at=later(2))
    second = a.place(["n3", "n4"], by="s", at=later(3))
    assert a.rank_exits == {} and a.state is QueueState.RUNNING
    assert not a.rank_exited("n3", 0, second, by="agent", at=later(4))
    assert a.rank_exited("n4", 0, second, by="agent", at=later(5)) and a.state is QueueState.FINISHED


def test_the_multinode_example_asks_for_two_nodes():
    from pathlib import Path

    from domain.fuzzfile import list_stages, parse_fuzzfile
    parsed = parse_fuzzfile((Path(__file__).parents[3] / "examples" / "multinode.yaml").read_text())
    assert parsed.errors == []
    [stage] = list_stages(parsed.definition)
    assert stage.resources.nodes == 2
