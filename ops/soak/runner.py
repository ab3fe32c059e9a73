"""The soak run: start the stack, submit the seeded load from several threads while faults fire, settle, check.

Prints exactly one JSON line on stdout; violations and the offending workflows' histories go to stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ops.soak import faults, invariants, limits, workload
from ops.soak.cluster_faults import CLUSTER_KINDS, EMBEDDED_KINDS
from ops.soak.eventlog import Event, read_log
from ops.soak.provisioning import KINDS as PROVISION_KINDS
from ops.soak.provisioning import POOLS, Provisioning, check_log
from ops.soak.stack import SoakStack, StackError
from ops.soak.tally import Api, Tally

HISTORIES_PRINTED = 8


class Load:
    """Submitter threads and a monitor that knows which submitted workflows have ended."""

    def __init__(self, stack: SoakStack, tally: Tally, seed: int, trace: Path, workers: int, until: float,
                 outstanding: int, pools: tuple[str, ...] = ()) -> None:
        self.stack, self.tally, self.seed, self.trace, self.pools = stack, tally, seed, str(trace), pools
        self.workers, self.until, self.outstanding = workers, until, outstanding
        self.counter = itertools.count()
        self.lock = threading.Lock()
        self.submitted: list[str] = []
        self.planned: dict[str, workload.Planned] = {}
        self.statuses: dict[str, str] = {}
        self.done = threading.Event()

    def open_count(self) -> int:
        with self.lock:
            return sum(1 for w in self.submitted if self.statuses.get(w) not in workload.ENDED)

    def submit_loop(self, worker: int) -> None:
        api, rng = Api(self.stack.url, self.stack.token("admin"), self.tally), random.Random(f"{self.seed}:w{worker}")
        try:
            while time.monotonic() < self.until:
                if self.open_count() >= self.outstanding:
                    time.sleep(0.3)
                    continue
                planned = workload.workflow(self.seed, next(self.counter), self.trace, self.pools)
                self.submit(api, planned)
                time.sleep(rng.uniform(0.05, 0.6))
        finally:
            api.close()

    def submit(self, api: Api, planned: workload.Planned) -> None:
        """Submit once; an unreachable API (a restart in progress) is retried, a refusal is the harness's bug."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            # The key makes a retry after a lost answer the same workflow, not a second one.
            answer = api.call("POST", "/v4/workflows", json={"name": planned.name, "definition": planned.definition},
                              headers={"Idempotency-Key": planned.name})
            if answer is None or answer.status_code == 503:
                time.sleep(1)
                continue
            if answer.status_code == 201:
                workflow_id = answer.json()["id"]
                with self.lock:
                    self.submitted.append(workflow_id)
                    self.planned[workflow_id] = planned
            elif answer.status_code < 500:
                self.tally.violation("submit_refused", f"{planned.name}: {answer.status_code} {answer.text[:400]}")
            return

    def monitor(self) -> None:
        api = Api(self.stack.url, self.stack.token("admin"), self.tally)
        try:
            while not self.done.is_set():
                self.refresh(api)
                self.done.wait(2)
        finally:
            api.close()

    def refresh(self, api: Api) -> list[dict]:
        rows = (api.json("GET", "/v4/workflows") or {}).get("workflows")
        if rows is None:
            return []
        with self.lock:
            self.statuses.update({str(r["id"]): r["status"] for r in rows})
        return rows


def settle(stack: SoakStack, load: Load, tally: Tally, bound: float) -> tuple[list[dict], float]:
    """Wait (at most `bound` s) for every workflow to end and every node to be READY and empty."""
    api, began = Api(stack.url, stack.token("admin"), tally), time.monotonic()
    rows: list[dict] = []
    try:
        while time.monotonic() < began + bound:
            rows = load.refresh(api) or rows
            nodes = (api.json("GET", "/v4/nodes") or {}).get("nodes", [])
            ended = rows and all(r["status"] in workload.ENDED for r in rows)
            quiet = nodes and all(n["status"] == "READY" and not n["allocations"] for n in nodes)
            if ended and quiet and len(rows) >= len(load.submitted):
                break
            time.sleep(1)
    finally:
        api.close()
    return rows, time.monotonic() - began


