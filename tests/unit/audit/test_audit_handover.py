"""A worker that stops leading closes the audit file even when the feed's round is still waiting on the log (a
server of the cluster just went away): the round ends quietly, commits nothing, and the next holder carries on."""

from __future__ import annotations

import threading

import structlog
from eventsourcing.persistence import Notification

import api.composition.audit_lease as audit_lease
from adapters.audit_feed import AuditFeed
from adapters.duckdb_store import AuditStore
from api.composition.audit_lease import AuditByLease
from projections.audit import AuditProjection
from tests.unit.audit.builders import MAPPER, workflow


class StalledLog:
    """Serves its first page, then holds the next read until released (as a log whose server was killed)."""

    def __init__(self, notifications: list[Notification]) -> None:
        self.notifications = notifications
        self.stalled, self.release = threading.Event(), threading.Event()

    def select_notifications(self, start: int, limit: int) -> list[Notification]:
        if start > 1:
            self.stalled.set()
            self.release.wait(10)
        return [n for n in self.notifications if n.id >= start][:limit]


def notifications(count: int) -> list[Notification]:
    stored = [MAPPER.to_stored_event(e) for number in range(1, count + 1)
              for e in workflow(number, "org-a", "alice").collect_events()]
    return [Notification(id=at, originator_id=s.originator_id, originator_version=s.originator_version,
                         topic=s.topic, state=s.state) for at, s in enumerate(stored, start=1)]


def test_a_hand_over_closes_the_file_under_a_stalled_round_without_a_traceback_or_a_half_written_batch(
        tmp_path, monkeypatch):
    monkeypatch.setattr(audit_lease, "HANDOVER_SECONDS", 0.2)
    path = tmp_path / "audit.duckdb"
    log = StalledLog(notifications(3))
    first = log.notifications[:1]
    log.notifications, later = first, log.notifications
    runner = type("Runner", (), {"leading": True})()

    def open_audit():
        store = AuditStore(path)
        return store, "audit", AuditFeed(log, AuditProjection(store, "c1"), page=1, poll_seconds=0.01).start()

    lease = AuditByLease(runner, open_audit, lambda audit: None)
    with structlog.testing.capture_logs() as logged:
        lease.check()
        assert log.stalled.wait(5)  # one row written, the next read waits on the log
        log.notifications = later
        runner.leading = False
        lease.check()  # stops leading: the file closes while the round still waits
        log.release.set()
        threading.Event().wait(0.5)  # the round wakes on the closed file
    errors = [entry for entry in logged if entry["log_level"] in ("error", "critical") or "exc_info" in entry]
    assert errors == [], errors
    assert any(entry["event"] == "audit_feed.stopped_mid_round" for entry in logged), logged
    reopened = AuditStore(path)
    try:
        assert reopened.position("c1") == 1  # the round cut off by the close committed nothing
    finally:
        reopened.close()


def test_a_read_the_hand_over_cut_off_answers_503_ask_again_not_a_500(tmp_path):
    from adapters.audit_log import AuditLog
    from api.http.routes.audit import refused
    from projections.audit import AuditFilters, AuditMoved, Scope

    store = AuditStore(tmp_path / "audit.duckdb")
    audit = AuditLog(store)
    store.close()  # as the worker that stopped leading closes it
    admin = Scope(cluster_admin=True)
    for read in (lambda: audit.list(AuditFilters(), admin), lambda: audit.query("SELECT 1", admin),
                 lambda: audit.export_parquet(tmp_path / "out.parquet", AuditFilters(), admin)):
        try:
            read()
        except AuditMoved as error:
            answer = refused(error)
            assert answer.status_code == 503 and b"ask again" in answer.body
        else:
            raise AssertionError("a read of a closed audit answered")
