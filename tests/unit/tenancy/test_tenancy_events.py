"""Tenancy events survive the log: stored through the project's transcoder they rebuild the same aggregates."""

import ast
from pathlib import Path

from eventsourcing.persistence import Mapper

from adapters.transcoder import MsgspecTranscoder
from domain.tenancy import Role

from .builders import ALICE, BOB, HASH, INFERENCE, at, group, organization, user

DOMAIN = Path(__file__).resolve().parents[3] / "domain" / "tenancy"
FORBIDDEN = {"adapters", "api", "projections", "nats", "duckdb", "starlette", "uvicorn", "os", "socket", "time",
             "random", "secrets", "uuid4"}


def through_the_log(events):
    mapper = Mapper(transcoder=MsgspecTranscoder())
    return [mapper.to_domain_event(mapper.to_stored_event(e)) for e in events]


def replay(events):
    aggregate = None
    for event in through_the_log(events):
        aggregate = event.mutate(aggregate)
    return aggregate


def test_an_organization_replays_with_its_priority_owners_and_priority_message():
    acme = organization()
    acme.set_priority(5, by="root", by_role=Role.CLUSTER_ADMIN, at=at(1))
    acme.add_owner(BOB, by="alice", at=at(2))
    events = acme.collect_events()
    again = replay(events)
    assert (again.priority, again.owners, again.version) == (5, [ALICE, BOB], 3)
    assert through_the_log(events)[1].message == "Priority updated: organization 0 -> 5 (by root)"


def test_a_group_replays_with_roles_preempt_list_and_grants():
    training = group({BOB: Role.MEMBER})
    training.set_preempt_list([INFERENCE], by="alice", by_role=Role.ORG_OWNER, at=at(1))
    training.grant_explain_allocation(BOB, by="alice", at=at(2))
    again = replay(training.collect_events())
    assert again.members == {ALICE: Role.GROUP_OWNER, BOB: Role.MEMBER}
    assert (again.preempt, again.explainers) == ([INFERENCE], [BOB])


def test_a_locked_user_replays_locked_until_the_same_moment():
    bob = user()
    for second in range(5):
        bob.login(False, at(second / 60))
    again = replay(bob.collect_events())
    assert (again.password_hash, again.failed_logins, again.locked_until) == (HASH, 5, bob.locked_until)
    assert again.is_locked(at(10)) and not again.is_locked(at(20))


def test_the_tenancy_domain_imports_no_io_clock_or_adapters():
    for module in DOMAIN.glob("*.py"):
        tree = ast.parse(module.read_text())
        names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        names |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
        assert not names & FORBIDDEN, f"{module.name} imports {names & FORBIDDEN}"
