"""The blocks a Fuzzfile's jobs and services are written with (resource, policy, network, hooks, restart, autoscaler
and the rest) as msgspec structs on one kebab-case base, `Spec`, keys spelled as users write them. A service's
probes stay in fuzzfile.schema: the agent protocol and the agent's prober share them from there."""

from __future__ import annotations

import msgspec


class Spec(msgspec.Struct, rename="kebab", omit_defaults=True, kw_only=True):
    """Base for every Fuzzfile struct: kebab-case keys, defaults left out when encoded."""


class URI(Spec):
    uri: str
    secret: str | None = None
    secrets: dict[str, str] | None = None
    decryption_secret: str | None = None


class Timeout(Spec):
    execute: str | int | float | None = None


class Retry(Spec):
    on: list[str | int] | None = None
    attempts: int | None = None


class Policy(Spec):
    timeout: Timeout | None = None
    retry: Retry | None = None
    restart: str | None = None


class Cpu(Spec):
    cores: int | None = None
    affinity: str | None = None
    threads: bool | None = None
    sockets: int | None = None


class Memory(Spec):
    size: str | int | float | None = None
    by_core: bool | None = None


class Resource(Spec):
    cpu: Cpu | None = None
    memory: Memory | None = None
    devices: dict[str, int] | None = None
    exclusive: bool | None = None
    annotations: dict[str, str] | None = None
    shared: dict[str, int] | None = None  # Roving: cluster-wide counted resources (licenses) held while it runs


class Mount(Spec):
    volume: str | None = None
    location: str | None = None


class Dependency(Spec):
    name: str
    status: str = "FINISHED"
    description: str | None = None


class Multinode(Spec):
    nodes: int
    implementation: str | None = None
    procs_per_node: int | None = None


class TaskArray(Spec):
    start: int
    end: int
    concurrency: int | None = None


class JobNetwork(Spec):
    isolated: bool | None = None
    expose_tcp: list[int] | None = None
    expose_udp: list[int] | None = None


class Port(Spec):
    name: str
    port: int
    protocol: str = "tcp"


class Endpoint(Spec):
    name: str
    port_name: str
    protocol: str = "http"
    type: str = "path"
    scope: str = "group"
    persistent: bool = False


class ServiceNetwork(Spec):
    ports: list[Port] | None = None
    endpoints: list[Endpoint] | None = None
    host: bool | None = None


class Hooks(Spec):
    """A step's own hooks (Roving's extension, under `roving-hooks`): shell scripts run before and after it."""

    pre: str | None = None
    post: str | None = None
    timeout: str | int | float | None = None


class ProfileBinding(Spec):
    """The profile a step was bound to at submission (Roving writes it; a Fuzzfile may not)."""

    name: str
    revision: int
    digest: str
    pre: str | None = None
    post: str | None = None
    hook_timeout: float = 60.0


class Restart(Spec):
    """How a service with `policy.restart: on-failure` is restarted (Roving's extension, under `roving-restart`)."""

    attempts: int | None = None
    backoff: str | int | float | None = None
    max_backoff: str | int | float | None = None


class ScalingMetric(Spec):
    """One rule of a service's autoscaler: keep `name` (measured per replica) near `target`. With `query`, `name` is
    the rule's own label and the measure is that query on the service's own metrics (domain.promql)."""

    name: str
    target: int | float
    query: str | None = None


class Autoscaler(Spec):
    """The 4.1 `autoscaler` block: the pool grows and shrinks between `min-replicas` and `max-replicas` so that each
    metric stays near its target per replica, at most one step per `cooldown`."""

    min_replicas: int | None = None
    max_replicas: int | None = None
    metrics: list[ScalingMetric] | None = None
    cooldown: str | int | float | None = None
