"""How this node runs jobs: its cgroups (or none, and why), announced in its registration as annotations."""

from __future__ import annotations

import hashlib
from pathlib import Path

from adapters import cgroups
from adapters.executor import Executor
from api.agent_args import AgentConfig

ISOLATION = "roving.io/isolation"


def agent_name(config: AgentConfig) -> str:
    """Stable across restarts of one agent, distinct between agents sharing a machine: node + work directory."""
    digest = hashlib.sha256(str(Path(config.workdir).resolve()).encode()).hexdigest()[:8]
    return f"{config.node}-{digest}"


def build_executor(config: AgentConfig, log, detect=cgroups.detect) -> Executor:
    """The executor, with this agent's cgroups when it may have them; what a predecessor left there is killed."""
    hierarchy, isolation = detect(agent_name(config))
    if hierarchy is None:
        log.warning("agent.no_isolation", reason=isolation)
    else:
        reaped = hierarchy.reap()
        if reaped:
            log.warning("agent.killed_leftover_cgroups", cgroups=reaped)
        log.info("agent.isolation", cgroups=isolation)
    config.annotations.setdefault(ISOLATION, isolation if hierarchy is not None else "none")
    return Executor(config.workdir, kill_grace=config.kill_grace, cgroups=hierarchy)
