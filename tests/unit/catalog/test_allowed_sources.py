"""Which git locations `catalog.allowedSources` lets a non-admin add: its schemes and hosts, nothing that only
looks like them (issue 39, item 9)."""

from __future__ import annotations

import pytest

from domain.catalog.source import allowed_remote
from domain.scheduler.config import validate_config

ALLOWED = ("https://github.com", "ssh://*.example.org", "git://git.example.com:9418")


@pytest.mark.parametrize("location", [
    "https://github.com/acme/catalog.git", "https://GitHub.com/acme/catalog", "ssh://git@code.example.org/acme.git",
    "git@code.example.org:acme/catalog.git", "git://git.example.com:9418/catalog",
])
def test_a_location_at_an_allowed_scheme_and_host_is_allowed(location):
    assert allowed_remote(location, ALLOWED)


@pytest.mark.parametrize("location", [
    "http://github.com/acme/catalog.git",             # another scheme
    "https://github.com.evil.org/acme/catalog.git",   # a host that only starts like it
    "https://github.com@169.254.169.254/latest/",     # user info in front of another host
    "https://evil.org\\@github.com/x",                 # a backslash parsers disagree on
    "https://evil.internal#@github.com/x",            # a fragment before the @: git and curl go to evil.internal
    "https://evil.internal?@github.com/x",            # a query before the @, likewise
    "ssh://git@example.org/acme.git",                 # *.example.org is below example.org only
    "git://git.example.com:9419/catalog",             # another port
    "git://git.example.com/catalog",                  # the default port is not the one allowed
    "https://127.0.0.1:8080/internal.git", "file:///etc", "/srv/catalog",
])
def test_anything_else_is_not(location):
    assert not allowed_remote(location, ALLOWED)


def test_nothing_is_allowed_until_an_admin_lists_it():
    assert validate_config({})[0].catalog_allowed_sources == ()
    assert not allowed_remote("https://github.com/acme/catalog.git", ())


def test_an_entry_is_a_scheme_and_a_host_and_nothing_more():
    problems = validate_config({"catalog.allowedSources": ["https://github.com/acme"]})[2]
    assert [p.key for p in problems] == ["catalog.allowedSources"]
    assert validate_config({"catalog": {"allowedSources": list(ALLOWED)}})[0].catalog_allowed_sources == ALLOWED
