"""Meaning checks on a well-shaped Fuzzfile: images, env, mounts, resources, task arrays, services, volumes."""

from __future__ import annotations

import re

from domain.fuzzfile.blocks import Mount, Resource
from domain.fuzzfile.decode import join
from domain.fuzzfile.graph import check_dependencies, steps
from domain.fuzzfile.hooks import check_roving_keys
from domain.fuzzfile.ignored import ignored_keys
from domain.fuzzfile.images import check_images
from domain.fuzzfile.limits import (
    MAX_CONCURRENCY,
    MAX_CORES,
    MAX_DEVICES,
    MAX_MEMORY_BYTES,
    MAX_NODES,
    MAX_PROCS_PER_NODE,
    MAX_SOCKETS,
    MAX_TASK_ID,
    MAX_TASKS,
    bounded,
)
from domain.fuzzfile.policy import check_policy
from domain.fuzzfile.schema import Container, Job, Problem, Workflow
from domain.fuzzfile.services import check_service
from domain.fuzzfile.transfer_checks import check_transfers
from domain.fuzzfile.volume_refs import parse_reference
from domain.project_paths import ProjectError, check_path
from domain.quantities import MAX_SHARED, QuantityError, parse_memory

IMAGE_SCHEMES = ("docker://", "oras://", "fuzzball://", "fb://")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
AFFINITIES = ("NUMA", "SOCKET", "CORE")
SHARED_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
IMPLEMENTATIONS = ("ompi", "openmpi", "mpich", "gasnet", "generic")


class Report:
    """Errors and warnings collected in one pass."""

    def __init__(self) -> None:
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(Problem(path, message))

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(Problem(path, message))

    def add(self, found: tuple[list[Problem], list[Problem]]) -> None:
        self.errors += found[0]
        self.warnings += found[1]


def validate(workflow: Workflow) -> Report:
    report = Report()
    if workflow.project is not None:
        try:
            check_path(workflow.project)
        except ProjectError as error:
            report.error("project", error.reason)
    if not workflow.jobs and not workflow.services:
        report.error("jobs", "a workflow needs at least one job or service")
    for name in set(workflow.jobs or {}) & set(workflow.services or {}):
        report.error(join("services", name), f"`{name}` is also a job; job and service names must be unique")
    volumes = set(workflow.volumes or {})
    for name, job in (workflow.jobs or {}).items():
        _check_job(job, join("jobs", name), volumes, report)
    for name, service in (workflow.services or {}).items():
        path = join("services", name)
        _check_container(service, path, volumes, report)
        report.add(check_service(service, path))
    _check_defaults(workflow, volumes, report)
    _check_volumes(workflow, report)
    report.add(check_dependencies(workflow))
    report.errors += check_images(workflow, set(steps(workflow)))
    report.warnings += ignored_keys(workflow)
    return report


def _check_job(job: Job, path: str, volumes: set[str], report: Report) -> None:
    _check_container(job, path, volumes, report)
    report.add(check_policy(job.policy, join(path, "policy")))
    array = job.task_array
    if array is not None:
        where = join(path, "task-array")
        if array.start < 0 or array.end < array.start:
            report.error(where, "task ids run from start to end inclusive; "
                                f"start {array.start} must be >= 0 and <= end {array.end}")
        bounded(report.errors, f"{where}.end", array.end, 0, MAX_TASK_ID, "a task id")
        if 0 <= array.start <= array.end:
            bounded(report.errors, where, array.end - array.start + 1, 1, MAX_TASKS, "the number of tasks")
        bounded(report.errors, f"{where}.concurrency", array.concurrency, 1, MAX_CONCURRENCY, "concurrency")
    for key in ("expose_tcp", "expose_udp"):
        for index, port in enumerate(getattr(job.network, key) or [] if job.network else []):
            bounded(report.errors, f"{join(path, 'network')}.{key.replace('_', '-')}[{index}]", port, 1, 65535, "a port")


def _check_container(step: Container, path: str, volumes: set[str], report: Report) -> None:
    _check_image(step, path, report)
    if step.command is None and step.script is None:
        report.error(path, "set `command` or `script` so the step has something to run")
    if step.command is not None and step.script is not None:
        report.error(join(path, "script"), "set either `command` or `script`, not both")
    _check_env(step.env, join(path, "env"), report)
    if step.cwd is not None and not step.cwd.startswith("/"):
        report.error(join(path, "cwd"), "cwd must be an absolute path (start with /)")
    _check_mounts(step.mounts, join(path, "mounts"), volumes, report)
    check_resource(step.resource, join(path, "resource"), report)
    _check_multinode(step, path, report)
    report.add(check_roving_keys(step, path))


