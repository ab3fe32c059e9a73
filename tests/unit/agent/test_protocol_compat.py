"""The protocol's types read what agents and control planes before them wrote, and write what those read: an agent
and a control plane a version apart still work together, and an upgraded agent still delivers its old outbox.

The literals below are copied from what the code wrote before the protocol had types (api/agent/agent.py's `_body`
and `registration_body`, projections/assignments.py's run spec and stop orders, the routes' answers, the outbox's
journal lines), so a renamed or retyped field fails here."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Literal
from uuid import UUID

import msgspec

from adapters.adoption import registration_digest
from adapters.outbox import Outbox
from api.agent.starts import build_spec, decode_assignments
from domain.agent_protocol import Assignments, BatchResults, Config, Register, Registered, Report, Reports, Start, Stop

NODE = "6f1c3a52-8f0e-4a8e-9b57-0d2f4b1c9e01"
ALLOCATION = "0b7e2c1d-3a4f-4e5d-8c6b-7a9f0e1d2c3b"
WORKFLOW = "9d8c7b6a-5f4e-4d3c-2b1a-0f9e8d7c6b5a"

# what `_body` sent for an exit, and for a service's second readiness (with `change` and `listening`)
OLD_EXIT = (f'{{"node_id":"{NODE}","allocation_id":"{ALLOCATION}","epoch":3,"event":"exited","exit_code":137,'
            f'"reason":"killed","ports":[]}}')
OLD_READY = (f'{{"node_id":"{NODE}","allocation_id":"{ALLOCATION}","epoch":3,"event":"ready","exit_code":null,'
             f'"reason":"","ports":[{{"name":"http","port":8080,"protocol":"tcp"}}],"change":2,"listening":[8080]}}')
# what the pull relay and the progress relay sent: no exit_code, ports or change at all
OLD_IMAGE = f'{{"node_id":"{NODE}","allocation_id":"{ALLOCATION}","epoch":3,"event":"image","reason":"pulling"}}'

# what the assignments route answered: one run spec, a stop and a multinode rank's stop
OLD_ASSIGNMENTS = json.dumps({
    "start": [{
        "allocation_id": ALLOCATION, "epoch": 3, "workflow_id": WORKFLOW, "stage": "train", "job": "train",
        "task_id": None, "kind": "job", "image": "", "script": "echo hi", "command": None, "args": None,
        "env": {"A": "1"}, "cwd": None, "files": {}, "execute_timeout_seconds": 600.0, "memory_bytes": 1073741824,
        "cpu_cores": 1.0, "account_id": "g1", "owner_id": "u1", "readiness_probe": None, "ports": [], "mounts": {},
        "start_delay_seconds": 2.5, "uid": 1000, "gid": 1000, "groups": [1000], "username": "alice"}],
    "stop": [
        {"allocation_id": ALLOCATION, "epoch": 2, "workflow_id": WORKFLOW, "stage": "train", "state": "CANCELED",
         "reason": "canceled by alice"},
        {"allocation_id": ALLOCATION, "epoch": 4, "workflow_id": WORKFLOW, "stage": "mpi", "state": "RUNNING",
         "rank_stop": True, "ranks": 2, "reason": "rank 1 failed: the job stops on every node"}],
    "volumes": [WORKFLOW],
}, separators=(",", ":"))


class OldRouteReport(msgspec.Struct):
    """The route's Report before the protocol's types (a control plane of the previous version decodes with it)."""

    node_id: UUID
    allocation_id: UUID
    epoch: int
    event: Literal["started", "ready", "unready", "exited", "ran_on_host", "progress", "image"]
    exit_code: int | None = None
    reason: str = ""
    ports: list[int | dict] = []
    listening: Annotated[list[int], msgspec.Meta(max_length=1024)] | None = None


def test_reports_an_older_agent_sends_decode_as_the_protocols_report():
    exited = msgspec.json.decode(OLD_EXIT, type=Report)
    assert (exited.node_id, exited.allocation_id, exited.epoch, exited.event) == (UUID(NODE), UUID(ALLOCATION), 3,
                                                                                 "exited")
    assert (exited.exit_code, exited.reason, exited.key()) == (137, "killed", (ALLOCATION, 3, "exited"))
    ready = msgspec.json.decode(OLD_READY, type=Report)
    assert (ready.listening, ready.change, ready.key()) == ([8080], 2, (ALLOCATION, 3, "ready#2"))
    assert ready.ports == [{"name": "http", "port": 8080, "protocol": "tcp"}]
    image = msgspec.json.decode(OLD_IMAGE, type=Report)
    assert (image.event, image.reason, image.exit_code, image.ports) == ("image", "pulling", None, [])


def test_a_report_this_agent_sends_means_the_same_to_a_control_plane_of_the_previous_version():
    for old in (OLD_EXIT, OLD_READY, OLD_IMAGE):
        sent = msgspec.json.encode(msgspec.json.decode(old, type=Report))
        assert msgspec.json.decode(sent, type=OldRouteReport) == msgspec.json.decode(old, type=OldRouteReport)
    batch = msgspec.json.encode(Reports(node_id=UUID(NODE), reports=[msgspec.json.decode(OLD_EXIT, type=Report)]))
    assert json.loads(batch)["node_id"] == NODE and json.loads(batch)["reports"][0]["exit_code"] == 137


def test_assignments_a_control_plane_of_the_previous_version_sends_decode_and_start():
    answer = msgspec.json.decode(OLD_ASSIGNMENTS, type=Assignments[Start])
    canceled, rank = answer.stop
    assert (canceled.allocation_id, canceled.epoch, canceled.reason, canceled.rank_stop) == (
        ALLOCATION, 2, "canceled by alice", False)
    assert (rank.rank_stop, rank.ranks, rank.stage) == (True, 2, "mpi")
    assert answer.volumes == [WORKFLOW]
    spec = build_spec(answer.start[0])
    assert (spec.allocation_id, spec.epoch, spec.job, spec.execute_timeout_seconds, spec.memory_bytes, spec.uid) == (
        ALLOCATION, 3, "train", 600.0, 1073741824, 1000)
    assert (spec.start_delay_seconds, spec.env) == (2.5, {"A": "1"})


def test_an_answer_without_volumes_is_not_taken_as_none_live():
    older = msgspec.json.decode(b'{"start":[],"stop":[]}', type=Assignments)
    assert older.volumes is None  # the agent then removes no volume


def test_stop_orders_are_encoded_byte_for_byte_as_before():
    """The answer's bytes make its ETag: an upgraded control plane answers an unchanged node with the same tag."""
    old = json.loads(OLD_ASSIGNMENTS)
    for order in old["stop"]:
        typed = msgspec.json.decode(json.dumps(order), type=Stop)
        assert msgspec.json.encode(typed) == json.dumps(order, separators=(",", ":")).encode()
    assert msgspec.json.encode(msgspec.json.decode(OLD_ASSIGNMENTS, type=Assignments[Start])) == OLD_ASSIGNMENTS.encode()


