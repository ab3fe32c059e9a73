"""The Fuzzfile (Fuzzball workflow definition, version v4) as msgspec structs, keys spelled as users write them."""

from __future__ import annotations

import msgspec


class Spec(msgspec.Struct, rename="kebab", omit_defaults=True, kw_only=True):
    """Base for every Fuzzfile struct: kebab-case keys, defaults left out when encoded."""


class Problem(msgspec.Struct, frozen=True):
    """One thing wrong (or worth a warning) in a Fuzzfile, at a path such as `jobs.train.policy.retry.on[1]`."""

    path: str
    message: str


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


class ExecAction(Spec):
    command: list[str]


class HTTPHeader(Spec):
    name: str
    value: str


class HTTPGetAction(Spec):
    port: int
    path: str = "/"
    scheme: str | None = None
    host: str | None = None
    http_headers: list[HTTPHeader] | None = None


class TCPSocketAction(Spec):
    port: int
    host: str | None = None


class Probe(Spec):
    """A readiness or liveness probe, Kubernetes-shaped; the one definition the Fuzzfile, the run spec and the
    agent's prober share. A Fuzzfile writes whole seconds; the agent adds a restart's backoff to the delay."""

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    initial_delay_seconds: int | float | None = None
    period_seconds: int | float | None = None
    timeout_seconds: int | float | None = None
    success_threshold: int | None = None
    failure_threshold: int | None = None


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


class Container(Spec):
    """The keys jobs and services share."""

    name: str | None = None
    image: URI | None = None
    command: list[str] | None = None
    script: str | None = None
    args: list[str] | None = None
    env: list[str] | None = None
    cwd: str | None = None
    files: dict[str, str] | None = None
    mounts: dict[str, str | Mount] | None = None
    depends_on: list[Dependency] | None = None
    requires: list[str] | None = None
    resource: Resource | None = None
    multinode: Multinode | None = None
    preemptible: bool | None = None
    profile: str | None = None
    roving_hooks: Hooks | None = None
    roving_profile: ProfileBinding | None = None


class Job(Container):
    policy: Policy | None = None
    task_array: TaskArray | None = None
    network: JobNetwork | None = None


class Restart(Spec):
    """How a service with `policy.restart: on-failure` is restarted (Roving's extension, under `roving-restart`)."""

    attempts: int | None = None
    backoff: str | int | float | None = None
    max_backoff: str | int | float | None = None


class ScalingMetric(Spec):
    """One rule of a service's autoscaler: keep `name` (measured per replica) near `target`."""

    name: str
    target: int | float


class Autoscaler(Spec):
    """The 4.1 `autoscaler` block: the pool grows and shrinks between `min-replicas` and `max-replicas` so that each
    metric stays near its target per replica, at most one step per `cooldown`."""

    min_replicas: int | None = None
    max_replicas: int | None = None
    metrics: list[ScalingMetric] | None = None
    cooldown: str | int | float | None = None


class Service(Container):
    policy: Policy | None = None  # `restart` is used; the rest is ignored (warned about)
    roving_restart: Restart | None = None
    roving_liveness_probe: Probe | None = None  # a hung service fails it and is killed (then restarted on-failure)
    network: ServiceNetwork | None = None
    readiness_probe: Probe | None = None
    persist: bool | None = None
    replicas: int | None = None
    autoscaler: Autoscaler | None = None


class Transfer(Spec):
    source: URI
    destination: URI
    policy: Policy | None = None
    cache: str | None = None


class Volume(Spec):
    name: str | None = None
    reference: str | None = None
    type: str | None = None
    path: str | None = None
    use: str | None = None
    ingress: list[Transfer] | None = None
    egress: list[Transfer] | None = None


class ImageFile(Spec):
    """A file an image build writes: inline `content`, or `source: file://NAME` (a top-level `files` entry)."""

    content: str | None = None
    source: str | None = None
    mode: int | None = None


class ImageSource(Spec):
    """Fuzzball 4.4's `from: {uri: docker://...}` (Roving's own shape is the URI alone: `from: docker://...`)."""

    uri: str


class ImageBuild(Spec):
    """One entry of the top-level `images:` (Roving builds it as stage `build:NAME`; jobs run it as
    fuzzball://user/NAME)."""

    from_: str | ImageSource = msgspec.field(name="from")
    files: dict[str, ImageFile] | None = None
    post: str | None = None
    scope: str | None = None
    ttl: str | int | float | None = None
    network: bool | None = None

    @property
    def base(self) -> str:
        """The URI it is built from, whichever shape `from` was written in."""
        return self.from_.uri if isinstance(self.from_, ImageSource) else self.from_


class StepDefaults(Spec):
    env: list[str] | None = None
    mounts: dict[str, str | Mount] | None = None
    resource: Resource | None = None
    policy: Policy | None = None


class Defaults(StepDefaults):
    """Top-level env/mounts/resource/policy apply to jobs and services; `job` and `service` refine them."""

    job: StepDefaults | None = None
    service: StepDefaults | None = None


class Workflow(Spec):
    """A whole Fuzzfile. `version` is always v4 once parsed (v1 input is upgraded)."""

    version: str
    defaults: Defaults | None = None
    annotations: dict[str, str] | None = None
    files: dict[str, str] | None = None
    volumes: dict[str, Volume] | None = None
    images: dict[str, ImageBuild] | None = None
    jobs: dict[str, Job] | None = None
    services: dict[str, Service] | None = None
    preemptible: bool | None = None
    project: str | None = None  # Roving: the project (path) its work counts toward
