"""Logins that give nothing away: one answer and one cost for unknown names, lockout for any name, rehash on login."""

from datetime import UTC, datetime, timedelta

import pytest

from adapters.auth.password_hash import Params, ScryptPasswords, hash_password
from domain.app import Roving
from domain.app.errors import Forbidden, Invalid, LoginRefused
from domain.app.ids import user_id as _uid
from domain.tenancy import Role, password_problems
from domain.tenancy.permissions import Principal

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OLD, NOW = Params(n=2**10), Params(n=2**11)  # small, so the tests stay quick; the rule is the same at 2^17
PASSWORD = "Blue-Kettle-42-Moon"
ROOT = Principal(user_id=None, username="root", role=Role.CLUSTER_ADMIN, organization_id=None, is_cluster_admin=True)


class CountingHasher(ScryptPasswords):
    """Real scrypt, and a note of every hash-sized piece of work a login does."""

    def __init__(self) -> None:
        super().__init__(NOW)
        self.work: list[str] = []

    def hash(self, password: str) -> str:
        self.work.append("hash")
        return super().hash(password)

    def verify(self, password: str, stored: str) -> bool:
        self.work.append("verify")
        return super().verify(password, stored)


@pytest.fixture
def app():
    env = {"PERSISTENCE_MODULE": "eventsourcing.popo", "ROVING_CLUSTER": "test"}
    roving = Roving(env=env, passwords=CountingHasher())
    org = roving.create_organization("acme", ROOT, T0)
    roving.create_user(org, "bob", "bob@acme.example", PASSWORD, "user", ROOT, T0)
    roving.create_user(org, "olga", "olga@acme.example", PASSWORD, "org_owner", ROOT, T0)
    return roving


def refusal(app, username: str, password: str, minute: float = 0) -> str:
    with pytest.raises(LoginRefused) as refused:
        app.login(username, password, T0 + timedelta(minutes=minute))
    return str(refused.value)


def test_an_unknown_user_and_a_wrong_password_get_the_same_answer_for_the_same_work(app):
    app.tenancy.passwords.work.clear()
    known = refusal(app, "bob", "Wrong-Kettle-42-Moon")
    known_work = list(app.tenancy.passwords.work)
    app.tenancy.passwords.work.clear()
    unknown = refusal(app, "mallory", "Wrong-Kettle-42-Moon")
    assert known == unknown == "wrong username or password"
    assert len(known_work) == len(app.tenancy.passwords.work) == 1


def test_an_unknown_username_locks_after_the_same_failures_with_the_same_answer_as_an_account(app):
    known = [refusal(app, "bob", "Wrong-Kettle-42-Moon", minute=i / 60) for i in range(6)]
    unknown = [refusal(app, "mallory", "Wrong-Kettle-42-Moon", minute=i / 60) for i in range(6)]
    assert known == unknown
    assert known[4].startswith("locked until")


def test_a_locked_account_refuses_the_right_password_until_an_admin_unlocks_it(app):
    for i in range(5):
        refusal(app, "bob", "Wrong-Kettle-42-Moon", minute=i / 60)
    assert refusal(app, "bob", PASSWORD, minute=1).startswith("locked until")
    app.tenancy.unlock_user(_uid("bob"), ROOT, T0 + timedelta(minutes=1))
    assert app.login("bob", PASSWORD, T0 + timedelta(minutes=2)).username == "bob"


def test_a_plain_user_may_not_unlock_anyone(app):
    bob = app.login("bob", PASSWORD, T0)
    as_bob = Principal(user_id=bob.id, username="bob", role=Role.USER, organization_id=bob.organization_id)
    with pytest.raises(Forbidden):
        app.tenancy.unlock_user(_uid("olga"), as_bob, T0)


@pytest.mark.parametrize("password", ["Roving12345!Abx", "Fuzzball12345!Ab", "my-rOvInG-Pass-9"])
def test_the_product_names_are_refused_in_passwords_whatever_their_case(password):
    assert any("product name" in p for p in password_problems(password, "bob", "bob@acme.example"))


def test_a_password_change_needs_the_current_password_and_the_old_one_stops_working(app):
    bob = app.login("bob", PASSWORD, T0)
    as_bob = Principal(user_id=bob.id, username="bob", role=Role.USER, organization_id=bob.organization_id)
    with pytest.raises(Invalid, match="current_password"):
        app.tenancy.change_password(as_bob, "Wrong-Kettle-42-Moon", "Green-Teapot-77-Sun", T0)
    with pytest.raises(Invalid, match="product name"):
        app.tenancy.change_password(as_bob, PASSWORD, "Roving-Teapot-77-Sun", T0)
    app.tenancy.change_password(as_bob, PASSWORD, "Green-Teapot-77-Sun", T0)
    assert refusal(app, "bob", PASSWORD, minute=1) == "wrong username or password"
    assert app.login("bob", "Green-Teapot-77-Sun", T0 + timedelta(minutes=2)).username == "bob"


def test_a_hash_under_old_parameters_is_stored_again_at_todays_on_a_successful_login(app):
    bob = app.repository.get(_uid("bob"))
    bob.change_password(hash_password(PASSWORD, OLD), by="root", at=T0)
    app.save(bob)
    assert refusal(app, "bob", "Wrong-Kettle-42-Moon").startswith("wrong")
    assert app.repository.get(_uid("bob")).password_hash.startswith("scrypt$1024$")  # a wrong password changes nothing
    app.login("bob", PASSWORD, T0 + timedelta(minutes=1))
    assert app.repository.get(_uid("bob")).password_hash.startswith("scrypt$2048$8$1$")
    assert app.login("bob", PASSWORD, T0 + timedelta(minutes=2)).username == "bob"


def test_a_disabled_account_says_so_only_to_someone_who_knows_its_password(app):
    bob = app.repository.get(_uid("bob"))
    bob.disable("left the company", by="root", at=T0)
    app.save(bob)
    assert refusal(app, "bob", "Wrong-Kettle-42-Moon") == "wrong username or password"
    assert refusal(app, "bob", PASSWORD) == "account disabled"
