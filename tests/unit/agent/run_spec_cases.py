"""Representative placements whose assignments answers tests/unit/agent/test_run_spec_wire.py pins byte for byte:
a job run as its owner, a multinode rank, a service with probes and ports restarted after its backoff, an image
build and a job in the built image, a GPU job on a private network with hooks, an ingress stage, a second replica
(its ports and probes shifted), a job in a private image (its registry secret in env), a persistent volume.

Everything here is deterministic (uuid5 ids, fixed times), so the same state gives the same bytes on every run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain.node import Capacity, Node
from projections.assignments import assignments
from tests.unit.projections.builders import T0, Feed, GiB, at, node, request, submit, uid

JOB = ("version: v4\njobs:\n  train: {image: {uri: docker://alpine:3.20}, script: 'echo hi', env: [A=1, B=two],"
       " cwd: /tmp, resource: {cpu: {cores: 2}, memory: {size: 1GiB}}, policy: {timeout: {execute: 10m}},"
       " task-array: {start: 1, end: 2}}\n")
MPI = ("version: v4\njobs:\n  train: {image: {uri: docker://alpine:3.20}, script: 'mpirun hostname',"
       " multinode: {nodes: 2, implementation: openmpi, procs-per-node: 4}}\n")
SERVICE = (
    "version: v4\nfiles:\n  cfg: 'port=8080'\n"
    "services:\n  web: {image: {uri: docker://nginx:1}, command: [nginx], args: [-g, daemon off], "
    "files: {/etc/app.cfg: 'file://cfg', /etc/motd: hello},"
    " network: {ports: [{name: http, port: 8080}, {name: dns, port: 53, protocol: udp}]},"
    " readiness-probe: {http-get: {port: 8080, path: /ready}, period-seconds: 2},"
    " roving-liveness-probe: {tcp-socket: {port: 8080}, failure-threshold: 3},"
    " policy: {restart: on-failure}, roving-restart: {attempts: 3, backoff: 2s, max-backoff: 8s}}\n")
BUILDS = (
    "version: v4\nimages:\n  tools:\n    from: docker://alpine:3.20\n    post: touch /opt/t\n    scope: group\n"
    "jobs:\n  use: {image: {uri: 'fuzzball://user/tools'}, command: [/opt/t]}\n")
GPU = ("version: v4\njobs:\n  gpu: {image: {uri: docker://cuda:12}, command: [nvidia-smi],"
       " resource: {devices: {nvidia.com/gpu: 2}}, network: {isolated: true},"
       " roving-hooks: {pre: 'echo before', post: 'echo after', timeout: 30s}}\n")
INGRESS = ("version: v4\nvolumes:\n  data:\n    reference: volume://user/ephemeral\n    ingress:\n"
           "      - source: {uri: s3://bucket/genome.fa, secret: secret://user/s3}\n"
           "        destination: {uri: file://inputs/genome.fa}\n"
           "jobs:\n  align:\n    image: {uri: docker://alpine:3.20}\n    script: wc -c /data/inputs/genome.fa\n"
           "    mounts: {/data: {volume: data}}\n")
PERSISTENT = ("version: v4\nvolumes:\n  hot: {reference: volume://user/fast/hot}\njobs:\n  write:\n"
              "    image: {uri: docker://alpine}\n    script: date > hot/stamp\n    mounts: {/hot: {volume: hot}}\n")
REPLICAS = ("version: v4\nservices:\n  model: {image: {uri: docker://alpine}, script: serve, replicas: 2,"
            " network: {ports: [{name: http, port: 8000}]}, readiness-probe: {http-get: {port: 8000, path: /ready}},"
            " roving-liveness-probe: {tcp-socket: {port: 8000}}}\n")
PRIVATE = ("version: v4\njobs:\n  train: {image: {uri: docker://registry.example.org/team/trainer:2,"
           " secret: secret://user/registry}, script: echo hi, env: [PLAIN=1]}\n")
BINDING = {"reference": "volume://user/fast/hot", "path": "/srv/v/org/user/100000/hot", "uid": 100000,
           "gid": 100000, "mode": 0o700, "segment": ""}


class Identities:
    """The tenancy view's `job_identity` for one owner (its own rule is tested with the tenancy view)."""

    def __init__(self, found: dict[str, Any]) -> None:
        self.found = found

    def job_identity(self, user_id: Any, group_id: Any) -> dict[str, Any]:
        return dict(self.found)


