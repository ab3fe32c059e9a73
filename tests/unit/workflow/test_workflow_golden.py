"""A golden event log replays to the same views, and today's code still writes exactly those events."""

import json
import sys
from pathlib import Path
from uuid import UUID

import pytest
from eventsourcing.persistence import DatetimeAsISO, DecimalAsStr, JSONTranscoder, Mapper, StoredEvent, UUIDAsHex
from workflow_builders import at, fuzzfile, run, step, submit

from domain.allocation import Allocation, QueueState
from domain.fuzzfile import Resources

# v7: the stages a submission readied are in its Submitted (issue 43: a submit is one message per aggregate)
GOLDEN = Path(__file__).parent / "golden" / "workflow_v7.jsonl"
# written by earlier code, must still replay: v6 (a Submitted then a StageReadied per stage; a placement records its
# nodes' agent epochs, so work placed before a node's agent registered again is stray), v5 (the allocation is
# requested with its stage's typed Resources, recorded as builtins, defaults omitted), v4 (a placement carries a
# note, what it preempted; resources a dict), v3 (a Placed without a note; an allocation requested ready in one
# event), v2 (a Requested then a Readied), v1 (a StageSkipped per skipped step)
OLDER = [Path(__file__).parent / "golden" / f"workflow_v{n}.jsonl" for n in (6, 5, 4, 3, 2, 1)]
REQUESTED = {f"workflow_v{n}": Resources(cpu_cores=2, memory_bytes=2**30) for n in (5, 6, 7)}  # v1-v4: {"cpu_cores": 1}
TEXT = fuzzfile([
    step("pre", extra="policy: {retry: {on: [75], attempts: 1}, timeout: {execute: 10m}}"),
    step("main", "pre"),
    step("post", "pre:FAILED"),
])


def mapper() -> Mapper:
    transcoder = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DatetimeAsISO(), DecimalAsStr()):
        transcoder.register(transcoding)
    return Mapper(transcoder=transcoder)


def scenario() -> list:
    """pre exits 75 and is retried, then finishes; post is skipped by design; main loses its node and fails."""
    workflow = submit(TEXT)
    run(workflow, "pre", exit_code=75)
    run(workflow, "pre", minute=3)
    workflow.stage_started("main", 1, "n2", at(5))
    workflow.stage_lost_node("main", 1, at(6))
    alloc = Allocation.request(UUID(int=9), workflow.id, "main", 1, REQUESTED["workflow_v6"], workflow_priority=-1,
                               preemptible=True, execute_timeout_seconds=None, by="scheduler", at=at(4), ready=True)
    alloc.place(["n2"], by="scheduler", at=at(5), node_epochs=(3,))
    alloc.evict("node n2 went offline", by="monitoring", at=at(6))
    return workflow.collect_events() + alloc.collect_events()


def to_lines(events: list) -> list[dict]:
    stored = [mapper().to_stored_event(e) for e in events]
    return [{"originator_id": str(s.originator_id), "originator_version": s.originator_version,
             "topic": s.topic, "state": json.loads(s.state)} for s in stored]


def replay(log: Path = GOLDEN) -> dict:
    aggregates: dict = {}
    for line in log.read_text().splitlines():
        record = json.loads(line)
        stored = StoredEvent(UUID(record["originator_id"]), record["originator_version"], record["topic"],
                             json.dumps(record["state"], separators=(",", ":")).encode())
        domain_event = mapper().to_domain_event(stored)
        aggregates[record["originator_id"]] = domain_event.mutate(aggregates.get(record["originator_id"]))
    return aggregates


@pytest.mark.parametrize("log", [GOLDEN, *OLDER], ids=lambda p: p.stem)
def test_the_golden_log_replays_to_the_same_workflow_and_allocation_views(log):
    aggregates = replay(log)
    workflow = aggregates[str(UUID(int=1))]
    assert workflow.status == "FAILED"
    assert {v.name: (v.status.value, v.attempt, v.reason) for v in workflow.stage_views()} == {
        "pre": ("FINISHED", 2, "Finished"),
        "main": ("FAILED", 1, "Failed: lost its node (to retry, add node to policy.retry.on)"),
        "post": ("CANCELED", 1, "Canceled: pre finished; post-mortem needs FAILED"),
    }
    alloc = aggregates[str(UUID(int=9))]
    assert (alloc.state, alloc.nodes, alloc.epoch, alloc.reason) == (QueueState.EVICTED, ["n2"], 1, "node n2 went offline")
    assert alloc.resources == REQUESTED.get(log.stem, Resources(cpu_cores=1))  # typed, from any recorded shape
    epochs = 3 if log.stem in ("workflow_v6", "workflow_v7") else None  # older logs name none: never stray by it
    assert alloc.node_epoch("n2") == epochs


def test_a_submission_is_one_event_naming_its_ready_stages_and_older_logs_ready_them_with_their_own():
    types = [json.loads(line)["topic"].rpartition(".")[2] for line in GOLDEN.read_text().splitlines()]
    assert types[:2] == ["Submitted", "StageStarted"]
    assert json.loads(GOLDEN.read_text().splitlines()[0])["state"]["readied"] == ["pre"]
    older = OLDER[0].read_text().splitlines()
    assert [json.loads(line)["topic"].rpartition(".")[2] for line in older[:2]] == ["Submitted", "StageReadied"]
    assert "readied" not in json.loads(older[0])["state"]


def test_todays_code_writes_the_events_in_the_golden_log_unchanged():
    assert to_lines(scenario()) == [json.loads(line) for line in GOLDEN.read_text().splitlines()]


if __name__ == "__main__":  # regenerate deliberately: python tests/unit/workflow/test_workflow_golden.py
    sys.path.insert(0, str(Path(__file__).parent))
    GOLDEN.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in to_lines(scenario())))
