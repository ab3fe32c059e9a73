"""Image builds end to end on the README stack with the oci runtime: workflow 1 builds fuzzball://user/tools from a
busybox base in a loopback registry and runs /opt/tool.sh in it; workflow 2, the same definition, is served from
the object store's cache and says so; an admin can turn builds off."""

from __future__ import annotations

import shutil
import tempfile
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.e2e.stack import LocalStack
from tests.integration.test_isolation_image import image  # noqa: F401 - the registry fixture (skips without root)

FUZZFILE = """
version: v4
images:
  tools:
    from: {base}
    post: |
      mkdir -p /opt
      printf '#!/bin/sh\\necho tool ran as $(id -u)\\n' > /opt/tool.sh
      chmod 755 /opt/tool.sh
      echo post done
jobs:
  use:
    image: {{uri: fuzzball://user/tools}}
    command: [/opt/tool.sh]
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory, image):  # noqa: F811
    work = Path(tempfile.mkdtemp(prefix="roving-e2e-build-"))
    work.chmod(0o711)
    running = LocalStack(tmp_path_factory.mktemp("roving"), nodes=1,
                         settings={"ROVING_WORK_DIR": str(work), "ROVING_RUNTIME": "oci"}).start()
    yield running
    running.stop()
    shutil.rmtree(work, ignore_errors=True)


def run_to_end(stack: LocalStack, text: str, name: str) -> tuple[str, dict, float]:
    started = time.monotonic()
    workflow_id = stack.submit(text, name=name)
    stack.wait(lambda: _stage(stack.workflow(workflow_id), "use")["status"] not in ("PENDING", "READY", "WAITING"),
               120, f"{name}: job use to start")
    to_start = time.monotonic() - started
    return workflow_id, stack.wait_status(workflow_id, ("FINISHED", "FAILED", "CANCELED"), 120), to_start


def _stage(workflow: dict, name: str) -> dict:
    return next((s for s in workflow["stages"] if s["name"] == name), {"status": "PENDING"})


def test_a_workflow_builds_its_image_and_the_next_one_is_served_from_the_cache(stack, image):  # noqa: F811
    _, base = image
    text = FUZZFILE.format(base=base)
    first, workflow, built_in = run_to_end(stack, text, "build-1")
    assert workflow["status"] == "FINISHED", workflow
    assert _stage(workflow, "build:tools")["reason"].startswith("Finished: image tools built and stored ")
    log = stack.stage_log(first, "use", "tool ran")
    assert "tool ran as " in log and "tool ran as 0\n" not in log, log  # the job runs as its owner, not root
    assert "post done" in stack.stage_log(first, "build:tools", "post done")
    steps = [e["message"] or "" for e in stack.events(first)]
    assert any("build running post" in step for step in steps), steps
    print("\n" + "\n".join(step for step in steps if "build" in step or "image" in step))

    second, workflow, cached_in = run_to_end(stack, text, "build-2")
    assert workflow["status"] == "FINISHED", workflow
    assert "image tools served from cache (built " in _stage(workflow, "build:tools")["reason"]
    assert not any("running post" in (e["message"] or "") for e in stack.events(second))
    assert "tool ran" in stack.stage_log(second, "use", "tool ran")
    print(f"\nsubmit to job start: first build {built_in:.2f}s, cache hit {cached_in:.2f}s; build stage itself: "
          f"{_stage_seconds(stack, first):.2f}s, {_stage_seconds(stack, second):.2f}s")


def _stage_seconds(stack: LocalStack, workflow_id: str, stage: str = "build:tools") -> float:
    times = {e["type"].split(".")[-1]: datetime.fromisoformat(e["time"].replace("Z", "+00:00"))
             for e in stack.events(workflow_id) if e["stage"] == stage}
    return (times["StageFinished"] - times["StageStarted"]).total_seconds()


def test_with_builds_turned_off_a_workflow_with_images_is_refused(stack, image):  # noqa: F811
    _, base = image
    assert stack.client.put("/v4/admin/centralconfig", json={"images.builds": False}).status_code == 200
    try:
        answer = stack.client.post("/v4/workflows", json={"name": "off", "definition": FUZZFILE.format(base=base)})
        assert answer.status_code == 400, answer.text
        assert "image builds are turned off on this cluster" in answer.text
    finally:
        stack.client.put("/v4/admin/centralconfig", json={"images.builds": True})
