"""scrypt password hashes: verify the right password only, salted, versioned, and strict about the format."""

import pytest

from adapters.auth.password_hash import MalformedHash, Params, hash_password, needs_rehash, parse, verify_password

FAST = Params(n=2**10, r=8, p=1)
PASSWORD = "Blue-Kettle-42-Moon"


def test_the_right_password_verifies_and_a_wrong_one_does_not():
    stored = hash_password(PASSWORD, FAST)
    assert verify_password(PASSWORD, stored)
    assert not verify_password("blue-kettle-42-moon", stored)


def test_the_default_parameters_are_written_into_the_hash():
    stored = hash_password(PASSWORD)
    assert stored.startswith("scrypt$131072$8$1$")
    assert verify_password(PASSWORD, stored)


def test_the_same_password_hashes_differently_each_time_and_never_appears_in_clear():
    first, second = hash_password(PASSWORD, FAST), hash_password(PASSWORD, FAST)
    assert first != second
    assert PASSWORD not in first
    assert parse(first)[1] != parse(second)[1]


def test_a_hash_has_six_dollar_separated_fields():
    scheme, n, r, p, salt, digest = hash_password(PASSWORD, FAST).split("$")
    assert (scheme, n, r, p) == ("scrypt", "1024", "8", "1")
    assert len(parse("$".join([scheme, n, r, p, salt, digest]))[2]) == 32


@pytest.mark.parametrize("stored", [
    "bcrypt$1024$8$1$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA",
    "scrypt$1024$8$1$c2FsdA",
    "scrypt$1000$8$1$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA",
    "scrypt$2147483648$8$1$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA",
    "scrypt$x$8$1$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA",
])
def test_a_malformed_or_dangerous_hash_is_refused_rather_than_guessed_at(stored):
    with pytest.raises(MalformedHash):
        verify_password(PASSWORD, stored)


def test_a_hash_made_with_weaker_parameters_asks_to_be_rehashed():
    assert needs_rehash(hash_password(PASSWORD, FAST))
    assert not needs_rehash(hash_password(PASSWORD, FAST), FAST)
