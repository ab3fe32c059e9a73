"""An image's registry secret (`image: {uri, secret}`): checked at submission, resolved at hand-off for the agent
only, and taken out of the job's env before it runs."""

from __future__ import annotations

from uuid import uuid4

import msgspec
import pytest

from adapters.registry_auth import take_credential
from adapters.runspec import job_environment
from api.agent.starts import build_spec
from domain.agent_protocol import Assignments, Start
from domain.app.errors import Invalid
from domain.fuzzfile import parse_fuzzfile
from domain.secrets.references import IMAGE_SECRET_VARIABLE
from tests.unit.projections.builders import Feed
from tests.unit.projections.builders import node as registered_node
from tests.unit.projections.test_agent_and_scheduler_views import placed
from tests.unit.secrets.world import T0, World, start_spec

FUZZFILE = """
version: v1
jobs:
  train:
    image: {uri: docker://registry.example.org/team/trainer:2, secret: %s}
    script: echo hi
    env: [PLAIN=1]
    resource: {cpu: {cores: 1}, memory: {size: 1GiB}}
"""
CREDENTIAL = "robot$team:s3cr3t-registry-password"


def definition(reference: str):
    parsed = parse_fuzzfile(FUZZFILE % reference)
    assert not parsed.errors, parsed.errors
    return parsed.definition


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path)


def test_an_image_secret_the_submitter_may_not_read_is_refused_naming_the_field(world):
    world.create("registry", by="alice", value=CREDENTIAL)
    world.secrets.check_references(definition("secret://user/registry"), world.who("alice"))
    with pytest.raises(Invalid) as refused:
        world.secrets.check_references(definition("secret://user/registry"), world.who("mallory"))
    [problem] = refused.value.problems
    assert problem.path == "jobs.train.image.secret" and problem.message.startswith("secret://user/registry: ")
    with pytest.raises(Invalid, match="secret://user/registry"):  # the submission itself
        world.roving.submit_workflow(uuid4(), "w", FUZZFILE % "secret://user/registry", 0, None, world.who("mallory"),
                                     T0)


def test_an_image_secret_that_is_not_a_reference_is_refused_naming_the_field():
    errors = parse_fuzzfile(FUZZFILE % "robot:password").errors
    assert [(p.path, p.message) for p in errors] == [
        ("jobs.train.image.secret", "secret must be a reference such as secret://user/NAME")]


def test_the_agents_answer_carries_the_reference_which_resolves_for_the_agent_and_never_reaches_the_job(world):
    feed, n1 = Feed(), registered_node("node-1")
    feed.save(n1)
    placed(feed, FUZZFILE % "secret://user/registry", "train", n1)
    [spec] = msgspec.to_builtins(feed.views.assignments(n1.id).start)
    assert spec["env"] == {"PLAIN": "1", IMAGE_SECRET_VARIABLE: "secret://user/registry"}  # a reference, no value

    world.create("registry", by="alice", value=CREDENTIAL)
    wid = uuid4()
    world.roving.submit_workflow(wid, "w", FUZZFILE % "secret://user/registry", 0, None, world.who("alice"), T0)
    start = msgspec.convert({**spec, "workflow_id": str(wid)}, Start)
    item = world.secrets.resolve_assignments(Assignments([start], [])).start[0]
    env, secret = take_credential(item.env)
    assert secret == CREDENTIAL
    job = build_spec(item, env)
    assert job.image == "docker://registry.example.org/team/trainer:2"
    assert CREDENTIAL not in repr(job) and CREDENTIAL not in repr(job_environment(job))


def test_an_image_secret_gone_by_the_time_the_job_starts_fails_it_naming_the_reference_without_a_pull(world):
    created = world.create("registry", by="alice", value=CREDENTIAL)
    wid = uuid4()
    world.roving.submit_workflow(wid, "w", FUZZFILE % "secret://user/registry", 0, None, world.who("alice"), T0)
    world.secrets.delete_secret(created, world.who("alice"), T0)
    spec = start_spec(workflow_id=str(wid), image="docker://registry.example.org/team/trainer:2",
                      env={"PLAIN": "1", IMAGE_SECRET_VARIABLE: "secret://user/registry"})
    refused = world.secrets.resolve_assignments(Assignments([spec], [])).start[0]
    assert refused.image == "" and IMAGE_SECRET_VARIABLE not in refused.env
    assert "image.secret=secret://user/registry: no such secret" in refused.script and "exit 78" in refused.script


def test_a_job_without_an_image_secret_has_nothing_added_to_its_env():
    feed, n1 = Feed(), registered_node("node-1")
    feed.save(n1)
    placed(feed, FUZZFILE.replace(", secret: %s", ""), "train", n1)
    [spec] = feed.views.assignments(n1.id).start
    assert spec.env == {"PLAIN": "1"}
    assert take_credential(spec.env) == ({"PLAIN": "1"}, "")
