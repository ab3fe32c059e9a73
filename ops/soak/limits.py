"""Quotas and licenses in the soak: the projects and shared resources it sets up, and the invariant that neither is
ever exceeded, under every fault, with nothing left held at quiescence.

The check replays the log on its own, from the allocations' placements and ends (not from the ledgers the control
plane keeps): a placement counts toward its workflow's project and every ancestor, and holds its shared resources,
until its allocation ends. After every placement, each project's use must be within its quota as it stood then, and
each shared resource's within the cluster's count. At quiescence every ledger must be empty.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ops.soak.eventlog import Event
from ops.soak.tally import Api, Tally

# physics-like tree: `soak` caps both children together, `soak/a` has its own cap, `soak/b` none (and is the
# cluster's default, so work that names no project lands there); 3 nodes x 4 cpu = 12 cores in all.
PROJECTS = (("soak", {"cpu": 7}), ("soak/a", {"cpu": 3}), ("soak/b", None))
SHARED = {"lic": 2, "seat": 1}
DEFAULT_PROJECT = "soak/b"


def configure(api: Api, tally: Tally) -> None:
    """Make the projects and the shared resources (once, before the load; they live in the log across restarts)."""
    for path, quota in PROJECTS:
        body: dict[str, Any] = {"members": ["admin"]}
        if quota is not None:
            body["quota"] = quota
        answer = api.call("PUT", f"/v4/projects/{path}", json=body)
        if answer is None or answer.status_code not in (200, 201):
            tally.violation("setup_refused", f"PUT /v4/projects/{path}: {answer.text if answer else 'no answer'}")
    answer = api.call("PUT", "/v4/admin/centralconfig",
                      json={"scheduler.sharedResources": SHARED, "projects.default": DEFAULT_PROJECT})
    if answer is None or answer.status_code != 200:
        tally.violation("setup_refused", f"central config: {answer.text if answer else 'no answer'}")


def ancestors(path: str) -> list[str]:
    parts = path.split("/") if path else []
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


class Usage:
    """The log replayed into what each project (rolled up) and each shared resource holds, event by event."""

    def __init__(self) -> None:
        self.quota: dict[str, dict[str, int]] = {}
        self.totals: dict[str, int] = {}
        self.project_of: dict[str, str] = {}
        self.requests: dict[str, tuple[str, dict[str, int], dict[str, int]]] = {}  # alloc -> workflow, charge, shared
        self.live: dict[str, tuple[str, dict[str, int], dict[str, int]]] = {}  # alloc -> project, charge, shared
        self.used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.shared: dict[str, int] = defaultdict(int)
        self.peaks: dict[str, int] = defaultdict(int)
        self.ledgers: dict[str, dict[str, Any]] = defaultdict(dict)  # ledger id -> allocation -> amounts
        self.paths: dict[str, str] = {}  # project aggregate id -> path

    def apply(self, e: Event, tally: Tally) -> None:
        handler = getattr(self, f"_{e.kind}_{e.name}", None)
        if handler is not None:
            handler(e, tally)

    def _project_Created(self, e: Event, tally: Tally) -> None:
        self.quota.setdefault(e.state["path"], {})
        self.paths[e.aggregate] = e.state["path"]

    def _project_QuotaSet(self, e: Event, tally: Tally) -> None:
        self.quota[self.paths.get(e.aggregate, e.aggregate)] = dict(e.state["limits"])

    def _clusterconfig_Changed(self, e: Event, tally: Tally) -> None:
        if "scheduler.sharedResources" in e.state["changes"]:
            self.totals = dict(e.state["changes"]["scheduler.sharedResources"] or {})

    def _workflow_Submitted(self, e: Event, tally: Tally) -> None:
        self.project_of[e.aggregate] = str((e.state.get("owner") or {}).get("project") or "")

    def _allocation_Requested(self, e: Event, tally: Tally) -> None:
        r = e.state["resources"]
        nodes = int(r.get("nodes", 1))
        charge = {"cpu": int(r.get("cpu_cores", 1)) * nodes, "memory": int(r.get("memory_bytes", 0)) * nodes}
        self.requests[e.aggregate] = (str(e.state["workflow_id"]), charge, dict(r.get("shared") or {}))

    def _allocation_Placed(self, e: Event, tally: Tally) -> None:
        workflow, charge, shared = self.requests.get(e.aggregate, ("", {}, {}))
        if e.aggregate in self.live:
            return
        project = self.project_of.get(workflow, "")
        self.live[e.aggregate] = (project, charge, shared)
        for path in ancestors(project):
            for key, value in charge.items():
                self.used[path][key] += value
                limit = self.quota.get(path, {}).get(key)
                if limit is not None and self.used[path][key] > limit:
                    tally.violation("quota_exceeded", f"project {path} held {key} {self.used[path][key]} of its "
                                    f"quota {limit} at seq {e.seq}", workflow)
            self.peaks[f"{path}.cpu"] = max(self.peaks[f"{path}.cpu"], self.used[path]["cpu"])
        for name, count in shared.items():
            self.shared[name] += count
            self.peaks[name] = max(self.peaks[name], self.shared[name])
            if self.shared[name] > self.totals.get(name, 0):
                tally.violation("shared_exceeded", f"shared resource {name}: {self.shared[name]} held of "
                                f"{self.totals.get(name, 0)} at seq {e.seq}", workflow)

    def _allocation_Ended(self, e: Event, tally: Tally) -> None:
        found = self.live.pop(e.aggregate, None)
        if found is None:
            return
        project, charge, shared = found
        for path in ancestors(project):
            for key, value in charge.items():
                self.used[path][key] -= value
        for name, count in shared.items():
            self.shared[name] -= count

    def _ledger_Charged(self, e: Event, tally: Tally) -> None:
        self.ledgers[e.aggregate][str(e.state["allocation_id"])] = e.state["amounts"]

    def _ledger_Discharged(self, e: Event, tally: Tally) -> None:
        self.ledgers[e.aggregate].pop(str(e.state["allocation_id"]), None)


def check_limits(events: list[Event], tally: Tally) -> dict[str, Any]:
    """The invariant over the whole log; returns the peaks held (for the summary)."""
    usage = Usage()
    for event in events:
        usage.apply(event, tally)
    for ledger, held in usage.ledgers.items():
        if held:
            tally.violation("quota_not_freed", f"ledger {ledger} still holds {len(held)} allocation(s) at quiescence: "
                            f"{sorted(held)[:5]}")
    placed = sum(1 for e in events if e.kind == "allocation" and e.name == "Placed"
                 and usage.requests.get(e.aggregate, ("", {}, {}))[2])
    return {"peak": dict(sorted(usage.peaks.items())), "quota": {p: q for p, q in usage.quota.items() if q},
            "shared": dict(usage.totals), "licensed_placements": placed}
