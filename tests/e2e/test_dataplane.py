"""The data plane end to end on the README stack: a catalog-style Fuzzfile whose volume is filled by an http
ingress, used by two jobs, and sent to S3 (a real S3 server on loopback, with a secret) by its egress."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.e2e.stack import LocalStack
from tests.integration.transfer_servers import Files, S3Server

FUZZFILE = """
version: v4
volumes:
  data:
    reference: volume://user/ephemeral
    ingress:
      - source: {{uri: {web}/genome.fa}}
        destination: {{uri: file://inputs/genome.fa}}
    egress:
      - source: {{uri: file://results/count.txt}}
        destination: {{uri: s3://results/run-1/count.txt, secret: secret://user/s3}}
jobs:
  count:
    image: {{uri: docker://alpine:3.20}}
    script: |
      mkdir -p /data/results && wc -c < /data/inputs/genome.fa > /data/results/count.txt
    mounts: {{/data: {{volume: data}}}}
  check:
    image: {{uri: docker://alpine:3.20}}
    script: cat /data/results/count.txt
    mounts: {{/data: {{volume: data}}}}
    depends-on: [{{name: count}}]
"""


@pytest.fixture(scope="module")
def work_dir():
    path = Path(tempfile.mkdtemp(prefix="roving-e2e-work-"))
    path.chmod(0o711)  # jobs run as nobody: they must pass through to their own directories
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, work_dir):
    running = LocalStack(tmp_path_factory.mktemp("roving"), settings={"ROVING_WORK_DIR": str(work_dir)}).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def servers():
    s3, web = S3Server(), Files()
    s3.client().create_bucket(Bucket="results")
    yield s3, web
    s3.stop()
    web.shutdown()
    web.server_close()


def test_a_volume_is_filled_by_ingress_used_by_jobs_and_sent_out_by_egress(stack, servers, work_dir):
    s3, web = servers
    web.files["/genome.fa"] = b"ACGT" * 2500
    stored = stack.client.post("/v4/secrets", json={"name": "s3", "value": s3.secret(), "scope": "user"})
    assert stored.status_code == 201, stored.text
    workflow_id = stack.submit(FUZZFILE.format(web=web.url), "align")
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED", "CANCELED"), timeout=90)
    stages = [(s["name"], s["status"]) for s in done["stages"]]
    assert stages == [("ingress:data", "FINISHED"), ("count", "FINISHED"), ("check", "FINISHED"),
                      ("egress:data", "FINISHED")], done
    assert s3.client().get_object(Bucket="results", Key="run-1/count.txt")["Body"].read().strip() == b"10000"
    assert "done, 10000 bytes" in stack.stage_log(workflow_id, "ingress:data", "done, 10000 bytes")
    assert "10000" in stack.stage_log(workflow_id, "check", "10000")
    assert len({s["node"] for s in done["stages"]}) == 1  # the volume's node ran every stage that used it
    stack.wait(lambda: not list(work_dir.glob("*/.volumes")), 30, "the ended workflow's volume to be removed")
    events = stack.events(workflow_id)
    assert [e["message"] for e in events if "ingress:data" in str(e) and "Started" in e["message"]]
    assert any("done, 10000 bytes" in e["message"] for e in events if "ingress:data" in str(e))  # progress as events
    assert "hunter2" not in str(events)


def test_a_failed_ingress_fails_the_workflow_naming_the_uri(stack, servers):
    _, web = servers
    workflow_id = stack.submit(FUZZFILE.format(web=web.url).replace("/genome.fa", "/missing.fa"), "missing")
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED", "CANCELED"), timeout=90)
    ingress = done["stages"][0]
    assert (done["status"], ingress["name"], ingress["status"]) == ("FAILED", "ingress:data", "FAILED")
    assert f"ingress of {web.url}/missing.fa failed: HTTP 404" in ingress["reason"]
    assert {s["status"] for s in done["stages"][1:]} == {"CANCELED"}
