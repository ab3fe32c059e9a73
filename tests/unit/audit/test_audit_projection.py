from adapters.audit_log import AuditLog
from adapters.duckdb_store import AuditStore
from projections.audit import AuditFilters, AuditProjection, Scope
from tests.unit.audit.builders import Log, allocation, at, workflow

ADMIN = Scope(cluster_admin=True)


def test_every_event_becomes_one_row_saying_who_did_what_when_and_for_whom(two_tenants, audit):
    rows = audit.list(AuditFilters(), ADMIN)
    assert [r.position for r in rows] == list(range(1, len(two_tenants.events) + 1))
    submitted = rows[0]
    assert (submitted.event_type, submitted.aggregate_kind, submitted.principal) == ("Workflow.Submitted", "workflow", "alice")
    assert (submitted.organization, submitted.group_name, submitted.time) == ("org-a", "org-a-group", at(0))
    assert submitted.payload["owner"]["user"] == "alice"
    assert submitted.cluster == "c1"


def test_redelivered_events_are_written_once(two_tenants, projection, audit):
    assert projection.apply(two_tenants.events) == 0
    assert projection.apply(two_tenants.events[2:5]) == 0
    assert len(audit.list(AuditFilters(limit=1000), ADMIN)) == len(two_tenants.events)


def test_later_workflow_events_and_its_allocations_carry_the_workflows_organization(two_tenants, audit):
    rows = audit.list(AuditFilters(workflow=str(workflow(1, "org-a", "alice").id), limit=100), ADMIN)
    assert {r.event_type for r in rows} >= {"Workflow.StageStarted", "Allocation.Requested", "Allocation.Placed"}
    assert {r.organization for r in rows} == {"org-a"}


def test_started_stages_and_placements_name_their_node(two_tenants, audit):
    rows = audit.list(AuditFilters(node="n1"), ADMIN)
    assert [r.event_type for r in rows] == ["Workflow.StageStarted", "Allocation.Placed"]


def test_node_events_record_the_principal_role_and_source(two_tenants, audit):
    (hold,) = audit.list(AuditFilters(event_type="Node.HoldPlaced"), ADMIN)
    found = (hold.aggregate_kind, hold.node, hold.principal, hold.role, hold.source)
    assert found == ("node", "n3", "root", "cluster-admin", "admin")
    assert hold.organization is None


def test_system_principals_are_recorded_as_the_source(two_tenants, audit):
    placed = audit.list(AuditFilters(event_type="Allocation.Placed"), ADMIN)[0]
    assert (placed.principal, placed.source) == ("scheduler", "scheduler")


def test_a_restarted_projection_still_attributes_a_workflows_later_events_to_its_organization(tmp_path):
    first, log = AuditStore(tmp_path / "a.duckdb"), Log()
    log.record(workflow(7, "org-a", "alice"))
    AuditProjection(first, "c1").apply(log.events)
    first.close()
    reopened = AuditStore(tmp_path / "a.duckdb")
    later = log.record(allocation(7, 7, "n9", minute=30))
    AuditProjection(reopened, "c1").apply(later)
    rows = AuditLog(reopened).list(AuditFilters(event_type="Allocation.Placed"), Scope("org-a"))
    reopened.close()
    assert [(r.organization, r.node) for r in rows] == [("org-a", "n9")]


def test_each_cluster_keeps_its_own_position(store):
    log = Log()
    log.record(workflow(1, "org-a", "alice"))
    AuditProjection(store, "c1").apply(log.events)
    AuditProjection(store, "c2").apply(log.events[:2])
    assert (store.position("c1"), store.position("c2")) == (len(log.events), 2)
    assert len(AuditLog(store).list(AuditFilters(cluster="c2"), ADMIN)) == 2


def test_an_old_workflows_later_events_keep_its_organization_while_memory_holds_only_the_recent(store, monkeypatch):
    from projections import audit as audit_projection
    monkeypatch.setattr(audit_projection, "LINEAGE_KEPT", 2)
    projection, log = AuditProjection(store, "c1"), Log()
    for n in range(1, 6):
        log.record(workflow(n, "org-a" if n == 1 else "org-b", "alice"))
    projection.apply(log.events)
    assert len(projection._lineage) <= 2
    projection.apply(log.record(allocation(1, 1, "n9", minute=30)))  # workflow 1 left memory long ago
    rows = AuditLog(store).list(AuditFilters(event_type="Allocation.Placed"), Scope("org-a"))
    assert [(r.organization, r.node) for r in rows] == [("org-a", "n9")] and len(projection._lineage) <= 2


def test_a_restarted_projection_reads_back_only_the_most_recent_lineage(tmp_path, monkeypatch):
    from projections import audit as audit_projection
    monkeypatch.setattr(audit_projection, "LINEAGE_KEPT", 3)
    first, log = AuditStore(tmp_path / "a.duckdb"), Log()
    for n in range(1, 8):
        log.record(workflow(n, "org-a", "alice"))
    AuditProjection(first, "c1").apply(log.events)
    assert len(AuditProjection(first, "c1")._lineage) == 3
    first.close()
