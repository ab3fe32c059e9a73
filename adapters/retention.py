"""The event stream's retention: finished workflows past the admin's limit leave the log, archived first.

A stream-wide age limit would cut live aggregates' histories (a node registered years ago, an organization, a
workflow still running), so retention goes by workflow: a cold workflow (ended, out of the views' hot set,
adapters.cold_index) that ended longer ago than `retention.finishedAfter`, or the oldest ones while the stream holds
more than `retention.maxBytes`, has its own and its allocations' events written to a Parquet file with their audit
rows (adapters.event_archive), the file read back and counted, and only then those subjects purged from the stream,
each only below the last sequence archived. It runs beside the audit (one process holds it: the scheduler's leader
where workers share a log), since the archive is the audit's rows. A crash after the file and before the record
archives the same events again (readers keep one row per sequence); a crash after the record purges on the next round.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import structlog
from prometheus_client import Counter

from adapters.background import Background
from adapters.cold_index import ColdIndex
from adapters.duckdb_store import AuditStore
from adapters.event_archive import ARCHIVED_ROWS, RAW, EventArchive, record, restore_missing
from adapters.jetstream.connection import Connection
from adapters.jetstream.messages import is_event

log = structlog.get_logger("roving.retention")
ROUND_MOST = 20_000  # workflows one round archives at most, into one file
BATCH = 200  # workflows read from the log and staged at a time: bounded memory
SCAN_MOST = 100_000  # cold rows one round looks through (a first round after a start skips the archived ones)
PAGE = 1000
MESSAGE_OVERHEAD = 100  # bytes the stream spends on an event beyond its state and topic (subject, headers, index)
ENDED = frozenset({"FINISHED", "FAILED", "CANCELED"})
OWN_KINDS = ("workflow", "allocation")  # aggregates only a workflow owns; nodes and organizations keep every event
ARCHIVED_EVENTS = Counter("roving_retention_archived_events_total", "Events written to the Parquet archive")
ARCHIVED_WORKFLOWS = Counter("roving_retention_archived_workflows_total", "Workflows archived and purged from the log")
PURGED = Counter("roving_retention_purged_messages_total", "Messages the retention purged from the event stream")
AGGREGATES = f"""SELECT DISTINCT aggregate_id FROM audit_events
WHERE cluster = $1 AND workflow = $2 AND aggregate_kind IN {OWN_KINDS}"""
LAGGING = """SELECT DISTINCT workflow FROM retention_raw r WHERE workflow IN (SELECT unnest($2))
AND NOT EXISTS (SELECT 1 FROM audit_events a WHERE a.cluster = $1 AND a.position = r.position)"""


class Policy(NamedTuple):
    """`finished_after` seconds (0: no age limit) and `max_bytes` of the stream (0: no size budget)."""

    finished_after: float = 0.0
    max_bytes: int = 0

    @property
    def on(self) -> bool:
        return self.finished_after > 0 or self.max_bytes > 0


class Plan(NamedTuple):
    """A round's candidates: `chosen` in the order they went cold, the first `aged` past the age limit, the bytes
    the stream is `over` its size budget by (None: not over), and how far through the cold index they go."""

    chosen: list[str]
    aged: int
    over: int | None
    watermark: int


class Raw(NamedTuple):
    workflow: str
    aggregate: str
    position: int
    topic: str
    state: bytes


class Retention:
    """One round at a time (`run_once`); `status()` says what the policy is and what was archived."""

    def __init__(self, store: AuditStore, archive: EventArchive, connection: Connection, cluster: str,
                 policy: Callable[[], Policy], cold_rows: Callable[[], ColdIndex | None],
                 clock: Callable[[], float] = time.time) -> None:
        self.store, self.archive, self.connection, self.cluster = store, archive, connection, cluster
        self.policy, self.cold_rows, self.clock = policy, cold_rows, clock
        self.stream = connection.ensure("events")
        self._watermark = 0  # the cold index's rows up to here were looked at (this process's copy of it)
        self.last_round: dict[str, Any] = {}
        with store.connection.cursor() as cursor:
            record(cursor)

    def restore(self) -> int:
        """A new (or rebuilt) audit's archived rows, from the archive (adapters.event_archive.restore_missing)."""
        with self.store.connection.cursor() as cursor:
            restored = restore_missing(cursor, self.archive)
        if restored:
            log.info("retention.audit_restored", rows=restored)
        return restored

    def run_once(self) -> dict[str, Any]:
        """Archive and purge what the policy cuts now; returns what the round did."""
        policy = self.policy()
        if not policy.on:
            return {}
        purged = self._finish_purges()
        plan = self._candidates(policy)
        done: dict[str, Any] = {"workflows": 0, "events": 0, "purged": purged, "file": None}
        every = True
        if plan.chosen:
            done, every = self._archive_and_purge(plan, done)
        if every:  # none was skipped (a lagging audit, a size budget met): the next round starts after them
            self._watermark = plan.watermark
        self.last_round = {**done, "at": self.clock()}
        return done

    # -- choosing --------------------------------------------------------------------------------------
    def _candidates(self, policy: Policy) -> Plan:
        """Cold workflows the policy cuts and no round archived yet, in the order they went cold: first those past
        the age limit, then (over the size budget) younger ones, as many as free the bytes it is over by."""
        index = self.cold_rows()
        if index is None:
            return Plan([], 0, None, self._watermark)
        size = self.stream_size()[1] if policy.max_bytes > 0 else 0
        over = size - policy.max_bytes if policy.max_bytes > 0 and size > policy.max_bytes else None
        cutoff = self.clock() - policy.finished_after if policy.finished_after > 0 else None
        chosen: list[str] = []
        aged: int | None = None  # how many of `chosen` are past the age limit (the rest are for the size budget)
        watermark, scanned = self._watermark, 0
        while len(chosen) < ROUND_MOST and scanned < SCAN_MOST:
            rows = index.written_after(watermark, BATCH)
            scanned += len(rows)
            ripe: list[str] = []
            for at, row in rows:
                old = cutoff is not None and row.updated_at.timestamp() <= cutoff
                if not old and aged is None:
                    aged = len(chosen) + len(self._unarchived(ripe))
                if not old and over is None:
                    return Plan(chosen + self._unarchived(ripe), aged or 0, None, watermark)
                watermark = at
                if row.status in ENDED:
                    ripe.append(str(row.id))
            chosen += self._unarchived(ripe)
            if len(rows) < BATCH:
                break
        return Plan(chosen, len(chosen) if aged is None else aged, over, watermark)

    def _unarchived(self, ids: list[str]) -> list[str]:
        if not ids:
            return []
        with self.store.connection.cursor() as cursor:
            known = {w for (w,) in cursor.execute(
                "SELECT workflow FROM archived_workflows WHERE workflow IN (SELECT unnest($1))", [ids]).fetchall()}
        return [i for i in ids if i not in known]

    # -- archiving -------------------------------------------------------------------------------------
    def _archive_and_purge(self, plan: Plan, done: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """One file for the round, read from the log BATCH workflows at a time (DuckDB holds the rest, spilling
        to disk past its memory limit), indexed by aggregate, recorded, and only then purged. Also whether every
        chosen workflow went."""
        with self.store.connection.cursor() as cursor:
            cursor.execute(RAW)
            kept, every = self._gather(cursor, plan)
            if not kept:
                return done, False
            events = _count(cursor, "SELECT count(*) FROM retention_raw")
            path = self._write(cursor, events)
            self.archive.remember(path, [a for (a,) in cursor.execute(
                "SELECT DISTINCT aggregate FROM retention_raw").fetchall()])
            cursor.execute("INSERT OR REPLACE INTO archived_workflows SELECT workflow, now(), count(*), $1, false, "
                           "max(position) FROM retention_raw GROUP BY workflow", [path.name])
        ARCHIVED_EVENTS.inc(events)
        purged = self._purge(dict.fromkeys(sorted(kept)))
        ARCHIVED_WORKFLOWS.inc(len(kept))
        log.info("retention.archived", workflows=len(kept), events=events, purged=purged, file=path.name)
        done = {"workflows": len(kept), "events": events, "purged": done["purged"] + purged, "file": path.name}
        return done, every and len(kept) == len(plan.chosen)

    def _gather(self, cursor: duckdb.DuckDBPyConnection, plan: Plan) -> tuple[set[str], bool]:
        """The plan's workflows' events into the round's table, until those past the age limit are in and the
        size budget's bytes are freed; the workflows staged, and whether that was every one of the plan's."""
        kept: set[str] = set()
        ids: list[str] = []
        raw: list[Raw] = []
        freed = taken = 0
        for wid in plan.chosen:
            if taken >= plan.aged and (plan.over is None or freed >= plan.over):
                break
            taken += 1
            found = self._raw(wid)
            freed += sum(len(r.state) + len(r.topic) + MESSAGE_OVERHEAD for r in found)
            ids.append(wid)
            raw += found
            if len(ids) >= BATCH:
                kept |= self._stage(cursor, ids, raw)
                ids, raw = [], []
        if ids:
            kept |= self._stage(cursor, ids, raw)
        return kept, taken == len(plan.chosen)

    def _raw(self, workflow: str) -> list[Raw]:
        """The workflow's own and its allocations' events as the log holds them now."""
        with self.store.connection.cursor() as cursor:
            aggregates = [a for (a,) in cursor.execute(AGGREGATES, [self.cluster, workflow]).fetchall()]
        found = []
        for aggregate in aggregates:
            subject = self.connection.names.aggregate_filter("events", aggregate)
            found += [Raw(workflow, aggregate, m.seq, m.headers["Roving-Topic"], m.data) for m in self._read(subject)
                      if is_event(m)]
        return found

    def _read(self, subject: str) -> list[Any]:
        client, timeout = self.connection.client, self.connection.op_timeout

        async def every() -> list[Any]:
            msgs, start = [], 1
            while True:
                page, pending = await client.direct_batch(self.stream, subject, start, PAGE, timeout)
                msgs += page
                if not page or pending == 0:
                    return msgs
                start = page[-1].seq + 1

        return self.connection.run(every)

    def _stage(self, cursor: duckdb.DuckDBPyConnection, batch: list[str], raw: list[Raw]) -> set[str]:
        """The events into the round's table; a workflow with an event the audit has not written yet waits."""
        cursor.executemany("INSERT INTO retention_raw VALUES ($1, $2, $3, $4, $5)",
                           [(r.workflow, r.aggregate, r.position, r.topic, r.state) for r in raw])
        lagging = {w for (w,) in cursor.execute(LAGGING, [self.cluster, batch]).fetchall()}
        if lagging:
            cursor.execute("DELETE FROM retention_raw WHERE workflow IN (SELECT unnest($1))", [sorted(lagging)])
            log.info("retention.audit_behind", workflows=len(lagging))
        return {r.workflow for r in raw} - lagging

    def _write(self, cursor: duckdb.DuckDBPyConnection, expected: int) -> Path:
        """COPY to a staged file, count what it holds, and only then move it into the archive."""
        staged = self.store.staged()
        cursor.execute(f"COPY ({ARCHIVED_ROWS}) TO '{staged}' (FORMAT parquet)", [self.cluster])
        found = cursor.execute(f"SELECT count(*) FROM read_parquet('{staged}')").fetchone()
        written = int(found[0]) if found else -1
        if written != expected:
            staged.unlink(missing_ok=True)
            raise RuntimeError(f"the archive file holds {written} rows, not the {expected} written: nothing purged")
        staged.chmod(0o600)  # DuckDB's COPY wrote it as the umask left it: every tenant's events are in it
        destination = self.archive.new_file()
        shutil.move(staged, destination)
        return destination

    # -- purging ---------------------------------------------------------------------------------------
    def _purge(self, workflows: dict[str, None]) -> int:
        """Each workflow's own subjects, below the last sequence archived; then recorded as purged."""
        purged = 0
        for wid in workflows:
            with self.store.connection.cursor() as cursor:
                found = cursor.execute("SELECT last_position FROM archived_workflows WHERE workflow = $1",
                                       [wid]).fetchone()
                aggregates = [a for (a,) in cursor.execute(AGGREGATES, [self.cluster, wid]).fetchall()]
            if found is None:  # never: the record comes first; without it nothing bounds the purge, so none
                continue
            below = int(found[0]) + 1
            for aggregate in aggregates:
                purged += self._purge_subject(self.connection.names.aggregate_filter("events", aggregate), below)
            with self.store.connection.cursor() as cursor:
                cursor.execute("UPDATE archived_workflows SET purged = true WHERE workflow = $1", [wid])
        PURGED.inc(purged)
        return purged

    def _purge_subject(self, subject: str, below: int) -> int:
        return self.connection.run(lambda: self.connection.client.purge_subject(self.stream, subject, below=below))

    def _finish_purges(self) -> int:
        """Workflows archived by a round that stopped before it purged them (a crash, the log away)."""
        with self.store.connection.cursor() as cursor:
            pending = [w for (w,) in cursor.execute(
                "SELECT workflow FROM archived_workflows WHERE NOT purged LIMIT $1", [BATCH]).fetchall()]
        return self._purge(dict.fromkeys(pending)) if pending else 0

    # -- what it shows ---------------------------------------------------------------------------------
    def stream_size(self) -> tuple[int, int, int]:
        return self.connection.run(lambda: self.connection.client.stream_size(self.stream))

    def status(self) -> dict[str, Any]:
        policy = self.policy()
        messages, size, first = self.stream_size()
        with self.store.connection.cursor() as cursor:
            counted = cursor.execute("SELECT count(*), coalesce(sum(events), 0), count(*) FILTER (NOT purged) "
                                     "FROM archived_workflows").fetchone()
            oldest = cursor.execute("SELECT min(time) FROM audit_events WHERE cluster = $1 AND position >= $2",
                                    [self.cluster, first]).fetchone()
        workflows, events, pending = counted if counted else (0, 0, 0)
        return {
            "policy": {"finished_after_seconds": policy.finished_after, "max_bytes": policy.max_bytes,
                       "on": policy.on},
            "stream": {"name": self.stream, "messages": messages, "bytes": size, "first_sequence": first,
                       "oldest_kept": oldest[0].isoformat() if oldest and oldest[0] else None},
            "archived": {"workflows": int(workflows), "events": int(events), "pending_purge": int(pending),
                         "directory": str(self.archive.directory), **_files(self.archive)},
            "last_round": self.last_round,
        }


def _count(cursor: duckdb.DuckDBPyConnection, sql: str) -> int:
    found = cursor.execute(sql).fetchone()
    return int(found[0]) if found else 0


def _files(archive: EventArchive) -> dict[str, int]:
    files = archive.files()
    return {"files": len(files), "bytes": sum(f.stat().st_size for f in files)}


class RetentionLoop:
    """Once `ready()` (the audit feed caught up), restores what a rebuilt audit lacks; then runs a round every
    `interval` seconds on a daemon thread until stopped; a failed round is tried again."""

    def __init__(self, retention: Retention, interval: float, ready: Callable[[], bool] = lambda: True) -> None:
        self.retention, self.interval, self.ready = retention, interval, ready
        self.background = Background(self._run, "roving-retention", join_seconds=30)
        self._stopping = self.background.stopping

    def start(self) -> RetentionLoop:
        self.background.start()
        return self

    def stop(self) -> None:
        self.background.stop()

    def _run(self) -> None:
        while not self.ready() and not self._stopping.wait(0.2):
            pass
        while not self._stopping.is_set():
            try:
                self.retention.restore()
                break
            except Exception:  # noqa: BLE001 - the archive's disk may be away: tried again
                log.exception("retention.restore_failed")
                self._stopping.wait(self.interval)
        while not self._stopping.wait(self.interval):
            try:
                self.retention.run_once()
            except Exception:  # noqa: BLE001 - the log or the disk may be away; the next round tries again
                log.exception("retention.round_failed")
