"""Audit benchmark: ingest of 1,000,000 msgpack notifications and a filtered query's latency, as one JSON line.

Events have the shapes the domain writes (workflow submissions with definitions and owners, stage
transitions on nodes, allocations placed by the scheduler) and go through the feed's real path: msgpack
decode (adapters.audit_feed), row extraction, one DuckDB transaction per batch. Run: `python -m ops.bench.audit`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

from eventsourcing.persistence import Notification

from adapters.audit_feed import LoggedEvents
from adapters.audit_log import AuditLog
from adapters.duckdb_store import AuditStore
from adapters.transcoder import MsgspecTranscoder
from projections.audit import AuditFilters, AuditProjection, Scope

T0 = datetime(2025, 1, 1, tzinfo=UTC)
DEFINITION = {"version": "v4", "jobs": {"main": {"image": {"uri": "docker://alpine:3.20"}, "script": "train.sh",
                                                  "resource": {"cpu": {"cores": 8}, "memory": {"size": "32GiB"}}}}}
ORGANIZATIONS, USERS, NODES = 20, 400, 512


def workflow_events(number: int) -> list[tuple[str, UUID, int, dict]]:
    """Nine events: a workflow's life and its allocation's, with the fields the aggregates write."""
    wid, aid = UUID(int=number), UUID(int=(1 << 64) + number)
    org, user = f"org-{number % ORGANIZATIONS}", f"user-{number % USERS}"
    node, at = f"node-{number % NODES:04d}", T0 + timedelta(seconds=number)
    owner = {"organization": org, "group": f"{org}-g{number % 3}", "user": user}
    wf = "domain.workflow:Workflow."
    al = "domain.allocation:Allocation."
    return [
        (wf + "Submitted", wid, 1, {"name": f"wf-{number}", "definition": DEFINITION, "owner": owner,
                                    "priority": 0, "preemptible": None, "by": user, "at": at}),
        (wf + "StageReadied", wid, 2, {"stage": "main", "by": "workflow", "at": at}),
        (al + "Requested", aid, 1, {"workflow_id": wid, "stage": "main", "attempt": 1, "resources": {"cpu": 8},
                                    "priority": {"workflow": 0, "organization": 0, "group": 0, "user": 0},
                                    "preemptible": False, "execute_timeout_seconds": 3600.0, "by": "scheduler", "at": at}),
        (al + "Readied", aid, 2, {"by": "scheduler", "at": at}),
        (al + "Placed", aid, 3, {"nodes": [node], "epoch": 1, "by": "scheduler", "at": at + timedelta(seconds=1)}),
        (wf + "StageStarted", wid, 3, {"stage": "main", "attempt": 1, "node": node, "by": "agent",
                                       "at": at + timedelta(seconds=2)}),
        (wf + "StageRunning", wid, 4, {"stage": "main", "attempt": 1, "by": "agent", "at": at + timedelta(seconds=3)}),
        (wf + "StageFinished", wid, 5, {"stage": "main", "attempt": 1, "exit_code": 0, "reason": "Finished",
                                        "by": "agent", "at": at + timedelta(seconds=60)}),
        (al + "Ended", aid, 4, {"state": "FINISHED", "exit_code": 0, "reason": "", "by": "agent",
                                "at": at + timedelta(seconds=60)}),
    ]


def notifications(count: int) -> list[tuple[int, Notification]]:
    encode = MsgspecTranscoder().encode
    made: list[tuple[int, Notification]] = []
    number = 0
    while len(made) < count:
        number += 1
        for topic, originator, version, fields in workflow_events(number):
            state = {"originator_id": originator, "originator_version": version, "timestamp": fields["at"], **fields}
            position = len(made) + 1
            made.append((position, Notification(id=position, originator_id=originator, originator_version=version,
                                                topic=topic, state=encode(state))))
    return made[:count]


def ingest(store: AuditStore, log: list[tuple[int, Notification]], batch: int) -> float:
    projection, decode = AuditProjection(store, "bench"), LoggedEvents()
    notifications = [n for _, n in log]
    started = time.perf_counter()
    for start in range(0, len(log), batch):
        projection.apply(decode(notifications[start:start + batch]))
    return len(log) / (time.perf_counter() - started)


def query_ms(audit: AuditLog, runs: int) -> tuple[float, float]:
    """Median ms of org-3's StageStarted events in one hour (a page of 100), and of a SQL count by type."""
    filters = AuditFilters(event_type="Workflow.StageStarted", since=T0 + timedelta(hours=10),
                           until=T0 + timedelta(hours=11), limit=100)
    listed, counted = [], []
    for _ in range(runs):
        started = time.perf_counter()
        audit.list(filters, Scope("org-3"))
        listed.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        audit.query("SELECT event_type, count(*) FROM audit GROUP BY event_type", Scope("org-3"))
        counted.append((time.perf_counter() - started) * 1000)
    return statistics.median(listed), statistics.median(counted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=5000)  # the page size AuditFeed reads the log in
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    log = notifications(args.events)
    with tempfile.TemporaryDirectory(prefix="roving-audit-bench-") as scratch:
        store = AuditStore(Path(scratch) / "audit.duckdb")
        rate = ingest(store, log, args.batch)
        listed, counted = query_ms(AuditLog(store), args.runs)
        store.close()
    print(json.dumps({"bench": "audit", "events": args.events, "batch": args.batch,
                      "ingest_events_per_s": round(rate), "list_org_type_hour_median_ms": round(listed, 2),
                      "sql_count_by_type_median_ms": round(counted, 2),
                      "targets": {"ingest_events_per_s": 50_000, "query_ms": 200}}))


if __name__ == "__main__":
    main()
