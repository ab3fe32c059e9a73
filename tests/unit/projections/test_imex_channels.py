"""Each rank of a multinode job on NVLink nodes is told its domain and the IMEX channel the domain uses (device and
NVIDIA_IMEX_CHANNELS); ranks outside every domain are told nothing of IMEX."""

from domain.multinode import Peers, environment
from domain.node import Capacity, Node
from domain.scheduler.nvlink import IMEX_CHANNEL, NVLINK_DOMAIN
from tests.unit.projections.builders import T0, Feed, GiB, at, request, submit, uid, wire

GANG = ("version: v4\njobs:\n  train: {image: {uri: docker://alpine:3.20}, script: 'torchrun train.py',"
        " resource: {devices: {nvidia.com/gpu: 4}}, multinode: {nodes: 2}}\n")


def gpu_node(name: str, address: str, annotations: dict[str, str]) -> Node:
    n = Node.register(uid(name), name, "gpu", Capacity(cpu=8, memory=32 * GiB, devices={"nvidia.com/gpu": 4},
                                                       annotations=annotations, agent_address=address),
                      by="agent", at=T0)
    n.mark_ready(1, by="agent", at=T0)
    return n


def ranks_on(annotations: dict[str, str]) -> list[dict]:
    feed = Feed()
    nodes = [gpu_node(f"gpu-{i}", f"10.0.0.{i}", annotations) for i in (1, 2)]
    feed.save(*nodes)
    workflow = submit(GANG)
    allocation = request(workflow, "train")
    allocation.place([str(n.id) for n in nodes], by="scheduler", at=at(1))
    workflow.stage_started("train", 1, "gpu-1", at(1))
    feed.save(workflow, allocation)
    return [wire(feed.views.assignments(n.id))[0]["peers"] for n in nodes]


def test_every_rank_in_a_domain_gets_the_channel_its_nodes_declare():
    first, second = ranks_on({NVLINK_DOMAIN: "clique-7", IMEX_CHANNEL: "3"})
    assert (first["nvlink_domain"], first["imex_channel"]) == ("clique-7", 3)
    assert (second["nvlink_domain"], second["imex_channel"]) == ("clique-7", 3)


def test_a_domain_that_names_no_channel_uses_channel_0_and_a_rank_outside_domains_gets_none():
    [first, _] = ranks_on({NVLINK_DOMAIN: "clique-7"})
    assert first["imex_channel"] == 0
    [plain, _] = ranks_on({})
    assert "imex_channel" not in plain and "nvlink_domain" not in plain


def test_a_rank_in_a_domain_sees_its_imex_channel_device_and_variable():
    env = environment(Peers(rank=0, hosts=("a", "b"), port=1, nvlink_domain="clique-7", imex_channel=3), "/w/hostfile")
    assert env["NVIDIA_IMEX_CHANNELS"] == "3" and env["FB_IMEX_CHANNEL"] == "3"
    assert env["FB_IMEX_CHANNEL_DEVICE"] == "/dev/nvidia-caps-imex-channels/channel3"
    assert env["FB_NVLINK_DOMAIN"] == "clique-7"
    assert "NVIDIA_IMEX_CHANNELS" not in environment(Peers(rank=0, hosts=("a", "b"), port=1), "/w/hostfile")
