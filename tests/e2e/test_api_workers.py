"""`roving up` with two API workers on one port: work flows, writes are readable anywhere, a dead worker returns."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.e2e.stack import LocalStack

TRUE = "version: v4\njobs:\n  a:\n    image: {uri: docker://alpine}\n    command: [\"true\"]\n"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    running = LocalStack(tmp_path_factory.mktemp("roving"), settings={"ROVING_API_WORKERS": "2"}).start()
    yield running
    running.stop()


def fresh(stack) -> httpx.Client:
    """A client of its own connection: the kernel hands each connection to either worker."""
    return httpx.Client(base_url=stack.url, headers=stack.auth(stack.token("admin")), timeout=30)


def worker_pids(stack) -> set[int]:
    found = subprocess.run(["pgrep", "-P", str(stack.process.pid), "-f", "worker_main"], capture_output=True,
                           text=True)
    return {int(pid) for pid in found.stdout.split()}


def answering(stack, times: int = 40) -> list[dict]:
    """/readyz through `times` fresh connections: which process answered each, and what it runs."""
    answers = []
    for _ in range(times):
        with fresh(stack) as client:
            answers.append(client.get("/readyz").json()["process"])
    return answers


def test_both_workers_answer_and_exactly_one_leads_the_scheduler_and_holds_the_audit(stack):
    stack.wait(lambda: any(p["leads_scheduler"] for p in answering(stack, 10)), 30, "a scheduler leader")
    answers = answering(stack)
    assert {a["pid"] for a in answers} == worker_pids(stack)
    assert len(worker_pids(stack)) == 2
    assert len({a["pid"] for a in answers if a["leads_scheduler"]}) == 1
    assert {a["pid"] for a in answers if a["holds_audit"]} == {a["pid"] for a in answers if a["leads_scheduler"]}


def test_workflows_submitted_concurrently_through_both_workers_all_finish(stack):
    def submit(index: int) -> str:
        with fresh(stack) as client:
            return stack.submit(TRUE, f"many-{index}", client=client)

    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(submit, range(16)))
    for workflow_id in ids:
        assert stack.wait_status(workflow_id, ("FINISHED", "FAILED"), timeout=90)["status"] == "FINISHED"


def test_commands_racing_on_one_node_through_both_workers_all_land(stack):
    """Each hold is a write to the same Node aggregate: a worker that loses the race reloads and decides again."""
    def place(index: int) -> str:
        with fresh(stack) as client:
            answer = client.post("/v4/nodes/local-2/holds", json={"effect": "cordon", "reason": f"race {index}"})
        assert answer.status_code == 201, answer.text
        return answer.json()["hold_id"]

    with ThreadPoolExecutor(4) as pool:
        placed = set(pool.map(place, range(16)))
    with fresh(stack) as client:
        holds = client.get("/v4/nodes/local-2/holds").json()["holds"]
        assert placed <= {hold["id"] for hold in holds} and len(placed) == 16
        for hold_id in placed:
            assert client.delete(f"/v4/nodes/local-2/holds/{hold_id}").status_code == 200


def test_a_write_through_one_connection_is_read_at_once_through_another(stack):
    readers = [fresh(stack) for _ in range(4)]  # open, on either worker, before the writes
    try:
        for reader in readers:
            reader.get("/healthz")
        with fresh(stack) as writer:
            for index in range(30):
                made = writer.post("/v4/organizations", json={"name": f"ryw-{index}"})
                assert made.status_code == 201, made.text
                assert int(made.headers["Roving-Position"]) > 0
                for reader in readers:
                    seen = reader.get(f"/v4/organizations/{made.json()['id']}")
                    assert seen.status_code == 200, seen.text
    finally:
        for reader in readers:
            reader.close()


def test_a_read_naming_a_later_position_waits_for_it_and_a_bad_one_is_refused(stack):
    with fresh(stack) as client:
        position = int(client.get("/readyz").headers["Roving-Position"])
        started = time.monotonic()
        waited = client.get("/v4/nodes", headers={"Roving-Position": str(position + 10_000)})
        assert waited.status_code == 200 and time.monotonic() - started >= 4  # answered from the views after 5 s
        refused = client.get("/v4/nodes", headers={"Roving-Position": "soon"})
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["path"] == "Roving-Position"


def test_the_audit_answers_through_every_worker(stack):
    for _ in range(10):
        with fresh(stack) as client:
            answer = client.get("/v4/audit", params={"limit": 5})
        assert answer.status_code == 200, answer.text
        assert answer.json()["rows"]


def test_a_killed_worker_leaves_the_api_answering_and_is_started_again(stack):
    before = worker_pids(stack)
    leader = next(a["pid"] for a in answering(stack) if a["leads_scheduler"])
    os.kill(leader, signal.SIGKILL)
    stack.wait(lambda: not os.path.exists(f"/proc/{leader}/status") or _zombie(leader), 10, "the worker to die")
    for _ in range(10):
        with fresh(stack) as client:
            assert client.get("/v4/nodes").status_code == 200
    stack.wait(lambda: len(worker_pids(stack)) == 2 and worker_pids(stack) != before, 30, "a new worker")
    stack.wait(lambda: len({a["pid"] for a in answering(stack, 20)}) == 2, 60, "the new worker to serve")
    with fresh(stack) as client:  # the other worker took the scheduler's lease: work still runs
        workflow_id = stack.submit(TRUE, "after-kill", client=client)
    assert stack.wait_status(workflow_id, ("FINISHED", "FAILED"), timeout=60)["status"] == "FINISHED"


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as status:
            return any(line.startswith("State:") and "Z" in line for line in status)
    except FileNotFoundError:
        return True
