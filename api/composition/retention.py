"""The event stream's retention in a control plane: its loop beside the audit, and cold reads that fall back to the
archive once a workflow's events left the log (adapters.retention, adapters.event_archive)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from uuid import UUID

import structlog
from eventsourcing.persistence import StoredEvent

from adapters.event_archive import EventArchive
from adapters.retention import Policy, Retention, RetentionLoop

log = structlog.get_logger("roving.retention")


def archive_dir(data_dir: Path) -> Path:
    return data_dir / "archive"


def start_retention(roving: Any, views: Any, store: Any, audit: Any, feed: Any, data_dir: Path, cluster: str,
                    interval: float) -> Retention:
    """The loop runs while the audit feed does (it is stopped with it); once the feed has caught up, it restores
    a new (or rebuilt) audit's archived rows, then runs its rounds. The audit log shows its status."""
    def policy() -> Policy:
        config = roving.scheduler_config()
        return Policy(config.retention_finished_after_seconds, config.retention_max_bytes)

    retention = Retention(store, EventArchive(archive_dir(data_dir)), roving.recorder.connection, cluster, policy,
                          lambda: views.workflows.cold_rows)
    feed.companions.append(RetentionLoop(retention, interval, ready=feed.caught_up.is_set).start())
    audit.retention = retention
    return retention


def logged_or_archived(roving: Any, data_dir: Path) -> Callable[[UUID], Iterable[Any]]:
    """One aggregate's events from the log by its subject, else (purged by the retention) from the archive."""
    archive = EventArchive(archive_dir(data_dir))

    def events_of(originator_id: UUID) -> Iterable[Any]:
        found = list(roving.events.get(originator_id))
        if found:
            return found
        return [roving.mapper.to_domain_event(StoredEvent(originator_id, row.version, row.topic, row.state))
                for row in archive.events_of(str(originator_id))]

    return events_of
