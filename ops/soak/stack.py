"""The soak's own `roving up`: started on a fresh data dir and free ports, crashed and restarted on purpose.

With `cluster` (`--nats-cluster 3`) it runs on three nats-servers of its own (adapters.nats_cluster) with every stream
R3 and two API workers, so one server or the control-plane process leading the scheduler can be killed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from adapters.nats_auth import role_url
from adapters.nats_cluster import LocalCluster
from adapters.nats_server import free_ports
from ops.soak import procs

UP = "import sys; from api.up.main import up_main; sys.exit(up_main([]))"
REPO = Path(__file__).resolve().parents[2]
STORE_SIZE = "2g"  # a tmpfs holds only what is written: the size is a ceiling, not memory taken


class StackError(RuntimeError):
    """The stack did not come up (or back) in time; the message carries the tail of its output."""


class SoakStack:
    """One `roving up` subprocess (which keeps its local agents running), crashed and restarted on purpose."""

    def __init__(self, root: Path, nodes: int = 3, lease: float = 3.0, cpus: int = 4, memory: str = "4GiB",
                 own_store: bool = False, cluster: int = 0) -> None:
        """`own_store`: the log's store on a filesystem of its own (a tmpfs, root only), which the disk-full fault
        fills by shrinking it to what it holds. `cluster`: that many nats-servers of its own instead of the
        embedded one."""
        self.root = root
        self.data_dir = root / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)  # jobs (as nobody, under root) reach their work dir below it; data/ stays 0700
        self.port, self.nats_port = free_ports(2)
        self.url = f"http://127.0.0.1:{self.port}"
        self.nats_url = f"nats://127.0.0.1:{self.nats_port}"
        self.nodes = [f"local-{i}" for i in range(1, nodes + 1)]
        # A fixed nats port: the harness reads the log after crashes, and a restarted server must come back there.
        self.env = {**os.environ, "ROVING_DATA_DIR": str(self.data_dir), "ROVING_LISTEN": f"127.0.0.1:{self.port}",
                    "ROVING_NATS_PORT": str(self.nats_port), "ROVING_LOCAL_NODES": str(nodes),
                    "ROVING_LOCAL_NODE_CPUS": str(cpus), "ROVING_LOCAL_NODE_MEMORY": memory,
                    "ROVING_NODE_LEASE": f"{lease:g}s", "ROVING_LOG_FORMAT": "console", "PYTHONPATH": str(REPO),
                    "ROVING_WORK_DIR": str(root / "work")}  # jobs run on across a graceful stop: find them here
        for name in ("ROVING_NATS_URL", "ROVING_FEDERATION_HUB"):
            self.env.pop(name, None)
        self.cluster = LocalCluster(root / "cluster", size=cluster) if cluster else None
        if self.cluster is not None:
            self.env.update({"ROVING_NATS_URL": self.cluster.url, "ROVING_NATS_REPLICAS": str(min(cluster, 3)),
                             "ROVING_API_WORKERS": "2"})
            self.env.pop("ROVING_NATS_PORT")
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self.store = self.data_dir / "nats"
        self.store_mounted = own_store and os.geteuid() == 0 and _mount(self.store)
        self.spare = None  # pid -> True for processes that outlive `roving up` by design (a cloud's machines)

    @property
    def outputs(self) -> list[Path]:
        """Every file the stack's processes wrote their output to (one per start of `roving up`)."""
        return sorted(self.data_dir.glob("up-*.log")) + sorted(self.data_dir.glob("agent-*.log"))

    def token(self, name: str) -> str:
        return (self.data_dir / f"{name}.token").read_text().strip()

    def start(self, timeout: float = 90.0) -> None:
        """Start `roving up` and wait until the API answers and every local node is READY."""
        self.starts += 1
        if self.cluster is not None and self.starts == 1:
            self.cluster.start()
        log = open(self.data_dir / f"up-{self.starts}.log", "wb")  # noqa: SIM115 - the child keeps its copy
        try:
            self.process = subprocess.Popen([sys.executable, "-c", UP], env=self.env, cwd=REPO, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            log.close()
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise StackError(f"roving up exited: {self.tail()}")
            if (self.data_dir / "admin.token").exists() and self.ready_nodes() >= len(self.nodes):
                return
            time.sleep(0.3)
        raise StackError(f"roving up was not ready in {timeout:.0f}s: {self.tail()}")

    def ready_nodes(self) -> int:
        try:
            answer = httpx.get(self.url + "/v4/nodes", headers={"Authorization": f"Bearer {self.token('admin')}"},
                               timeout=3)
        except (httpx.HTTPError, OSError):
            return 0
        if answer.status_code != 200:
            return 0
        return sum(1 for n in answer.json()["nodes"] if n["status"] == "READY" and n["name"] in self.nodes)

    def api_up(self) -> bool:
        try:
            return httpx.get(self.url + "/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def log_url(self) -> str:
        """The embedded log's URL as the control plane uses it: its credentials, and its CA when it speaks TLS."""
        if self.cluster is not None:
            return self.cluster.url
        return role_url(self.nats_url, self.data_dir / "nats", "control")

    def nats_up(self) -> bool:
        if self.cluster is not None:
            return all(server.process is not None and server.process.poll() is None for server in self.cluster.servers)
        try:
            with socket.create_connection(("127.0.0.1", self.nats_port), timeout=1):
                return True
        except OSError:
            return False

    def tail(self, chars: int = 3000) -> str:
        path = self.data_dir / f"up-{self.starts}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def kill_agent(self, node: str) -> int | None:
        """kill -9 the node's agent; returns its pid, None when none runs."""
        pid = procs.agent_pids(self.data_dir).get(node)
        if pid is None:
            return None
        procs.kill(pid)
        procs.wait_gone([pid], 10)
        return pid

    def wait_agent_back(self, node: str, killed: int, timeout: float) -> bool:
        """Whether `roving up` started another agent for the node within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if procs.agent_pids(self.data_dir).get(node) not in (None, killed):
                return True
            time.sleep(0.2)
        return False

    def kill_control_plane(self) -> list[int]:
        """kill -9 `roving up` alone; returns the nats-servers still running 2 s later (orphans of the crash)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        time.sleep(2)
        return procs.nats_pids(self.data_dir)

    def readyz(self) -> tuple[int, str]:
        """/readyz's status and reason (0 when it cannot be reached)."""
        try:
            answer = httpx.get(self.url + "/readyz", timeout=2)
        except httpx.HTTPError as error:
            return 0, repr(error)
        return answer.status_code, str(answer.json().get("reason", ""))

    def freeze_nats(self, frozen: bool) -> list[int]:
        """SIGSTOP (or SIGCONT) the nats-server: it keeps its connections and answers nothing."""
        pids = procs.nats_pids(self.data_dir)
        for pid in pids:
            procs.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)
        return pids

    def fill_store(self, full: bool) -> bool:
        """Shrink the store's filesystem to what it holds (full), or give it its size back; False without one."""
        if not self.store_mounted:
            return False
        found = os.statvfs(self.store)
        used = (found.f_blocks - found.f_bfree) * found.f_frsize
        size = f"{used // 1024 + 64}k" if full else STORE_SIZE
        return subprocess.run(["mount", "-o", f"remount,size={size}", str(self.store)], capture_output=True).returncode == 0

    def kill_nats(self) -> int | None:
        pids = procs.nats_pids(self.data_dir)
        for pid in pids:
            procs.kill(pid)
        procs.wait_gone(pids, 10)
        return pids[0] if pids else None

    def kill_server(self, index: int) -> int | None:
        """kill -9 one of the cluster's servers; its pid."""
        assert self.cluster is not None
        server = self.cluster.servers[index]
        pid = server.process.pid if server.process is not None and server.process.poll() is None else None
        self.cluster.kill(index)
        return pid

    def restart_server(self, index: int) -> None:
        assert self.cluster is not None
        self.cluster.restart(index)

    def scheduler_leader(self, tries: int = 40) -> int | None:
        """The pid of the API worker leading the scheduler, as /readyz answers say (workers share the port)."""
        for _ in range(tries):
            try:
                process = httpx.get(self.url + "/readyz", timeout=2).json().get("process", {})
            except (httpx.HTTPError, ValueError):
                process = {}
            if process.get("leads_scheduler"):
                return int(process["pid"])
            time.sleep(0.1)
        return None

    def restart(self, timeout: float = 90.0) -> dict[int, str]:
        """Stop what is left (gracefully first), reap every process tied to the data dir, start again.

        Returns the pids that had to be reaped after `roving up` was gone.
        """
        self.stop_up()
        # Agents of a crashed `roving up` get SIGUSR1 from the kernel and detach (their jobs run on): that time.
        nats = set(procs.nats_pids(self.data_dir))
        kept = self.spare or (lambda pid: False)
        procs.wait_gone([p for p in procs.owned(self.data_dir) if p not in nats and not kept(p)], 15)
        leftovers = procs.reap_all(self.data_dir, spare=self.spare)
        self.start(timeout)
        return leftovers

    def stop_up(self, timeout: float = 20.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        """Everything down, nothing left running that names the data dir."""
        self.freeze_nats(False)  # a frozen server would not hear its SIGTERM
        self.stop_up(30)
        procs.reap_all(self.data_dir)
        procs.reap_all(self.root / "work")  # the jobs a graceful stop leaves running for the next start
        if self.cluster is not None:
            self.cluster.stop()
        if self.store_mounted:
            subprocess.run(["umount", "-l", str(self.store)], capture_output=True)
            self.store_mounted = False


def _mount(store: Path) -> bool:
    store.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={STORE_SIZE},mode=0700", "tmpfs", str(store)],
                          capture_output=True).returncode == 0
