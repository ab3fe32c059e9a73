"""Users and groups get POSIX ids: allocated from the configured range, set by cluster admins, never 0 by default."""

from __future__ import annotations

import threading

import pytest

from domain.app import Forbidden, Invalid, Roving
from domain.app.ids import user_id
from domain.tenancy import Role, User
from domain.tenancy.permissions import Principal
from tests.unit.app.builders import ADMIN, T0, later


class FastHasher:
    """A stored shape the User accepts, without scrypt's cost."""

    def hash(self, password: str) -> str:
        return "test$1$1$" + password.replace(" ", "_")

    def verify(self, password: str, stored: str) -> bool:
        return stored == self.hash(password)


def app() -> Roving:
    return Roving(env={"PERSISTENCE_MODULE": "eventsourcing.popo", "ROVING_CLUSTER": "test",
                       "TRANSCODER_TOPIC": "adapters.transcoder:MsgspecTranscoder"}, passwords=FastHasher())


def org_with_users(roving, *names):
    org = roving.create_organization("acme", ADMIN, T0)
    return org, [roving.create_user(org, n, f"{n}@example.org", "A long passphrase 42!", "user", ADMIN, T0)
                 for n in names]


def test_new_users_take_successive_uids_from_the_default_range():
    roving = app()
    _, (alice, bob) = org_with_users(roving, "alice", "bob")
    assert [roving.repository.get(u).uid for u in (alice, bob)] == [100000, 100001]


def test_new_groups_take_gids_from_the_configured_range():
    roving = app()
    roving.change_config({"posix.gidRange": [5000, 5999]}, ADMIN, T0)
    org, _ = org_with_users(roving)
    group = roving.create_group(org, "physics", ADMIN, T0)
    assert roving.repository.get(group).gid == 5000


def test_an_admin_sets_a_uid_and_the_old_one_is_free_again():
    roving = app()
    org, (alice,) = org_with_users(roving, "alice")
    roving.set_posix_id("user", alice, 4242, ADMIN, later(1))
    assert roving.repository.get(alice).uid == 4242
    bob = roving.create_user(org, "bob", "bob@example.org", "A long passphrase 42!", "user", ADMIN, later(2))
    assert roving.repository.get(bob).uid == 100001  # a freed id is not handed out again before the range wraps
    roving.set_posix_id("user", bob, 100000, ADMIN, later(3))
    assert roving.repository.get(bob).uid == 100000


def test_a_uid_held_by_another_user_is_refused_naming_the_field():
    roving = app()
    _, (alice, bob) = org_with_users(roving, "alice", "bob")
    with pytest.raises(Invalid, match="uid: uid 100000 already belongs to another user"):
        roving.set_posix_id("user", bob, 100000, ADMIN, later(1))
    assert roving.repository.get(bob).uid == 100001


def test_uid_0_is_refused_unless_the_cluster_allows_root_jobs():
    roving = app()
    _, (alice,) = org_with_users(roving, "alice")
    with pytest.raises(Invalid, match="posix.allowRootJobs"):
        roving.set_posix_id("user", alice, 0, ADMIN, later(1))
    roving.change_config({"posix.allowRootJobs": True}, ADMIN, later(2))
    roving.set_posix_id("user", alice, 0, ADMIN, later(3))
    assert roving.repository.get(alice).uid == 0


def test_only_a_cluster_admin_sets_an_id():
    roving = app()
    org, (alice,) = org_with_users(roving, "alice")
    olga = roving.create_user(org, "olga", "olga@example.org", "A long passphrase 42!", "org_owner", ADMIN, T0)
    owner = Principal(user_id=olga, username="olga", role=Role.ORG_OWNER, organization_id=org)
    with pytest.raises(Forbidden, match="cluster admin"):
        roving.set_posix_id("user", alice, 4242, owner, later(1))


def test_a_bad_range_names_the_key():
    roving = app()
    with pytest.raises(Invalid, match=r"posix.uidRange: expected \[first, last\]"):
        roving.change_config({"posix.uidRange": [0, 10]}, ADMIN, T0)


def test_a_full_range_says_how_to_widen_it():
    roving = app()
    roving.change_config({"posix.uidRange": [7000, 7000]}, ADMIN, T0)
    org, _ = org_with_users(roving, "alice")
    with pytest.raises(Invalid, match="widen posix.uidRange"):
        roving.create_user(org, "bob", "bob@example.org", "A long passphrase 42!", "user", ADMIN, later(1))


def test_users_created_at_once_never_share_a_uid():
    roving = app()
    org, _ = org_with_users(roving)
    names = [f"user{i}" for i in range(12)]
    made: list = []
    together = threading.Barrier(len(names))  # all decide from the same version of the id registry

    def create(name: str) -> None:
        together.wait()
        made.append(roving.create_user(org, name, f"{name}@example.org", "A long passphrase 42!", "user", ADMIN, T0))

    threads = [threading.Thread(target=create, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    uids = sorted(roving.repository.get(u).uid for u in made)
    assert uids == list(range(100000, 100012))


def test_an_account_made_before_ids_existed_gets_the_next_free_uid_on_request():
    roving = app()
    org, (alice,) = org_with_users(roving, "alice")
    old = User.register(user_id("olaf"), org, "olaf", "olaf@example.org", "test$1$1$x", by="root", at=T0)
    roving.save(old)  # as an account registered before uids, without one
    assert roving.repository.get(old.id).uid is None
    assert roving.set_posix_id("user", old.id, None, ADMIN, later(1)) == 100001
    assert roving.set_posix_id("user", alice, None, ADMIN, later(2)) == 100000  # one that has a uid keeps it


def test_a_huge_range_costs_nothing_to_search():
    roving = app()
    roving.change_config({"posix.uidRange": [1000, 4_000_000_000]}, ADMIN, T0)
    _, (alice,) = org_with_users(roving, "alice")
    assert roving.repository.get(alice).uid == 1000
