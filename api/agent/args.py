"""The agent's inputs: its command line and environment (declared or detected capacity, whom jobs run as)."""

from __future__ import annotations

import argparse
import functools
import os
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from adapters import devices as gpu_devices
from adapters import sysinfo
from adapters.executor import JobUser
from adapters.runtime.images import machine_has
from api.agent.job_user import job_user
from api.usage import UsageError, UsageParser
from domain.durations import DurationError, parse_duration
from domain.quantities import QuantityError, parse_memory

RUNTIMES = ("host", "oci", "apptainer")
APPTAINER_INSTALL = "https://apptainer.org/docs/admin/main/installation.html"
PACKAGES = {"bwrap": "bubblewrap", "skopeo": "skopeo"}


@dataclass
class AgentConfig:
    node: str
    api: str
    token: str
    cpus: int
    memory: int
    devices: dict[str, int]
    annotations: dict[str, str] = field(default_factory=dict)
    segment: str = ""  # the storage segment this node is in: stages mounting that segment's volumes run here
    definition: str | None = None
    workdir: Path = Path.home() / ".local/share/roving/work"
    job_user: JobUser | None = None  # None: jobs run as the agent's own user
    allow_root_jobs: bool = False
    runtime: str = "host"  # host | oci | apptainer
    image_cache: Path | None = None  # oci: <workdir>/.roving-images, apptainer: <workdir>/.roving-sif unless given
    image_cache_bytes: int | None = None  # oci: least recently used images not in use go beyond this size
    insecure_registries: tuple[str, ...] = ()
    gpus: list[gpu_devices.Gpu] = field(default_factory=list)  # what the agent binds allocations to
    metrics_port: int | None = None
    heartbeat: float = 2.0
    poll: float = 0.5
    poll_wait: float = 10.0  # how long the server may hold an assignments poll (0: plain polling)
    kill_grace: float = 10.0
    address: str = ""
    sys_root: Path = Path("/sys")  # where the node's error counters are read (ROVING_SYS_ROOT: a test's fake tree)
    hide: tuple[Path, ...] = ()  # paths host jobs must not see (the control plane's data directory, say)
    writable: tuple[Path, ...] = ()  # node paths host jobs may write (a shared filesystem); the rest is read-only
    only_owner: str = ""  # a user id: without namespaces to confine jobs, run only this owner's (roving up's admin)
    any_owner: bool = False  # an agent that is not root runs every owner's work under its one uid, as told to


def _typed(kind: str, parse):
    def convert(text: str):
        try:
            return parse(text)
        except (ValueError, QuantityError, DurationError) as error:
            raise argparse.ArgumentTypeError(str(error) if str(error) else f"{text!r} is not {kind}") from None
    convert.__name__ = kind
    return convert


def _positive_duration(text: str) -> float:
    seconds = parse_duration(text)
    if seconds <= 0:
        raise ValueError(f"{text!r} must be longer than zero")
    return seconds


def _poll_wait(text: str) -> float:
    seconds = parse_duration(text)
    if seconds > 30:
        raise ValueError(f"{text!r} is longer than the 30s a server holds a poll")
    return seconds


def _env_poll_wait(given: float | None, env: Mapping[str, str]) -> float:
    """--poll-wait, else ROVING_AGENT_POLL_WAIT, else 10 s (0: plain polling every --poll)."""
    if given is not None:
        return given
    raw = env.get("ROVING_AGENT_POLL_WAIT", "").strip()
    if not raw:
        return 10.0
    try:
        return _poll_wait(raw)
    except ValueError as error:
        raise UsageError(f"ROVING_AGENT_POLL_WAIT: {error}") from None


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"{text!r} is not KEY=VALUE")
    return key, value


SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def _segment(text: str) -> str:
    if text and not SEGMENT.match(text):
        raise ValueError(f"{text!r} is not a segment name (letters, digits, _ . -)")
    return text


def _env_segment(env: Mapping[str, str]) -> str:
    try:
        return _segment(env.get("ROVING_SEGMENT", ""))
    except ValueError as error:
        raise UsageError(f"ROVING_SEGMENT: {error}") from None


def _device(text: str) -> tuple[str, int]:
    name, count = _pair(text)
    if not count.isdigit():
        raise ValueError(f"{text!r} needs a whole count, e.g. nvidia.com/gpu=2")
    return name, int(count)


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise ValueError(f"{text!r} is not a port (0-65535)")
    return int(text)


