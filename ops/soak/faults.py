"""Seeded faults at random times: stops, holds (evict, cordon, drain, alerts), kill -9 of agents, control plane and
nats, a frozen nats-server (SIGSTOP) and a full disk under the log's store; the last two also check `/readyz`'s
contract (503 naming the cause within 5 s of the log becoming unwritable, 200 within 5 s of it recovering)."""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

from ops.soak import procs
from ops.soak.cluster_faults import ClusterFaults
from ops.soak.stack import SoakStack, StackError
from ops.soak.tally import Api, Tally

KINDS = ("stop", "evict", "cordon", "drain", "alert", "agent", "control", "nats", "freeze", "diskfull")
OUTAGES = ("control", "nats", "freeze", "diskfull", "leader")  # faults that take the log or the API down on purpose
READYZ_CONTRACT = 5.0  # seconds /readyz has to say the log is unwritable, and writable again
NATS_BACK = 20.0      # seconds the nats-server gets to come back by itself before the harness restarts the stack
RECOVERY = 45.0       # seconds a node or the API gets to come back after a fault


def parse_kinds(text: str, extra: tuple[str, ...] = (), without: tuple[str, ...] = ()) -> tuple[str, ...]:
    """`extra`: the kinds a run's options add (ops.soak.provisioning's with --provision), part of `all` then;
    `without`: those it takes away (the embedded server's, on a cluster)."""
    known = tuple(kind for kind in KINDS + extra if kind not in without)
    if text == "all":
        return known
    if text in ("none", ""):
        return ()
    wanted = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in wanted if k not in known]
    if unknown:
        raise ValueError(f"unknown fault kinds {unknown}; choose from {', '.join(known)}, all or none")
    return wanted


@dataclass(frozen=True)
class Planned:
    at: float        # seconds after the load starts
    kind: str
    node: str
    pause: float     # how long the fault lasts before its recovery step
    choice: float    # a seeded number for picks made at run time (which workflow to stop, which alert action)


def plan(seed: int, kinds: tuple[str, ...], nodes: list[str], duration: float, gap: tuple[float, float]) -> list[Planned]:
    """The whole schedule, from the seed alone: the same faults in the same order on every run of a seed."""
    rng, at, found = random.Random(f"{seed}:faults"), 3.0, []
    while kinds:
        at += rng.uniform(*gap)
        if at >= duration - 2:
            break
        found.append(Planned(at=at, kind=rng.choice(kinds), node=rng.choice(nodes), pause=rng.uniform(0.5, 6.0),
                             choice=rng.random()))
    return found


