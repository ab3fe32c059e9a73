"""The cluster's default memory per core (`scheduler.defaultMemoryPerCore`), written into a submitted definition's
defaults for the steps that request no memory, so the stage, its limit and `describe` all carry the same size.
A size of 0 asks for nothing (it would otherwise schedule at 0 B with no limit), so it gets the default too."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from domain.fuzzfile import Problem
from domain.fuzzfile.blocks import Memory, Resource
from domain.fuzzfile.layering import layers_of, step_resource
from domain.fuzzfile.schema import Defaults, Job, Service, StepDefaults
from domain.fuzzfile.schema import Workflow as Fuzzfile
from domain.quantities import QuantityError, human_bytes, parse_memory

_Layer = TypeVar("_Layer", Defaults, StepDefaults, Job, Service)


def with_default_memory(definition: Fuzzfile, per_core: int) -> tuple[Fuzzfile, list[Problem]]:
    """The definition with `per_core` bytes a core beneath every step that asks no memory size, and one note per such
    step naming the size it gets. `per_core` 0 (the default) leaves everything as written: no limit."""
    if not per_core:
        return definition, []
    definition = _without_empty_memory(definition)
    bare = [(kind, name, cores) for kind, name, cores in _steps(definition) if cores is not None]
    if not bare:
        return definition, []
    defaults = definition.defaults or Defaults()
    resource = defaults.resource or Resource()
    memory = msgspec.structs.replace(resource.memory or Memory(), size=per_core, by_core=True)
    defaults = msgspec.structs.replace(defaults, resource=msgspec.structs.replace(resource, memory=memory))
    notes = [Problem(path=f"{kind}.{name}.resource.memory",
                     message=f"no memory requested: the cluster's default of {human_bytes(per_core)} per core applies "
                             f"({human_bytes(per_core * cores)} for {cores} {'core' if cores == 1 else 'cores'})")
             for kind, name, cores in bare]
    return msgspec.structs.replace(definition, defaults=defaults), notes


def _steps(definition: Fuzzfile) -> list[tuple[str, str, int | None]]:
    """Each job and service with its cores when it asks no memory size (else None)."""
    found: list[tuple[str, str, int | None]] = []
    for kind, steps in (("jobs", definition.jobs), ("services", definition.services)):
        layers = layers_of(definition.defaults, kind.removesuffix("s"))
        for name, step in (steps or {}).items():
            resource = step_resource(layers, step.resource)
            asked = resource.memory is not None and resource.memory.size is not None
            cores = resource.cpu.cores if resource.cpu and resource.cpu.cores else 1
            found.append((kind, name, None if asked else cores))
    return found


def _without_empty_memory(definition: Fuzzfile) -> Fuzzfile:
    """The definition with every memory block that asks no size (none, or 0) removed, in the defaults and the steps:
    a step's own block replaces the defaults' whole, so one left there would hide the default written beneath."""
    defaults = definition.defaults
    if defaults is not None:
        defaults = _layer(msgspec.structs.replace(defaults, job=defaults.job and _layer(defaults.job),
                                                  service=defaults.service and _layer(defaults.service)))
    jobs = {name: _layer(step) for name, step in definition.jobs.items()} if definition.jobs else definition.jobs
    services = ({name: _layer(step) for name, step in definition.services.items()} if definition.services
                else definition.services)
    return msgspec.structs.replace(definition, defaults=defaults, jobs=jobs, services=services)


def _layer(layer: _Layer) -> _Layer:
    resource = layer.resource
    if resource is None or resource.memory is None or not _empty(resource.memory):
        return layer
    return msgspec.structs.replace(layer, resource=msgspec.structs.replace(resource, memory=None))


def _empty(memory: Memory) -> bool:
    if memory.size is None:
        return True
    try:
        return parse_memory(memory.size) == 0
    except QuantityError:  # validation names the field; an unreadable size is not this pass's to judge
        return False
