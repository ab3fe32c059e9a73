"""The secret store as people use it: who may create, list and delete what, and that a value never comes back."""

from __future__ import annotations

import pytest

from domain.app.errors import Conflict, Forbidden, Invalid, NotFound
from domain.tenancy import Source
from tests.unit.secrets.world import T0, VALUE, World


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path)


def test_a_user_lists_their_secret_by_name_and_scope_without_its_value(world):
    created = world.create("hf")
    rows = world.secrets.list_secrets(world.who("alice"))
    assert [(r["id"], r["name"], r["scope"], r["reference"]) for r in rows] == [(created, "hf", "user", "secret://user/hf")]
    assert VALUE not in repr(rows)


def test_the_value_is_not_in_any_stored_event(world):
    world.create("hf")
    world.create("team-token", "group", by="bob", group="ml")
    stored = world.stored_bytes()
    assert VALUE.encode() not in stored
    assert b"hf" in stored and b"team-token" in stored  # names are there: the events are what we think they are


def test_tenants_never_see_each_others_secrets(world):
    world.create("hf")
    world.create("org-wide", "organization", by="olivia")
    assert world.secrets.list_secrets(world.who("mallory")) == []


def test_groupmates_see_a_group_secret_and_only_its_owners_delete_it(world):
    created = world.create("team-token", "group", by="bob", group="ml")
    assert [r["reference"] for r in world.secrets.list_secrets(world.who("alice"))] == ["secret://group/ml/team-token"]
    with pytest.raises(Forbidden):
        world.secrets.delete_secret(created, world.who("alice"), T0)
    world.secrets.delete_secret(created, world.who("bob"), T0)
    assert world.secrets.list_secrets(world.who("alice")) == []


def test_a_member_may_not_create_a_group_secret(world):
    with pytest.raises(Forbidden, match="group's owners"):
        world.create("team-token", "group", by="alice", group="ml")


def test_only_organization_owners_create_organization_secrets(world):
    with pytest.raises(Forbidden, match="organization's owners"):
        world.create("org-wide", "organization", by="alice")
    world.create("org-wide", "organization", by="olivia")
    assert [r["name"] for r in world.secrets.list_secrets(world.who("alice"))] == ["org-wide"]


def test_cluster_secrets_are_cluster_admins_alone(world):
    with pytest.raises(Forbidden, match="cluster admins"):
        world.create("registry", "cluster", by="olivia")
    world.create("registry", "cluster", by="admin")
    assert [r["scope"] for r in world.secrets.list_secrets(world.who("admin"))] == ["cluster"]
    assert world.secrets.list_secrets(world.who("olivia")) == []


def test_another_tenants_secret_cannot_be_deleted_and_is_not_found(world):
    created = world.create("hf")
    with pytest.raises(NotFound):
        world.secrets.delete_secret(created, world.who("mallory"), T0)


def test_a_component_token_never_writes_secrets(world):
    with pytest.raises(Forbidden, match="person's token"):
        world.secrets.create_secret("hf", VALUE, "user", world.who("alice", Source.AGENT), T0)


def test_a_second_secret_of_the_same_name_is_a_conflict(world):
    world.create("hf")
    with pytest.raises(Conflict, match="name"):
        world.create("hf")


@pytest.mark.parametrize(("name", "value", "scope", "field"), [
    ("bad/name", VALUE, "user", "name"),
    ("", VALUE, "user", "name"),
    ("hf", "", "user", "value"),
    ("hf", "x" * (64 * 1024 + 1), "user", "value"),
    ("hf", VALUE, "world", "scope"),
])
def test_bad_input_names_the_field_and_never_the_value(world, name, value, scope, field):
    with pytest.raises(Invalid) as refused:
        world.secrets.create_secret(name, value, scope, world.who("alice"), T0)
    assert [p.path for p in refused.value.problems] == [field]
    assert VALUE not in str(refused.value)


def test_a_group_secret_needs_a_group_of_your_organization(world):
    with pytest.raises(NotFound, match="group"):
        world.create("t", "group", by="mallory", group=str(world.ml))
    with pytest.raises(NotFound, match="group"):
        world.create("t", "group", by="mallory", group="ml")


def test_a_group_owner_of_several_groups_names_one(world):
    with pytest.raises(Invalid) as refused:
        world.create("t", "group", by="olivia")
    assert refused.value.problems[0].path == "group"


def test_rotating_the_key_reseals_every_secret_and_they_still_resolve(world):
    world.create("hf")
    world.create("team", "group", by="bob", group="ml", value="group-value")
    before = world.stored_bytes()
    answer = world.secrets.rotate_key(world.who("admin"), T0)
    assert answer["resealed"] == 2
    assert answer["key_id"].encode() in world.stored_bytes() and answer["key_id"].encode() not in before
    assert world.secrets.resolve_env({"T": "secret://user/hf"}, world.owner("alice")) == {"T": VALUE}
    assert world.secrets.rotate_key(world.who("admin"), T0)["resealed"] == 2  # again: all sealed by the old key


def test_only_a_cluster_admin_rotates_the_key(world):
    with pytest.raises(Forbidden, match="cluster admin"):
        world.secrets.rotate_key(world.who("olivia"), T0)
