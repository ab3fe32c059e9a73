"""The README's stack (`roving up`) as a subprocess on a free port, driven over HTTP like a user would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from adapters.nats_server import free_port

UP = "import sys; from api.up.main import up_main; sys.exit(up_main(sys.argv[1:]))"


class LocalStack:
    def __init__(self, data_dir: Path, nodes: int = 2, lease_seconds: float = 3.0,
                 settings: dict[str, str] | None = None, args: tuple[str, ...] = (),
                 command: tuple[str, ...] | None = None, port: int | None = None) -> None:
        """`command` starts the stack (an installed `roving up`, say); by default this checkout's code does. `port`:
        a restart on the same port (agents started elsewhere still find it)."""
        self.data_dir = data_dir
        self.port = port or free_port()  # a restart on the same port: agents started elsewhere still find it
        self.url = f"http://127.0.0.1:{self.port}"
        self.nodes = nodes
        env = {**os.environ, "ROVING_DATA_DIR": str(data_dir), "ROVING_LISTEN": f"127.0.0.1:{self.port}",
               "ROVING_LOCAL_NODES": str(nodes), "ROVING_LOCAL_NODE_CPUS": "2", "ROVING_LOCAL_NODE_MEMORY": "2GiB",
               "ROVING_NODE_LEASE": str(lease_seconds), "ROVING_LOG_FORMAT": "console"}
        env.pop("ROVING_NATS_URL", None)  # never the caller's own; a test's `settings` may name one
        env.update(settings or {})
        self.cluster = env.get("ROVING_CLUSTER") or "local"
        self.log = open(data_dir / "stack.log", "wb")  # noqa: SIM115 - closed in stop()
        argv = [*(command or (sys.executable, "-c", UP)), *args]
        self.process = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True, cwd=data_dir if command else None)
        self.client: httpx.Client | None = None

    def start(self, timeout: float = 60) -> LocalStack:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"roving up exited: {(self.data_dir / 'stack.log').read_text()[-2000:]}")
            if (self.data_dir / "admin.token").exists() and self._ready():
                self.client = httpx.Client(base_url=self.url, headers=self.auth(self.token("admin")), timeout=30)
                self.wait(lambda: len(self.ready_nodes()) == self.nodes, 30, "local nodes to register")
                return self
            time.sleep(0.2)
        raise TimeoutError("roving up did not become ready")

    def _ready(self) -> bool:
        try:
            return httpx.get(self.url + "/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def token(self, name: str) -> str:
        return (self.data_dir / f"{name}.token").read_text().strip()

    @staticmethod
    def auth(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def ready_nodes(self) -> list[dict]:
        return [n for n in self.client.get("/v4/nodes").json()["nodes"] if n["status"] == "READY"]

    def submit(self, definition: str, name: str = "wf", client: httpx.Client | None = None) -> str:
        answer = (client or self.client).post("/v4/workflows", json={"name": name, "definition": definition})
        assert answer.status_code == 201, answer.text
        return answer.json()["id"]

    def workflow(self, workflow_id: str, client: httpx.Client | None = None) -> dict:
        return (client or self.client).get(f"/v4/workflows/{workflow_id}").json()

    def wait_status(self, workflow_id: str, statuses: tuple[str, ...], timeout: float = 60) -> dict:
        self.wait(lambda: self.workflow(workflow_id)["status"] in statuses, timeout,
                  f"workflow {workflow_id} to reach {statuses}")
        return self.workflow(workflow_id)

    def wait(self, predicate, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.2)
        raise TimeoutError(f"timed out waiting for {what}; stack log tail:\n"
                           + (self.data_dir / "stack.log").read_text(errors="replace")[-3000:])

    def stage_log(self, workflow_id: str, stage: str, containing: str, timeout: float = 15) -> str:
        """The stage's log once it holds `containing`: an agent sends output every 0.2 s, so the last lines may
        land just after the workflow's status says it ended."""
        text = ""

        def holds() -> bool:
            nonlocal text
            text = self.client.get(f"/v4/workflows/{workflow_id}/log/{stage}").text
            return containing in text
        try:
            self.wait(holds, timeout, f"{containing!r} in the log of {stage}")
        except TimeoutError:
            pass  # the caller's assertion shows what the log held
        return text

    def agent_pid(self, node: str) -> int:
        out = subprocess.run(["pgrep", "-f", "--", f"--node {node} --api {self.url}"], capture_output=True, text=True)
        return int(out.stdout.split()[0])

    def events(self, workflow_id: str) -> list[dict]:
        return self.client.get(f"/v4/workflows/{workflow_id}/events").json()["events"]

    def stop(self, keep_jobs: bool = False) -> None:
        """Stop `roving up` (gracefully: its agents detach and their jobs run on) and, unless `keep_jobs`, end
        those jobs too, so no test leaves a process behind."""
        if self.client is not None:
            self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()
        if not keep_jobs:
            for pid in self.job_pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    @property
    def work_dir(self) -> Path:
        from api.composition.stack import local_work_dir

        return local_work_dir(self.data_dir, self.cluster)

    def job_pids(self) -> list[int]:
        """The processes working under this stack's local work directory: its jobs (and their children)."""
        root, found = str(self.work_dir), []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                if os.readlink(f"/proc/{name}/cwd").startswith(root):
                    found.append(int(name))
            except OSError:
                continue
        return found


def dump(value: object) -> str:
    return json.dumps(value, indent=1, default=str)
