"""`images:` in a Fuzzfile: checked at submission, built as `build:NAME` stages before the jobs that run them."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.allocation import QueueState
from domain.app import Invalid
from domain.app.ids import allocation_id
from domain.fuzzfile import list_stages, parse_fuzzfile
from domain.fuzzfile.images import build_plan
from domain.scheduler.snapshot import Definition, NodeShape
from tests.unit.app.builders import ADMIN, T0, app, later, user
from tests.unit.workflow.workflow_builders import at, submit

TOOLS = """
version: v4
files:
  helper: "echo helped"
images:
  tools:
    from: docker://127.0.0.1:5000/busybox:1
    files:
      /opt/helper.sh: {source: file://helper}
      /opt/motd: {content: "hello"}
    post: |
      printf '#!/bin/sh\\necho tool ran\\n' > /opt/tool.sh && chmod +x /opt/tool.sh
    ttl: 24h
  extra:
    from: fuzzball://user/tools
    post: touch /opt/extra
jobs:
  use:
    image: {uri: fuzzball://user/extra}
    command: [/opt/tool.sh]
  plain:
    image: {uri: docker://alpine:3.20}
    command: ["true"]
"""


def problems(text: str) -> list[str]:
    return [f"{p.path}: {p.message}" for p in parse_fuzzfile(text).errors]


def stages(text: str) -> dict:
    result = parse_fuzzfile(text)
    assert result.errors == [], result.errors
    return {s.name: s for s in list_stages(result.definition)}


def test_images_are_built_first_each_after_its_base_and_jobs_wait_for_their_image():
    found = stages(TOOLS)
    assert list(found)[:2] == ["build:tools", "build:extra"]
    assert [d.name for d in found["build:extra"].dependencies] == ["build:tools"]
    assert [d.name for d in found["use"].dependencies] == ["build:extra"]
    assert found["plain"].dependencies == []
    assert found["build:tools"].kind == "build"


def test_a_build_plan_reads_file_sources_and_its_digest_follows_the_recipe_not_the_ttl():
    definition = parse_fuzzfile(TOOLS).definition
    plan = build_plan(definition, "tools")
    assert plan.files == {"/opt/helper.sh": "echo helped", "/opt/motd": "hello"}
    assert plan.ttl_seconds == 86400
    longer = parse_fuzzfile(TOOLS.replace("ttl: 24h", "ttl: 48h")).definition
    changed = parse_fuzzfile(TOOLS.replace("chmod +x", "chmod 755")).definition
    assert build_plan(longer, "tools").digest == plan.digest
    assert build_plan(changed, "tools").digest != plan.digest


RELEASE_NOTES_44 = """
version: v1
images:
  tools.sif:
    from:
      uri: docker://rockylinux/rockylinux:9
    post: |
      dnf install -y git
jobs:
  use:
    image:
      uri: fuzzball://user/tools.sif
    command: [git, --version]
"""


def test_fuzzball_4_4s_from_mapping_builds_the_image_a_job_runs_by_its_name():
    found = stages(RELEASE_NOTES_44)
    assert [d.name for d in found["use"].dependencies] == ["build:tools.sif"]
    plan = build_plan(parse_fuzzfile(RELEASE_NOTES_44).definition, "tools.sif")
    assert plan.source == "docker://rockylinux/rockylinux:9"
    as_string = RELEASE_NOTES_44.replace("from:\n      uri: docker", "from: docker")
    assert build_plan(parse_fuzzfile(as_string).definition, "tools.sif").digest == plan.digest


def test_a_from_mapping_with_a_bad_uri_is_refused_naming_the_uri():
    bad = RELEASE_NOTES_44.replace("uri: docker://rockylinux", "uri: ftp://rockylinux")
    assert any(p.startswith('images["tools.sif"].from.uri: build from docker://') for p in problems(bad))


def test_images_built_from_each_other_in_a_loop_are_refused_naming_them():
    looped = TOOLS.replace("from: docker://127.0.0.1:5000/busybox:1", "from: fuzzball://user/extra")
    assert problems(looped) == ["images.tools: images are built from each other in a cycle: tools -> extra -> tools"]


def test_an_image_built_from_itself_is_a_cycle():
    selfish = TOOLS.replace("from: fuzzball://user/tools", "from: fuzzball://user/extra")
    assert problems(selfish) == ["images.extra: images are built from each other in a cycle: extra -> extra"]


def test_bad_image_entries_are_refused_by_field():
    bad = TOOLS.replace("from: docker://127.0.0.1:5000/busybox:1", "from: alpine") \
               .replace("ttl: 24h", "ttl: soon\n    scope: world") \
               .replace("/opt/motd: {content: \"hello\"}", "opt/motd: {content: hi, source: file://nope}")
    found = problems(bad)
    assert "images.tools.from: build from docker://REF or fuzzball://user/NAME; got `alpine`" in found
    assert "images.tools.scope: scope is user or group, not world" in found
    assert any(p.startswith("images.tools.ttl: 'soon' is not a duration") for p in found)
    assert 'images.tools.files["opt/motd"]: files are keyed by an absolute path in the image, without `..`' in found
    assert 'images.tools.files["opt/motd"]: give either `content` or `source: file://NAME`' in found


def test_a_file_source_must_name_a_top_level_file():
    missing = TOOLS.replace("source: file://helper", "source: file://nothing")
    assert problems(missing) == ['images.tools.files["/opt/helper.sh"].source: '
                                 '`file://nothing` names no entry of the top-level `files`']


def test_an_image_whose_build_stage_name_is_taken_is_refused():
    clash = TOOLS.replace("  plain:\n", '  "build:tools":\n')
    assert "images.tools: `build:tools` is the name of this image's build stage; rename the job or service " \
           "that uses it" in problems(clash)


def test_a_job_may_run_an_image_built_by_an_earlier_workflow_without_a_build_stage():
    earlier = "version: v4\njobs:\n  use:\n    image: {uri: fuzzball://user/old}\n    command: [/opt/tool.sh]\n"
    assert stages(earlier)["use"].dependencies == []


def test_a_failed_build_cancels_the_jobs_that_run_its_image_with_a_reason_naming_it():
    workflow = submit(TOOLS)
    attempt = workflow.stage("build:tools").attempt
    workflow.stage_started("build:tools", attempt, "n1", at(1))
    workflow.stage_exited("build:tools", attempt, 1, at(2), told="image tools: post exited with code 1")
    assert workflow.stage("build:tools").status.value == "FAILED"
    assert "image tools: post exited with code 1" in workflow.stage("build:tools").reason
    assert workflow.stage("use").status.value == "CANCELED"
    assert workflow.stage("plain").status.value != "CANCELED"


def test_a_cached_build_finishes_saying_so():
    workflow = submit(TOOLS)
    attempt = workflow.stage("build:tools").attempt
    workflow.stage_started("build:tools", attempt, "n1", at(1))
    workflow.transfer_progressed("build:tools", attempt, "build pulling base", at(1))
    workflow.stage_exited("build:tools", attempt, 0, at(2), told="image tools served from cache (built 2026-12-04)")
    assert workflow.stage("build:tools").reason == "Finished: image tools served from cache (built 2026-12-04)"


def test_submission_with_images_is_refused_when_builds_are_turned_off():
    roving = app()
    roving.change_config({"images.builds": False}, ADMIN, T0)
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(uuid4(), "tools", TOOLS, 0, None, user(), later(1))
    assert [(p.path, p.message) for p in refused.value.problems] == [
        ("images", "image builds are turned off on this cluster (images.builds: false); use a registry image instead")]


def test_submission_with_images_readies_the_first_build_only():
    roving, wid = app(), uuid4()
    roving.submit_workflow(wid, "tools", TOOLS, 0, None, user(), T0)
    assert roving.repository.get(allocation_id(wid, "build:tools", 1)).state is QueueState.READY
    assert allocation_id(wid, "use", 1) not in roving.repository


def test_a_build_is_placed_only_where_a_node_runs_images_and_refused_where_none_does():
    host = Definition(id="host-pool", max_nodes=2, annotations={"roving.io/runtime": "host"},
                      shape=NodeShape(cpu=8, memory=1 << 34))
    oci = Definition(id="oci-pool", max_nodes=2, annotations={"roving.io/runtime": "oci"},
                     shape=NodeShape(cpu=8, memory=1 << 34))
    with pytest.raises(Invalid) as refused:
        app().submit_workflow(uuid4(), "tools", TOOLS, 0, None, user(), T0, definitions=[host])
    assert {p.path for p in refused.value.problems} == {"images.tools", "images.extra", "jobs.use.resource"}
    assert "annotation roving.io/runtime=oci not offered" in refused.value.problems[0].message
    app().submit_workflow(uuid4(), "tools", TOOLS, 0, None, user(), T0, definitions=[host, oci])
