"""Stages of a validated workflow definition: one per job, service and task-array task, with defaults applied.

A task array is one `Step` (a template stage and its id range); its task stages are made from the template
only when asked for, so a definition's size, not its array sizes, is what listing its steps costs.
"""

from __future__ import annotations

from typing import Any

import msgspec

from domain.fuzzfile.blocks import Resource
from domain.fuzzfile.graph import dependencies, topological_order
from domain.fuzzfile.hooks import hook_seconds
from domain.fuzzfile.images import (
    BUILD,
    RUNTIME_ANNOTATION,
    BuildPlan,
    build_plan,
    build_stage_name,
    image_order,
    own_image,
)
from domain.fuzzfile.layering import layers_of, mounts, step_env, step_policy, step_resource
from domain.fuzzfile.policy import RetryRule, execute_timeout, retry_rule
from domain.fuzzfile.replicas import port_env, replica_count
from domain.fuzzfile.restart import backoff_seconds, service_retry
from domain.fuzzfile.schema import Container, Defaults, Job, Service, StepDefaults, Workflow
from domain.fuzzfile.transfers import (
    EGRESS,
    INGRESS,
    Move,
    egress_volumes,
    ingress_volumes,
    mounted_volumes,
    moves,
    transfer_stage_name,
)
from domain.quantities import parse_memory

DEFAULT_SHELL = "#!/bin/sh\n"


class Resources(msgspec.Struct, frozen=True, omit_defaults=True):
    """What one stage asks of the cluster; memory is the total in bytes (by-core already multiplied)."""

    cpu_cores: int = 1
    memory_bytes: int = 0
    devices: dict[str, int] = {}
    exclusive: bool = False
    annotations: dict[str, str] = {}
    nodes: int = 1
    shared: dict[str, int] = {}  # shared resources (licenses) by name, held once per stage whatever its nodes


class Needs(msgspec.Struct, frozen=True):
    """A dependency condition: step `name` must reach `status` (FINISHED, FAILED or RUNNING)."""

    name: str
    status: str


class Hook(msgspec.Struct, frozen=True):
    """One hook script of a stage: `when` pre or post, `source` whose it is (`profile NAME` or `job`)."""

    when: str
    source: str
    script: str
    timeout_seconds: float


class Stage(msgspec.Struct, frozen=True, omit_defaults=True):
    """A placeable unit of the workflow. `step` is the job/service name; tasks carry their FB_TASK_ID."""

    name: str
    kind: str
    step: str
    resources: Resources
    dependencies: list[Needs]
    execute_timeout_seconds: float | None = None
    preemptible: bool | None = None
    retry: RetryRule = RetryRule()
    task_id: int | None = None
    concurrency: int | None = None
    image: str = ""
    image_secret: str = ""  # the `secret://` reference whose value opens a private registry (never the value)
    command: list[str] | None = None
    script: str | None = None
    args: list[str] | None = None
    env: dict[str, str] = {}
    cwd: str | None = None
    mounts: dict[str, str] = {}
    persist: bool = False
    restart_backoff: float = 0.0  # an on-failure service's first backoff, doubling up to restart_max_backoff
    restart_max_backoff: float = 0.0
    profile: str = ""
    profile_revision: int = 0
    profile_digest: str = ""
    hooks: list[Hook] = []
    volume: str = ""  # the volume an ingress or egress stage moves files into or out of
    transfers: list[Move] = []
    replica_ports: dict[str, int] = {}  # a replicated service's declared ports: replica i serves each + i - 1
    build: BuildPlan | None = None  # a `build:NAME` stage: the image it builds


