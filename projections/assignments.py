"""What a node agent must run and kill: its RUNNING allocations with their run specs, and ended ones to stop.

A run spec is taken from the workflow's definition (the stage as `list_stages` built it), so the agent
needs nothing but this answer to start a process. "stop" lists work this agent (placed since its node's
current registration) must kill: allocations ended CANCELED, PREEMPTED or EVICTED, and running work of
a canceled workflow.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from domain.agent_protocol import Assignments, Stop
from domain.agent_start import PersistentVolume, ServicePort, Start, Transfer
from domain.allocation import Allocation, QueueState
from domain.fuzzfile.replicas import replica_port
from domain.fuzzfile.restart import restart_delay
from domain.fuzzfile.schema import Job, Probe, Service
from domain.fuzzfile.stages import Stage
from domain.fuzzfile.transfers import TRANSFER_KINDS
from domain.multinode import Peers, leader_port
from domain.scheduler.nvlink import NVLINK_DOMAIN, imex_channel
from domain.secrets.references import IMAGE_SECRET_VARIABLE
from domain.workflow import Workflow
from domain.workflow_volumes import volumes_of
from projections.nodes import NodesView
from projections.queue import QueueView
from projections.tenancy import TenancyView
from projections.workflows import Owner, WorkflowsView

ENDED = ("FINISHED", "FAILED", "CANCELED")
Step = Job | Service  # a stage's step in the definition, as the agent's run spec reads it
KILLED = frozenset({QueueState.CANCELED, QueueState.PREEMPTED, QueueState.EVICTED})
DONE = frozenset({QueueState.FINISHED, QueueState.FAILED})


def assignments(node_id: Any, queue: QueueView, workflows: WorkflowsView, nodes: NodesView,
                tenancy: TenancyView | None = None, kept: RunSpecs | None = None) -> Assignments[Start]:
    """{"start": [run spec, ...], "stop": [Stop, ...], "volumes": [workflow id, ...]} for one node (the protocol's
    Assignments); "volumes" names the workflows not yet ended whose volumes live here (the agent removes the rest).
    `kept` (the run specs earlier answers made) spares making again those of allocations that did not change."""
    specs = kept if kept is not None else RunSpecs()
    wanted, since = str(node_id), nodes.joined_at(node_id)
    node = nodes.node(node_id)
    start: list[Start] = []
    stop: list[Stop] = []
    volumes: set[str] = set()
    settled: list[UUID] = []
    for a in queue.on_node(wanted):
        if wanted not in a.nodes:  # placed elsewhere since (a placement here again lists it again)
            settled.append(a.id)
            continue
        workflow = workflows.workflow(a.workflow_id)
        if a.state in DONE and (workflow is None or workflow.status in ENDED):
            settled.append(a.id)  # ended, and its workflow with it: nothing more to say to this node of it
            continue
        if workflow is not None and node is not None and _holds_volumes(workflow, node.name):
            volumes.add(str(a.workflow_id))  # before the registration check: a volume outlives a re-registration
        if since is not None and a.started_at is not None and a.started_at < since:
            continue
        canceled = workflow is not None and workflow.canceled_reason is not None
        if wanted in a.rank_exits:
            continue  # this node's rank has exited: it never runs again, even for a restarted agent
        if a.stopping and not canceled:
            stop.append(_stop_rank(a))
        elif a.state is QueueState.RUNNING and not canceled and workflow is not None:
            start.append(specs.of(a, workflow, queue, _peers(a, wanted, workflow, nodes), tenancy))
        elif a.state in KILLED or (a.state is QueueState.RUNNING and canceled):
            stop.append(_stop(a, workflow))
    queue.settled(wanted, settled)
    specs.drop(settled)
    return Assignments(start, stop, sorted(volumes))


class RunSpecs:
    """Run specs as answers made them, each with what it was made from: a node's answer is made again for every batch
    that touches the node, and most of its running work has not changed since the last one.

    A spec is made again when its allocation, its workflow (by version), its owner or the tenancy (whose uids and gids
    it carries) changed; a multinode rank's (which names its peers' addresses) is made every time."""

    MOST = 50_000  # specs kept at most (ended work is dropped as its node's answer settles it; this bounds the rest)

    def __init__(self) -> None:
        self._kept: dict[UUID, tuple[tuple[Any, ...], Start]] = {}

    def of(self, a: Allocation, workflow: Workflow, queue: QueueView, peers: Peers | None,
           tenancy: TenancyView | None) -> Start:
        revision = getattr(tenancy, "revision", None) if tenancy is not None else 0
        if peers is not None or revision is None:  # a stand-in for the tenancy view says nothing of its changes
            return run_spec(a, workflow, queue, peers, tenancy)
        made_from = (a, a.version, workflow, workflow.version, queue.owner(a.workflow_id), tenancy, revision)
        known = self._kept.get(a.id)
        if known is not None and all(x is y or x == y for x, y in zip(known[0], made_from, strict=True)):
            return known[1]
        if len(self._kept) >= self.MOST:
            self._kept.clear()
        spec = run_spec(a, workflow, queue, None, tenancy)
        self._kept[a.id] = (made_from, spec)
        return spec

    def drop(self, allocation_ids: list[UUID]) -> None:
        """Allocations no answer names again."""
        for allocation_id in allocation_ids:
            self._kept.pop(allocation_id, None)


def _holds_volumes(workflow: Workflow, node: str) -> bool:
    return workflow.status not in ENDED and node in workflow.volume_nodes.values()


def _stop(a: Allocation, workflow: Workflow | None) -> Stop:
    reason = a.reason if a.state in KILLED or workflow is None else f"workflow canceled: {workflow.canceled_reason}"
    return Stop(allocation_id=str(a.id), epoch=a.epoch, workflow_id=str(a.workflow_id), stage=a.stage,
                state=a.state.value, reason=reason)


def _stop_rank(a: Allocation) -> Stop:
    """A rank of a multinode allocation failed: the others stop, and the allocation ends when all have exited."""
    return Stop(allocation_id=str(a.id), epoch=a.epoch, workflow_id=str(a.workflow_id), stage=a.stage,
                state=a.state.value, rank_stop=True, ranks=len(a.nodes),
                reason=f"rank {a.failed_rank} failed: the job stops on every node")


def _peers(a: Allocation, node_id: str, workflow: Workflow, nodes: NodesView) -> Peers | None:
    """A multinode job's rank on this node and every rank's registered address (`multinode: {nodes: 1}` too)."""
    spec = workflow.stages[a.stage].spec
    multinode = getattr(_step(workflow, spec.step, spec.kind), "multinode", None)
    if multinode is None or node_id not in a.nodes:
        return None
    hosts = []
    for peer in a.nodes:
        row = nodes.get(peer)
        hosts.append((row.address or row.name) if row is not None else peer)
    here = nodes.get(node_id)
    annotations = here.annotations if here is not None else {}
    return Peers(rank=a.rank_of(node_id), hosts=tuple(hosts), port=leader_port(a.id),
                 procs_per_node=multinode.procs_per_node or max(1, int(spec.resources.cpu_cores)),  # Fuzzball's default
                 implementation=multinode.implementation or "", nvlink_domain=annotations.get(NVLINK_DOMAIN, ""),
                 imex_channel=imex_channel(annotations))


def run_spec(a: Allocation, workflow: Workflow, queue: QueueView, peers: Peers | None = None,
             tenancy: TenancyView | None = None) -> Start:
    """Everything the agent needs to start one allocation, with whom it runs as; a multinode rank gets its peers."""
    spec = workflow.stages[a.stage].spec
    step = _step(workflow, spec.step, spec.kind)
    owner = queue.owner(a.workflow_id)
    transfer = spec.kind in TRANSFER_KINDS
    image_owner, image_group = _image_owner(owner, spec)
    return Start(
        allocation_id=str(a.id), epoch=a.epoch, workflow_id=str(a.workflow_id), stage=a.stage, job=spec.step,
        task_id=spec.task_id, kind=spec.kind, image=spec.image, script=spec.script, command=spec.command,
        args=spec.args, env=_transfer_env(spec) if transfer else {**spec.env, **_image_secret(spec)}, cwd=spec.cwd,
        files=_files(workflow, step), execute_timeout_seconds=spec.execute_timeout_seconds,
        memory_bytes=spec.resources.memory_bytes, cpu_cores=spec.resources.cpu_cores,
        account_id=owner.group_id or owner.user_id, owner_id=owner.user_id, readiness_probe=_probe(step, spec),
        ports=_ports(step, spec), mounts=dict(spec.mounts), profile=spec.profile, hooks=list(spec.hooks),
        start_delay_seconds=restart_delay(a.attempt, spec.restart_backoff, spec.restart_max_backoff) or None,
        volume=spec.volume if transfer else "",
        transfers=[Transfer(m.source, m.destination) for m in spec.transfers] if transfer else [],
        liveness_probe=_liveness(step, spec), persistent=_persistent(workflow, spec), peers=peers,
        **_identity(queue, a, tenancy), devices=dict(spec.resources.devices), network_isolated=_isolated(step),
        image_owner=image_owner, image_group=image_group, build=spec.build,
    )


def _image_owner(owner: Owner, spec: Stage) -> tuple[str | None, str | None]:
    """For a build, or a job in a built image, whose image it is (its owner's, shared with their group); None for
    other work, whose answer (and its ETag) stays."""
    if spec.build is None and not spec.image.startswith("fuzzball://"):
        return None, None
    return owner.user_id, owner.group_id


def _isolated(step: Step | None) -> bool:
    """A job's private network, only when asked for."""
    return isinstance(step, Job) and step.network is not None and bool(step.network.isolated)


def _image_secret(spec: Stage) -> dict[str, str]:
    """The image's registry secret rides in env, where the agent's answer resolves it (the agent takes it out of the
    job's env again: adapters/registry_auth.py)."""
    secret = getattr(spec, "image_secret", "")
    return {IMAGE_SECRET_VARIABLE: secret} if secret and spec.image else {}


def _transfer_env(spec: Stage) -> dict[str, str]:
    """An ingress or egress stage's env is its moves' secrets, which the agent's answer resolves."""
    return {f"ROVING_TRANSFER_SECRET_{i}": m.secret for i, m in enumerate(spec.transfers) if m.secret}


def _persistent(workflow: Workflow, spec: Stage) -> dict[str, PersistentVolume]:
    """The persistent volumes this stage uses, as bound at submission: each one's directory, owner and mode."""
    bindings = workflow.volume_bindings
    return {name: PersistentVolume(bindings[name]["path"], bindings[name]["uid"], bindings[name]["gid"],
                                   bindings[name]["mode"], made=bool(bindings[name].get("provisioner")))
            for name in volumes_of(spec) if name in bindings}


def _step(workflow: Workflow, name: str, kind: str) -> Step | None:
    definition = workflow.definition
    steps = (definition.services if kind == "service" else definition.jobs) or {}
    return steps.get(name)


def _files(workflow: Workflow, step: Step | None) -> dict[str, str]:
    """Path -> content; `file://name` refers to the definition's top-level `files`."""
    shared = workflow.definition.files or {}
    own = (step.files if step is not None else None) or {}
    return {path: shared.get(ref.removeprefix("file://"), ref) if ref.startswith("file://") else ref
            for path, ref in own.items()}


def _probe(step: Step | None, spec: Stage) -> Probe | None:
    """The service's readiness probe; a replica's probes its own port when the probe names a declared one."""
    if not isinstance(step, Service) or step.readiness_probe is None:
        return None
    return _on_replica_port(step.readiness_probe, spec)


def _liveness(step: Step | None, spec: Stage) -> Probe | None:
    """The service's liveness probe, shifted to a replica's port like its readiness probe."""
    if not isinstance(step, Service) or step.roving_liveness_probe is None:
        return None
    return _on_replica_port(step.roving_liveness_probe, spec)


def _on_replica_port(probe: Probe, spec: Stage) -> Probe:
    declared = set(spec.replica_ports.values())
    http, tcp = probe.http_get, probe.tcp_socket
    if http is not None and http.port in declared:
        probe = msgspec.structs.replace(probe, http_get=msgspec.structs.replace(
            http, port=replica_port(http.port, spec.name)))
    if tcp is not None and tcp.port in declared:
        probe = msgspec.structs.replace(probe, tcp_socket=msgspec.structs.replace(
            tcp, port=replica_port(tcp.port, spec.name)))
    return probe


def _ports(step: Step | None, spec: Stage) -> list[ServicePort]:
    if not isinstance(step, Service) or step.network is None:
        return []
    return [ServicePort(p.name, replica_port(p.port, spec.name) if spec.replica_ports else p.port, p.protocol)
            for p in step.network.ports or []]


def _identity(queue: QueueView, a: Allocation, tenancy: TenancyView | None) -> dict[str, Any]:
    """The owner's uid, primary gid and group gids; nothing for an owner without a uid (the agent's fallback)."""
    if tenancy is None:
        return {}
    owner = queue.owner(a.workflow_id)
    return tenancy.job_identity(owner.user_id or None, owner.group_id or None)


