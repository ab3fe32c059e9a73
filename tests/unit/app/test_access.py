"""The application decides who may do what: commands and the queries routes make ask domain.app.access."""

from __future__ import annotations

from uuid import uuid4

import msgspec
import pytest

from domain.app import NoReadModels, ReadModelFunctions, access
from domain.app.roving import Roving
from domain.tenancy import Role
from domain.tenancy.permissions import Denied, Outcome, Principal
from tests.unit.app.builders import ADMIN, PIPELINE, T0, app, later, user


def in_group(principal: Principal, group, role: Role = Role.USER, owns: bool = False) -> Principal:
    return msgspec.structs.replace(principal, role=role, group_ids=frozenset({group}),
                                   owned_group_ids=frozenset({group}) if owns else frozenset())


def submitted_by_a_group_member():
    roving, org, group, wid = app(), uuid4(), uuid4(), uuid4()
    roving.submit_workflow(wid, "pipe", PIPELINE, 0, None, in_group(user(org, "alice"), group), T0)
    return roving, org, group, wid


def test_a_groupmate_who_sees_the_work_may_not_stop_it():
    roving, org, group, wid = submitted_by_a_group_member()
    with pytest.raises(Denied) as refused:
        roving.stop_workflow(wid, in_group(user(org, "bob"), group), later(1))
    assert refused.value.decision.outcome is Outcome.FORBIDDEN
    assert roving.repository.get(wid).status != "CANCELED"


def test_someone_of_another_organization_is_told_the_workflow_is_not_there():
    roving, _, _, wid = submitted_by_a_group_member()
    with pytest.raises(Denied) as refused:
        roving.stop_workflow(wid, user(uuid4(), "mallory"), later(1))
    assert refused.value.decision.outcome is Outcome.NOT_VISIBLE


def test_the_group_owner_stops_a_members_work():
    roving, org, group, wid = submitted_by_a_group_member()
    roving.stop_workflow(wid, in_group(user(org, "carol"), group, owns=True), later(1))
    assert roving.repository.get(wid).status == "CANCELED"


def test_reading_the_central_configuration_needs_a_cluster_admin():
    roving = app()
    with pytest.raises(Denied) as refused:
        roving.config(user())
    assert refused.value.decision.outcome is Outcome.FORBIDDEN
    answer = roving.config(ADMIN)
    assert (answer["revision"], answer["settings"]) == (0, {})


def test_a_row_of_work_is_visible_to_its_owner_and_not_to_another_user_of_the_organization():
    org = uuid4()
    alice = user(org, "alice")
    owner = {"organization_id": str(org), "group_id": "", "user_id": str(alice.user_id)}
    assert access.visible(alice, access.work(owner))
    assert not access.visible(user(org, "bob"), access.work(owner))
    assert access.visible(ADMIN, access.work(owner))


def test_an_organization_is_visible_to_its_members_and_cluster_admins_only():
    org = uuid4()
    assert access.visible(user(org), access.Resource.organization(org))
    assert not access.visible(user(uuid4()), access.Resource.organization(org))
    assert access.visible(ADMIN, access.Resource.organization(org))


def test_a_row_whose_owner_is_unknown_is_visible_to_cluster_admins_only():
    assert access.visible(ADMIN, None)
    assert not access.visible(user(), None)


def test_every_name_the_facade_answers_is_one_handlers_method():
    roving = app()
    answered = {name: value.__doc__ for name, value in vars(Roving).items()
                if callable(value) and (value.__doc__ or "").startswith("`")}
    assert len(answered) > 40
    for name, doc in answered.items():
        family, method = doc.strip("`").split(".")
        assert method == name and callable(getattr(type(getattr(roving, family)), name)), doc


def test_without_read_models_the_application_knows_no_nodes_priorities_or_owners_allocations():
    for nothing in (NoReadModels(), ReadModelFunctions()):
        assert list(nothing.node_definitions()) == []
        assert nothing.owner_priorities({"user_id": str(uuid4())}) is None
        assert list(nothing.live_allocations_of("user", uuid4())) == []
