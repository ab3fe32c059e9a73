"""The soak with provisioners (`--provision`): two pools no local node belongs to, their faults and invariants.

`elastic` (the local provider) and `scripted` (the command provider, ops.soak.scripted_nodes, whose agents live
on like a cloud's machines) each make up to two 2-cpu nodes for the jobs that ask for their `pool` annotation and
remove them after a few idle seconds. Faults: `provkill` kills a provisioned node (its agent and its jobs, as a
machine dying), `provfail` makes the scripted pool's creates fail for a while. At the end every provisioned node
must be gone, no provisioner may have held more than maxNodes, and no node may have registered that was not asked.
"""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from ops.soak import procs
from ops.soak.eventlog import Event
from ops.soak.tally import Api, Tally

REPO = Path(__file__).resolve().parents[2]
POOLS = ("elastic", "scripted")
KINDS = ("provkill", "provfail")
IDLE_SECONDS = 8
MAX_NODES = 2
GONE_BOUND = 90.0  # seconds after the settle for every provisioned node to be deleted
TEMPLATE = {"cpu": 2, "memory": "2GiB"}


class Provisioning:
    def __init__(self, root: Path, data_dir: Path) -> None:
        # jobs run as nobody in its machines' work dirs: not under the soak's 0700 root
        self.state = Path(tempfile.mkdtemp(prefix=f"{root.name}-scripted-"))
        self.state.chmod(0o755)
        self.data_dir = data_dir
        self.program = self.state / "nodes.sh"
        self.program.write_text(f"#!/bin/sh\ncd {REPO}\nexec {sys.executable} -m ops.soak.scripted_nodes {self.state}\n")
        self.program.chmod(0o755)

    def define(self, api: Api) -> None:
        """Both pools, once the stack is up (the log keeps them across restarts)."""
        common = {"template": TEMPLATE, "maxNodes": MAX_NODES, "idleSeconds": IDLE_SECONDS}
        bodies = {
            "elastic": {**common, "provider": "local",
                        "template": {**TEMPLATE, "annotations": {"pool": "elastic"}}},
            "scripted": {**common, "provider": "command", "bootTimeoutSeconds": 60,
                         "template": {**TEMPLATE, "annotations": {"pool": "scripted"}},
                         "settings": {"create": str(self.program), "delete": str(self.program)}},
        }
        for name, body in bodies.items():
            answer = api.call("PUT", f"/v4/provisioners/{name}", json=body)
            if answer is None or answer.status_code >= 300:
                raise RuntimeError(f"cannot define provisioner {name}: {getattr(answer, 'text', 'unreachable')}")

    def machine(self, pid: int) -> bool:
        """A scripted node's agent: it outlives `roving up` by design, so a restart neither waits for nor reaps it."""
        args = procs.cmdline(pid)
        at = args.index("--workdir") + 1 if "--workdir" in args else len(args)
        return at < len(args) and args[at].startswith(str(self.state))

    def up_nodes(self, api: Api) -> list[str]:
        rows = (api.json("GET", "/v4/provisioners") or {}).get("provisioners", [])
        return sorted(n["node"] for p in rows for n in p["nodes"] if n["state"] == "UP")

    def kill_node(self, node: str) -> int:
        """kill -9 the node's agent and every process of its jobs (its cgroups, its work directory): a machine
        dying. Returns how many processes died."""
        victims = [pid for name, pid in procs.agent_pids(self.data_dir).items() if name == node]
        for pid in procs.all_pids():
            text = _cgroups(pid)
            if f"/roving/{node}-" in text or (f"/{node}/" in procs.cwd(pid) and "roving" in procs.cwd(pid)):
                victims.append(pid)
        for pid in victims:
            procs.kill(pid, signal.SIGKILL)
        procs.wait_gone(victims, 10)
        return len(victims)

    def fail_creates(self, api: Api, seconds: float, bound: float = 30.0) -> bool:
        """Creates fail for at least `seconds`, and until one did (at most `bound`): a scripted node is killed too
        when one is up, so the work it had needs a new one. Whether a create failed meanwhile."""
        flag = self.state / "fail-creates"
        flag.touch()
        began, before = time.monotonic(), failed_creates(api)
        try:
            up = [n for n in self.up_nodes(api) if n.startswith("scripted-")]
            if up:
                self.kill_node(up[0])
            while time.monotonic() < began + bound:
                if failed_creates(api) > before and time.monotonic() >= began + seconds:
                    return True
                time.sleep(0.5)
            return False
        finally:
            flag.unlink(missing_ok=True)

    def wait_gone(self, api: Api, tally: Tally) -> None:
        """After the settle: every provisioned node deleted, and gone from the node list, within GONE_BOUND."""
        deadline, left = time.monotonic() + GONE_BOUND, ["?"]
        while time.monotonic() < deadline:
            rows = (api.json("GET", "/v4/provisioners") or {}).get("provisioners")
            nodes = (api.json("GET", "/v4/nodes") or {}).get("nodes")
            if rows is not None and nodes is not None:
                left = [f"{n['node']}:{n['state']}" for p in rows for n in p["nodes"]]
                left += [f"{n['name']}:registered" for n in nodes if n["definition"] in POOLS]
                if not left:
                    return
            time.sleep(1)
        tally.violation("provisioned_nodes_left", f"{GONE_BOUND:.0f}s after the settle these remain: {left}")

    def stop_machines(self, keep: bool = False) -> None:
        """The end of the run: the machines go, and their state with them unless the data dir is kept."""
        for pid in procs.all_pids():
            if self.machine(pid) or procs.cwd(pid).startswith(str(self.state)):
                procs.kill(pid, signal.SIGKILL)
        if not keep:
            shutil.rmtree(self.state, ignore_errors=True)