def test_registration_and_batch_answers_of_the_previous_version_decode():
    registered = msgspec.json.decode(
        f'{{"node_id":"{NODE}","epoch":2,"token":"t0k","credential_id":"c1"}}', type=Registered)
    assert (str(registered.node_id), registered.epoch, registered.token) == (NODE, 2, "t0k")
    results = msgspec.json.decode(
        b'{"results":[{"status":200},{"status":409,"code":"stale_epoch","error":"epoch 2 is stale"}]}',
        type=BatchResults).results
    assert [(r.status, r.code, r.error) for r in results] == [(200, "", ""), (409, "stale_epoch", "epoch 2 is stale")]
    assert msgspec.json.encode(results[0]) == b'{"status":200}'  # as the route answered before


def test_an_outbox_journal_an_older_agent_wrote_is_read_and_keeps_its_order(tmp_path):
    """Lines as the old outbox wrote them: compact `put` lines, a `done`, and a rewrite's spaced line."""
    started = OLD_EXIT.replace('"exited","exit_code":137,"reason":"killed"', '"started","exit_code":null,"reason":""')
    (tmp_path / "journal.jsonl").write_text(
        f'{{"put":1,"body":{started}}}\n'
        f'{{"put":2,"body":{OLD_READY}}}\n'
        f'{{"done":1}}\n'
        + json.dumps({"put": 3, "body": json.loads(OLD_EXIT)}) + "\n")
    outbox = Outbox(tmp_path)
    try:
        pending = outbox.pending()
        assert [e.key for e in pending] == [(ALLOCATION, 3, "ready#2"), (ALLOCATION, 3, "exited")]
        assert [e.body for e in pending] == [msgspec.json.decode(OLD_READY, type=Report),
                                              msgspec.json.decode(OLD_EXIT, type=Report)]
        assert outbox.unreadable == 0
    finally:
        outbox.close()