def _cpus(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{text!r} is not a whole number of cpus (at least 1)")
    return int(text)


def _parser() -> UsageParser:
    p = UsageParser(prog="roving agent", description="Run a Roving node agent.")
    p.add_argument("--node", default=socket.gethostname())
    p.add_argument("--api", required=True)
    p.add_argument("--token-file", type=Path)
    p.add_argument("--cpus", type=_typed("cpus", _cpus))
    p.add_argument("--memory", type=_typed("memory", parse_memory))
    p.add_argument("--device", type=_typed("device", _device), action="append", default=[])
    p.add_argument("--gpus", type=_typed("gpus", gpu_devices.parse_declared))
    p.add_argument("--annotation", type=_typed("annotation", _pair), action="append", default=[])
    p.add_argument("--segment", type=_typed("segment", _segment), default="")
    p.add_argument("--definition")
    p.add_argument("--workdir", type=Path)
    p.add_argument("--allow-root-jobs", action="store_true")
    p.add_argument("--runtime", choices=RUNTIMES)
    p.add_argument("--image-cache", type=Path)
    p.add_argument("--image-cache-bytes", type=_typed("size", parse_memory))
    p.add_argument("--metrics-port", type=_typed("port", _port))
    p.add_argument("--heartbeat", type=_typed("duration", _positive_duration), default=2.0)
    p.add_argument("--poll", type=_typed("duration", _positive_duration), default=0.5)
    p.add_argument("--poll-wait", type=_typed("duration", _poll_wait), default=None)
    p.add_argument("--kill-grace", type=_typed("duration", parse_duration), default=10.0)
    p.add_argument("--address", default=socket.gethostname())
    p.add_argument("--sys-root", type=Path)
    p.add_argument("--hide", type=Path, action="append", default=[],
                   help="a path host jobs must not see (repeatable; also ROVING_AGENT_HIDE, paths joined by ':'; the "
                        "agent's own state and token file always)")
    p.add_argument("--writable", type=Path, action="append", default=[],
                   help="a node path host jobs may write, as their uid allows (a shared filesystem; repeatable; also "
                        "ROVING_AGENT_WRITABLE, paths joined by ':'); the rest of the node is read-only to them")
    p.add_argument("--only-owner", default="",
                   help="an agent that is not root (its jobs share its uid) runs only this user id's work "
                        "(also ROVING_AGENT_ONLY_OWNER); it needs this or --any-owner")
    p.add_argument("--any-owner", action="store_true",
                   help="an agent that is not root runs every owner's work, all under its own uid, where they can "
                        "reach each other's jobs (also ROVING_AGENT_ANY_OWNER=1); without it, it needs --only-owner")
    return p


def _token(path: Path | None, env: Mapping[str, str]) -> str:
    if path is not None:
        try:
            token = path.read_text().strip()
        except OSError as error:
            raise UsageError(f"argument --token-file: cannot read {path}: {error.strerror}") from None
    else:
        token = env.get("ROVING_TOKEN", "").strip()
    if not token:
        raise UsageError("no token: pass --token-file PATH or set ROVING_TOKEN")
    return token


def runtime(name: str) -> str:
    """`oci` needs bubblewrap and skopeo on this machine, `apptainer` apptainer; say how to install what is missing."""
    if name not in RUNTIMES:
        raise UsageError(f"ROVING_RUNTIME: {name!r} is not one of {', '.join(RUNTIMES)}")
    if name == "apptainer" and machine_has("apptainer"):
        raise UsageError(f"--runtime apptainer needs apptainer on PATH: install it ({APPTAINER_INSTALL}; "
                         "Debian does not package it), or use --runtime oci")
    missing = machine_has("bwrap", "skopeo") if name == "oci" else []
    if missing:
        raise UsageError(f"--runtime oci needs {' and '.join(missing)} on PATH: apt-get install "
                         + " ".join(PACKAGES[name] for name in missing))
    return name


def default_workdir(euid: int) -> Path:
    """Root's agent keeps work under /var/lib (reachable by the job users); a user's agent under its home."""
    return Path("/var/lib/roving/work") if euid == 0 else Path.home() / ".local/share/roving/work"


def parse_args(argv: list[str], env: Mapping[str, str] | None = None,
               detect: Callable[[], sysinfo.Capacity] = sysinfo.capacity, euid: int | None = None) -> AgentConfig:
    """The agent's settings; capacity not declared on the command line is detected."""
    ns = _parser().parse_args(argv)
    env = os.environ if env is None else env
    euid = os.geteuid() if euid is None else euid
    found = functools.cache(detect)  # read once, and only when a figure is not declared
    workdir = ns.workdir or default_workdir(euid)
    if not ns.api.startswith(("http://", "https://")):
        raise UsageError(f"argument --api: {ns.api!r} is not an http:// or https:// URL")
    devices = dict(ns.device) if ns.device else dict(found().devices)
    gpus = _gpus(ns.gpus, env, devices)
    devices[gpu_devices.GPU] = len(gpus)
    if not gpus:
        devices.pop(gpu_devices.GPU)
    return AgentConfig(
        node=ns.node, api=ns.api.rstrip("/"), token=_token(ns.token_file, env),
        cpus=ns.cpus or found().cpu, memory=ns.memory if ns.memory is not None else found().memory,
        devices=devices, gpus=gpus, annotations=dict(ns.annotation), segment=ns.segment or _env_segment(env),
        definition=ns.definition, workdir=workdir, metrics_port=ns.metrics_port, heartbeat=ns.heartbeat,
        poll=ns.poll, poll_wait=_env_poll_wait(ns.poll_wait, env), kill_grace=ns.kill_grace, address=ns.address,
        sys_root=ns.sys_root or Path(env.get("ROVING_SYS_ROOT") or "/sys"),
        hide=(*ns.hide, *_env_paths(env.get("ROVING_AGENT_HIDE", "")), *((ns.token_file,) if ns.token_file else ())),
        writable=(*ns.writable, *_env_paths(env.get("ROVING_AGENT_WRITABLE", ""))),
        only_owner=ns.only_owner or env.get("ROVING_AGENT_ONLY_OWNER", ""),
        any_owner=ns.any_owner or env.get("ROVING_AGENT_ANY_OWNER") == "1",
        job_user=job_user(env, ns.allow_root_jobs, euid, workdir), allow_root_jobs=ns.allow_root_jobs,
        runtime=runtime(ns.runtime or env.get("ROVING_RUNTIME", "host")), image_cache=ns.image_cache,
        image_cache_bytes=_cache_bytes(ns.image_cache_bytes, env),
        insecure_registries=tuple(r.strip() for r in env.get("ROVING_INSECURE_REGISTRIES", "").split(",") if r.strip()),
    )


def check_tenancy(config: AgentConfig, euid: int) -> None:
    """An agent that is not root runs every job as its own uid (tenants would reach each other's files, processes
    and sockets): it starts only told whose work it runs (--only-owner), or that every owner's may share it."""
    if euid != 0 and config.job_user is None and not config.only_owner and not config.any_owner:
        raise UsageError(f"argument --only-owner: this agent is not root, so every job runs as its own uid ({euid}) "
                         "and tenants cannot be told apart: pass --only-owner USER_ID (the one user whose work it "
                         "runs; also ROVING_AGENT_ONLY_OWNER) or --any-owner (every owner's jobs share this uid)")


def _env_paths(text: str) -> list[Path]:
    return [Path(part) for part in text.split(os.pathsep) if part.strip()]


def _cache_bytes(given: int | None, env: Mapping[str, str]) -> int | None:
    if given is not None or not env.get("ROVING_IMAGE_CACHE_BYTES", "").strip():
        return given
    try:
        return parse_memory(env["ROVING_IMAGE_CACHE_BYTES"].strip())
    except (QuantityError, ValueError) as error:
        raise UsageError(f"ROVING_IMAGE_CACHE_BYTES: {error}") from None


def _gpus(declared: list[str] | None, env: Mapping[str, str], devices: dict[str, int]) -> list[gpu_devices.Gpu]:
    """--gpus, else ROVING_DECLARED_GPUS, else a declared `--device nvidia.com/gpu=N` (indices 0..N-1), else
    what the machine shows (nvidia-smi, /dev/nvidia*)."""
    if declared is None and env.get("ROVING_DECLARED_GPUS", "").strip():
        try:
            declared = gpu_devices.parse_declared(env["ROVING_DECLARED_GPUS"])
        except ValueError as error:
            raise UsageError(f"ROVING_DECLARED_GPUS: {error}") from None
    if declared is None and gpu_devices.GPU in devices:
        declared = [str(i) for i in range(devices[gpu_devices.GPU])]
    return gpu_devices.inventory(declared)
