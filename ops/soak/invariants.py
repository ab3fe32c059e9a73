"""The invariants, checked after quiescence against the log, the API's views and the jobs' own trace."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ops.soak.eventlog import Event
from ops.soak.tally import Tally

ENDED = frozenset({"FINISHED", "FAILED", "CANCELED"})
REPORT_SLACK = 5.0   # seconds an agent has to report an exit before the exit counts as lost
OVERLAP_SLACK = 0.2  # seconds two copies may seem to overlap because of clock reads in different processes


def ts(value: Any) -> float:
    return value.timestamp() if hasattr(value, "timestamp") else 0.0


@dataclass
class Alloc:
    """One allocation (stage attempt) as the log tells it."""

    id: str
    workflow: str
    stage: str
    attempt: int
    cpu: int = 1  # what it asked of each node
    placements: list[tuple[int, float, list[str], int]] = field(default_factory=list)  # seq, at, node ids, epoch
    ends: list[tuple[int, float, str, int | None]] = field(default_factory=list)     # seq, at, state, exit code


@dataclass
class Run:
    """One process of a stage attempt, from the trace."""

    key: tuple[str, str]     # workflow, stage name
    node: str
    attempt: int
    pid: str
    start: float
    last: float
    exit_code: int | None = None


class Model:
    """The log folded into allocations and nodes. What a node holds is its placed-and-not-ended allocations (Allocation
    events: nodes record no placements since issue 43)."""

    def __init__(self, events: list[Event]) -> None:
        self.allocs: dict[str, Alloc] = {}
        self.by_stage: dict[tuple[str, str, int], Alloc] = {}
        self.node_names: dict[str, str] = {}
        self.node_cpu: dict[str, int] = {}
        self.node_live: dict[str, dict[str, int]] = defaultdict(dict)
        self.overcommits: list[tuple[str, int, int, int]] = []  # node, seq, used, capacity
        for event in events:
            if event.kind == "allocation":
                self._allocation(event)
            elif event.kind == "node":
                self._node(event)

    def _allocation(self, e: Event) -> None:
        if e.name == "Requested":
            resources = e.state.get("resources") or {}
            found = Alloc(id=e.aggregate, workflow=str(e.state["workflow_id"]), stage=e.state["stage"],
                          attempt=int(e.state["attempt"]), cpu=int(resources.get("cpu_cores", resources.get("cpu", 1))))
            self.allocs[e.aggregate] = found
            self.by_stage[(found.workflow, found.stage, found.attempt)] = found
            return
        found = self.allocs.get(e.aggregate)
        if found is None:
            return
        if e.name == "Placed":
            found.placements.append((e.seq, ts(e.at), [str(n) for n in e.state["nodes"]], int(e.state["epoch"])))
            for node in found.placements[-1][2]:
                self._hold(node, found, e.seq)
        elif e.name == "Ended":
            found.ends.append((e.seq, ts(e.at), str(e.state["state"]), e.state.get("exit_code")))
            for node in found.placements[-1][2] if found.placements else ():
                self.node_live[node].pop(found.id, None)

    def _hold(self, node: str, found: Alloc, seq: int) -> None:
        self.node_live[node][found.id] = found.cpu
        used = sum(self.node_live[node].values())
        if used > self.node_cpu.get(node, used):
            self.overcommits.append((node, seq, used, self.node_cpu[node]))

    def _node(self, e: Event) -> None:
        node = e.aggregate
        if e.name in ("NodeRegistered", "NodeRejoined"):
            capacity = e.state.get("capacity")
            if e.name == "NodeRegistered":
                self.node_names[node] = e.state.get("name", node)
            if capacity is not None:
                self.node_cpu[node] = int(getattr(capacity, "cpu", 0))

    def attempt_of(self, key: tuple[str, str], node: str, started: float) -> Alloc | None:
        """The attempt a traced process belongs to: the latest placed on its node before it started.

        The work dir cannot tell (the agent names every attempt's dir `<stage>-1`), the placement times can.
        """
        best, best_at = None, -1.0
        for attempt in range(1, 100):
            a = self.by_stage.get((*key, attempt))
            if a is None:
                break
            for _, at, nodes, _ in a.placements:
                if node in nodes and best_at <= at <= started + 0.05:  # placed before it started (one clock)
                    best, best_at = a, at
        return best

    def name(self, node_id: str) -> str:
        return self.node_names.get(node_id, node_id)


def check_workflows(rows: list[dict], tally: Tally) -> None:
    """Every workflow the API knows has ended (FINISHED, FAILED or CANCELED)."""
    for row in rows:
        if row["status"] not in ENDED:
            tally.violation("workflow_not_ended", f"status {row['status']} after the settle bound", str(row["id"]))


def check_allocations(model: Model, tally: Tally) -> None:
    """One end per allocation, at most one exit code, and a retry never placed before its previous attempt ended."""
    for a in model.allocs.values():
        if len(a.ends) > 1:
            tally.violation("ended_twice", f"{a.stage} attempt {a.attempt} ({a.id}) ended {len(a.ends)} times: "
                            f"{[(s, st, c) for s, _, st, c in a.ends]}", a.workflow)
        codes = [c for *_, c in a.ends if c is not None]
        if len(codes) > 1:
            tally.violation("exit_recorded_twice", f"{a.stage} attempt {a.attempt} exit codes {codes}", a.workflow)
        if a.placements and not a.ends:
            tally.violation("allocation_not_ended", f"{a.stage} attempt {a.attempt} ({a.id}) still placed on "
                            f"{[model.name(n) for n in a.placements[-1][2]]} at quiescence", a.workflow)
        for node in {n for _, _, nodes, _ in a.placements for n in nodes}:
            if node not in model.node_names:
                tally.violation("placement_mismatch", f"{a.stage} placed on {node}, which never registered",
                                a.workflow)
    for (workflow, stage, attempt), a in model.by_stage.items():
        before = model.by_stage.get((workflow, stage, attempt - 1))
        if before is None or not a.placements:
            continue
        ended = before.ends[0][0] if before.ends else None
        if ended is None or a.placements[0][0] < ended:
            tally.violation("two_live_attempts", f"{stage} attempt {attempt} placed (seq {a.placements[0][0]}) "
                            f"while attempt {attempt - 1} had not ended (end seq {ended})", workflow)


def check_nodes(model: Model, nodes: list[dict], tally: Tally) -> dict[str, dict[str, int]]:
    """At quiescence each node's allocations (view) equal the log's placed-minus-released, and nothing is left.

    Returns each node's cpu, used and free as the log says, for the summary.
    """
    for node, seq, used, cap in model.overcommits:
        tally.violation("overcommit", f"{model.name(node)} had {used} cpu placed of {cap} at seq {seq}")
    capacity = {}
    for row in nodes:
        node = str(row["id"])
        live = model.node_live.get(node, {})
        shown = set(row["allocations"])
        if shown != set(live):
            tally.violation("node_view_mismatch", f"{row['name']}: view lists {sorted(shown)}, "
                            f"log placed-minus-ended {sorted(live)}")
        for allocation in live:
            a = model.allocs.get(allocation)
            tally.violation("capacity_not_freed", f"{row['name']} still holds {allocation} "
                            f"({a.stage if a else '?'}; {'ended ' + a.ends[0][2] if a and a.ends else 'not ended'})",
                            a.workflow if a else None)
        used = sum(live.values())
        capacity[row["name"]] = {"cpu": row["cpu"], "used": used, "free": row["cpu"] - used}
    return capacity


TRACE = re.compile(r"^(start|tick|end) (\S+)/(\S+)/(\S+) (\d+\.\d+) (\S+) (\d+)(?: (\d+))?$")


def read_trace(path: Path, nodes: set[str] = frozenset()) -> list[Run]:
    """Each traced process: stage, node and attempt (from its work dir), first and last sign of life, exit code.
    `nodes`: the names nodes registered under (a provisioned node's work dir is named after it too)."""
    runs: dict[str, Run] = {}
    if not path.exists():
        return []
    for line in path.read_text(errors="replace").splitlines():
        m = TRACE.match(line.strip())
        if not m:
            continue
        what, workflow, job, task, at, workdir, pid, code = m.groups()
        parts = Path(workdir).parts
        node = next((p for p in parts if p.startswith("local-") or p in nodes), "?")
        attempt = int(parts[-1].rsplit("-", 1)[1]) if "-" in parts[-1] else 0
        stage = job if task == "-" else f"{job}[{task}]"
        ident = f"{node}/{pid}/{workdir}"
        run = runs.get(ident)
        if run is None:
            run = runs[ident] = Run(key=(workflow, stage), node=node, attempt=attempt, pid=pid, start=float(at),
                                    last=float(at))
        run.last = max(run.last, float(at))
        if what == "end" and code is not None:
            run.exit_code = int(code)
    return list(runs.values())


def check_trace(model: Model, runs: list[Run], tally: Tally) -> None:
    """No stage ever runs twice at once; every process that exited has its exit code in the log."""
    by_stage: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in runs:
        by_stage[run.key].append(run)
    for (workflow, stage), found in by_stage.items():
        found.sort(key=lambda r: r.start)
        for i, first in enumerate(found):
            for second in found[i + 1:]:
                if second.start + OVERLAP_SLACK < first.last:
                    tally.violation("ran_twice", f"{stage}: pid {first.pid} on {first.node} (alive "
                                    f"{first.last - first.start:.1f}s from {first.start:.1f}) overlapped pid {second.pid} "
                                    f"on {second.node} (from {second.start:.1f}) by {first.last - second.start:.1f}s",
                                    workflow)
    names = {name: node for node, name in model.node_names.items()}
    for run in runs:
        if run.exit_code is None:
            continue
        a = model.attempt_of(run.key, names.get(run.node, ""), run.start)
        if a is None:
            tally.violation("unplaced_run", f"{run.key[1]} ran on {run.node} (pid {run.pid}) with no placement there "
                            "in the log", run.key[0])
            continue
        if names.get(run.node) not in a.placements[-1][2]:
            continue  # a stale copy on a node the allocation has left: its report is fenced, by design
        if not a.ends:
            tally.violation("exit_code_lost", f"{a.stage} attempt {a.attempt} exited {run.exit_code} on {run.node}; "
                            "the log never recorded its end", a.workflow)
            continue
        _, at, state, code = a.ends[0]
        if code is not None and code != run.exit_code:
            tally.violation("exit_code_mismatch", f"{a.stage} attempt {a.attempt} exited {run.exit_code} on "
                            f"{run.node}; the log says {code}", a.workflow)
        elif code is None and at > run.last + REPORT_SLACK:
            tally.violation("exit_code_lost", f"{a.stage} attempt {a.attempt} exited {run.exit_code} on {run.node} "
                            f"{at - run.last:.1f}s before it ended {state} without an exit code", a.workflow)


def check_tracebacks(paths: list[Path], tally: Tally) -> None:
    """No process of the stack logged a Python traceback."""
    for path in paths:
        text = path.read_text(errors="replace") if path.exists() else ""
        count = text.count("Traceback")
        if not count:
            continue
        last = text[text.index("Traceback"):].splitlines()
        cause = next((line for line in last[1:40] if line and not line.startswith((" ", "Traceback"))), "?")
        tally.violation("traceback", f"{path.name}: {count} traceback(s), the first ends with: {cause[:300]}",
                        times=count)
