"""The cluster's default memory per core (`scheduler.defaultMemoryPerCore`), written into a submitted definition's
defaults for the steps that request no memory, so the stage, its limit and `describe` all carry the same size."""

from __future__ import annotations

import msgspec

from domain.fuzzfile import Problem
from domain.fuzzfile.blocks import Memory, Resource
from domain.fuzzfile.layering import layers_of, step_resource
from domain.fuzzfile.schema import Defaults
from domain.fuzzfile.schema import Workflow as Fuzzfile
from domain.quantities import human_bytes


def with_default_memory(definition: Fuzzfile, per_core: int) -> tuple[Fuzzfile, list[Problem]]:
    """The definition with `per_core` bytes a core beneath every step that asks no memory size, and one note per such
    step naming the size it gets. `per_core` 0 (the default) leaves everything as written: no limit."""
    bare = [(kind, name, cores) for kind, name, cores in _steps(definition) if cores is not None]
    if not per_core or not bare:
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
