"""Who reaches which objects, and what a put does over what is there."""

from uuid import uuid4

import pytest

from domain.app.errors import Conflict, Forbidden, NotFound
from domain.ids import group_id
from domain.objects.access import Holder, Verdict, decide_put, holder_of, may_replace
from domain.objects.names import Location, Scope
from domain.tenancy import Role, Source
from domain.tenancy.permissions import Principal

ORG = uuid4()
LAB = group_id(ORG, "lab")


def person(name="alice", role=Role.USER, groups=(LAB,), owned=(), source=Source.ADMIN, org=ORG):
    return Principal(user_id=uuid4(), username=name, role=role, organization_id=org, group_ids=frozenset(groups),
                     owned_group_ids=frozenset(owned), is_cluster_admin=role is Role.CLUSTER_ADMIN, source=source)


def exists(group):
    return group == LAB


def test_a_user_location_is_the_callers_own_bucket():
    alice = person()
    assert holder_of(Location(Scope.USER, "x"), alice, exists) == Holder(Scope.USER, alice.user_id, "alice")


def test_a_workflows_token_reaches_its_owners_objects():
    owner = person(source=Source.WORKFLOW)
    assert holder_of(Location(Scope.USER, "x"), owner, exists).owner_id == owner.user_id


@pytest.mark.parametrize("source", [Source.AGENT, Source.MONITORING])
def test_the_clusters_components_keep_no_objects(source):
    with pytest.raises(Forbidden, match=source.value):
        holder_of(Location(Scope.USER, "x"), person(source=source), exists)


def test_a_group_is_its_members_and_its_organization_owners():
    location = Location(Scope.GROUP, "x", "lab")
    assert holder_of(location, person(), exists).owner_id == LAB
    assert holder_of(location, person("olga", Role.ORG_OWNER, groups=()), exists).owner_id == LAB
    with pytest.raises(NotFound):
        holder_of(location, person("erin", groups=()), exists)


def test_a_group_that_does_not_exist_is_not_found_even_for_the_organization_owner():
    with pytest.raises(NotFound):
        holder_of(Location(Scope.GROUP, "x", "ops"), person("olga", Role.ORG_OWNER, groups=()), exists)


def test_a_cluster_admin_reaches_a_group_only_as_a_member():
    admin = person("root", Role.CLUSTER_ADMIN, groups=(), org=None)
    with pytest.raises(NotFound):
        holder_of(Location(Scope.GROUP, "x", "lab"), admin, exists)


def test_replacing_a_group_object_is_for_its_uploader_and_the_owners():
    lab = Holder(Scope.GROUP, LAB, "lab")
    alice, carol = person(), person("carol")
    may_replace(alice, lab, str(alice.user_id), "replacing")
    may_replace(person("gina", owned=(LAB,)), lab, str(alice.user_id), "replacing")
    may_replace(person("olga", Role.ORG_OWNER, groups=()), lab, str(alice.user_id), "replacing")
    with pytest.raises(Forbidden, match="deleting an object of group lab"):
        may_replace(carol, lab, str(alice.user_id), "deleting")


def test_a_put_creates_leaves_the_same_content_and_refuses_other_content_unless_forced():
    here = Location(Scope.USER, "x")
    assert decide_put(here, None, "SHA-256=a", force=False) is Verdict.CREATED
    assert decide_put(here, "SHA-256=a", "SHA-256=a", force=False) is Verdict.UNCHANGED
    assert decide_put(here, "SHA-256=a", "SHA-256=a", force=True) is Verdict.UNCHANGED
    with pytest.raises(Conflict, match="object://user/x already exists with different content; put it with --force"):
        decide_put(here, "SHA-256=a", "SHA-256=b", force=False)
    assert decide_put(here, "SHA-256=a", "SHA-256=b", force=True) is Verdict.REPLACED