def _check_image(step: Container, path: str, report: Report) -> None:
    if step.image is None:
        report.error(join(path, "image"), "every job and service needs an image, e.g. image: {uri: docker://alpine:3.20}")
        return
    uri = step.image.uri
    if not uri.startswith(IMAGE_SCHEMES):
        hidden = "secret://" in uri
        shown = "" if hidden else f" `{uri}`"
        hint = "" if hidden else f" (e.g. docker://{uri.split('://')[-1]})"
        message = f"image uri{shown} must start with docker://, oras://, fuzzball:// or fb://{hint}"
        report.error(join(path, "image") + ".uri", message)
    if step.image.secret is not None and not step.image.secret.startswith("secret://"):
        report.error(join(path, "image") + ".secret", "secret must be a reference such as secret://user/NAME")


def _check_env(env: list[str] | None, path: str, report: Report) -> None:
    for index, entry in enumerate(env or []):
        name, sep, _ = entry.partition("=")
        if not sep:
            report.error(f"{path}[{index}]", "env entries are NAME=value; this entry has no `=`")
        elif not ENV_NAME.match(name):
            report.error(f"{path}[{index}]", "env names start with a letter or _ and hold only letters, digits and _")


def _check_mounts(mounts: dict[str, str | Mount] | None, path: str, volumes: set[str], report: Report) -> None:
    for location, mount in (mounts or {}).items():
        where = join(path, location)
        volume = mount if isinstance(mount, str) else mount.volume
        if not location.startswith("/"):
            report.error(where, "mounts are keyed by an absolute path in the container, e.g. /data: {volume: data}")
        elif ".." in location.split("/") or location.strip("/") == "":
            report.error(where, "a mount path names a directory below /, without `..`, e.g. /data")
        if volume is None:
            report.error(where, "name the volume to mount, e.g. {volume: data}")
        elif volume not in volumes:
            known = ", ".join(sorted(volumes)) or "none are defined"
            report.error(where, f"no volume is named `{volume}` (volumes: {known})")


def check_resource(resource: Resource | None, path: str, report: Report) -> None:
    if resource is None:
        return
    cpu = resource.cpu
    if cpu is not None:
        bounded(report.errors, f"{path}.cpu.cores", cpu.cores, 1, MAX_CORES, "cores")
        if cpu.affinity is not None and cpu.affinity not in AFFINITIES:
            report.error(f"{path}.cpu.affinity", "affinity must be NUMA, SOCKET or CORE")
        bounded(report.errors, f"{path}.cpu.sockets", cpu.sockets, 1, MAX_SOCKETS, "sockets")
    if resource.memory is not None and resource.memory.size is not None:
        try:
            size = parse_memory(resource.memory.size)
        except QuantityError as error:
            report.error(f"{path}.memory.size", str(error))
        else:
            bounded(report.errors, f"{path}.memory.size", size, 0, MAX_MEMORY_BYTES, "a memory size", " bytes")
    for device, count in (resource.devices or {}).items():
        bounded(report.errors, join(join(path, "devices"), device), count, 1, MAX_DEVICES, "a device count")
    for name, count in (resource.shared or {}).items():
        where = join(join(path, "shared"), name)
        if not SHARED_NAME.match(name):
            report.error(where, "a shared resource name holds letters, digits, _ . - (at most 64), e.g. ansys")
        bounded(report.errors, where, count, 1, MAX_SHARED, "a shared resource count")


def _check_multinode(step: Container, path: str, report: Report) -> None:
    multinode = step.multinode
    if multinode is None:
        return
    where = join(path, "multinode")
    bounded(report.errors, f"{where}.nodes", multinode.nodes, 1, MAX_NODES, "nodes")
    if multinode.implementation is not None and multinode.implementation not in IMPLEMENTATIONS:
        report.error(f"{where}.implementation", f"implementation must be one of {', '.join(IMPLEMENTATIONS)}")
    bounded(report.errors, f"{where}.procs-per-node", multinode.procs_per_node, 1, MAX_PROCS_PER_NODE,
            "procs-per-node")
    if isinstance(step, Job) and step.task_array is not None:
        report.error(where, "a job is either multinode or a task array, not both")


def _check_defaults(workflow: Workflow, volumes: set[str], report: Report) -> None:
    defaults = workflow.defaults
    if defaults is None:
        return
    for label, part in (("defaults", defaults), ("defaults.job", defaults.job), ("defaults.service", defaults.service)):
        if part is None:
            continue
        _check_env(part.env, f"{label}.env", report)
        _check_mounts(part.mounts, f"{label}.mounts", volumes, report)
        check_resource(part.resource, f"{label}.resource", report)
        report.add(check_policy(part.policy, f"{label}.policy"))


def _check_volumes(workflow: Workflow, report: Report) -> None:
    report.add(check_transfers(workflow))
    for name, volume in (workflow.volumes or {}).items():
        path = join("volumes", name)
        if volume.reference is not None and isinstance(problem := parse_reference(volume.reference), str):
            report.error(f"{path}.reference", problem)
        if volume.reference is None and volume.use is None:
            report.error(path, "set `reference`, e.g. reference: volume://user/ephemeral")
        if volume.use is not None and volume.reference is None:
            report.warn(f"{path}.use", "`use` is not a v4 key; Roving treats this volume as volume://user/ephemeral")
