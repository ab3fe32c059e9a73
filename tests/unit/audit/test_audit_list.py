import duckdb
import pytest

from projections.audit import AccessDenied, AuditFilters, Scope
from tests.unit.audit.builders import at

ADMIN = Scope(cluster_admin=True)
ORG_A = Scope(organization="org-a")


def test_an_organization_owner_lists_only_their_organizations_events(two_tenants, audit):
    rows = audit.list(AuditFilters(limit=1000), ORG_A)
    assert rows and {r.organization for r in rows} == {"org-a"}
    assert "bob" not in {r.principal for r in rows}


def test_asking_for_another_organization_is_refused(two_tenants, audit):
    with pytest.raises(AccessDenied, match="owner of org-a cannot read the audit log of org-b"):
        audit.list(AuditFilters(organization="org-b"), ORG_A)


def test_a_reader_with_no_organization_and_no_admin_role_sees_nothing(two_tenants, audit):
    with pytest.raises(AccessDenied, match="cluster admin or an organization owner"):
        audit.list(AuditFilters(), Scope())


def test_a_cluster_admin_sees_every_organization_and_the_node_events(two_tenants, audit):
    rows = audit.list(AuditFilters(limit=1000), ADMIN)
    assert {r.organization for r in rows} == {"org-a", "org-b", None}


def test_filters_combine_time_range_principal_and_event_type(two_tenants, audit):
    rows = audit.list(AuditFilters(since=at(10), until=at(12), principal="agent", event_type="Workflow.StageStarted"), ADMIN)
    assert [(r.organization, r.node, r.time) for r in rows] == [("org-b", "n2", at(11))]


def test_pages_follow_position_in_either_order(two_tenants, audit):
    first = audit.list(AuditFilters(limit=3), ADMIN)
    second = audit.list(AuditFilters(limit=3, after=first[-1].position), ADMIN)
    assert [r.position for r in first + second] == [1, 2, 3, 4, 5, 6]
    newest = audit.list(AuditFilters(limit=2, descending=True), ADMIN)
    assert [r.position for r in newest] == [len(two_tenants.events), len(two_tenants.events) - 1]


def test_export_writes_the_owners_rows_to_parquet(two_tenants, audit, tmp_path):
    target = tmp_path / "org-a.parquet"
    audit.export_parquet(target, AuditFilters(limit=1), ORG_A)
    exported = duckdb.connect().execute(f"SELECT organization, position FROM read_parquet('{target}')").fetchall()
    assert len(exported) == len(audit.list(AuditFilters(limit=1000), ORG_A)) > 1
    assert {org for org, _ in exported} == {"org-a"}
    assert [p for _, p in exported] == sorted(p for _, p in exported)
