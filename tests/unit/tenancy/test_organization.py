"""The Organization aggregate: creation, cluster-admin-only priority, owners."""

import pytest

from domain.tenancy import NotPermitted, Organization, Role, TenancyError

from .builders import ACME, ALICE, BOB, T0, at, organization


def test_a_new_organization_starts_at_priority_zero_with_its_owners():
    acme = organization(owners=(ALICE, BOB, ALICE))
    assert (acme.name, acme.priority, acme.owners) == ("Acme", 0, [ALICE, BOB])


def test_an_organization_without_owners_is_refused_naming_the_field():
    with pytest.raises(TenancyError, match="owners: an organization needs at least one owner"):
        Organization.create(ACME, "Acme", [], by="root", at=T0)


def test_a_blank_name_is_refused():
    with pytest.raises(TenancyError, match="name: must not be empty"):
        Organization.create(ACME, "  ", [ALICE], by="root", at=T0)


def test_a_cluster_admin_sets_the_priority_and_the_event_says_what_changed():
    acme = organization()
    acme.set_priority(5, by="root", by_role=Role.CLUSTER_ADMIN, at=at(1))
    acme.set_priority(10, by="root", by_role=Role.CLUSTER_ADMIN, at=at(2))
    last = acme.collect_events()[-1]
    assert acme.priority == 10
    assert last.message == "Priority updated: organization 5 -> 10 (by root)"
    assert last.timestamp == at(2)


@pytest.mark.parametrize("role", [Role.ORG_OWNER, Role.GROUP_OWNER, Role.MEMBER, Role.USER])
def test_nobody_but_a_cluster_admin_may_set_an_organization_priority(role):
    acme = organization()
    with pytest.raises(NotPermitted, match="only cluster_admin may set an organization's priority"):
        acme.set_priority(10, by="alice", by_role=role, at=at(1))
    assert acme.priority == 0


def test_setting_the_same_priority_again_records_nothing():
    acme = organization()
    acme.set_priority(3, by="root", by_role=Role.CLUSTER_ADMIN, at=at(1))
    assert acme.set_priority(3, by="root", by_role=Role.CLUSTER_ADMIN, at=at(2)) is False
    assert len(acme.collect_events()) == 2


def test_a_priority_must_be_an_integer():
    with pytest.raises(TenancyError, match="priority: must be an integer, got '10'"):
        organization().set_priority("10", by="root", by_role=Role.CLUSTER_ADMIN, at=at(1))


def test_the_last_owner_cannot_be_removed():
    acme = organization()
    acme.add_owner(BOB, by="alice", at=at(1))
    acme.remove_owner(ALICE, by="bob", at=at(2))
    with pytest.raises(TenancyError, match="cannot remove the last owner of organization Acme"):
        acme.remove_owner(BOB, by="bob", at=at(3))
    assert acme.owners == [BOB]


def test_commands_refuse_a_time_without_a_timezone():
    with pytest.raises(TenancyError, match="at: must be timezone-aware"):
        organization().rename("Acme Corp", by="alice", at=T0.replace(tzinfo=None))
