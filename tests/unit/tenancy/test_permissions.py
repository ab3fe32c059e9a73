"""Who may do what: tenancy isolation (not visible), role checks (forbidden) and the reasons given."""

import pytest

from domain.tenancy import Action, Denied, Outcome, Principal, Resource, Role, Source, authorize, can, principal_for

from .builders import ACME, ALICE, BOB, CAROL, DAVE, GLOBEX, INFERENCE, TRAINING, at, group, user

ROOT = Principal(None, "root", Role.CLUSTER_ADMIN, None, is_cluster_admin=True)
ALICE_OWNER = Principal(ALICE, "alice", Role.ORG_OWNER, ACME, frozenset({TRAINING}), frozenset({TRAINING}))
BOB_MEMBER = Principal(BOB, "bob", Role.USER, ACME, frozenset({TRAINING}))
CAROL_EXPLAINER = Principal(CAROL, "carol", Role.USER, ACME, explain_group_ids=frozenset({TRAINING}))
DAVE_ELSEWHERE = Principal(DAVE, "dave", Role.ORG_OWNER, GLOBEX)
ALERTS = Principal(None, "alertmanager", Role.USER, None, source=Source.MONITORING)

BOBS_WORK = Resource.workflow(ACME, TRAINING, BOB)
ALICES_PRIVATE_WORK = Resource.workflow(ACME, None, ALICE)
BOBS_ALLOCATION = Resource.allocation(ACME, TRAINING, BOB)


def outcome(principal, action, resource):
    return can(principal, action, resource).outcome


def test_another_organizations_workflow_is_not_visible_even_to_its_org_owner():
    decision = can(DAVE_ELSEWHERE, Action.VIEW_WORKFLOW, BOBS_WORK)
    assert decision.outcome is Outcome.NOT_VISIBLE and not decision.visible
    assert decision.reason == "workflow belongs to another organization"


def test_another_organizations_group_is_not_visible_for_priority_changes_either():
    assert outcome(DAVE_ELSEWHERE, Action.SET_GROUP_PRIORITY, Resource.group(ACME, TRAINING)) is Outcome.NOT_VISIBLE


def test_a_user_sees_their_own_and_their_groups_workflows():
    assert can(BOB_MEMBER, Action.VIEW_WORKFLOW, BOBS_WORK).reason == "your own workflow"
    teammate = Resource.workflow(ACME, TRAINING, ALICE)
    assert can(BOB_MEMBER, Action.VIEW_WORKFLOW, teammate).reason == "workflow of your group"


def test_a_colleague_outside_the_group_does_not_see_the_workflow():
    assert outcome(BOB_MEMBER, Action.VIEW_WORKFLOW, ALICES_PRIVATE_WORK) is Outcome.NOT_VISIBLE


def test_an_org_owner_sees_every_workflow_of_the_organization():
    other_group = Resource.workflow(ACME, INFERENCE, CAROL)
    assert can(ALICE_OWNER, Action.VIEW_WORKFLOW, other_group).reason == "owner of the organization"


def test_a_cluster_admin_sees_every_tenants_workflows():
    assert can(ROOT, Action.VIEW_WORKFLOW, Resource.workflow(GLOBEX, None, DAVE)).allowed


def test_only_a_cluster_admin_sets_an_organization_priority():
    acme = Resource.organization(ACME)
    assert can(ROOT, Action.SET_ORG_PRIORITY, acme).allowed
    decision = can(ALICE_OWNER, Action.SET_ORG_PRIORITY, acme)
    assert (decision.outcome, decision.reason) == (Outcome.FORBIDDEN, "only a cluster admin may set_org_priority")


@pytest.mark.parametrize("action", [Action.SET_GROUP_PRIORITY, Action.SET_USER_PRIORITY, Action.SET_PREEMPT_LIST])
def test_group_and_user_policy_is_for_the_org_owner_or_a_cluster_admin(action):
    training = Resource.group(ACME, TRAINING)
    assert can(ALICE_OWNER, action, training).allowed
    assert can(ROOT, action, training).allowed
    assert outcome(BOB_MEMBER, action, training) is Outcome.FORBIDDEN


def test_an_org_owner_of_another_organization_cannot_set_a_group_priority_here():
    assert not can(DAVE_ELSEWHERE, Action.SET_GROUP_PRIORITY, Resource.group(ACME, TRAINING)).allowed


@pytest.mark.parametrize("action", [Action.VIEW_CLUSTER_QUEUE, Action.MANAGE_NODES, Action.CONFIG, Action.AUDIT_ALL])
def test_cluster_wide_actions_are_visible_but_forbidden_to_everyone_but_admins(action):
    assert can(ROOT, action, Resource.cluster()).allowed
    for principal in (ALICE_OWNER, BOB_MEMBER):
        assert outcome(principal, action, Resource.cluster()) is Outcome.FORBIDDEN


