"""`roving up` with a retention: finished workflows run by the scheduler and the agents are archived and purged from
the event stream, yet each still answers describe, events and its log; the scheduler goes on placing new work, and a
restart (views from their snapshot, then the tail) answers the same."""

from __future__ import annotations

import time
from pathlib import Path

from tests.e2e.stack import LocalStack

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SETTINGS = {"ROVING_HOT_WORKFLOWS": "1", "ROVING_RETENTION_INTERVAL": "0.5"}


def answers(stack: LocalStack, ids: list[str]) -> dict:
    return {wid: (stack.workflow(wid), stack.events(wid),
                  stack.client.get(f"/v4/workflows/{wid}/log/hello").text) for wid in ids}


def run(stack: LocalStack, name: str) -> str:
    wid = stack.submit((EXAMPLES / "hello.yaml").read_text(), name)
    assert stack.wait_status(wid, ("FINISHED", "FAILED"))["status"] == "FINISHED"
    return wid


def settled(stack: LocalStack, ids: list[str]) -> dict:
    """The answers once the last events of a finished workflow (its allocation's end, the node's release) are in."""
    before: dict = {}
    for _ in range(30):
        now = answers(stack, ids)
        if now == before:
            return now
        before = now
        time.sleep(0.5)
    raise AssertionError("the finished workflows' answers kept changing")


def archived(stack: LocalStack) -> dict:
    answer = stack.client.get("/v4/audit/retention")
    assert answer.status_code == 200, answer.text
    return answer.json()["archived"]


def test_purged_workflows_answer_as_before_and_the_scheduler_goes_on_before_and_after_a_restart(tmp_path):
    first = LocalStack(tmp_path, nodes=1, settings=SETTINGS).start()
    try:
        ids = [run(first, f"kept-{n}") for n in range(3)]
        # the two that left the hot set (of one), as they answer cold: a cold rebuild orders two events of the same
        # instant workflow first, where the hot view had them in log order (Allocation.Placed, then StageStarted)
        cold = ids[:2]
        seen = settled(first, cold)
        assert all("hello" in log.lower() for _, _, log in seen.values()), seen
        changed = first.client.put("/v4/admin/centralconfig", json={"retention.finishedAfter": "1s"})
        assert changed.status_code == 200, changed.text
        first.wait(lambda: (lambda a: a["workflows"] >= 2 and a["pending_purge"] == 0)(archived(first)), 60,
                   "the two cold workflows archived and purged")
        assert answers(first, cold) == seen
        ids.append(run(first, "after-the-purge"))
    finally:
        first.stop()
    second = LocalStack(tmp_path, nodes=1, settings=SETTINGS).start()
    try:
        assert "view_snapshot.restored" in (tmp_path / "stack.log").read_text()
        assert answers(second, cold) == seen
        run(second, "after-the-restart")
        assert archived(second)["workflows"] >= 2
    finally:
        second.stop()