class Injector(ClusterFaults, threading.Thread):
    """Runs the plan one fault at a time (each with its own recovery), then returns; `broken` if the stack died."""

    def __init__(self, stack: SoakStack, tally: Tally, schedule: list[Planned], submitted: list[str],
                 lease: float, provisioning: Any = None) -> None:
        super().__init__(name="soak-faults", daemon=True)
        self.provisioning = provisioning
        self.stack, self.tally, self.schedule, self.submitted, self.lease = stack, tally, schedule, submitted, lease
        self.halt = threading.Event()
        self.broken: str | None = None
        self.api = Api(stack.url, stack.token("admin"), tally)
        self.webhook = Api(stack.url, stack.token("alertmanager"), tally)
        self.began = time.monotonic()

    def run(self) -> None:
        try:
            for index, fault in enumerate(self.schedule):
                if self.halt.wait(max(0.0, self.began + fault.at - time.monotonic())):
                    return
                self.tally.fault(fault.kind)
                down = fault.kind in OUTAGES
                self.tally.outage(+1 if down else 0)
                try:
                    getattr(self, f"fault_{fault.kind}")(fault, index)
                    if not self._api_back():
                        return
                finally:
                    self.tally.outage(-1 if down else 0)
        except StackError as error:
            self.broken = str(error)
            self.tally.violation("stack_restart_failed", str(error)[-1500:])
        finally:
            self.api.close()
            self.webhook.close()

    def _api_back(self) -> bool:
        """Wait for the API (after restarts); a stack that does not come back ends the run."""
        deadline = time.monotonic() + RECOVERY
        while time.monotonic() < deadline and not self.halt.is_set():
            if self.stack.api_up():
                return True
            time.sleep(0.5)
        if self.halt.is_set():
            return False
        self.tally.violation("api_not_recovered", f"no /readyz for {RECOVERY:.0f}s; restarting the stack")
        self._restart("api_not_recovered")
        return self.broken is None

    def _restart(self, why: str, known: tuple[int, ...] = ()) -> None:
        try:
            leftovers = self.stack.restart()
        except StackError as error:
            self.broken = f"{why}: {error}"
            self.tally.violation("stack_restart_failed", str(error)[-1500:])
            return
        self.tally.fault("harness_restart")
        left = {pid: cmd for pid, cmd in leftovers.items() if pid not in known}
        if left:
            self.tally.violation("leftover_processes", f"after {why}: {len(left)} processes outlived roving up: "
                                 + "; ".join(f"{pid} {cmd}" for pid, cmd in list(left.items())[:5]))

    def _node(self, node: str) -> dict | None:
        return self.api.json("GET", f"/v4/nodes/{node}")

    def _wait_node(self, node: str, predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.halt.is_set():
            row = self._node(node)
            if row is not None and predicate(row):
                return True
            time.sleep(0.5)
        return False

    def fault_stop(self, fault: Planned, index: int) -> None:
        if not self.submitted:
            return
        victim = self.submitted[int(fault.choice * len(self.submitted))]
        self.api.call("POST", f"/v4/workflows/{victim}:stop")

    def fault_evict(self, fault: Planned, index: int) -> None:
        self.api.call("POST", f"/v4/nodes/{fault.node}/evict", json={"reason": f"soak fault {index}"})
        time.sleep(fault.pause)
        for hold in (self.api.json("GET", f"/v4/nodes/{fault.node}/holds") or {}).get("holds", []):
            if hold["source"] == "admin" and hold["effect"] == "evict":
                self.api.call("DELETE", f"/v4/nodes/{fault.node}/holds/{hold['id']}")

    def fault_cordon(self, fault: Planned, index: int) -> None:
        self.api.call("POST", f"/v4/nodes/{fault.node}/cordon", json={"reason": f"soak fault {index}"})
        time.sleep(fault.pause)
        self.api.call("POST", f"/v4/nodes/{fault.node}/uncordon")

    def fault_drain(self, fault: Planned, index: int) -> None:
        """Cordon, let the running work end (bounded: services may run until their workflow ends), uncordon."""
        self.api.call("POST", f"/v4/nodes/{fault.node}/cordon", json={"reason": f"soak drain {index}"})
        self._wait_node(fault.node, lambda row: not row["allocations"], 20)
        self.api.call("POST", f"/v4/nodes/{fault.node}/uncordon")

    def fault_alert(self, fault: Planned, index: int) -> None:
        action = "evict" if fault.choice < 0.4 else "cordon"
        alert = {"labels": {"alertname": "SoakFault", "fb_action": action, "node": fault.node},
                 "annotations": {"summary": f"soak fault {index}"}, "fingerprint": f"soak{index:05d}",
                 "startsAt": "2025-01-01T00:00:00Z", "endsAt": "0001-01-01T00:00:00Z"}

        def send(status: str) -> None:
            body = {"version": "4", "status": status, "receiver": "roving", "alerts": [{**alert, "status": status}]}
            self.webhook.call("POST", "/v4/alerts", content=json.dumps(body),
                              headers={"Content-Type": "application/json"})
        send("firing")
        time.sleep(fault.pause)
        send("resolved")

    def fault_agent(self, fault: Planned, index: int) -> None:
        """kill -9 one agent; `roving up` must start it again (its jobs run on and are adopted) and the node be READY."""
        killed = self.stack.kill_agent(fault.node)
        if killed is None:
            return
        if not self.stack.wait_agent_back(fault.node, killed, RECOVERY):
            self.tally.violation("agent_not_restarted", f"roving up did not start {fault.node}'s agent again "
                                                        f"within {RECOVERY:.0f}s of its kill -9")
        elif not self._wait_node(fault.node, lambda row: row["status"] == "READY", RECOVERY):
            self.tally.violation("node_not_recovered", f"{fault.node} not READY {RECOVERY:.0f}s after its agent restarted")

    def fault_control(self, fault: Planned, index: int) -> None:
        """kill -9 `roving up` alone, then start it again on the same data dir."""
        orphans = self.stack.kill_control_plane()
        if orphans:
            # The embedded nats-server runs in a session of its own, so a crash of its parent leaves it running
            # on the data dir; the next `roving up` could not start on it.
            self.tally.violation("orphan_nats_after_crash", f"nats-server pid {orphans} outlived a kill -9 of roving up")
        self._restart("control plane kill -9", known=tuple(orphans))

    def fault_nats(self, fault: Planned, index: int) -> None:
        """kill -9 the nats-server; something must bring it back on its port within NATS_BACK seconds."""
        killed = self.stack.kill_nats()
        if killed is None:
            return
        deadline = time.monotonic() + NATS_BACK
        while time.monotonic() < deadline and not self.halt.is_set():
            if self.stack.nats_up() and procs.nats_pids(self.stack.data_dir):
                return
            time.sleep(0.5)
        if self.halt.is_set():
            return
        self.tally.violation("nats_not_restarted", f"nats-server (pid {killed}) not back within {NATS_BACK:.0f}s")
        self._restart("nats not restarted")

    def fault_freeze(self, fault: Planned, index: int) -> None:
        """SIGSTOP the nats-server (it keeps its connections and answers nothing) for the pause, at least until
        /readyz has had its 5 s to say so; then SIGCONT."""
        if not self.stack.freeze_nats(True):
            return
        began = time.monotonic()
        try:
            self._readyz(503, "frozen", f"nats-server frozen (fault {index})")
            time.sleep(max(0.0, fault.pause - (time.monotonic() - began)))
        finally:
            self.stack.freeze_nats(False)
        self._readyz(200, "", f"nats-server thawed (fault {index})")

    def fault_diskfull(self, fault: Planned, index: int) -> None:
        """Shrink the log's store filesystem to what it holds (root: the soak's store is a tmpfs of its own) for the
        pause, then give it its room back: no restart of `roving up` may be needed."""
        if not self.stack.fill_store(True):
            self.tally.fault("diskfull_skipped")  # not root: no filesystem of its own to fill
            return
        began = time.monotonic()
        try:
            self._readyz(503, "disk is full", f"the log's disk filled (fault {index})")
            time.sleep(max(0.0, fault.pause - (time.monotonic() - began)))
        finally:
            self.stack.fill_store(False)
        self._readyz(200, "", f"the log's disk had room again (fault {index})")

    def _readyz(self, status: int, naming: str, what: str) -> bool:
        """Whether /readyz answered `status` (with a reason naming `naming`) within the contract's 5 s of `what`."""
        deadline, found = time.monotonic() + READYZ_CONTRACT, (0, "")
        while time.monotonic() < deadline and not self.halt.is_set():
            found = self.stack.readyz()
            if found[0] == status and naming in found[1]:
                return True
            time.sleep(0.1)
        if self.halt.is_set():
            return False
        self.tally.violation("readyz_contract", f"{what}: /readyz did not answer {status}"
                             f"{f' naming {naming!r}' if naming else ''} within {READYZ_CONTRACT:.0f}s "
                             f"(last: {found[0]} {found[1][:200]})")
        return False
    def fault_provkill(self, fault: Planned, index: int) -> None:
        """A provisioned node dies (agent and jobs, kill -9); its provisioner must delete it and its work go on."""
        up = self.provisioning.up_nodes(self.api)
        if not up:
            return
        node = up[int(fault.choice * len(up))]
        if not self.provisioning.kill_node(node):
            return
        gone = time.monotonic() + RECOVERY + self.lease
        while time.monotonic() < gone and not self.halt.is_set():
            rows = (self.api.json("GET", "/v4/provisioners") or {}).get("provisioners")
            if rows is not None and node not in {n["node"] for p in rows for n in p["nodes"]}:
                return
            time.sleep(0.5)
        if not self.halt.is_set():
            self.tally.violation("killed_node_not_deleted", f"{node} still a provisioner's node "
                                                            f"{RECOVERY + self.lease:.0f}s after it was killed")

    def fault_provfail(self, fault: Planned, index: int) -> None:
        """The scripted pool's creates fail for a while (a cloud out of capacity); waiting work must still end."""
        self.provisioning.fail_creates(self.api, fault.pause * 3)
