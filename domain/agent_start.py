"""The run spec on the wire: what the assignments answer tells an agent to start (`Start`), one stage attempt.

Built by the assignments projection, encoded by the route (its bytes make the answer's ETag), decoded by the agent
and run by its executor as it is (adapters/runspec.py's RunSpec is this type, its env resolved). Field order and
omission are the protocol's: the first block is always sent (required here: an older control plane's body always had
them, and `omit_defaults` never drops them; `owner_id`, the newest, defaults to None, which its string never
equals); the rest was sent only when set and is omitted at its default, so the bytes are those of the dict this type
replaced (tests/unit/agent/test_run_spec_wire.py pins them). Fields sent together or not at all (the owner's POSIX
ids, a built image's owner) default to None, not to an empty value they may really have (an owner in no group has
`groups: []`, and it is sent). Unknown fields, from a newer control plane, are ignored.
"""

from __future__ import annotations

import msgspec

from domain.fuzzfile.images import BuildPlan
from domain.fuzzfile.schema import Probe
from domain.fuzzfile.stages import Hook
from domain.multinode import Peers


class ServicePort(msgspec.Struct):
    """A port a service declares (a replica's shifted to its own); echoed back in its ready report."""

    name: str
    port: int
    protocol: str


class Transfer(msgspec.Struct):
    """One move of an ingress or egress stage; the secret opening its remote end travels in env, never here."""

    source: str
    destination: str


class PersistentVolume(msgspec.Struct, frozen=True, omit_defaults=True):
    """A persistent volume's directory on the node (the storage provisioner's), its owner's ids and mode."""

    path: str
    uid: int
    gid: int
    mode: int
    made: bool = False  # a volume provisioner's: made by its program, never here (missing: its storage is not here)


class Start(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Everything an agent needs to start one allocation here, with whom it runs as; a multinode rank its peers."""

    allocation_id: str
    epoch: int
    workflow_id: str
    stage: str
    job: str  # the job or service's name (a task's array, a build's `build:NAME`)
    task_id: int | None
    kind: str  # job | service | task | ingress | egress | build
    image: str
    script: str | None
    command: list[str] | None
    args: list[str] | None
    env: dict[str, str]  # `secret://` references until the route resolves them; an image's registry secret too
    cwd: str | None
    files: dict[str, str]  # path in the job -> content
    execute_timeout_seconds: float | None
    memory_bytes: int
    cpu_cores: int | float
    account_id: str
    owner_id: str | None = None  # always sent since 4eab643 (2026-12-05); None only from a control plane before it
    readiness_probe: Probe | None
    ports: list[ServicePort]
    mounts: dict[str, str]  # path in the job -> volume name
    # sent only when set
    profile: str = ""
    hooks: list[Hook] = []
    # a restarted on-failure service's backoff, slept on the node (None, not 0.0: omit_defaults tells a float default
    # by identity, and a computed 0.0 is another object)
    start_delay_seconds: float | None = None
    volume: str = ""  # an ingress or egress stage's volume, and its moves
    transfers: list[Transfer] = []
    liveness_probe: Probe | None = None
    persistent: dict[str, PersistentVolume] = {}  # volume name -> where it lives (else ephemeral)
    peers: Peers | None = None
    uid: int | None = None  # the owner's POSIX ids, all four or none (an owner without a uid)
    gid: int | None = None
    groups: list[int] | None = None
    username: str | None = None
    devices: dict[str, int] = {}  # requested counts by name, e.g. {"nvidia.com/gpu": 2}
    network_isolated: bool = False
    image_owner: str | None = None  # a build, or a job in a fuzzball:// image: whose image (and group's) it is
    image_group: str | None = None
    build: BuildPlan | None = None
