"""`roving up` with ROVING_HOT_WORKFLOWS=2: finished workflows beyond the two newest leave the views, yet each still
answers describe, events and its log from the log stream, the list pages through all of them, newest first, and
a restart (views from the snapshot) answers the same."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from tests.e2e.stack import LocalStack

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HOT = 2


def answers(stack: LocalStack, ids: list[str]) -> dict:
    return {wid: (stack.workflow(wid), stack.events(wid),
                  stack.client.get(f"/v4/workflows/{wid}/log/hello").text) for wid in ids}


def listed(stack: LocalStack) -> list[str]:
    rows, after = [], None
    while True:
        body = stack.client.get("/v4/workflows", params={"limit": 2, **({"next": after} if after else {})}).json()
        rows, after = rows + [w["id"] for w in body["workflows"]], body["next"]
        if after is None:
            return rows


def cold_ids(data_dir: Path) -> set[str]:
    with closing(sqlite3.connect(data_dir / "views" / "cold-workflows.sqlite")) as db:
        return {row[0] for row in db.execute("SELECT id FROM cold_workflows")}


def test_finished_workflows_beyond_the_hot_set_answer_from_the_log_before_and_after_a_restart(tmp_path):
    settings = {"ROVING_HOT_WORKFLOWS": str(HOT)}
    first = LocalStack(tmp_path, nodes=1, settings=settings).start()
    try:
        ids = []
        for n in range(5):
            ids.append(first.submit((EXAMPLES / "hello.yaml").read_text(), f"hot-{n}"))
            assert first.wait_status(ids[-1], ("FINISHED", "FAILED"))["status"] == "FINISHED"
        seen = answers(first, ids)
        assert all("hello" in log.lower() for _, _, log in seen.values()), seen
        assert all(len(events) >= 3 for _, events, _ in seen.values())
        assert listed(first) == list(reversed(ids))
        assert cold_ids(tmp_path) == set(ids[:-HOT])  # the three oldest left the views
    finally:
        first.stop()
    second = LocalStack(tmp_path, nodes=1, settings=settings).start()
    try:
        assert "view_snapshot.restored" in (tmp_path / "stack.log").read_text()
        assert answers(second, ids) == seen and listed(second) == list(reversed(ids))
    finally:
        second.stop()
