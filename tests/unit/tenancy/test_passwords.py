"""The password policy: every broken rule is named, the password itself never appears."""

import pytest

from domain.tenancy import WeakPassword, password_problems, require_strong

GOOD = "Blue-Kettle-42-Moon"


def test_a_long_mixed_password_with_digit_and_symbol_passes():
    assert password_problems(GOOD, "bob", "bob@acme.example") == []


def test_a_short_lowercase_password_fails_every_rule_at_once():
    assert password_problems("kettle", "bob", "bob@acme.example") == [
        "must be at least 12 characters long",
        "must mix upper-case and lower-case letters",
        "must contain a digit",
        "must contain a special character (not a letter or digit)",
    ]


@pytest.mark.parametrize("password", ["Xx-9robertaxyz", "Xx-9ROBERTAxyz"])
def test_the_username_is_refused_whatever_its_case(password):
    assert password_problems(password, "Roberta", "r@acme.example") == ["must not contain the username"]


def test_the_local_part_of_the_email_is_refused():
    problems = password_problems("Zz-7-Smithers!!", "bob", "smithers@acme.example")
    assert problems == ["must not contain the local part of the email address"]


def test_twelve_characters_is_long_enough_but_eleven_is_not():
    assert password_problems("Aa1!aaaaaaaa", "bob", "bob@x.example") == []
    assert password_problems("Aa1!aaaaaaa", "bob", "bob@x.example") == ["must be at least 12 characters long"]


def test_the_refusal_lists_the_problems_without_echoing_the_password():
    with pytest.raises(WeakPassword) as refused:
        require_strong("hunter2", "bob", "bob@acme.example")
    assert "hunter2" not in str(refused.value)
    assert len(refused.value.problems) == 3
