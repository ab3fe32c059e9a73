"""A node's recorded history replays with today's code, and today's commands still record exactly those events."""

import json
from datetime import timedelta
from pathlib import Path

from eventsourcing.persistence import Mapper, StoredEvent

from adapters.transcoder import MsgspecTranscoder
from domain.holds import Effect, Source
from domain.node import Node, NodeStatus, Placement
from tests.unit.nodes.builders import at, capacity, peers, ready_node

# written before Node's events were declared classes (state: the MessagePack the log stores, in hex)
GOLDEN = Path(__file__).parent / "golden" / "node_v1.jsonl"


def history() -> list:
    """Every Node event once at least: a ready node held, refused, fenced and readmitted, rejoined, and removed."""
    node = ready_node(cpu=4)
    node.mark_not_ready(1, "disk full", by="agent", at=at(2))
    node.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios", by="alice", at=at(3))
    node.place_hold("m1", Effect.CORDON, Source.MONITORING, "ecc", by="am", at=at(4), peers=peers(1, 1))
    node.withdraw_refusal("m1", by="am", at=at(5))
    node.release_hold("h1", by="alice", at=at(6), releaser_source=Source.ADMIN)
    # what nodes recorded before issue 43, as older logs hold it
    node._allocation_placed(placement=Placement(id="a1", cpu=2, memory=2**30), by="scheduler", at=at(7))
    node._allocation_released(allocation_id="a1", by="agent", at=at(8))
    node.issue_credential("c1", at(60), by="admin", at=at(9))
    node.revoke_credential("c1", "leaked", ["a2"], by="admin", at=at(10))
    node.readmit(by="admin", at=at(11))
    node.rejoin(capacity(cpu=8), ["a3"], by="agent", at=at(12))
    node.mark_ready(2, by="agent", at=at(13))
    node.deprovision("d1", Source.PROVISIONER, "scale down", [], by="provisioner", at=at(14))
    node.rejoin(capacity(cpu=8), [], by="agent", at=at(15))
    node.go_offline(["a4"], by="lease-watch", at=at(16))
    node.remove([], by="admin", at=at(16) + timedelta(seconds=1))
    return node.collect_events()


def lines(events: list) -> list[dict]:
    stored = [Mapper(transcoder=MsgspecTranscoder()).to_stored_event(e) for e in events]
    return [{"originator_id": str(s.originator_id), "originator_version": s.originator_version,
             "topic": s.topic, "state": s.state.hex()} for s in stored]


def replay(path: Path) -> Node:
    mapper, node = Mapper(transcoder=MsgspecTranscoder()), None
    for record in map(json.loads, path.read_text().splitlines()):
        stored = StoredEvent(originator_id=record["originator_id"], originator_version=record["originator_version"],
                             topic=record["topic"], state=bytes.fromhex(record["state"]))
        node = mapper.to_domain_event(stored).mutate(node)
    assert isinstance(node, Node)
    return node


def test_the_recorded_history_holds_every_node_event_class():
    topics = {json.loads(line)["topic"] for line in GOLDEN.read_text().splitlines()}
    declared = {f"domain.node:Node.{name}" for name, value in vars(Node).items()
                if isinstance(value, type) and issubclass(value, Node.Event) and name not in ("Event", "Created")}
    assert len(declared) == 16 and topics == declared


def test_a_recorded_node_history_replays_to_the_node_it_recorded():
    node = replay(GOLDEN)
    assert (node.name, node.removed, node.status, node.epoch, node.version) == ("n1", True, NodeStatus.OFFLINE, 3, 20)
    assert node.capacity.cpu == 8 and node.holds == {} and node.refused_holds == {}
    assert [(c.id, c.reason) for c in node.credential_list()] == [("c1", "leaked")]


def test_todays_commands_record_the_same_events_byte_for_byte():
    assert lines(history()) == [json.loads(line) for line in GOLDEN.read_text().splitlines()]


if __name__ == "__main__":  # rewrite the golden log (only when a change to the recorded events is meant)
    GOLDEN.write_text("".join(json.dumps(line) + "\n" for line in lines(history())))
