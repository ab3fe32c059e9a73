"""How this node runs jobs: its cgroups (or none, and why), whom as and in which runtime, announced in its
registration as annotations."""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
from pathlib import Path

from adapters import cgroups
from adapters.apptainer import ApptainerRuntime, SifCache
from adapters.executor import Executor, RunSpec, SpecError
from adapters.runtime.bwrap import OciRuntime
from adapters.runtime.host import INSTALL, HostSandbox, agent_sockets
from adapters.runtime.images import ImageCache
from api.agent.args import AgentConfig

ISOLATION = "roving.io/isolation"
JOB_USER = "roving.io/job-user"
RUNTIME = "roving.io/runtime"
SANDBOX = "roving.io/sandbox"  # bwrap: host jobs get their own namespaces (volumes at their paths); none: they do not
TENANTS = "roving.io/tenants"  # only:<user id>: the agent runs one owner's work (said only then)
SINGLE_USER = ("single-user node: it runs every job as its agent's own user (the agent is not root), so it cannot "
               "tell tenants apart: it runs only its admin's work")


def agent_name(config: AgentConfig) -> str:
    """Stable across restarts of one agent, distinct between agents sharing a machine: node + work directory."""
    digest = hashlib.sha256(str(Path(config.workdir).resolve()).encode()).hexdigest()[:8]
    return f"{config.node}-{digest}"


def build_executor(config: AgentConfig, log, detect=cgroups.detect) -> Executor:
    """The executor, with this agent's cgroups when it may have them (the agent adopts or reaps what a
    predecessor left there)."""
    hierarchy, isolation = detect(agent_name(config))
    if hierarchy is None:
        log.warning("agent.no_isolation", reason=isolation)
    else:
        log.info("agent.isolation", cgroups=isolation)
    config.annotations.setdefault(ISOLATION, isolation if hierarchy is not None else "none")
    config.annotations.setdefault(JOB_USER, job_user_text(config))
    if config.job_user is None:
        log.warning("agent.jobs_run_as_agent_user", job_user=config.annotations[JOB_USER])
    config.annotations.setdefault(RUNTIME, config.runtime)
    runtime: OciRuntime | ApptainerRuntime | None = None
    if config.runtime == "oci":
        cache = ImageCache(config.image_cache or Path(config.workdir) / ".roving-images", config.insecure_registries,
                           limit=config.image_cache_bytes)
        runtime = OciRuntime(cache, Path(config.workdir).resolve())
    elif config.runtime == "apptainer":
        apptainer = shutil.which("apptainer") or "apptainer"  # found at start: args.runtime refused it otherwise
        sifs = SifCache(config.image_cache or Path(config.workdir) / ".roving-sif", apptainer,
                        config.insecure_registries)
        runtime = ApptainerRuntime(sifs, Path(config.workdir).resolve(), apptainer)
    if config.gpus:
        log.info("agent.gpus", indices=[gpu.index for gpu in config.gpus])
    sandbox, confined, why = host_sandbox(config, log)
    return Executor(config.workdir, kill_grace=config.kill_grace, cgroups=hierarchy, user=config.job_user,
                    runtime=runtime, gpus=config.gpus, allow_root=config.allow_root_jobs, sandbox=sandbox,
                    confined=confined, unsandboxed=why or INSTALL)


def host_sandbox(config: AgentConfig, log) -> tuple[HostSandbox | None, bool, str]:
    """The host runtime's namespaces (volumes at their paths; the agent's state, its token and --hide paths out of
    sight), whether every host job runs in them (when jobs run as the agent's own user, nothing else keeps them
    from its files), and why there are none. Tried as the jobs' user: where bubblewrap runs only for root, host
    jobs run as before, unsandboxed, and only stages with volumes are refused, saying why."""
    confined = config.job_user is None and os.geteuid() != 0
    hidden = (Path(config.workdir) / ".roving-agent", *config.hide, *agent_sockets(os.environ))
    sandbox, why = HostSandbox.probe(hidden, config.writable, config.job_user) if config.runtime == "host" else (None, "")
    config.annotations.setdefault(SANDBOX, "bwrap" if sandbox is not None else "none")
    if sandbox is None and config.runtime == "host":
        log.warning("agent.no_sandbox", reason=f"host jobs run unsandboxed; volumes cannot be mounted at their paths: "
                    f"{why}", single_user=confined, only_owner=config.only_owner or None)
    if confined and config.only_owner:
        config.annotations.setdefault(TENANTS, f"only:{config.only_owner}")
        log.warning("agent.single_user", reason=SINGLE_USER, only_owner=config.only_owner)
    elif confined:  # told so (--any-owner): parse_args refuses to start otherwise
        log.warning("agent.shared_uid", reason="every owner's jobs run as this agent's own uid (--any-owner): they "
                    "can reach each other's files, processes and sockets")
    return sandbox, confined, why


def job_user_text(config: AgentConfig) -> str:
    """`owner,else=nobody(65534)` (each job as its owner's uid; work without one as ROVING_JOB_UID), or
    `alice(1000),agent` when jobs share the agent's own user (and its files)."""
    if config.job_user is not None:
        return f"owner,else={config.job_user.name}({config.job_user.uid})"
    uid = os.geteuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = str(uid)
    return f"{name}({uid}),agent"


def check_owner(executor: Executor, config: AgentConfig, spec: RunSpec) -> None:
    """An agent that runs jobs as its own user runs them all under one uid: tenants are told apart only by uid (their
    jobs' files, processes, signals), so with --only-owner another owner's work is refused, saying why; without
    bubblewrap nothing even keeps the jobs from the agent's own files."""
    only = config.only_owner
    if not (executor.confined and only and spec.owner_id != only):
        return
    if executor.sandbox is None:
        raise SpecError("single-user node: it runs every job as its agent's own user and cannot keep jobs from its "
                        f"files (no bubblewrap): it runs only its admin's work; {INSTALL} or run roving up as root")
    raise SpecError(f"{SINGLE_USER}; run roving up as root to share it (each job then runs as its owner's uid)")