def failed_creates(api: Api) -> float:
    """The control plane's count of the scripted pool's failed creates (its /metrics)."""
    answer = api.call("GET", "/metrics")
    for line in (answer.text if answer is not None and answer.status_code == 200 else "").splitlines():
        if line.startswith('roving_provisioner_failures_total{kind="create",provisioner="scripted"}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


COUNTED = {"NodesRequested": "requested", "CreateFailed": "create_failed", "NodeUp": "up", "NodeDeleted": "deleted",
           "RequestCanceled": "canceled"}


def check_log(events: list[Event], tally: Tally) -> dict[str, int]:
    """Never more than maxNodes asked for at once; every provisioned node that registered was asked for, and none
    came back after it was deleted. Returns
    how many requests, failed creates, nodes up, deleted and canceled the log holds."""
    live: dict[str, set[str]] = {}
    asked: set[str] = set()
    ended: set[str] = set()
    names: dict[str, str] = {}
    counts = {**dict.fromkeys(COUNTED.values(), 0), "rejoined_after_delete": 0}
    for e in events:
        if e.kind == "provisioner" and e.name in COUNTED:
            pool = live.setdefault(e.aggregate, set())
            ids = e.state["ids"] if e.name == "NodesRequested" else [e.state["request_id"]]
            counts[COUNTED[e.name]] += len(ids)
            _count_live(e, pool, ids, asked, tally)
            if e.name == "NodeDeleted":
                ended.update(ids)
        elif e.kind == "node" and e.name == "NodeRegistered":
            names[e.aggregate] = e.state.get("name", "")
        if e.kind == "node" and e.name in ("NodeRegistered", "NodeRejoined") and names.get(e.aggregate) in ended:
            counts["rejoined_after_delete"] += 1  # a second life of a deleted node (the runner sweeps it)
            tally.violation("node_back_after_delete", f"{names[e.aggregate]} registered again (seq {e.seq}) after "
                            "its provisioner deleted it")
        elif e.kind == "node" and e.name == "NodeRegistered" and e.state.get("definition_id") in POOLS \
                and e.state.get("name") not in asked:
            tally.violation("unasked_node", f"{e.state.get('name')} registered for {e.state['definition_id']} but "
                            "no provisioner asked for it")
    return counts


def _count_live(e: Event, pool: set[str], ids: list[str], asked: set[str], tally: Tally) -> None:
    if e.name == "NodesRequested":
        pool.update(ids)
        asked.update(ids)
        if len(pool) > MAX_NODES:
            tally.violation("max_nodes_exceeded", f"{sorted(pool)} asked for at once (seq {e.seq})")
    elif e.name in ("NodeDeleted", "RequestCanceled"):
        pool.difference_update(ids)


def _cgroups(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return ""