def histories(stack: SoakStack, tally: Tally, events: list[Event]) -> None:
    """For each offending workflow: the seed, its activity through the API and its allocations' log events."""
    api = Api(stack.url, stack.token("admin"), tally)
    allocs = {e.aggregate for e in events if e.kind == "allocation" and e.name == "Requested"}
    owner = {e.aggregate: str(e.state["workflow_id"]) for e in events if e.kind == "allocation" and e.name == "Requested"}
    try:
        for workflow_id in sorted(tally.suspects)[:HISTORIES_PRINTED]:
            print(f"--- soak seed={tally.seed} workflow {workflow_id}: activity (API)", file=sys.stderr)
            for row in (api.json("GET", f"/v4/workflows/{workflow_id}/events") or {}).get("events", []):
                print(f"  {row['time']} {row['type']:<28} {row['stage'] or '-':<10} {row['message']}", file=sys.stderr)
            print(f"--- soak seed={tally.seed} workflow {workflow_id}: allocation events (log)", file=sys.stderr)
            for e in events:
                if e.aggregate in allocs and owner[e.aggregate] == workflow_id and e.kind == "allocation":
                    brief = {k: v for k, v in e.state.items() if k in ("stage", "attempt", "nodes", "epoch", "state",
                                                                          "exit_code", "reason", "by")}
                    print(f"  seq {e.seq} {e.aggregate[:8]} {e.name} {brief}", file=sys.stderr)
    finally:
        api.close()


def run(seed: int, duration: float, kinds: tuple[str, ...], workers: int = 4, nodes: int = 3, lease: float = 3.0,
        settle_bound: float = 180.0, outstanding: int = 24, keep: bool = False,
        provision: bool = False, nats_cluster: int = 0) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix=f"roving-soak-{seed}-"))
    tally = Tally(seed)
    stack = SoakStack(root, nodes=nodes, lease=lease, own_store="diskfull" in kinds, cluster=nats_cluster)
    pools = Provisioning(root, stack.data_dir) if provision else None
    if pools is not None:
        stack.spare = pools.machine
    began = time.monotonic()
    summary: dict[str, Any] = {"seed": seed, "duration_s": duration, **({"nats_cluster": nats_cluster}
                                                                       if nats_cluster else {})}
    injector = None
    try:
        stack.start()
        if pools is not None:
            _define(stack, tally, pools)
        setup = Api(stack.url, stack.token("admin"), tally)
        limits.configure(setup, tally)
        setup.close()
        load_began = time.monotonic()
        load = Load(stack, tally, seed, root / "trace.log", workers, load_began + duration, outstanding,
                    POOLS if pools is not None else ())
        schedule = faults.plan(seed, kinds, stack.nodes, duration, gap=(4.0, 10.0))
        injector = faults.Injector(stack, tally, schedule, load.submitted, lease, pools)
        threads = [threading.Thread(target=load.submit_loop, args=(k,), name=f"soak-submit-{k}", daemon=True)
                   for k in range(workers)]
        monitor = threading.Thread(target=load.monitor, name="soak-monitor", daemon=True)
        for thread in (injector, monitor, *threads):
            thread.start()
        for thread in threads:
            thread.join(duration + 120)
        injector.join(max(1.0, load_began + duration + 120 - time.monotonic()))  # the last fault's recovery
        injector.halt.set()
        injector.join(60)
        load.done.set()
        monitor.join(30)
        if injector.broken:
            summary["aborted"] = injector.broken[-500:]
            stack.restart()  # one more try, so what the log holds can still be checked
        rows, settled = settle(stack, load, tally, settle_bound)
        if pools is not None:
            _wait_gone(stack, tally, pools)
        events = read_log(stack.log_url())
        model = invariants.Model(events)
        invariants.check_workflows(rows, tally)
        invariants.check_allocations(model, tally)
        api = Api(stack.url, stack.token("admin"), tally)
        nodes_now = (api.json("GET", "/v4/nodes") or {}).get("nodes", [])
        api.close()
        capacity = invariants.check_nodes(model, nodes_now, tally)
        invariants.check_trace(model, invariants.read_trace(root / "trace.log", set(model.node_names.values())), tally)
        if pools is not None:
            summary["provisioning"] = check_log(events, tally)
        invariants.check_tracebacks(sorted(stack.data_dir.glob("*.log")), tally)
        held = limits.check_limits(events, tally)
        if tally.violations:
            histories(stack, tally, events)
        planned = list(load.planned.values())
        summary.update({
            "workflows": len(rows), "submitted": len(load.submitted), "jobs": sum(p.jobs for p in planned),
            "services": sum(p.services for p in planned),
            "statuses": dict(sorted(_count(r["status"] for r in rows).items())), "events": len(events),
            "allocations": len(model.allocs), "settle_s": round(settled, 1), "capacity": capacity, "limits": held,
        })
    except StackError as error:
        tally.violation("stack_failed", str(error)[-1500:])
        summary["aborted"] = str(error)[-500:]
    finally:
        if injector is not None:
            injector.halt.set()
        stack.stop()
        if pools is not None:
            pools.stop_machines(keep=keep or bool(tally.violations))
    summary.update({"faults": dict(sorted(tally.faults.items())), "violations": dict(sorted(tally.violations.items())),
                    "api_calls": dict(sorted(tally.calls.items())), "elapsed_s": round(time.monotonic() - began, 1)})
    if keep or tally.violations:
        summary["data_dir"] = str(root)
        (root / "violations.json").write_text(json.dumps(tally.details, indent=1, default=str))
    else:
        shutil.rmtree(root, ignore_errors=True)
    return summary


