"""The User aggregate: registration rules, lockout after five failures, disabling, roles and priority."""

import pytest

from domain.tenancy import NotPermitted, Role, TenancyError, User

from .builders import ACME, BOB, HASH, T0, at, user


def fail(account: User, times: int, minute: float = 0) -> list:
    return [account.login(False, at(minute + i / 60)) for i in range(times)]


def test_registration_stores_the_hash_and_starts_unlocked():
    bob = user()
    assert (bob.username, bob.email, bob.password_hash, bob.role) == ("bob", "bob@acme.example", HASH, Role.USER)
    assert (bob.failed_logins, bob.locked_until, bob.disabled) == (0, None, False)


def test_a_clear_password_is_refused_where_a_hash_belongs():
    with pytest.raises(TenancyError, match="password_hash: must be a hash"):
        User.register(BOB, ACME, "bob", "bob@acme.example", "Blue-Kettle-42", by="root", at=T0)


@pytest.mark.parametrize("username", ["B", "Bob", "9bob", "bob smith", "b" * 33])
def test_usernames_must_be_short_lowercase_words(username):
    with pytest.raises(TenancyError, match="username: must be 2-32 characters"):
        User.register(BOB, ACME, username, "bob@acme.example", HASH, by="root", at=T0)


def test_an_email_must_have_a_domain():
    with pytest.raises(TenancyError, match="email: must look like"):
        User.register(BOB, ACME, "bob", "bob@localhost", HASH, by="root", at=T0)


def test_only_a_cluster_admin_may_be_without_an_organization():
    with pytest.raises(TenancyError, match="organization_id: a user belongs to an organization"):
        User.register(BOB, None, "bob", "bob@acme.example", HASH, by="root", at=T0)
    assert User.register(BOB, None, "root", "root@acme.example", HASH, Role.CLUSTER_ADMIN, by="root", at=T0)


def test_four_failures_do_not_lock_but_the_fifth_locks_for_fifteen_minutes():
    bob = user()
    outcomes = fail(bob, 5)
    assert [o.reason for o in outcomes[:4]] == ["wrong username or password"] * 4
    assert outcomes[4].locked_until == at(4 / 60 + 15)
    assert outcomes[4].reason == f"locked until {at(4 / 60 + 15).isoformat()}"


def test_a_locked_user_with_the_right_password_is_refused_until_the_lock_ends():
    bob = user()
    fail(bob, 5)
    until = bob.locked_until
    refused = bob.login(True, at(10))
    assert not refused.accepted and refused.reason == "locked until 2025-03-01T09:15:04+00:00"
    assert bob.login(True, until).accepted


def test_a_success_resets_the_failure_count():
    bob = user()
    fail(bob, 4)
    assert bob.login(True, at(1)).accepted
    fail(bob, 4, minute=2)
    assert bob.failed_logins == 4 and not bob.is_locked(at(3))


def test_after_a_lock_ends_the_count_starts_again():
    bob = user()
    fail(bob, 5)
    outcome = bob.login(False, at(20))
    assert (outcome.reason, bob.failed_logins, bob.is_locked(at(20))) == ("wrong username or password", 1, False)


def test_attempts_while_locked_record_nothing():
    bob = user()
    fail(bob, 5)
    before = len(bob.pending_events)
    bob.login(False, at(5))
    assert len(bob.pending_events) == before


def test_an_admin_can_unlock_early():
    bob = user()
    fail(bob, 5)
    bob.unlock(by="root", at=at(1))
    assert bob.login(True, at(2)).accepted


def test_a_disabled_account_refuses_the_right_password_until_enabled():
    bob = user()
    bob.disable("left the company", by="alice", at=at(1))
    assert bob.login(True, at(2)).reason == "account disabled"
    bob.enable(by="alice", at=at(3))
    assert bob.login(True, at(4)).accepted


def test_disabling_needs_a_reason():
    with pytest.raises(TenancyError, match="reason: say why"):
        user().disable(" ", by="alice", at=at(1))


def test_an_org_owner_may_make_an_org_owner_but_not_a_cluster_admin():
    bob = user()
    bob.set_role(Role.ORG_OWNER, by="alice", by_role=Role.ORG_OWNER, at=at(1))
    assert bob.role is Role.ORG_OWNER
    with pytest.raises(NotPermitted, match="only cluster_admin may change this account's role"):
        bob.set_role(Role.CLUSTER_ADMIN, by="alice", by_role=Role.ORG_OWNER, at=at(2))


def test_an_org_owner_cannot_demote_a_cluster_admin():
    root = user("root", Role.CLUSTER_ADMIN)
    with pytest.raises(NotPermitted):
        root.set_role(Role.USER, by="alice", by_role=Role.ORG_OWNER, at=at(1))
    assert root.role is Role.CLUSTER_ADMIN


def test_user_priority_is_set_by_an_org_owner_and_described():
    bob = user()
    bob.set_priority(7, by="alice", by_role=Role.ORG_OWNER, at=at(1))
    assert bob.collect_events()[-1].message == "Priority updated: user 0 -> 7 (by alice)"
    with pytest.raises(NotPermitted, match="set a user's priority"):
        bob.set_priority(9, by="bob", by_role=Role.USER, at=at(2))