class Step(msgspec.Struct, frozen=True):
    """A job or service (one stage), or a task array: a `task` template with `concurrency` and ids first..last."""

    template: Stage
    first: int | None = None
    last: int | None = None

    @property
    def size(self) -> int:
        return 1 if self.first is None or self.last is None else self.last - self.first + 1

    def stage(self, offset: int) -> Stage:
        """The stage at `offset` (0 for a job or service; task `first + offset` of an array)."""
        if self.first is None:
            return self.template
        return task_stage(self.template, self.first + offset)

    def stage_name(self, offset: int) -> str:
        return self.template.name if self.first is None else task_stage_name(self.template.step, self.first + offset)

    def offset(self, stage: str) -> int | None:
        """Where `stage` sits in this step, or None when it is not one of its stages."""
        if self.first is None or self.last is None:  # (a task array has both)
            return 0 if stage == self.template.name else None
        head, bracket, tail = stage.partition("[")
        if head != self.template.step or not bracket or not tail.endswith("]") or not tail[:-1].isdecimal():
            return None
        task_id = int(tail[:-1])
        if not self.first <= task_id <= self.last or task_stage_name(head, task_id) != stage:
            return None
        return task_id - self.first


def list_steps(workflow: Workflow) -> list[Step]:
    """Every image build (each after its base), every volume's ingress, then every job, service and task array in
    dependency order (each in constant size), then every volume's egress."""
    fed = set(ingress_volumes(workflow))
    steps = [Step(_build(workflow, image)) for image in image_order(workflow)]
    steps += [Step(_transfer(workflow, INGRESS, volume, [])) for volume in ingress_volumes(workflow)]
    jobs, services = workflow.jobs or {}, workflow.services or {}
    for name in topological_order(workflow):
        if name in jobs:
            step = _job_step(name, jobs[name], workflow.defaults, fed)
        else:
            step = _service_step(name, services[name], workflow.defaults, fed)
        steps.append(_after_build(workflow, step))
    for volume in egress_volumes(workflow):
        writers = [s.template.step for s in steps if s.template.kind != "service" and volume in s.template.mounts.values()]
        needs = [Needs(name, "FINISHED") for name in writers + ([transfer_stage_name(INGRESS, volume)] if volume in fed else [])]
        steps.append(Step(_transfer(workflow, EGRESS, volume, needs)))
    return steps


def _transfer(workflow: Workflow, kind: str, volume: str, needs: list[Needs]) -> Stage:
    name = transfer_stage_name(kind, volume)
    return Stage(name=name, kind=kind, step=name, resources=Resources(), dependencies=needs, volume=volume,
                 transfers=moves(getattr((workflow.volumes or {})[volume], kind)))


def _build(workflow: Workflow, image: str) -> Stage:
    """`build:NAME`, placed like a one-core job on a node with the oci runtime; after the build of its base when that
    is the workflow's own."""
    plan = build_plan(workflow, image)
    base = own_image(workflow, plan.source)
    needs = [Needs(build_stage_name(base), "FINISHED")] if base is not None else []
    name = build_stage_name(image)
    return Stage(name=name, kind=BUILD, step=name, resources=Resources(annotations={RUNTIME_ANNOTATION: "oci"}),
                 dependencies=needs, image=plan.source, build=plan)


def _after_build(workflow: Workflow, step: Step) -> Step:
    """A step whose image the workflow builds waits for that build, and runs only where that image can run (a node
    with the oci runtime, as the build): a host node would run it bare, without the image it names."""
    image = own_image(workflow, step.template.image)
    if image is None:
        return step
    needs = [Needs(build_stage_name(image), "FINISHED"), *step.template.dependencies]
    resources = step.template.resources
    oci = msgspec.structs.replace(resources, annotations={**resources.annotations, RUNTIME_ANNOTATION: "oci"})
    template = msgspec.structs.replace(step.template, dependencies=needs, resources=oci)
    return msgspec.structs.replace(step, template=template)


def list_stages(workflow: Workflow) -> list[Stage]:
    """Every stage in dependency order; a task array gives one `task` stage per id, named `job[id]`."""
    return [step.stage(offset) for step in list_steps(workflow) for offset in range(step.size)]


def task_stage_name(step: str, task_id: int) -> str:
    return f"{step}[{task_id}]"


def task_stage(template: Stage, task_id: int) -> Stage:
    """Task `task_id` of an array (or a service's replica): the template named `job[id]` with its FB_TASK_ID (and
    a replica's FB_PORT_<NAME>)."""
    env = {**template.env, "FB_TASK_ID": str(task_id), **port_env(template.replica_ports, task_id)}
    return msgspec.structs.replace(template, name=task_stage_name(template.step, task_id), task_id=task_id, env=env)


