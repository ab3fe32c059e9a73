"""Keys Roving accepts (Fuzzball's v4 has them) but does not act on: each one used is a warning naming the field and
why, so a Fuzzfile never silently means less than it says."""

from __future__ import annotations

from domain.fuzzfile.blocks import Resource
from domain.fuzzfile.decode import join
from domain.fuzzfile.schema import Container, Problem, Workflow

CPU_KEYS = {
    "affinity": "ignored: a stage gets its cores as a CPU quota of its cgroup, not pinned to cores, sockets or NUMA nodes",
    "threads": "ignored: cores are counted as the node's CPUs, hyperthreads included",
    "sockets": "ignored: a stage's cores are not placed by socket",
}


def ignored_keys(workflow: Workflow) -> list[Problem]:
    warnings: list[Problem] = []
    for section in ("jobs", "services"):
        for name, step in (getattr(workflow, section) or {}).items():
            _step(step, join(section, name), warnings)
    for label in ("job", "service"):
        part = getattr(workflow.defaults, label, None) if workflow.defaults is not None else None
        if part is not None:
            _resource(part.resource, f"defaults.{label}.resource", warnings)
    return warnings


def _step(step: Container, path: str, warnings: list[Problem]) -> None:
    _resource(step.resource, join(path, "resource"), warnings)
    if step.image is not None and step.image.decryption_secret is not None:
        warnings.append(Problem(f"{join(path, 'image')}.decryption-secret",
                                "ignored: encrypted images are not supported; the image is pulled as is"))


def _resource(resource: Resource | None, path: str, warnings: list[Problem]) -> None:
    cpu = resource.cpu if resource is not None else None
    for key, why in CPU_KEYS.items():
        if cpu is not None and getattr(cpu, key) is not None:
            warnings.append(Problem(f"{path}.cpu.{key}", why))
