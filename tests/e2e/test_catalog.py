"""The Fuzzball catalog's blender and bwa templates, rendered with values pointing at local sources, run end to end
on the README stack with real ingress (http on loopback) and egress (S3: moto's server on loopback, with a secret).

Honest limits: the catalog's images (alpine, linuxserver/blender, jrottenberg/ffmpeg, a biocontainers bwa-mem2 +
samtools image) cannot be pulled offline, so tests/e2e/catalog_images.py builds stand-ins with the same references:
busybox plus small stub programs (blender, ffmpeg, apk, bwa-mem2, samtools, bash) that check their inputs and write
outputs of the names the scripts expect. They run in those images under the `oci` runtime (bubblewrap), pulled
through a loopback registry that a registries.conf names as docker.io's and quay.io's mirror. Everything else is
Roving's and the catalog's own: the rendered Fuzzfiles, volumes, `files`, task arrays, dependencies, transfers.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import tempfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from domain.catalog import Clock, TemplateFiles, build, render_fuzzfile
from tests.e2e.catalog_images import Mirror
from tests.e2e.stack import LocalStack, dump
from tests.integration.test_isolation_image import needs
from tests.integration.transfer_servers import Files, S3Server
from tests.reference import fuzzball

CATALOG = fuzzball("catalog")
ENDED = ("FINISHED", "FAILED", "CANCELED")


def rendered(name: str, **values) -> str:
    """The template rendered as the catalog renders it (values typed and checked against its values file)."""
    files = TemplateFiles(name, (CATALOG / f"{name}.template.yaml").read_text(),
                          (CATALOG / f"{name}.values.yaml").read_text())
    clock = Clock(datetime.now(UTC), lambda low, high: low)
    return render_fuzzfile(build(files, "reference", "", "cluster"), values, clock).fuzzfile


@pytest.fixture(scope="module")
def scratch():
    needs("bwrap", "skopeo", "docker-registry", "busybox")
    path = Path(tempfile.mkdtemp(prefix="roving-e2e-catalog-"))
    path.chmod(0o711)  # jobs run as their owners: they must pass through to their own directories
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def mirror(scratch):
    (scratch / "registry").mkdir()
    running = Mirror(scratch / "registry")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def s3():
    server = S3Server()
    server.client().create_bucket(Bucket="results")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory, scratch, mirror, s3):
    settings = {"ROVING_WORK_DIR": str(scratch / "work"), "ROVING_RUNTIME": "oci",
                "PATH": f"{mirror.bin}:{os.environ['PATH']}", "ROVING_LOCAL_NODE_MEMORY": "8GiB"}
    running = LocalStack(tmp_path_factory.mktemp("roving"), settings=settings).start()
    stored = running.client.post("/v4/secrets", json={"name": "s3", "value": s3.secret(), "scope": "user"})
    assert stored.status_code == 201, stored.text
    yield running
    running.stop()


@pytest.fixture(scope="module")
def web():
    server = Files()
    yield server
    server.shutdown()
    server.server_close()


def failures(stack, workflow_id: str, done: dict) -> str:
    """The failed stages and their logs, for an assertion's message."""
    failed = [s for s in done["stages"] if s["status"] == "FAILED"]
    return dump(failed) + "".join(f"\n--- {s['name']}:\n" + stack.stage_log(workflow_id, s["name"], "\0", 3)
                                  for s in failed)


def project_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("scene/scene.blend", b"BLENDER-v300" + b"\0" * 4000)
    return buffer.getvalue()


