"""Services' host ports reach the scheduler's snapshot, so two asking one port never share a node."""

from __future__ import annotations

from domain.scheduler import schedule, validate_config
from tests.unit.projections.builders import Feed, at, node, request, submit

WEB = """
version: v4
services:
  web:
    image: {uri: docker://nginx}
    command: [nginx]
    network:
      ports: [{name: http, port: 8080}, {name: admin, port: 9000}]
"""
JOB_ONLY = "version: v4\njobs:\n  main: {image: {uri: docker://alpine:3.20}, script: 'echo hi'}\n"


def fed(*texts):
    feed = Feed()
    feed.save(node("n1", cpu=64))
    for i, text in enumerate(texts):
        workflow = submit(text, name=f"wf{i}")
        stage = next(iter(workflow.stages))
        feed.save(workflow, request(workflow, stage, minute=i))
    return feed.views.scheduler_snapshot(at(10))


def test_a_service_asks_its_network_ports_of_the_node():
    snapshot = fed(WEB)
    assert snapshot.queued[0].host_ports == (8080, 9000)


def test_a_job_asks_no_host_ports():
    assert fed(JOB_ONLY).queued[0].host_ports == ()


def test_two_services_asking_the_same_host_port_are_never_placed_on_one_node():
    snapshot = fed(WEB, WEB)
    decisions = schedule(snapshot, validate_config({})[0], at(10))
    assert len(decisions.placements) == 1
    waiting = [a.id for a in snapshot.queued if a.id != decisions.placements[0].allocation_id]
    assert "8080" in str(decisions.reasons[waiting[0]])
