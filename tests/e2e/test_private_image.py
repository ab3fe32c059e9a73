"""`roving up` with the oci runtime and a private loopback registry: a job names its image's secret, runs in the image,
and its stage's events tell the pull (then "cached" for the next job); a wrong secret fails the stage naming the
image and the registry's answer. The secret's value shows nowhere: not in events, the workflow, or any log."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.e2e.stack import LocalStack
from tests.integration.test_image_registry_auth import PASSWORD, SECRET, PrivateRegistry
from tests.integration.test_isolation_image import MARKER, build_layout, needs

JOB = """version: v1
jobs:
  show:
    image: {{uri: {image}, secret: secret://user/{secret}}}
    script: cat /etc/roving-test-image
    resource: {{cpu: {{cores: 1}}, memory: {{size: 64MiB}}}}
"""


@pytest.fixture(scope="module")
def world():
    if os.geteuid() != 0:
        pytest.skip("the oci runtime runs jobs as their owners under a root agent (CI runs as root)")
    needs("bwrap", "skopeo", "docker-registry", "busybox")
    scratch = Path(tempfile.mkdtemp(prefix="roving-private-e2e-"))
    scratch.chmod(0o755)
    build_layout(scratch / "layout", "1.0")
    registry = PrivateRegistry(scratch)
    (scratch / "data").mkdir(mode=0o755)
    stack = None
    try:
        image = registry.push(scratch / "layout", "1.0", "team/busybox")
        stack = LocalStack(scratch / "data", nodes=1, settings={"ROVING_RUNTIME": "oci"}).start()
        for name, value in (("registry", SECRET), ("stale", "alice:wrong-password")):
            answer = stack.client.post("/v4/secrets", json={"name": name, "value": value, "scope": "user"})
            assert answer.status_code == 201, answer.text
        yield stack, image
    finally:
        if stack is not None:
            stack.stop()
        registry.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def image_events(stack: LocalStack, workflow_id: str) -> list[str]:
    return [e["message"] for e in stack.events(workflow_id) if e["type"] == "Workflow.ImageProgressed"]


def test_a_private_image_is_pulled_with_its_secret_told_as_stage_events_then_served_from_the_cache(world):
    stack, image = world
    first = stack.submit(JOB.format(image=image, secret="registry"), "first")
    assert stack.wait_status(first, ("FINISHED", "FAILED"))["status"] == "FINISHED", stack.events(first)
    assert MARKER.strip() in stack.stage_log(first, "show", MARKER.strip())
    stack.wait(lambda: any(m.endswith("(pulled)") for m in image_events(stack, first)), 10, "the image's ready event")
    told = image_events(stack, first)
    assert told[0] == f"pulling {image}: 1 blob to fetch" and told[-1].startswith(f"image {image} ready in "), told

    second = stack.submit(JOB.format(image=image, secret="registry"), "second")
    assert stack.wait_status(second, ("FINISHED", "FAILED"))["status"] == "FINISHED", stack.events(second)
    stack.wait(lambda: image_events(stack, second), 10, "the image's ready event")
    [cached] = image_events(stack, second)
    assert cached.startswith(f"image {image} ready in ") and cached.endswith("(cached)")


def test_a_wrong_secret_fails_the_stage_naming_the_image_and_the_registrys_answer_never_the_secret(world):
    stack, image = world
    failed = stack.submit(JOB.format(image=image, secret="stale"), "stale")
    workflow = stack.wait_status(failed, ("FINISHED", "FAILED"))
    assert workflow["status"] == "FAILED"
    reasons = " ".join(e["message"] for e in stack.events(failed))
    assert f"image {image} cannot be pulled" in reasons and "unauthorized" in reasons, reasons
    seen = repr(workflow) + repr(stack.events(failed)) + (stack.data_dir / "stack.log").read_text(errors="replace")
    assert "wrong-password" not in seen and PASSWORD not in seen
