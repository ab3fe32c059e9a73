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
from adapters.executor import Executor
from adapters.runtime.bwrap import OciRuntime
from adapters.runtime.images import ImageCache
from api.agent.args import AgentConfig

ISOLATION = "roving.io/isolation"
JOB_USER = "roving.io/job-user"
RUNTIME = "roving.io/runtime"


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
    return Executor(config.workdir, kill_grace=config.kill_grace, cgroups=hierarchy, user=config.job_user,
                    runtime=runtime, gpus=config.gpus, allow_root=config.allow_root_jobs)


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
