"""Audit rows never show secrets, not even hashed ones."""

from uuid import uuid4

from domain.tenancy import Role, User
from projections.audit import AuditFilters, Scope
from tests.unit.audit.builders import Log, at


def test_a_registered_users_password_hash_is_redacted_in_the_audit_row(projection, audit):
    log = Log()
    user = User.register(uuid4(), uuid4(), "erin", "erin@example.org", "scrypt$16384$8$1$c2FsdA$aGFzaA", Role.USER,
                         by="root", at=at(0))
    projection.apply(log.record(user))
    [row] = audit.list(AuditFilters(event_type="User.Registered"), Scope(cluster_admin=True))
    assert row.payload["password_hash"] == "[redacted]"
    assert row.payload["username"] == "erin"
