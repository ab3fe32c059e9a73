"""A step's settings layered over its definition's defaults (`defaults`, then `defaults.job` or `defaults.service`,
then the step's own, each over the last): its environment, mounts, resource and policy."""

from __future__ import annotations

import msgspec

from domain.fuzzfile.blocks import Mount, Policy, Resource
from domain.fuzzfile.schema import Container, Defaults, Job, StepDefaults


def layers_of(defaults: Defaults | None, kind: str) -> list[StepDefaults]:
    if defaults is None:
        return []
    return [layer for layer in (defaults, getattr(defaults, kind)) if layer is not None]


def step_env(layers: list[StepDefaults], step: Container) -> dict[str, str]:
    merged: dict[str, str] = {}
    for entries in [layer.env for layer in layers] + [step.env]:
        for entry in entries or []:
            key, _, value = entry.partition("=")
            merged[key] = value
    return merged


def mounts(layers: list[StepDefaults], step: Container) -> dict[str, str]:
    """Container path -> volume name, step mounts over defaults."""
    merged: dict[str, str | Mount] = {}
    for layer in [layer.mounts for layer in layers] + [step.mounts]:
        merged.update(layer or {})
    return {path: m if isinstance(m, str) else (m.volume or "") for path, m in merged.items()}


def step_resource(layers: list[StepDefaults], own: Resource | None) -> Resource:
    merged = Resource()
    for resource in [layer.resource for layer in layers] + [own]:
        if resource is not None:
            changes = {f: getattr(resource, f) for f in resource.__struct_fields__ if getattr(resource, f) is not None}
            merged = msgspec.structs.replace(merged, **changes)
    return merged


def step_policy(layers: list[StepDefaults], step: Job) -> Policy | None:
    """Restart and retry together from the last layer that sets either; the timeout from the last that sets it."""
    merged: Policy | None = None
    for policy in [layer.policy for layer in layers] + [step.policy]:
        if policy is None:
            continue
        merged = merged or Policy()
        if policy.restart is not None or policy.retry is not None:
            merged = msgspec.structs.replace(merged, restart=policy.restart, retry=policy.retry)
        if policy.timeout is not None:
            merged = msgspec.structs.replace(merged, timeout=policy.timeout)
    return merged
