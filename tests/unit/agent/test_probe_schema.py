"""One probe shape: the Fuzzfile's `Probe` is what the run spec carries and what the agent probes with."""

from __future__ import annotations

import msgspec

from adapters.adoption import JobFiles, JobState
from adapters.runspec import RunSpec
from api.agent.args import build_spec
from domain.fuzzfile import parse_fuzzfile
from domain.fuzzfile.schema import Probe
from tests.unit.agent.fake_api import A1

SERVICE = """
version: v1
services:
  web:
    image: {uri: docker://alpine:3.20}
    script: sleep 600
    readiness-probe: {http-get: {port: 8000, path: /healthz}, period-seconds: 2, failure-threshold: 4}
    roving-liveness-probe: {tcp-socket: {port: 8000}, initial-delay-seconds: 5}
"""


def test_the_probes_a_fuzzfile_declares_reach_the_agent_as_the_same_values():
    web = parse_fuzzfile(SERVICE).definition.services["web"]
    spec = build_spec({"allocation_id": A1, "epoch": 1, "workflow_id": "wf", "stage": "web", "kind": "service",
                       "readiness_probe": msgspec.to_builtins(web.readiness_probe),
                       "liveness_probe": msgspec.to_builtins(web.roving_liveness_probe)})
    assert spec.readiness_probe == web.readiness_probe
    assert spec.liveness_probe == web.roving_liveness_probe
    assert (spec.readiness_probe.http_get.path, spec.liveness_probe.tcp_socket.port) == ("/healthz", 8000)


def test_a_job_an_older_agent_left_is_adopted_with_its_snake_case_probe(tmp_path):
    old = {"spec": {"allocation_id": A1, "epoch": 1, "workflow_id": "wf", "stage": "web", "kind": "service",
                    "readiness_probe": {"http_get": {"port": 8000, "path": "/"}, "period_seconds": 1.5}},
           "workdir": str(tmp_path), "pid": 1, "born": None, "started_at": 0.0}
    files = JobFiles(tmp_path / "a1-e1")
    files.directory.mkdir()
    (files.directory / "state.json").write_bytes(msgspec.json.encode(old))
    state = files.load()
    assert state is not None and state.spec.readiness_probe == Probe(
        http_get=state.spec.readiness_probe.http_get, period_seconds=1.5)
    assert state.spec.readiness_probe.http_get.port == 8000


def test_a_job_this_agent_saved_is_read_back_unchanged(tmp_path):
    spec = RunSpec(allocation_id=A1, epoch=1, workflow_id="wf", stage="web", kind="service",
                   liveness_probe=Probe(period_seconds=0.25, failure_threshold=2))
    files = JobFiles(tmp_path / "a1-e1")
    files.directory.mkdir()
    files.save(JobState(spec=spec, workdir=str(tmp_path), pid=1, born=None, started_at=0.0))
    assert files.load().spec == spec