def _define(stack: SoakStack, tally: Tally, pools: Provisioning) -> None:
    api = Api(stack.url, stack.token("admin"), tally)
    try:
        pools.define(api)
    finally:
        api.close()


def _wait_gone(stack: SoakStack, tally: Tally, pools: Provisioning) -> None:
    api = Api(stack.url, stack.token("admin"), tally)
    try:
        pools.wait_gone(api, tally)
    finally:
        api.close()


def _count(values) -> dict[str, int]:
    found: dict[str, int] = {}
    for value in values:
        found[value] = found.get(value, 0) + 1
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.soak", description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load (faults fire within it)")
    parser.add_argument("--faults", default="all", help=f"all, none or a comma list of {','.join(faults.KINDS)}")
    parser.add_argument("--workers", type=int, default=4, help="submitting threads")
    parser.add_argument("--nodes", type=int, default=3, choices=(2, 3, 4))
    parser.add_argument("--lease", type=float, default=3.0, help="ROVING_NODE_LEASE in seconds")
    parser.add_argument("--settle", type=float, default=180.0, help="seconds for every workflow to end after the load")
    parser.add_argument("--outstanding", type=int, default=24, help="most workflows not yet ended at any time")
    parser.add_argument("--keep", action="store_true", help="keep the data dir even without violations")
    parser.add_argument("--provision", action="store_true",
                        help=f"add two provisioners (local and command) that some jobs need, and the faults "
                             f"{', '.join(PROVISION_KINDS)} (part of `all` then)")
    parser.add_argument("--nats-cluster", type=int, default=0, choices=(0, 3),
                        help="run on three nats-servers of the soak's own (R3 streams, two API workers) and add the "
                             f"faults {', '.join(CLUSTER_KINDS)} (instead of {', '.join(EMBEDDED_KINDS)})")
    args = parser.parse_args(argv)
    extra = (PROVISION_KINDS if args.provision else ()) + (CLUSTER_KINDS if args.nats_cluster else ())
    try:
        kinds = faults.parse_kinds(args.faults, extra, EMBEDDED_KINDS if args.nats_cluster else ())
    except ValueError as error:
        parser.error(str(error))
    summary = run(args.seed, args.duration, kinds, args.workers, args.nodes, args.lease, args.settle,
                  args.outstanding, args.keep, args.provision, args.nats_cluster)
    print(json.dumps(summary, default=str), flush=True)
    return 1 if summary["violations"] else 0
