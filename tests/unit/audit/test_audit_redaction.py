"""Secrets written in a Fuzzfile never reach audit rows: not in GET /v4/audit's rows, not in audit SQL."""

from uuid import UUID

from domain.fuzzfile import parse_fuzzfile
from domain.workflow import Workflow
from projections.audit import AuditFilters, Scope
from projections.redaction import REDACTED, redact
from tests.unit.audit.builders import Log, at

ADMIN = Scope(cluster_admin=True)
FUZZFILE = """version: v1
jobs:
  main:
    image: {uri: docker://registry.example/app:1, secret: secret://user/REGISTRY}
    env: [DB_PASSWORD=hunter2, API_TOKEN=tok-123, AWS_SECRET_ACCESS_KEY=aws-456, SSH_KEY=ssh-789, MODE=fast]
    command: [/bin/true]
"""


def submitted() -> Workflow:
    definition = parse_fuzzfile(FUZZFILE).definition
    owner = {"organization": "org-a", "group": "g", "user": "alice"}
    return Workflow.submit(UUID(int=7), "secrets", definition, owner, by="alice", at=at(0))


def test_a_fuzzfiles_secret_env_values_and_secret_references_never_reach_the_audit(projection, audit):
    projection.apply(Log().record(submitted()))
    [row] = audit.list(AuditFilters(event_type="Workflow.Submitted"), ADMIN)
    text = str(row.payload)
    for secret in ("hunter2", "tok-123", "aws-456", "ssh-789", "secret://user/REGISTRY"):
        assert secret not in text
    assert "DB_PASSWORD=[redacted]" in text and "MODE=fast" in text
    found = audit.query("SELECT count(*) FROM audit WHERE payload::VARCHAR LIKE '%hunter2%'", ADMIN).rows
    assert found == [(0,)]


def test_names_stay_and_only_secret_looking_values_go():
    state = {"password_hash": "scrypt$x", "key": "scheduler.interval", "env": {"API_KEY": "k", "HOME": "/root"},
             "lines": ["export GITHUB_PAT=ghp", "PATH=/usr/bin", "monkey=banana"], "count": 3}
    assert redact(state) == {"password_hash": REDACTED, "key": "scheduler.interval",
                             "env": {"API_KEY": REDACTED, "HOME": "/root"},
                             "lines": [f"GITHUB_PAT={REDACTED}", "PATH=/usr/bin", "monkey=banana"], "count": 3}
