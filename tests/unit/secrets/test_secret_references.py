"""`secret://` references: their grammar, where a Fuzzfile holds them, and the submission check."""

from __future__ import annotations

import pytest

from domain.app.errors import Invalid
from domain.fuzzfile import parse_fuzzfile
from domain.secrets import Reference, Scope, SecretError, parse_reference, uses
from tests.unit.secrets.world import World


def definition(*env: str):
    entries = "".join(f"\n      - {e}" for e in env)
    text = f"""
version: v1
jobs:
  train:
    image: {{uri: docker://alpine}}
    script: echo hi
    env:{entries}
    resource: {{cpu: {{cores: 1}}, memory: {{size: 1GiB}}}}
"""
    parsed = parse_fuzzfile(text)
    assert not parsed.errors, parsed.errors
    return parsed.definition


@pytest.mark.parametrize(("text", "expected"), [
    ("secret://user/hf", Reference(Scope.USER, "hf")),
    ("secret://group/token", Reference(Scope.GROUP, "token")),
    ("secret://group/ml/token", Reference(Scope.GROUP, "token", "ml")),
    ("secret://organization/s3.key", Reference(Scope.ORGANIZATION, "s3.key")),
    ("secret://cluster/registry", Reference(Scope.CLUSTER, "registry")),
])
def test_references_parse(text, expected):
    assert parse_reference(text) == expected
    assert str(expected) == text


@pytest.mark.parametrize("text", ["secret://", "secret://team/hf", "secret://user/a/b", "secret://user/", "secret://user/x y"])
def test_a_malformed_reference_is_refused(text):
    with pytest.raises(SecretError):
        parse_reference(text)


def test_uses_finds_reference_env_entries_with_their_paths():
    found = list(uses(definition("PLAIN=1", "TOKEN=secret://user/hf")))
    assert [(u.path, u.variable, u.text) for u in found] == [("jobs.train.env[1]", "TOKEN", "secret://user/hf")]


def test_the_submitter_may_reference_their_own_group_and_organization_secrets(tmp_path):
    world = World(tmp_path)
    world.create("hf")
    world.create("team", "group", by="bob", group="ml")
    world.create("org", "organization", by="olivia")
    wanted = definition("A=secret://user/hf", "B=secret://group/team", "C=secret://group/ml/team",
                        "D=secret://organization/org")
    world.secrets.check_references(wanted, world.who("alice"))  # no error


def test_a_foreign_or_missing_reference_is_refused_at_submission_naming_it(tmp_path):
    world = World(tmp_path)
    world.create("hf", by="alice")
    with pytest.raises(Invalid) as refused:
        world.secrets.check_references(definition("OK=1", "TOKEN=secret://user/hf", "X=secret://user/nope"),
                                       world.who("mallory"))
    problems = [(p.path, p.message.partition(": ")[0]) for p in refused.value.problems]
    assert problems == [("jobs.train.env[1]", "secret://user/hf"), ("jobs.train.env[2]", "secret://user/nope")]


def test_a_group_the_submitter_is_not_in_is_refused(tmp_path):
    world = World(tmp_path)
    world.create("team", "group", by="bob", group="ml")
    with pytest.raises(Invalid, match="secret://group/ml/team"):
        world.secrets.check_references(definition("T=secret://group/ml/team"), world.who("olivia"))
