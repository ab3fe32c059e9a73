"""Storage segments on the README stack: a node joins a segment with `roving agent --segment`, the stages that mount
a volume of that segment's class run only there, and a volume of a segment no node is in is refused at submission
naming the volume and the segment."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from api.composition.local_pool import AGENT_START
from tests.e2e.stack import LocalStack

FAST = """
version: v4
volumes:
  frames: {reference: volume://user/fast/frames}
jobs:
  render:
    image: {uri: docker://alpine:3.20}
    script: echo "frame $FB_TASK_ID" > /frames/f$FB_TASK_ID
    mounts: {/frames: {volume: frames}}
    task-array: {start: 1, end: 3}
  plain:
    image: {uri: docker://alpine:3.20}
    script: echo anywhere
"""


@pytest.fixture(scope="module")
def root():
    path = Path(tempfile.mkdtemp(prefix="roving-e2e-segments-"))
    path.chmod(0o711)  # jobs run as their owners: they must pass through to their own directories
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, root):
    running = LocalStack(tmp_path_factory.mktemp("roving"), nodes=1,
                         settings={"ROVING_WORK_DIR": str(root / "work")}).start()
    argv = [sys.executable, "-c", AGENT_START, "--node", "fast-1", "--api", running.url, "--token-file",
            str(running.data_dir / "agent.token"), "--cpus", "2", "--memory", "2GiB", "--definition", "local",
            "--workdir", str(root / "work" / "fast-1"), "--segment", "fast-nvme"]
    log = open(root / "fast-1.log", "wb")  # noqa: SIM115 - closed below
    agent = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=os.environ, start_new_session=True)
    try:
        running.wait(lambda: len(running.ready_nodes()) == 2, 30, "the fast-nvme node to register")
        changed = running.client.put("/v4/admin/centralconfig", json={
            "storage.local.root": str(root / "volumes"),
            "storage.classes": {"fast": {"segment": "fast-nvme"}, "cold": {"segment": "hdd"}}})
        assert changed.status_code == 200, changed.text
        yield running
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(30)
        log.close()
        running.stop()


def test_stages_mounting_a_segments_volume_run_only_on_its_nodes(stack, root):
    assert {n["name"]: n["segment"] for n in stack.ready_nodes()} == {"local-1": "", "fast-1": "fast-nvme"}
    workflow_id = stack.submit(FAST, "render")
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED", "CANCELED"), timeout=90)
    assert done["status"] == "FINISHED", done["stages"]
    nodes = {s["name"]: s["node"] for s in done["stages"]}
    assert {nodes[f"render[{n}]"] for n in (1, 2, 3)} == {"fast-1"}
    frames = sorted(p.name for p in (root / "volumes").glob("*/class/fast/user/*/frames/f*"))
    assert frames == ["f1", "f2", "f3"]


def test_a_volume_of_a_segment_no_node_is_in_is_refused_naming_it(stack):
    answer = stack.client.post("/v4/workflows", json={"name": "cold", "definition": FAST.replace("user/fast", "user/cold")})
    assert answer.status_code == 400, answer.text
    assert "volumes.frames.reference" in answer.text and "'hdd', which no node provides" in answer.text
