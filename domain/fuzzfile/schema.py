"""The Fuzzfile (Fuzzball workflow definition, version v4) as msgspec structs, keys spelled as users write them: the
document, its jobs, services (with their probes), volumes, image builds and defaults (the blocks they are written
with: fuzzfile.blocks)."""

from __future__ import annotations

import msgspec

from domain.fuzzfile.blocks import (
    URI,
    Autoscaler,
    Dependency,
    Hooks,
    JobNetwork,
    Mount,
    Multinode,
    Policy,
    ProfileBinding,
    Resource,
    Restart,
    ServiceNetwork,
    Spec,
    TaskArray,
)


class Problem(msgspec.Struct, frozen=True):
    """One thing wrong (or worth a warning) in a Fuzzfile, at a path such as `jobs.train.policy.retry.on[1]`."""

    path: str
    message: str


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
