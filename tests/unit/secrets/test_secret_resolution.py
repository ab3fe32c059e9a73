"""Resolution: as a job is handed to its agent, `secret://` env values become the secret, read as the owner."""

from __future__ import annotations

from uuid import uuid4

import msgspec
import pytest

from adapters.runspec import RunSpec, job_environment
from adapters.secret_crypto import AesGcmCipher
from domain.agent_protocol import Assignments
from domain.agent_start import Start
from tests.unit.secrets.world import T0, VALUE, World, start_spec

FUZZFILE = """
version: v1
jobs:
  train:
    image: {uri: docker://alpine}
    script: echo hi
    env:
      - TOKEN=%s
      - PLAIN=1
    resource: {cpu: {cores: 1}, memory: {size: 1GiB}}
"""


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path)


def assignment(world: World, reference: str, owner: str = "alice") -> Assignments[Start]:
    """The agent's answer for the workflow's one job, shaped as projections.assignments builds it."""
    wid = uuid4()
    world.roving.submit_workflow(wid, "w", FUZZFILE % reference, 0, None, world.who(owner), T0)
    stage = next(iter(world.roving.repository.get(wid).stages.values()))
    return Assignments([start_spec(workflow_id=str(wid), env=dict(stage.spec.env))], [])


def test_the_resolved_value_reaches_the_jobs_environment(world):
    world.create("hf")
    answer = world.secrets.resolve_assignments(assignment(world, "secret://user/hf"))
    env = job_environment(msgspec.convert(msgspec.to_builtins(answer.start[0]), RunSpec))
    assert (env["TOKEN"], env["PLAIN"]) == (VALUE, "1")


def test_a_group_secret_resolves_for_a_member_of_the_group(world):
    world.create("team", "group", by="bob", group="ml", value="group-value")
    answer = world.secrets.resolve_assignments(assignment(world, "secret://group/ml/team"))
    assert answer.start[0].env["TOKEN"] == "group-value"


def test_a_secret_deleted_after_submission_fails_the_job_naming_the_reference(world):
    created = world.create("hf")
    pending = assignment(world, "secret://user/hf")
    world.secrets.delete_secret(created, world.who("alice"), T0)
    spec = world.secrets.resolve_assignments(pending).start[0]
    assert "TOKEN" not in spec.env and spec.command is None
    assert "secret://user/hf" in spec.script and "exit 78" in spec.script


def test_a_member_who_left_the_group_no_longer_reads_its_secret(world):
    from domain.app.ids import user_id
    from tests.unit.secrets.world import SYSTEM

    world.create("team", "group", by="bob", group="ml", value="group-value")
    pending = assignment(world, "secret://group/ml/team")
    world.roving.remove_member(world.ml, user_id("alice"), SYSTEM, T0)
    spec = world.secrets.resolve_assignments(pending).start[0]
    assert "group-value" not in repr(spec)


def test_answers_without_references_are_passed_through_untouched(world):
    answer = Assignments([start_spec(env={"A": "1"})], [])
    assert world.secrets.resolve_assignments(answer) is answer


def test_a_ciphertext_that_no_longer_opens_fails_the_job_naming_the_reference(world, tmp_path):
    world.create("hf")
    pending = assignment(world, "secret://user/hf")
    (tmp_path / "secrets.keyring").unlink()  # the ring lost: a new one has none of the old keys
    world.secrets.cipher = AesGcmCipher(tmp_path / "secrets.keyring")
    spec = world.secrets.resolve_assignments(pending).start[0]
    assert "secret://user/hf" in spec.script and "cannot be decrypted" in spec.script
