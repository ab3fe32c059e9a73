"""The Group aggregate: priority and preempt list by org owners or admins, members, explain grants."""

import pytest

from domain.tenancy import Group, NotPermitted, Role, TenancyError

from .builders import ACME, ALICE, BOB, CAROL, INFERENCE, T0, TRAINING, at, group


def test_the_first_owners_of_a_group_are_its_first_members():
    training = group()
    assert training.members == {ALICE: Role.GROUP_OWNER}
    assert training.owners == [ALICE]
    assert (training.organization_id, training.priority, training.preempt) == (ACME, 0, [])


def test_an_org_owner_sets_a_group_priority_and_the_event_says_what_changed():
    training = group()
    training.set_priority(-5, by="alice", by_role=Role.ORG_OWNER, at=at(1))
    assert training.priority == -5
    assert training.collect_events()[-1].message == "Priority updated: group 0 -> -5 (by alice)"


@pytest.mark.parametrize("role", [Role.GROUP_OWNER, Role.MEMBER, Role.USER])
def test_a_group_owner_or_member_cannot_set_the_group_priority(role):
    with pytest.raises(NotPermitted, match="only cluster_admin or org_owner may set a group's priority"):
        group().set_priority(5, by="bob", by_role=role, at=at(1))


def test_the_preempt_list_keeps_each_group_once_in_the_order_given():
    training = group()
    training.set_preempt_list([INFERENCE, INFERENCE], by="root", by_role=Role.CLUSTER_ADMIN, at=at(1))
    assert training.preempt == [INFERENCE]
    assert training.may_preempt(INFERENCE) and not training.may_preempt(TRAINING)


def test_a_group_cannot_list_itself_as_preemptible():
    with pytest.raises(TenancyError, match="preempt: group training cannot list itself"):
        group().set_preempt_list([TRAINING], by="alice", by_role=Role.ORG_OWNER, at=at(1))


def test_a_plain_user_cannot_set_the_preempt_list():
    training = group()
    with pytest.raises(NotPermitted):
        training.set_preempt_list([INFERENCE], by="bob", by_role=Role.USER, at=at(1))
    assert training.preempt == []


def test_a_member_can_be_promoted_to_group_owner():
    training = group({BOB: Role.MEMBER})
    training.add_member(BOB, Role.GROUP_OWNER, by="alice", at=at(1))
    assert training.owners == [ALICE, BOB]


def test_an_account_role_is_not_a_group_role():
    with pytest.raises(TenancyError, match="role: a group role is member or group_owner, got cluster_admin"):
        group().add_member(BOB, Role.CLUSTER_ADMIN, by="alice", at=at(1))


def test_removing_someone_who_is_not_a_member_names_them():
    with pytest.raises(TenancyError, match=f"members: user {CAROL} is not a member of group training"):
        group().remove_member(CAROL, by="alice", at=at(1))


def test_explain_allocation_can_be_granted_to_a_non_member_and_revoked():
    training = group()
    training.grant_explain_allocation(CAROL, by="alice", at=at(1))
    assert training.explainers == [CAROL]
    training.revoke_explain_allocation(CAROL, by="alice", at=at(2))
    assert training.explainers == []


def test_a_member_who_leaves_loses_explain_allocation_on_the_group():
    training = group({BOB: Role.MEMBER})
    training.grant_explain_allocation(BOB, by="alice", at=at(1))
    training.remove_member(BOB, by="alice", at=at(2))
    assert BOB not in training.members and training.explainers == []


def test_group_events_carry_who_acted_and_their_role():
    training = Group.create(TRAINING, ACME, "training", by="alice", at=T0)
    training.set_preempt_list([INFERENCE], by="root", by_role=Role.CLUSTER_ADMIN, at=at(3))
    last = training.collect_events()[-1]
    assert (last.by, last.by_role, last.timestamp) == ("root", Role.CLUSTER_ADMIN, at(3))
