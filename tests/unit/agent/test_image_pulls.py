"""An image pull told as stage events: the agent's `image` reports while it pulls and once the image is ready, the
workflow's ImageProgressed event they become, and the activity line a user reads."""

from __future__ import annotations

import asyncio
import threading

import msgspec
import pytest

from adapters.pull_progress import PullReport, layer_count, tool_answer
from adapters.runspec import local_spec
from api.agent.pulls import ImagePulls
from domain.workflow import WorkflowError
from projections.activity import activity
from tests.unit.agent.fake_api import A1, NODE_ID
from tests.unit.workflow.workflow_builders import at, step, submit

IMAGE = "docker://127.0.0.1:5000/team/app:1"
SPEC = local_spec(allocation_id=A1, epoch=2, workflow_id="w", stage="train", image=IMAGE)


def test_a_pull_is_told_blob_by_blob_then_layer_by_layer():
    told: list[str] = []
    report = PullReport(IMAGE, told.append, blobs=layer_count('{"layers": [{}, {}]}'))
    report.started()
    for line in ("Getting image source signatures", "Copying blob sha256:aa", "Copying blob sha256:bb",
                 "Copying config sha256:cc", "Writing manifest to image destination"):
        report.line(line)
    report.unpacking(1, 2)
    assert told == [f"pulling {IMAGE}: 2 blobs to fetch", f"pulling {IMAGE}: 1 of 2 blobs",
                    f"pulling {IMAGE}: 2 of 2 blobs", f"unpacking {IMAGE}: layer 1 of 2"]


def test_an_index_has_no_blob_count_so_blobs_are_counted_without_a_total():
    told: list[str] = []
    report = PullReport(IMAGE, told.append, blobs=layer_count('{"manifests": [{}]}'))
    report.line("Copying blob sha256:aa")
    assert told == [f"pulling {IMAGE}: 1 blobs"]


def test_the_agent_sends_pull_lines_from_the_pulling_thread_and_then_the_ready_line():
    sent: list[dict] = []

    async def call(method, path, content, headers):
        sent.append(msgspec.json.decode(content))

    async def scenario() -> None:
        pulls = ImagePulls(call, lambda: NODE_ID, asyncio.get_running_loop(), every=60)
        tell = pulls.tell(SPEC)
        for text in (f"pulling {IMAGE}: 1 of 2 blobs", f"pulling {IMAGE}: 2 of 2 blobs"):
            pulling = threading.Thread(target=tell, args=(text,))
            pulling.start()
            await asyncio.to_thread(pulling.join)
            for _ in range(100):
                if sent:
                    break
                await asyncio.sleep(0.01)
        await pulls.ready(SPEC, f"image {IMAGE} ready in 1.5 s (pulled)")

    asyncio.run(scenario())
    assert [(b["event"], b["allocation_id"], b["epoch"], b["node_id"]) for b in sent] == [("image", A1, 2, NODE_ID)] * 2
    # the second pull line came within the interval: superseded by the ready line, never sent after it
    assert [b["reason"] for b in sent] == [f"pulling {IMAGE}: 1 of 2 blobs", f"image {IMAGE} ready in 1.5 s (pulled)"]


def test_image_progress_is_a_workflow_event_the_activity_stream_shows():
    workflow = submit("version: v1\njobs:\n" + step("train"))
    workflow.stage_started("train", 1, "n1", at(1))
    workflow.image_progressed("train", 1, f"image {IMAGE} ready in 0.0 s (cached)", at(2))
    told = workflow.pending_events[-1]
    row = activity(7, told, "train", lambda node: node)
    assert (type(told).__name__, row.message) == ("ImageProgressed", f"image {IMAGE} ready in 0.0 s (cached)")


def test_a_stage_still_waiting_for_its_dependency_reports_no_image_progress():
    # a READY stage's placed attempt may report before its workflow records the start (the application checks the
    # report against the allocation's placement); one that cannot be placed yet may not
    workflow = submit("version: v1\njobs:\n" + step("prep") + step("train", "prep"))
    with pytest.raises(WorkflowError, match="train is WAITING; it cannot report its image"):
        workflow.image_progressed("train", 1, "pulling", at(2))


def test_the_registrys_answer_is_skopeos_message_without_its_log_decoration():
    output = ('Getting image source signatures\ntime="2026-12-04T17:22:34Z" level=fatal msg="initializing source '
              '\\"docker://r/a:1\\": reading manifest 1 in r/a: unauthorized: authentication required"\n')
    assert tool_answer(output, 1) == ('initializing source "docker://r/a:1": reading manifest 1 in r/a: '
                                      "unauthorized: authentication required")
    assert tool_answer("", 125) == "exit 125"


def test_a_stage_whose_image_cannot_be_pulled_fails_naming_the_image_and_the_registrys_answer():
    workflow = submit("version: v1\njobs:\n" + step("train"))
    workflow.stage_started("train", 1, "n1", at(1))
    told = f"cannot start: image {IMAGE} cannot be pulled: reading manifest 1 in team/app: unauthorized"
    workflow.stage_exited("train", 1, 126, at(2), told=told)
    assert workflow.stage("train").reason.startswith(f"Failed: {told} (exit 126)")
