"""Fixtures: an audit store on disk, its projection for cluster `c1`, and a log of two organizations."""

import pytest

from adapters.audit_log import AuditLog
from adapters.duckdb_store import AuditStore
from projections.audit import AuditProjection
from tests.unit.audit.builders import Log, allocation, cordon, workflow


@pytest.fixture
def store(tmp_path):
    opened = AuditStore(tmp_path / "audit.duckdb")
    yield opened
    opened.close()


@pytest.fixture
def projection(store):
    return AuditProjection(store, "c1")


@pytest.fixture
def audit(store):
    return AuditLog(store)


@pytest.fixture
def two_tenants(projection):
    """org-a's alice ran workflow 1 on n1 (allocation on n1); org-b's bob ran workflow 2 on n2; root cordoned n3."""
    log = Log()
    log.record(workflow(1, "org-a", "alice", minute=0, node="n1"), allocation(1, 1, "n1", minute=3))
    log.record(workflow(2, "org-b", "bob", minute=10, node="n2"))
    cordon(log, "n3", "root", minute=20)
    projection.apply(log.events)
    return log
