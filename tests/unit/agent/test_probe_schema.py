"""One probe shape: the Fuzzfile's `Probe` is what the run spec carries and what the agent probes with."""

from __future__ import annotations

import msgspec

from adapters.adoption import JobFiles, JobState
from adapters.runspec import local_spec
from api.agent.starts import build_spec
from domain.fuzzfile import parse_fuzzfile
from domain.fuzzfile.schema import Probe
from tests.unit.agent.fake_api import A1, wire

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
    spec = build_spec(wire(A1, kind="service", readiness_probe=msgspec.to_builtins(web.readiness_probe),
                           liveness_probe=msgspec.to_builtins(web.roving_liveness_probe)))
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
    spec = local_spec(allocation_id=A1, epoch=1, workflow_id="wf", stage="web", kind="service",
                   liveness_probe=Probe(period_seconds=0.25, failure_threshold=2))
    files = JobFiles(tmp_path / "a1-e1")
    files.directory.mkdir()
    files.save(JobState(spec=spec, workdir=str(tmp_path), pid=1, born=None, started_at=0.0))
    assert files.load().spec == spec


def test_a_job_an_agent_kept_under_the_old_run_spec_names_is_adopted_with_its_limits(tmp_path):
    """An agent upgraded while its jobs run: what it kept before the executor ran the `Start` itself (every field,
    under the RunSpec's own names) is read back as the `Start`, so the adopted job keeps its memory and timeout."""
    old = {"allocation_id": A1, "epoch": 2, "workflow_id": "wf", "stage": "train", "owner_id": "", "attempt": 1,
           "kind": "job", "job_name": "train", "task_id": None, "account_id": "acct", "user_id": "", "script": "true",
           "command": None, "args": None, "env": {"A": "1"}, "cwd": None, "files": None, "execute_timeout": 30.0,
           "memory": 2**30, "cpu_cores": 2, "image": None, "devices": {}, "network_isolated": False,
           "readiness_probe": None, "liveness_probe": None, "ports": [], "profile": "", "start_delay_seconds": 0.0,
           "hooks": [{"when": "post", "source": "job", "script": "echo done", "timeout_seconds": 5.0}], "mounts": {},
           "volume": "", "transfers": [], "build": None, "image_owner": "", "image_group": "", "persistent": {},
           "peers": None, "uid": 1000, "gid": 1000, "groups": [1000], "username": "alice"}
    files = JobFiles(tmp_path / "a1-e2")
    files.directory.mkdir()
    state = {"spec": old, "workdir": str(tmp_path), "pid": 1, "born": None, "started_at": 0.0}
    (files.directory / "state.json").write_bytes(msgspec.json.encode(state))
    spec = files.load().spec
    assert (spec.job, spec.memory_bytes, spec.execute_timeout_seconds, spec.cpu_cores) == ("train", 2**30, 30.0, 2)
    assert (spec.image, spec.files, spec.env, spec.username, spec.hooks[0].script) == ("", {}, {"A": "1"}, "alice",
                                                                                       "echo done")