def test_a_journal_entry_that_is_no_report_is_counted_not_sent(tmp_path):
    (tmp_path / "journal.jsonl").write_text('{"put":1,"body":{"allocation_id":"a1","epoch":1,"event":"exited"}}\n'
                                            f'{{"put":2,"body":{OLD_EXIT}}}\n')
    outbox = Outbox(tmp_path)
    try:
        assert [e.key for e in outbox.pending()] == [(ALLOCATION, 3, "exited")]
        assert outbox.unreadable == 1
    finally:
        outbox.close()


def test_an_unchanged_node_keeps_the_registration_digest_an_older_agent_saved():
    """Else an upgraded agent with no job to adopt would register anew, giving up what was placed while it was away."""
    old = {"name": "n1", "cpu": 4, "memory": 2**30, "devices": {}, "annotations": {"rack": "r1"}, "definition": "",
           "address": "10.0.0.5", "metrics_port": None}
    saved = hashlib.sha256(msgspec.json.encode(old, order="sorted")).hexdigest()
    assert registration_digest(Register(**old)) == saved
    in_segment = hashlib.sha256(msgspec.json.encode(old | {"segment": "s1"}, order="sorted")).hexdigest()
    assert registration_digest(Register(**old, segment="s1")) == in_segment


# a run spec as a control plane before 4eab643 sent it (no `owner_id`), and one from a newer control plane (a field
# and a stop order's field this agent does not know)
BEFORE_OWNER = OLD_ASSIGNMENTS.replace('"owner_id":"u1",', "")
NEWER = OLD_ASSIGNMENTS.replace('"mounts":{}', '"mounts":{},"gang":{"size":4}').replace(
    '"reason":"canceled by alice"', '"reason":"canceled by alice","grace_seconds":30')


def test_a_run_spec_from_before_owner_ids_and_one_with_fields_this_agent_does_not_know_both_start():
    before, refused = decode_assignments(BEFORE_OWNER.encode())
    assert refused == [] and before.start[0].owner_id is None and build_spec(before.start[0]).owner_id is None
    newer, refused = decode_assignments(NEWER.encode())
    assert refused == [] and newer == msgspec.json.decode(OLD_ASSIGNMENTS, type=Assignments[Start])


class OldAssignments(msgspec.Struct):
    """The previous version's Assignments: run specs as mappings (its agent read them with `.get`)."""

    start: list[dict]
    stop: list[dict]
    volumes: list[str] | None = None


def test_an_agent_of_the_previous_version_reads_the_typed_answer_as_the_mapping_it_knew():
    typed = msgspec.json.decode(OLD_ASSIGNMENTS, type=Assignments[Start])
    assert msgspec.json.decode(msgspec.json.encode(typed), type=OldAssignments) == msgspec.json.decode(
        OLD_ASSIGNMENTS, type=OldAssignments)


def test_the_config_answer_reads_as_before_and_says_no_stream_when_it_names_none():
    body = b'{"nats_url":"nats://agent:pw@127.0.0.1:4222","cluster":"c1"}'  # what the route answered before its type
    config = msgspec.json.decode(body, type=Config)
    assert (config.nats_url, config.cluster) == ("nats://agent:pw@127.0.0.1:4222", "c1")
    assert config.log_max_bytes_per_stage == 0  # an older API names no cap: none
    assert msgspec.json.encode(config) == body[:-1] + b',"log_max_bytes_per_stage":0}'  # the old fields as they were
    assert msgspec.json.encode(Config(nats_url=None, cluster="c1")).startswith(b'{"nats_url":null,"cluster":"c1"')
    assert msgspec.json.decode(b"{}", type=Config) == Config(nats_url=None, cluster="")
