"""Given an endpoint's name, owner and scope, creation checks them and only the right callers see it."""

import pytest

from domain.endpoint import OwnerKind, Scope
from domain.endpoint_values import EndpointError
from tests.unit.endpoints.builders import T0, endpoint


@pytest.mark.parametrize("name", ["llm-chat", "a", "svc_2", "0-9"])
def test_names_of_lowercase_letters_digits_dashes_and_underscores_are_accepted(name):
    ep = endpoint(name)
    assert (ep.name, ep.created_on) == (name, T0)


@pytest.mark.parametrize(("name", "message"), [
    ("LLM.chat", r"may use only lowercase letters, digits, '-' and '_' \(found 'L', 'M', '\.'\)"),
    ("", "must be 1 to 63 characters"),
    ("x" * 64, "must be 1 to 63 characters"),
])
def test_other_names_are_refused_with_what_is_wrong(name, message):
    with pytest.raises(EndpointError, match=message):
        endpoint(name)


@pytest.mark.parametrize(("owner_kind", "scope", "message"), [
    ("team", "user", r"owner kind must be user \| group \| organization"),
    ("user", "world", r"scope must be user \| group \| organization \| public"),
    ("group", "user", "scope user needs a user owner, not a group"),
    ("organization", "group", "scope group needs a user or group owner"),
    ("user", "group", "scope group needs the group"),
    ("user", "organization", "scope organization needs the organization"),
])
def test_an_owner_and_scope_that_do_not_fit_are_refused(owner_kind, scope, message):
    with pytest.raises(EndpointError, match=message):
        endpoint(owner_kind=owner_kind, scope=scope)


def test_a_user_scoped_endpoint_is_visible_only_to_its_owner():
    ep = endpoint(scope="user", group_id="g1", organization_id="o1")
    assert ep.visible_to("alice")
    assert not ep.visible_to("bob", group_ids=["g1"], organization_ids=["o1"])
    assert not ep.visible_to(None)


def test_a_group_scoped_endpoint_is_visible_to_the_groups_members():
    ep = endpoint(owner_kind="group", owner_id="g1", scope="group")
    assert (ep.owner_kind, ep.scope, ep.group_id) == (OwnerKind.GROUP, Scope.GROUP, "g1")
    assert ep.visible_to("bob", group_ids=["g2", "g1"])
    assert not ep.visible_to("carol", group_ids=["g2"], organization_ids=["o1"])


def test_an_organization_scoped_endpoint_is_visible_to_the_organizations_members():
    ep = endpoint(scope="organization", organization_id="o1")
    assert ep.visible_to("bob", organization_ids=["o1"])
    assert not ep.visible_to("carol", organization_ids=["o2"])
    assert not ep.visible_to(None, organization_ids=["o1"])


def test_a_public_endpoint_is_visible_to_anyone_even_anonymous_callers():
    ep = endpoint(owner_kind="organization", owner_id="o1", scope="public")
    assert ep.visible_to(None) and ep.visible_to("mallory")


@pytest.mark.parametrize("scope", ["user", "public"])
def test_a_deleted_endpoint_is_visible_to_no_one(scope):
    ep = endpoint(scope=scope)
    ep.delete(by="alice", at=T0)
    assert not ep.visible_to("alice") and not ep.visible_to(None)
