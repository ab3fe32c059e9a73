"""`roving up`'s local node pool: one agent process per local node, their work directories, their metrics ports,
and a graceful stop that lets their jobs run on for the next start to adopt.

`LocalPool` is the part of the Stack (api.composition.stack) that runs them, through its `agents`
(api.up.local_agents.LocalAgents), its data directory, settings and URL.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from adapters.nats_server import free_port, port_is_taken
from api.up.local_agents import outlive_predecessors
from domain.app.ids import user_id

if TYPE_CHECKING:
    from api.composition.settings import Settings
    from api.up.local_agents import LocalAgents

DETACH = signal.SIGUSR1  # api.agent.agent.DETACH: a predecessor's jobs run on for the new agent to adopt
AGENT_START = "import sys; from api.agent.main import agent_main; sys.exit(agent_main(sys.argv[1:]))"


def local_work_dir(data_dir: Path, cluster: str) -> Path:
    """`$ROVING_WORK_DIR`, else one directory per data directory under /tmp (searchable by the job users,
    unlike a home directory; the same on every start, so a restarted agent finds its outbox)."""
    if configured := os.environ.get("ROVING_WORK_DIR"):
        return Path(configured)
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:8]
    return Path(tempfile.gettempdir()) / f"roving-work-{cluster}-{digest}"


class LocalPool:
    """The Stack's local agents: started with `roving up --local-nodes`, stopped (detached) before it stops."""

    agents: LocalAgents
    data_dir: Path
    settings: Settings

    if TYPE_CHECKING:
        @property
        def url(self) -> str: ...  # where the agents reach the API

    def start_local_agents(self, count: int, cpus: int, memory: int | str, metrics: bool = False) -> None:
        """Agents for the local pool; their jobs' work directories live outside the data directory, which is
        closed to every other user (it holds the tokens and the signing key). With `metrics`, each serves its
        node metrics on a free loopback port, which service discovery hands to Prometheus."""
        self.data_dir.chmod(0o700)
        workdir = local_work_dir(self.data_dir, self.settings.cluster)
        # the token by environment, not a path in the command line: every user's `ps` shows command lines, while
        # a process's environment is its own user's (and root's) to read
        env = {**os.environ, "ROVING_TOKEN": (self.data_dir / "agent.token").read_text().strip(),
               # its jobs never see this data directory (tokens, the signing key), nor the other agents' work
               # directories (the other jobs'); where the agent cannot keep them
               # from it (not root: jobs run as this user; no bubblewrap), it runs only the admin's work
               "ROVING_AGENT_HIDE": f"{self.data_dir}:{workdir}", "ROVING_AGENT_ONLY_OWNER": str(user_id("admin"))}
        for index in range(1, count + 1):
            outlive_predecessors(workdir / f"local-{index}", DETACH)  # a crashed start's agent: one agent a node
            argv = [sys.executable, "-c", AGENT_START, "--node", f"local-{index}", "--api", self.url,
                    "--cpus", str(cpus), "--memory", str(memory),
                    "--definition", "local", "--workdir", str(workdir / f"local-{index}"), "--address", "127.0.0.1"]
            if metrics:  # the address is where the endpoint proxy reaches their services, too
                argv += ["--metrics-port", str(self.metrics_port(index))]
            self.agents.add(f"local-{index}", argv, self.data_dir / f"agent-local-{index}.log", env=env)

    def metrics_port(self, index: int) -> int:
        """The port local-<index> served its metrics on before a restart, while it is free: a node registered as it
        was is resumed by its restarted agent (api/agent/agent.Agent.resume), keeping what was placed on it meanwhile."""
        path = self.data_dir / f"agent-local-{index}.metrics-port"
        try:
            port = int(path.read_text())
        except (OSError, ValueError):
            port = 0
        if not 0 < port < 65536 or port_is_taken(port):
            port = free_port()
            path.write_text(str(port))
        return port

    def stop_local_agents(self) -> None:
        """A graceful stop: the local agents detach and their jobs run on, for the next `roving up` on this data dir
        to adopt (ROVING_STOP_LOCAL_JOBS=true stops the jobs too, each ending with exit 143)."""
        from api.agent.agent import DETACH

        detach = not self.settings.stop_local_jobs
        running = [name for name, count in self.local_jobs().items() if count] if detach else []
        self.agents.stop(signum=DETACH if detach else signal.SIGTERM)
        if running:
            print(f"roving: jobs keep running on {', '.join(running)}; the next `roving up` on this data dir adopts "
                  f"them (ROVING_STOP_LOCAL_JOBS=true stops them with the stack)", file=sys.stderr, flush=True)

    def local_jobs(self) -> dict[str, int]:
        """Local node name -> jobs its agent runs, from the agents' own job directories."""
        workdir = local_work_dir(self.data_dir, self.settings.cluster)
        return {kept.name: sum(1 for _ in (workdir / kept.name / ".roving-agent" / "jobs").glob("*"))
                for kept in self.agents.kept}