def addressed(name: str, address: str) -> Node:
    n = Node.register(uid(name), name, "cpu-small", Capacity(cpu=8, memory=32 * GiB, agent_address=address),
                      by="agent", at=T0)
    n.mark_ready(1, by="agent", at=T0)
    return n


def answer_of(text: str, stages: list[str], on: list[Node] | None = None, attempt: int = 1,
              tenancy: Any = None, bindings: dict[str, Any] | None = None, name: str = "wf") -> Any:
    """The assignments answer for the first node of `on` once `stages` are placed on all of `on` and running."""
    feed = Feed()
    nodes = on or [node("node-1")]
    feed.save(*nodes)
    workflow = submit(text, name=name)
    if bindings:
        workflow.bind_volumes(bindings, by="alice", at=at(0))
    placed = []
    for stage in stages:
        allocation = request(workflow, stage, attempt=attempt)
        allocation.place([str(n.id) for n in nodes], by="scheduler", at=at(1))
        if attempt == 1:  # (a restarted attempt's start is the allocation's alone here)
            workflow.stage_started(stage, attempt, nodes[0].name, at(1))
        placed.append(allocation)
    feed.save(workflow, *placed)
    views = feed.views
    return assignments(nodes[0].id, views.queue, views.workflows, views.nodes, tenancy)


def _built() -> Any:
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(BUILDS)
    build = request(workflow, "build:tools")
    build.place([str(n1.id)], by="scheduler", at=at(1))
    workflow.stage_started("build:tools", 1, "node-1", at(1))
    workflow.stage_exited("build:tools", 1, 0, at(2), told="image tools built and stored (1.0 MB)")
    use = request(workflow, "use", minute=2)
    use.place([str(n1.id)], by="scheduler", at=at(3))
    feed.save(workflow, build, use)
    views = feed.views
    return assignments(n1.id, views.queue, views.workflows, views.nodes, None)


ALICE = {"uid": 100000, "gid": 200000, "groups": [200000, 200001], "username": "alice"}
LONER = {"uid": 100001, "gid": 100001, "groups": [], "username": "bob"}  # in no group with a gid

CASES: dict[str, Callable[[], Any]] = {
    "job_as_owner": lambda: answer_of(JOB, ["train[1]", "train[2]"], tenancy=Identities(ALICE)),
    "job_owner_in_no_group": lambda: answer_of(JOB, ["train[1]"], tenancy=Identities(LONER)),
    "job_owner_without_uid": lambda: answer_of(JOB, ["train[2]"], tenancy=Identities({})),
    "multinode_rank": lambda: answer_of(MPI, ["train"], on=[addressed("node-1", "10.0.0.1"),
                                                             addressed("node-2", "10.0.0.2")]),
    "service_restarted": lambda: answer_of(SERVICE, ["web"], attempt=2),
    "service_first": lambda: answer_of(SERVICE, ["web"]),
    "image_build": lambda: answer_of(BUILDS, ["build:tools"]),
    "job_in_built_image": _built,
    "gpu_private_network_hooks": lambda: answer_of(GPU, ["gpu"]),
    "ingress": lambda: answer_of(INGRESS, ["ingress:data"]),
    "second_replica": lambda: answer_of(REPLICAS, ["model[2]"]),
    "private_image": lambda: answer_of(PRIVATE, ["train"]),
    "persistent_volume": lambda: answer_of(PERSISTENT, ["write"], bindings={"hot": BINDING}),
}
