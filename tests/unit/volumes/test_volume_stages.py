"""Volumes with ingress and egress become stages of the workflow; a volume lives on the node it was first used on."""

from __future__ import annotations

from pathlib import Path

import pytest

from domain.fuzzfile import list_stages, parse_fuzzfile
from domain.node import Capacity
from domain.scheduler import SchedulerConfig, schedule
from domain.workflow import WorkflowError
from tests.unit.projections.builders import Feed, GiB, wire
from tests.unit.projections.builders import at as feed_at
from tests.unit.projections.builders import node as registered_node
from tests.unit.projections.test_agent_and_scheduler_views import placed
from tests.unit.scheduler.builders import T0, job, node, snap
from tests.unit.workflow.workflow_builders import at, run, submit

CATALOG_STYLE = """
version: v4
volumes:
  data:
    reference: volume://user/ephemeral
    ingress:
      - source: {uri: https://example.org/genome.fa}
        destination: {uri: file://inputs/genome.fa}
    egress:
      - source: {uri: file://results/out.txt}
        destination: {uri: s3://bucket/out.txt, secret: secret://user/s3}
jobs:
  align:
    image: {uri: docker://alpine:3.20}
    script: wc -c /data/inputs/genome.fa > /data/results/out.txt
    mounts: {/data: {volume: data}}
  report:
    image: {uri: docker://alpine:3.20}
    script: cat /data/results/out.txt
    mounts: {/data: {volume: data}}
    depends-on: [{name: align}]
  unrelated:
    image: {uri: docker://alpine:3.20}
    command: ["true"]
"""


def stages(text: str) -> dict:
    result = parse_fuzzfile(text)
    assert result.errors == [], result.errors
    return {s.name: s for s in list_stages(result.definition)}


def warnings(text: str) -> list[str]:
    return [f"{p.path}: {p.message}" for p in parse_fuzzfile(text).warnings]


def test_ingress_runs_before_every_job_that_mounts_the_volume_and_egress_after_them():
    found = stages(CATALOG_STYLE)
    assert list(found) == ["ingress:data", "align", "report", "unrelated", "egress:data"]
    assert [(d.name, d.status) for d in found["align"].dependencies] == [("ingress:data", "FINISHED")]
    assert found["unrelated"].dependencies == []
    assert {d.name for d in found["egress:data"].dependencies} == {"align", "report", "ingress:data"}
    assert found["egress:data"].transfers[0].secret == "secret://user/s3"
    assert found["ingress:data"].kind == "ingress" and found["ingress:data"].volume == "data"


def test_a_failed_ingress_cancels_the_jobs_that_needed_it_and_fails_the_workflow():
    workflow = submit(CATALOG_STYLE)
    assert workflow.stage("align").status.value == "WAITING"
    run(workflow, "ingress:data", exit_code=1)
    assert workflow.stage("align").reason.startswith("Canceled")
    run(workflow, "unrelated", minute=3)
    assert workflow.status == "FAILED"


def test_a_stage_cannot_start_away_from_the_node_holding_its_volume():
    workflow = submit(CATALOG_STYLE)
    run(workflow, "ingress:data", node="n1")
    assert workflow.volume_nodes == {"data": "n1"}
    with pytest.raises(WorkflowError, match="volume data, which lives on node n1"):
        workflow.stage_started("align", 1, "n2", at(5))
    workflow.stage_started("align", 1, "n1", at(5))


def test_the_scheduler_places_a_stage_only_on_its_volumes_node_and_says_why():
    decisions = schedule(snap([job("a", volume_node="n2")], nodes=[node("n1"), node("n2")]), SchedulerConfig(), T0)
    assert {p.allocation_id: p.node_ids for p in decisions.placements} == {"a": ("n2",)}
    blocked = schedule(snap([job("a", volume_node="gone")], nodes=[node("n1")]), SchedulerConfig(), T0)
    assert blocked.reasons["a"].message.startswith("its volumes live on node gone, which cannot take it")
    assert blocked.reasons["a"].detail["passed_over"] == {"(no definition)": {"its volumes live on node gone": 1}}


def test_what_the_cluster_does_not_perform_is_warned_about_by_name():
    """Storage classes depend on the cluster: tests/unit/volumes/test_persistent_volumes.py warns about those."""
    text = CATALOG_STYLE.replace(
        "destination: {uri: file://inputs/genome.fa}", "destination: {uri: file://inputs/genome.fa}\n        cache: x")
    found = warnings(text)
    assert "volumes.data.ingress[0].cache: ignored: this cluster keeps no transfer cache" in found