def test_the_blender_template_renders_frames_as_a_task_array_and_sends_the_video_to_s3(stack, web, s3):
    web.files["/project.zip"] = project_zip()
    text = rendered("blender", ProjectUri=f"{web.url}/project.zip", BlenderFilePath="scene/scene.blend",
                    StartFrame=1, EndFrame=3, Concurrency=2, RenderCores=1, RenderMemory="256MiB",
                    OutputS3Uri="s3://results/blender/output.mp4", S3Secret="secret://user/s3")
    workflow_id = stack.submit(text, "blender")
    done = stack.wait_status(workflow_id, ENDED, timeout=240)
    stages = {s["name"]: s["status"] for s in done["stages"]}
    assert done["status"] == "FINISHED", failures(stack, workflow_id, done)
    assert list(stages) == ["ingress:scratch", "setup", "render-frames[1]", "render-frames[2]", "render-frames[3]",
                            "assemble-video", "egress:scratch"]
    video = s3.client().get_object(Bucket="results", Key="blender/output.mp4")["Body"].read().decode()
    assert video.splitlines() == [f"frame {n} of scene.blend, 4012 bytes" for n in (1, 2, 3)]
    assert "Setup complete." in stack.stage_log(workflow_id, "setup", "Setup complete.")
    assert "Fra:2 saved /scratch/frames/frame_00002.png" in stack.stage_log(workflow_id, "render-frames[2]", "Fra:2")
    assert "done, " in stack.stage_log(workflow_id, "ingress:scratch", "done, ")


def fastq(pairs: int, mate: int) -> bytes:
    text = "".join(f"@read{n}/{mate}\nACGTACGTAC\n+\nIIIIIIIIII\n" for n in range(pairs))
    return gzip.compress(text.encode())


def bwa_values(web) -> dict:
    web.files["/ref.fa.gz"] = gzip.compress(b">chr1\n" + b"ACGT" * 500 + b"\n")
    web.files["/r1.fq.gz"], web.files["/r2.fq.gz"] = fastq(25, 1), fastq(25, 2)
    return {"ReferenceGenomeURL": f"{web.url}/ref.fa.gz", "Read1URL": f"{web.url}/r1.fq.gz",
            "Read2URL": f"{web.url}/r2.fq.gz", "ReferenceGenomeName": "tiny-chr1", "IndexCpuCores": 1,
            "IndexMemory": 1, "AlignThreads": 1, "AlignCpuCores": 1, "AlignMemory": 1, "S3Bucket": "results",
            "S3Prefix": "bwa/", "S3Secret": "secret://user/s3"}


def test_the_bwa_template_as_published_fails_at_its_index_job_because_nothing_unpacks_the_reference(stack, web):
    """The template's ingress writes reference.fa.gz, and its index job exits 1 unless reference.fa exists: where
    ingress stores files as fetched (Roving's does), it cannot succeed as written. Roving runs the three ingresses
    and reports the index job's exit."""
    workflow_id = stack.submit(rendered("bwa_alignment", **bwa_values(web)), "bwa-as-published")
    done = stack.wait_status(workflow_id, ENDED, timeout=180)
    stages = {s["name"]: (s["status"], s.get("exit_code")) for s in done["stages"]}
    assert stages["ingress:bwa-data"] == ("FINISHED", 0)
    assert stages["bwa-mem2-index"] == ("FAILED", 1), failures(stack, workflow_id, done)
    assert stages["bwa-mem2-align"][0] == stages["egress:bwa-data"][0] == "CANCELED"


def test_the_bwa_template_with_the_reference_unpacked_aligns_and_sends_bam_and_stats_to_s3(stack, web, s3):
    """The one change to the rendered template: the index job first unpacks reference.fa.gz (see the test above)."""
    text = rendered("bwa_alignment", **bwa_values(web)).replace(
        "if [ -f reference.fa ] &&", "[ -f reference.fa ] || gunzip -k reference.fa.gz\n        if [ -f reference.fa ] &&")
    workflow_id = stack.submit(text, "bwa")
    done = stack.wait_status(workflow_id, ENDED, timeout=180)
    assert done["status"] == "FINISHED", failures(stack, workflow_id, done)
    assert [s["name"] for s in done["stages"]] == ["ingress:bwa-data", "bwa-mem2-index", "bwa-mem2-align",
                                                   "egress:bwa-data"]
    bam = s3.client().get_object(Bucket="results", Key="bwa/aligned.bam")["Body"].read().decode()
    stats = s3.client().get_object(Bucket="results", Key="bwa/aligned.stats.txt")["Body"].read().decode()
    assert bam.splitlines()[0] == "@SQ\tSN:chr1" and len(bam.splitlines()) == 26
    assert "Reference Genome: tiny-chr1" in stats and "25 + 0 in total" in stats
