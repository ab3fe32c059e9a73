"""`group explainer G USER`: USER may ask why the group's work waits (`why`, `explain`), and still not read it."""

from uuid import uuid4

import msgspec
import pytest

from domain.app import access
from domain.tenancy import Role
from domain.tenancy.permissions import Denied, Outcome, Principal

ORG, GROUP = uuid4(), uuid4()
WORK = {"organization_id": ORG, "group_id": GROUP, "user_id": uuid4()}


def person(name: str, **grants) -> Principal:
    return Principal(user_id=uuid4(), username=name, role=Role.USER, organization_id=ORG, **grants)


def refusal(check, who: Principal) -> Outcome:
    with pytest.raises(Denied) as refused:
        check(who, WORK)
    return refused.value.decision.outcome


def test_an_explainer_outside_the_group_may_run_why_and_explain_on_its_work():
    carol = person("carol", explain_group_ids=frozenset({GROUP}))
    access.explain_workflow(carol, WORK)
    assert refusal(access.view_work, carol) is Outcome.FORBIDDEN  # detail, events and logs stay closed


def test_a_groupmate_without_the_grant_sees_the_work_but_may_not_explain_it():
    bob = person("bob", group_ids=frozenset({GROUP}))
    access.view_work(bob, WORK)
    assert refusal(access.explain_workflow, bob) is Outcome.FORBIDDEN


def test_someone_outside_the_group_is_told_the_work_is_not_there():
    assert refusal(access.explain_workflow, person("mallory")) is Outcome.NOT_VISIBLE


def test_the_owner_and_a_cluster_admin_explain_their_work():
    access.explain_workflow(msgspec.structs.replace(person("alice"), user_id=WORK["user_id"]), WORK)
    access.explain_workflow(msgspec.structs.replace(person("root"), role=Role.CLUSTER_ADMIN, is_cluster_admin=True), WORK)