def _service_step(name: str, service: Service, defaults: Defaults | None, fed: set[str]) -> Step:
    """A service, or with `replicas: N` (N > 1) a pool of N replica stages `name[1]` .. `name[N]`."""
    base = _stage(name, "service", service, layers_of(defaults, "service"), fed)
    count = replica_count(service)
    if count == 1:
        return Step(base)
    declared = service.network.ports if service.network is not None else None
    ports = {p.name: p.port for p in declared or []}
    return Step(msgspec.structs.replace(base, replica_ports=ports), 1, count)


def _job_step(name: str, job: Job, defaults: Defaults | None, fed: set[str]) -> Step:
    base = _stage(name, "job", job, layers_of(defaults, "job"), fed)
    array = job.task_array
    if array is None:
        return Step(base)
    concurrency = array.concurrency or (array.end - array.start + 1)
    return Step(msgspec.structs.replace(base, kind="task", concurrency=concurrency), array.start, array.end)


def _stage(name: str, kind: str, step: Container, layers: list[StepDefaults], fed: set[str]) -> Stage:
    """`fed`: the volumes with an ingress, which every stage mounting them waits for."""
    policy = step_policy(layers, step) if isinstance(step, Job) else None
    backoff, most = backoff_seconds(step) if isinstance(step, Service) else (0.0, 0.0)
    mounted = mounts(layers, step)
    ingress = [Needs(transfer_stage_name(INGRESS, v), "FINISHED") for v in mounted_volumes(mounted) if v in fed]
    return Stage(
        name=name, kind=kind, step=name,
        resources=_resources(step_resource(layers, step.resource), step),
        dependencies=ingress + [Needs(d.name, d.status.upper()) for d in dependencies(step)],
        execute_timeout_seconds=execute_timeout(policy),
        preemptible=step.preemptible,
        retry=service_retry(step) if isinstance(step, Service) else retry_rule(policy),
        restart_backoff=backoff, restart_max_backoff=most,
        image=step.image.uri if step.image else "",
        image_secret=(step.image.secret or "") if step.image else "",
        command=step.command,
        script=_with_shebang(step.script),
        args=step.args,
        env=step_env(layers, step),
        cwd=step.cwd,
        mounts=mounted,
        persist=bool(step.persist) if isinstance(step, Service) else False,
        **_profile(step),
    )


def _profile(step: Container) -> dict[str, Any]:
    """The bound profile's name, revision and fingerprint, and the hooks in the order they run: the profile's pre
    before the job's own, the job's own post before the profile's."""
    bound, own = step.roving_profile, step.roving_hooks
    hooks: list[Hook] = []
    if bound is not None and bound.pre:
        hooks.append(Hook("pre", f"profile {bound.name}", bound.pre, bound.hook_timeout))
    if own is not None:
        seconds = hook_seconds(own.timeout)
        hooks += [Hook(when, "job", script, seconds) for when, script in (("pre", own.pre), ("post", own.post)) if script]
    if bound is not None and bound.post:
        hooks.append(Hook("post", f"profile {bound.name}", bound.post, bound.hook_timeout))
    if bound is None:
        return {"hooks": hooks}
    return {"profile": bound.name, "profile_revision": bound.revision, "profile_digest": bound.digest, "hooks": hooks}


def _with_shebang(script: str | None) -> str | None:
    if script is None or script.lstrip().startswith("#!"):
        return script
    return DEFAULT_SHELL + script


def _resources(resource: Resource, step: Container) -> Resources:
    cores = resource.cpu.cores if resource.cpu and resource.cpu.cores else 1
    memory = resource.memory
    size = parse_memory(memory.size) if memory and memory.size is not None else 0
    return Resources(
        cpu_cores=cores,
        memory_bytes=size * cores if memory and memory.by_core else size,
        devices=dict(resource.devices or {}),
        exclusive=bool(resource.exclusive),
        annotations=dict(resource.annotations or {}),
        nodes=step.multinode.nodes if step.multinode else 1,
        shared=dict(resource.shared or {}),
    )