@pytest.mark.parametrize(("source", "destination", "message"), [
    ("ftp://host/x", "file://x", "an ingress source is one of"),
    ("https://host/x", "file://../escape", "must name a file inside the volume"),
    ("https://host/x", "/abs/path", "the volume's side of a transfer is file://PATH"),
])
def test_a_bad_ingress_is_refused_naming_the_field(source, destination, message):
    text = CATALOG_STYLE.replace("https://example.org/genome.fa", source).replace("file://inputs/genome.fa", destination)
    errors = parse_fuzzfile(text).errors
    assert errors and message in errors[0].message and errors[0].path.startswith("volumes.data.ingress[0]")


def test_a_job_named_like_a_transfer_stage_is_refused():
    text = CATALOG_STYLE.replace("  unrelated:", '  "ingress:data":')
    assert any("is the name of this volume's ingress stage" in p.message for p in parse_fuzzfile(text).errors)


def test_a_failed_transfer_says_what_the_agent_told_and_a_job_keeps_its_retry_hint():
    workflow = submit(CATALOG_STYLE)
    workflow.stage_started("ingress:data", 1, "n1", at(1))
    workflow.stage_exited("ingress:data", 1, 1, at(2), told="ingress of https://example.org/genome.fa failed: HTTP 404")
    assert workflow.stage("ingress:data").reason == "Failed: ingress of https://example.org/genome.fa failed: HTTP 404"
    workflow.stage_started("unrelated", 1, "n1", at(3))
    workflow.stage_exited("unrelated", 1, 1, at(4), told="exited with code 1")
    assert "policy.retry" in workflow.stage("unrelated").reason


def test_a_running_transfer_tells_its_progress_as_an_event_and_a_job_cannot():
    workflow = submit(CATALOG_STYLE)
    workflow.stage_started("ingress:data", 1, "n1", at(1))
    workflow.transfer_progressed("ingress:data", 1, "ingress https://example.org/genome.fa: 5.0 MiB of 10.0 MiB (50%)",
                                 at(2))
    told = workflow.pending_events[-1]
    assert (type(told).__name__, told.text) == ("TransferProgressed", "ingress https://example.org/genome.fa: "
                                                                      "5.0 MiB of 10.0 MiB (50%)")
    workflow.stage_started("unrelated", 1, "n1", at(1))
    with pytest.raises(WorkflowError, match="only ingress and egress report progress"):
        workflow.transfer_progressed("unrelated", 1, "50%", at(2))


def test_the_shipped_example_parses_cleanly_into_ingress_jobs_and_egress():
    text = (Path(__file__).resolve().parents[3] / "examples" / "volumes.yaml").read_text()
    result = parse_fuzzfile(text)
    assert (result.errors, result.warnings) == ([], [])
    assert [s.name for s in list_stages(result.definition)] == ["ingress:data", "count", "show", "egress:data"]


@pytest.mark.parametrize("location", ["/../etc", "/", "/data/../../x"])
def test_a_mount_path_must_stay_below_the_root(location):
    errors = parse_fuzzfile(CATALOG_STYLE.replace("mounts: {/data: {volume: data}}\n  report",
                                                  f'mounts: {{"{location}": {{volume: data}}}}\n  report')).errors
    assert [p.message for p in errors] == ["a mount path names a directory below /, without `..`, e.g. /data"]


def test_the_agent_is_told_which_workflows_volumes_live_on_until_the_workflow_ends_even_across_a_rejoin():
    feed, n1 = Feed(), registered_node("node-1")
    feed.save(n1)
    workflow, allocation = placed(feed, CATALOG_STYLE, "ingress:data", n1)
    [spec] = wire(feed.views.assignments(n1.id))
    assert (spec["kind"], spec["volume"], spec["transfers"]) == (
        "ingress", "data", [{"source": "https://example.org/genome.fa", "destination": "file://inputs/genome.fa"}])
    allocation.exited(0, allocation.epoch, by="agent", at=feed_at(2))
    workflow.stage_exited("ingress:data", 1, 0, feed_at(2))
    n1.rejoin(Capacity(cpu=8, memory=32 * GiB), [], by="agent", at=feed_at(3))
    feed.save(allocation, workflow, n1)
    assert feed.views.assignments(n1.id).volumes == [str(workflow.id)]  # align and report will run here
    workflow.cancel(by="alice", at=feed_at(4))
    feed.save(workflow)
    assert feed.views.assignments(n1.id).volumes == []