def test_a_groupmate_sees_a_workflow_but_only_its_owner_or_the_owners_above_stop_it():
    alices_group_work = Resource.workflow(ACME, TRAINING, ALICE)
    assert can(BOB_MEMBER, Action.STOP_WORKFLOW, BOBS_WORK).reason == "your own workflow"
    assert outcome(BOB_MEMBER, Action.STOP_WORKFLOW, alices_group_work) is Outcome.FORBIDDEN
    assert can(ALICE_OWNER, Action.STOP_WORKFLOW, BOBS_WORK).allowed
    assert outcome(CAROL_EXPLAINER, Action.STOP_WORKFLOW, BOBS_WORK) is Outcome.FORBIDDEN
    assert outcome(DAVE_ELSEWHERE, Action.STOP_WORKFLOW, BOBS_WORK) is Outcome.NOT_VISIBLE


def test_explain_allocation_is_for_its_owner_an_explain_holder_or_an_admin():
    assert can(BOB_MEMBER, Action.EXPLAIN_ALLOCATION, BOBS_ALLOCATION).reason == "your own allocation"
    assert can(CAROL_EXPLAINER, Action.EXPLAIN_ALLOCATION, BOBS_ALLOCATION).reason == "holds explain_allocation on the group"
    assert can(ROOT, Action.EXPLAIN_ALLOCATION, BOBS_ALLOCATION).allowed


def test_an_org_owner_sees_an_allocation_but_may_not_explain_it_without_the_grant():
    assert outcome(ALICE_OWNER, Action.EXPLAIN_ALLOCATION, BOBS_ALLOCATION) is Outcome.FORBIDDEN


def test_explain_on_one_group_does_not_reach_another_groups_allocations():
    elsewhere = Resource.allocation(ACME, INFERENCE, ALICE)
    assert outcome(CAROL_EXPLAINER, Action.EXPLAIN_ALLOCATION, elsewhere) is Outcome.NOT_VISIBLE


def test_auditing_an_organization_is_for_its_own_owner():
    assert can(ALICE_OWNER, Action.AUDIT_ORG, Resource.organization(ACME)).allowed
    assert outcome(DAVE_ELSEWHERE, Action.AUDIT_ORG, Resource.organization(ACME)) is Outcome.NOT_VISIBLE
    assert outcome(BOB_MEMBER, Action.AUDIT_ORG, Resource.organization(ACME)) is Outcome.FORBIDDEN


def test_the_monitoring_webhook_may_deliver_alerts_and_nothing_else():
    assert can(ALERTS, Action.RECEIVE_ALERTS, Resource.cluster()).allowed
    assert outcome(ALERTS, Action.MANAGE_NODES, Resource.cluster()) is Outcome.FORBIDDEN
    assert outcome(BOB_MEMBER, Action.RECEIVE_ALERTS, Resource.cluster()) is Outcome.FORBIDDEN


def test_a_group_owner_manages_members_of_their_own_group_only():
    bob_owns_training = Principal(BOB, "bob", Role.USER, ACME, frozenset({TRAINING}), frozenset({TRAINING}))
    assert can(bob_owns_training, Action.MANAGE_GROUP_MEMBERS, Resource.group(ACME, TRAINING)).allowed
    assert outcome(bob_owns_training, Action.MANAGE_GROUP_MEMBERS, Resource.group(ACME, INFERENCE)) is Outcome.FORBIDDEN


def test_authorize_raises_with_the_decision_the_api_turns_into_404_or_403():
    with pytest.raises(Denied) as denied:
        authorize(DAVE_ELSEWHERE, Action.VIEW_WORKFLOW, BOBS_WORK)
    assert denied.value.decision.outcome is Outcome.NOT_VISIBLE
    assert authorize(BOB_MEMBER, Action.VIEW_WORKFLOW, BOBS_WORK).allowed


def test_a_principal_claiming_admin_without_the_role_is_refused():
    with pytest.raises(ValueError, match="contradicts role user"):
        Principal(BOB, "bob", Role.USER, ACME, is_cluster_admin=True)


def test_the_principal_of_a_user_reflects_memberships_ownership_and_grants():
    training = group({BOB: Role.MEMBER})
    training.grant_explain_allocation(CAROL, by="alice", at=at(1))
    bob, carol = user(), user("carol", user_id=CAROL)
    assert principal_for(bob, [training]).group_ids == {TRAINING}
    assert principal_for(bob, [training]).owned_group_ids == frozenset()
    assert principal_for(carol, [training]).explain_group_ids == {TRAINING}
    assert can(principal_for(carol, [training]), Action.EXPLAIN_ALLOCATION, BOBS_ALLOCATION).allowed


def test_an_explain_holder_knows_the_groups_workflows_exist_but_may_not_open_them():
    assert outcome(CAROL_EXPLAINER, Action.VIEW_WORKFLOW, BOBS_WORK) is Outcome.FORBIDDEN
