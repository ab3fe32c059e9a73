"""Binding a Fuzzfile's jobs and services to the profiles they name: every profile value binds.

A step may add env, annotations and resources of its own, never change or remove a profile's: a step that sets one
of the profile's keys to another value is refused naming the key and the profile. Resource quantities (cores,
memory, device counts) are ceilings: a step that names none gets the profile's, a step may ask for less (its value
wins) but never more, and a profile's 0 means none may be asked for. The bound step records the profile's name,
revision and fingerprint (`roving-profile`), so a start can tell whether the profile moved since.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from domain.fuzzfile.blocks import Cpu, Memory, ProfileBinding, Resource
from domain.fuzzfile.decode import join
from domain.fuzzfile.layering import layers_of, step_env, step_resource
from domain.fuzzfile.schema import Container, Problem, Workflow
from domain.profiles.body import ProfileBody
from domain.quantities import parse_memory

Lookup = Callable[[str], "tuple[ProfileBody, int, str] | None"]  # name -> (body, revision, digest), None if none


def bind_profiles(workflow: Workflow, lookup: Lookup) -> tuple[Workflow, list[Problem]]:
    """The definition with each step's profile merged in, or every refusal (unknown profile, overridden value)."""
    problems: list[Problem] = []
    changes: dict[str, dict[str, Any] | None] = {}
    for section, kind in (("jobs", "job"), ("services", "service")):
        steps = dict(getattr(workflow, section) or {})
        for name, step in steps.items():
            if step.profile is None:
                continue
            path = join(section, name)
            found = lookup(step.profile)
            if found is None:
                problems.append(Problem(join(path, "profile"), f"no profile is named `{step.profile}`"))
                continue
            steps[name], refused = bind_step(step, layers_of(workflow.defaults, kind), path, *found)
            problems += refused
        changes[section] = steps if getattr(workflow, section) is not None else None
    return msgspec.structs.replace(workflow, **changes), problems


def bind_step(step: Container, layers: list[Any], path: str, body: ProfileBody, revision: int,
              digest: str) -> tuple[Any, list[Problem]]:
    name = step.profile or ""
    refuse = _Refusals(name, path)
    env = _merge_env(step_env(layers, step), body.env, refuse)
    resource = _merge_resource(step_resource(layers, step.resource), body, refuse)
    binding = ProfileBinding(name=name, revision=revision, digest=digest, pre=body.pre or None,
                             post=body.post or None, hook_timeout=body.hook_seconds())
    bound = msgspec.structs.replace(step, env=[f"{k}={v}" for k, v in env.items()] or None, resource=resource,
                                    roving_profile=binding)
    return bound, refuse.problems


class _Refusals:
    def __init__(self, profile: str, path: str) -> None:
        self.profile, self.path = profile, path
        self.problems: list[Problem] = []

    def at(self, key: str) -> str:
        """`resource.devices.<name>` with the name quoted as the Fuzzfile's paths quote it when it has dots."""
        head, _, name = key.partition(" ")
        path = self.path
        for part in head.split("."):
            path = join(path, part)
        return join(path, name) if name else path

    def changed(self, key: str, theirs: Any, ours: Any) -> None:
        self.problems.append(Problem(self.at(key), f"profile `{self.profile}` sets this to {theirs!r}; "
                                                           f"a job may add to a profile, never change it (got {ours!r})"))

    def above(self, key: str, ceiling: Any, asked: Any) -> None:
        allowed = "none" if not ceiling else f"at most {ceiling!r}"
        self.problems.append(Problem(self.at(key), f"profile `{self.profile}` allows {allowed}; asked {asked!r}"))


def _merge_env(own: dict[str, str], profile: dict[str, str], refuse: _Refusals) -> dict[str, str]:
    for key, value in profile.items():
        if key in own and own[key] != value:
            refuse.changed(f"env {key}", value, own[key])
    return {**own, **profile}


def _merge_resource(own: Resource, body: ProfileBody, refuse: _Refusals) -> Resource:
    theirs = body.resource_spec()
    return Resource(
        cpu=_merge_cpu(own.cpu, theirs.cpu, refuse),
        memory=_merge_memory(own.memory, theirs.memory, refuse),
        devices=_merge_devices(own.devices or {}, theirs.devices or {}, refuse) or None,
        exclusive=_exact("resource.exclusive", own.exclusive, theirs.exclusive, refuse),
        annotations=_merge_exact("resource.annotations", own.annotations or {},
                                 {**(theirs.annotations or {}), **body.annotations}, refuse) or None,
    )


def _merge_cpu(own: Cpu | None, theirs: Cpu | None, refuse: _Refusals) -> Cpu | None:
    if theirs is None:
        return own
    mine = own or Cpu()
    cores = mine.cores if mine.cores is not None else theirs.cores
    if mine.cores is not None and theirs.cores is not None and mine.cores > theirs.cores:
        refuse.above("resource.cpu.cores", theirs.cores, mine.cores)
    return Cpu(cores=cores, affinity=_exact("resource.cpu.affinity", mine.affinity, theirs.affinity, refuse),
               threads=_exact("resource.cpu.threads", mine.threads, theirs.threads, refuse),
               sockets=_exact("resource.cpu.sockets", mine.sockets, theirs.sockets, refuse))


def _merge_memory(own: Memory | None, theirs: Memory | None, refuse: _Refusals) -> Memory | None:
    if theirs is None:
        return own
    mine = own or Memory()
    by_core = _exact("resource.memory.by-core", mine.by_core, theirs.by_core, refuse)
    if mine.size is None or theirs.size is None:
        return Memory(size=mine.size if mine.size is not None else theirs.size, by_core=by_core)
    if parse_memory(mine.size) > parse_memory(theirs.size):
        refuse.above("resource.memory.size", theirs.size, mine.size)
    return Memory(size=mine.size, by_core=by_core)


def _merge_devices(own: dict[str, int], theirs: dict[str, int], refuse: _Refusals) -> dict[str, int]:
    merged = dict(own)
    for device, ceiling in theirs.items():
        if device not in own:
            merged[device] = ceiling
        elif own[device] > ceiling:
            refuse.above(f"resource.devices {device}", ceiling, own[device])
    return {device: count for device, count in merged.items() if count > 0}  # a zero means none


def _exact(key: str, own: Any, theirs: Any, refuse: _Refusals) -> Any:
    if theirs is None:
        return own
    if own is not None and own != theirs:
        refuse.changed(key, theirs, own)
    return theirs


def _merge_exact(key: str, own: dict[str, str], theirs: dict[str, str], refuse: _Refusals) -> dict[str, str]:
    for name, value in theirs.items():
        if name in own and own[name] != value:
            refuse.changed(f"{key} {name}", value, own[name])
    return {**own, **theirs}
